"""Rule pages: `rules/` must match the rules' docstrings, and every page must have its sections."""
import subprocess
import sys

import pytest

import rllint.options
from rllint import docs
from rllint.diagnostic import Severity, Tier
from rllint.docs import DEFAULT_FOLDER, render_index, render_page
from rllint.registry import Option, Rule, load_rules

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

REQUIRED = ["## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety", "## Options",
            "## Suppressing it"]
RULES = list(load_rules().values())


def test_rules_folder_is_up_to_date():
    stale = docs.out_of_date(DEFAULT_FOLDER)
    assert stale == [], f"run `python -m rllint.docs` to regenerate: {stale}"


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.code)
def test_page_has_title_status_and_sections_in_order(rule):
    page = render_page(rule)
    lines = page.splitlines()
    assert lines[0] == f"# {rule.code} {rule.name}"
    assert lines[2].startswith(f"Severity: **{rule.severity.value}**. Tier: **{rule.tier.value}**. ")
    assert ("On by default." if rule.default_enabled else "Off by default") in lines[2]
    positions = [lines.index(heading) for heading in REQUIRED]
    assert positions == sorted(positions)
    if "## References" in lines:
        assert lines.index("## References") > positions[-1]
    suppression = page.split("## Suppressing it\n", 1)[1]
    assert f'ignore = ["{rule.code}"]' in suppression


def test_page_of_a_rule_that_comments_can_silence():
    class Probe(Rule):
        """
        ## What it does
        Finds probes.

        ## Why is this bad?
        Probes.

        ## Example
        ```python
        probe()
        ## a comment, not a heading
        ```

        ## Use instead
        ```python
        pass
        ```

        ## References
        - a reference
        """

        name = "probe-rule"

    Probe.code = "RL998"  # set after class creation so that the probe stays out of the catalogue
    page = render_page(Probe)
    assert "# noqa: RL998" in page and "# rllint: ignore[probe-rule]" in page
    assert "## Options\nNone.\n\n## Suppressing it\n" in page
    assert page.endswith("## References\n- a reference\n")
    assert "```python\nprobe()\n## a comment, not a heading\n```" in page


def test_generated_options_section(monkeypatch):
    monkeypatch.setattr(rllint.options, "OPTIONS", {})  # the probe's options stay out of the real catalogue

    class Probe(Rule):
        """
        ## What it does
        Finds probes.

        ## Options
        Tune it with these.

        - `max-probe` (float, default `1e-3`): a hand-written line
          that the generated list replaces.
        - `other-tool-key` is not an option of this rule and stays.
        """

        name = "probe-rule"
        severity = Severity.INFO
        tier = Tier.PEDANTIC
        options = (
            Option("max-probe", float, 1e-3, "The largest probe allowed."),
            Option("probe-mode", str, "auto", "When to probe.", choices=("auto", "always")),
            Option("probe-names", list, ["a", "b"], "Names of probes."),
            Option("probe-strict", bool, False, "Whether to be strict."),
        )

    Probe.code = "RL997"
    page = render_page(Probe)
    assert page.splitlines()[2] == (
        'Severity: **info**. Tier: **pedantic**. Off by default (turn it on with `extend-select = ["RL997"]`).')
    section = page.split("## Options\n", 1)[1].split("\n## ", 1)[0]
    assert section.startswith("Tune it with these.\n\n- `other-tool-key` is not an option of this rule and stays.\n\n")
    assert "hand-written" not in section and "generated list replaces" not in section
    assert "- `max-probe` (float, default `0.001`): The largest probe allowed.\n" in section
    assert '- `probe-mode` (str, default `"auto"`): When to probe. One of `"auto"`, `"always"`.\n' in section
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    assert tomllib.loads(example) == {"tool": {"rllint": {
        "max-probe": 0.001, "probe-mode": "auto", "probe-names": ["a", "b"], "probe-strict": False}}}


@pytest.mark.parametrize("value", [1e-3, 1e8, 0.2, 3, True, "auto", ["RL1", "x\"y"], float("inf")])
def test_toml_values_read_back(value):
    assert tomllib.loads(f"key = {docs.toml_value(value)}")["key"] == value


def test_index_links_every_rule():
    index = render_index()
    for rule in RULES:
        assert f"| [{rule.code}]({rule.code}.md) | {rule.name} |" in index


def test_summary_is_the_first_paragraph_of_what_it_does():
    from rllint.rules.meta import SyntaxErrorRule

    assert docs.summary(SyntaxErrorRule) == ("Reports a file that Python cannot parse, at the line and column, "
                                             "and with the message, that CPython's own parser gives.")


def docs_main(*args):
    return subprocess.run([sys.executable, "-m", "rllint.docs", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_write_check_and_stale_pages(tmp_path):
    folder = tmp_path / "rules"
    assert docs_main("--check", str(folder)).returncode == 1  # nothing written yet
    written = docs_main(str(folder))
    assert written.returncode == 0
    expected = {f"{code}.md" for code in load_rules()} | {"README.md"}
    assert {p.name for p in folder.iterdir()} == expected
    assert (folder / "RL000.md").read_text() == render_page(load_rules()["RL000"])
    assert docs_main("--check", str(folder)).returncode == 0

    (folder / "RL000.md").write_text("edited by hand\n")
    (folder / "RL999.md").write_text("a rule that is gone\n")
    (folder / "notes.txt").write_text("not a page\n")
    check = docs_main("--check", str(folder))
    assert check.returncode == 1
    assert check.stdout.splitlines() == [f"out of date: {folder / 'RL000.md'}", f"out of date: {folder / 'RL999.md'}"]
    assert docs.write_pages(folder) == ["RL000.md", "RL999.md"]
    assert not (folder / "RL999.md").exists() and (folder / "notes.txt").exists()
    assert docs.out_of_date(folder) == []


def test_fix_safety_says_whether_a_fix_exists_and_whether_it_is_safe():
    rules = load_rules()
    assert "This rule has a fix, safe: `rllint --fix` applies it" in render_page(rules["RL302"])
    assert "This rule has a fix, unsafe: `rllint --fix --unsafe-fixes` applies it" in render_page(rules["RL504"])
    assert "This rule has no automatic fix." in render_page(rules["RL201"])
    index = render_index()
    assert "| correctness | on | safe | Reports a regular expression" in index
    assert "| correctness | on | unsafe | Reports in-place masking" in index
