"""Every fixture is linted as users lint it, and its findings must be exactly its labels."""
import re
from pathlib import Path

import pytest

from rllint.runner import lint_files
from rllint.settings import Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXPECT = re.compile(r"expect:\s*((?:RL\d{3}[\s,]*)+)")
# `# select: RL601` in a fixture's first lines: it shows a rule's broad form, which runs when the rule is named.
NAMED = re.compile(r"^#\s*select:\s*((?:RL\d{3}[\s,]*)+)", re.M)
SUFFIXES = {".py", ".yaml", ".yml", ".sh"}


def labelled(path: Path) -> set:
    expected = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            expected.update((number, code) for code in re.findall(r"RL\d{3}", match.group(1)))
    return expected


CASES = sorted(p for p in FIXTURES.rglob("*") if p.suffix in SUFFIXES and p.is_file())


def test_there_are_fixtures():
    assert len(CASES) >= 2


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_fixture_findings_match_labels(path):
    named = NAMED.search("\n".join(path.read_text(encoding="utf-8").splitlines()[:5]))
    broad = re.findall(r"RL\d{3}", named.group(1)) if named else []
    result = lint_files([str(path)], Settings(select=["ALL"] + broad))  # every rule, default forms
    assert result.errors == []
    found = {(d.line, d.code) for d in result.diagnostics}
    assert found == labelled(path)
