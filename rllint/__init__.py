"""rllint: a linter for reinforcement-learning post-training code."""

__version__ = "0.2.0"

# The repository's public home. OWNER is a placeholder until the project is published;
# README snippets, rule links (SARIF, the language server) and package metadata all use this one.
REPOSITORY = "https://github.com/OWNER/rllint"


def rule_page_url(code: str) -> str:
    """The page of a rule in the repository's `rules/` folder, at this release's tag."""
    return f"{REPOSITORY}/blob/v{__version__}/rules/{code}.md"
