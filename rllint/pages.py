"""Where a rule's page is, for the links that SARIF reports and the language server give.

Links come from one setting, `docs-url`: a folder (any URL) that holds the pages as `rules/` does,
`RL601.md` and an index `README.md`. Without it they point at the pages shipped with rllint, as
`file:` URLs that resolve on this machine: a wheel carries them in `rllint/rule_pages/` (the
repository's `rules/`, included at build time); a clone or an editable install has `rules/` itself.
"""
from pathlib import Path
from typing import Optional

_PACKAGE = Path(__file__).resolve().parent
# In an installed wheel, then in a clone (or an editable install) next to the package.
_SHIPPED = (_PACKAGE / "rule_pages", _PACKAGE.parent / "rules")


def shipped_pages() -> Optional[Path]:
    """The folder of the rule pages that came with rllint; None if they were left out."""
    return next((folder for folder in _SHIPPED if (folder / "RL000.md").is_file()), None)


def _base(docs_url: Optional[str]) -> Optional[str]:
    if docs_url:
        return docs_url.rstrip("/")
    folder = shipped_pages()
    return folder.as_uri() if folder is not None else None


def rule_page_url(code: str, docs_url: Optional[str] = None) -> Optional[str]:
    """The page of rule `code` under `docs_url` (else the shipped pages); None when there is none."""
    base = _base(docs_url)
    return None if base is None else f"{base}/{code}.md"


def index_url(docs_url: Optional[str] = None) -> Optional[str]:
    """The index of every rule (`README.md` of the pages)."""
    base = _base(docs_url)
    return None if base is None else f"{base}/README.md"
