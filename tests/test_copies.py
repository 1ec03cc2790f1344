"""Byte-identical copies of a file (backups of a script in run folders) are reported on their own, in every
format, in --statistics, and by --fix and --add-noqa (issue 25.2): none is folded into another."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rllint import cli

SCRIPT = "import re\nA = re.compile(r'<think>.*?</think>')\nB = re.compile(r'^<think>.*?</think>')\n"
COPIES = ("train.py", "runs/1/train.py")


def run(*args):
    return CliRunner().invoke(cli.main, ["--select", "RL302", *args])


@pytest.fixture
def copies(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for path in COPIES:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(SCRIPT)
    return tmp_path


def test_every_copy_is_reported_on_its_own(copies):
    text = run(".")
    assert text.stdout.splitlines()[-2:] == ["Found 4 findings in 2 files.", "4 fixable with `--fix`."]
    assert sorted({line.split(":")[0] for line in text.stdout.splitlines()[:4]}) == sorted(COPIES)
    assert all("identical" not in line for line in text.stdout.splitlines())
    assert run("--statistics", ".").stdout == "4  RL302  think-regex-without-dotall\n"
    assert sorted(d["path"] for d in json.loads(run("--format", "json", ".").stdout)) == sorted(COPIES * 2)
    assert run("--format", "github", ".").stdout.count("::error file=runs/1/train.py") == 2
    results = json.loads(run("--format", "sarif", ".").stdout)["runs"][0]["results"]
    assert sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results) == sorted(COPIES * 2)


def test_add_noqa_and_fix_change_every_copy(copies):
    assert run("--add-noqa", ".").output == "Added 4 noqa directives.\n"
    assert run(".").exit_code == 0
    for path in COPIES:
        Path(path).write_text(SCRIPT)
    fixed = run("--fix", ".")
    assert fixed.stdout.splitlines()[-1] == "Found 4 findings (4 fixed, 0 remaining)."  # as the hint said
    assert all(Path(path).read_text().count("re.DOTALL") == 2 for path in COPIES)
