"""Fixes through the command line as users run them: each fixture in tests/fixes/ is fixed into its
`.fixed.py` twin, parses, and a second run changes nothing; --diff, safety, JSON edits, --add-noqa."""
import ast
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rllint import cli
from rllint.fix import edited, Edit, load_builders

FIXES = Path(__file__).parent / "fixes"
INPUTS = sorted(p for p in FIXES.glob("*.py") if not p.name.endswith(".fixed.py"))


def run(*args):
    return CliRunner().invoke(cli.main, list(args))


def codes_of(path: Path) -> str:
    return ",".join(part for part in path.stem.split("_") if part.startswith("RL"))


@pytest.mark.parametrize("source", INPUTS, ids=lambda p: p.stem)
def test_fixture_is_fixed_into_its_twin_and_a_second_run_changes_nothing(source, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / source.name
    shutil.copy(source, target)
    first = run("--select", codes_of(source), "--fix", "--unsafe-fixes", source.name)
    fixed = target.read_bytes()
    assert fixed == (FIXES / f"{source.stem}.fixed.py").read_bytes(), first.output
    ast.parse(fixed)
    again = run("--select", codes_of(source), "--fix", "--unsafe-fixes", source.name)
    assert target.read_bytes() == fixed
    assert "fixed" not in again.output and "fixable" not in again.output
    assert run("--select", codes_of(source), "--diff", "--unsafe-fixes", source.name).exit_code == 0


def test_every_builder_has_a_fixture():
    assert set(load_builders()) <= {code for source in INPUTS for code in codes_of(source).split(",")}


def test_unsafe_fixes_need_the_flag(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXES / "RL108_log_softmax.py", "train.py")
    result = run("--select", "RL108", "--fix", "train.py")
    assert result.exit_code == 1  # the finding whose fix drops an epsilon is left
    assert result.output.splitlines()[1:] == ["Found 3 findings (2 fixed, 1 remaining).",
                                              "1 fixable with `--fix --unsafe-fixes`."]
    assert "torch.log(F.softmax(logits, dim=-1) + 1e-8)" in Path("train.py").read_text()


def test_diff_prints_the_fixes_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXES / "RL302_dotall.py", "train.py")
    before = Path("train.py").read_bytes()
    result = run("--select", "RL302", "--diff", "train.py")
    assert result.exit_code == 1
    assert Path("train.py").read_bytes() == before
    assert result.stdout.startswith("--- a/train.py\n+++ b/train.py\n@@ ")
    assert "+FORMAT = re.compile(r\"^<think>.+?</think>\\n<answer>.+?</answer>$\", flags=re.DOTALL)\n" in result.stdout
    assert result.stderr == "Would fix 4 findings.\n"


def test_json_fix_carries_the_edit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = "import re\n\nFORMAT = re.compile(r'<think>.*?</think>')\n"
    Path("train.py").write_text(source)
    (finding,) = json.loads(run("--select", "RL302", "--format", "json", "train.py").stdout)
    assert finding["fix"] == {
        "message": "Add `flags=re.DOTALL`", "applicability": "safe",
        "edits": [{"content": "re.compile(r'<think>.*?</think>', flags=re.DOTALL)", "location": {"row": 3, "column": 10},
                   "end_location": {"row": 3, "column": 43}}]}  # the reported call, rewritten
    (edit,) = finding["fix"]["edits"]
    applied = edited(source, [Edit(edit["location"]["row"], edit["location"]["column"], edit["end_location"]["row"],
                                   edit["end_location"]["column"], edit["content"])])
    assert applied == "import re\n\nFORMAT = re.compile(r'<think>.*?</think>', flags=re.DOTALL)\n"


def test_fixes_keep_line_endings_and_the_files_encoding(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = "# -*- coding: latin-1 -*-\r\nimport re\r\n\r\nNAME = 'caf\xe9'\r\nFORMAT = re.compile(r'<think>.*?</think>')\r\n"
    Path("train.py").write_bytes(source.encode("latin-1"))
    run("--select", "RL302", "--fix", "train.py")
    assert Path("train.py").read_bytes() == source.replace("'<think>.*?</think>')", "'<think>.*?</think>', "
                                                           "flags=re.DOTALL)").encode("latin-1")


def test_add_noqa_silences_every_finding_and_is_idempotent(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = ('import re\n\nA = re.compile(r"<think>.*?</think>")\nB = re.compile(r"<think>.*?</think>")  # noqa: RL999\n'
              'C = re.compile("""<think>.*?\n</think>""")\n')
    Path("train.py").write_text(source)
    result = run("--select", "RL302", "--add-noqa", "train.py")
    assert (result.exit_code, result.output) == (0, "Added 2 noqa directives.\n")
    assert Path("train.py").read_text() == (
        'import re\n\nA = re.compile(r"<think>.*?</think>")  # noqa: RL302\n'
        'B = re.compile(r"<think>.*?</think>")  # noqa: RL999, RL302\n'
        'C = re.compile("""<think>.*?\n</think>""")\n')  # a line that ends inside a string cannot take a comment
    assert run("--select", "RL302", "--add-noqa", "train.py").output == "Added 0 noqa directives.\n"


@pytest.mark.slow
def test_fixing_the_shipped_fixtures_leaves_nothing_fixable_and_code_that_parses(tmp_path, monkeypatch):
    """The issue's acceptance run: `rllint --fix`, then `rllint`, on the fixtures of the fixable rules."""
    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    for code in load_builders():
        for source in fixtures.glob(f"{code}_*"):
            shutil.copy(source, tmp_path / source.name)
    monkeypatch.chdir(tmp_path)
    fixed = run("--fix", "--unsafe-fixes", ".")
    assert "fixed," in fixed.output
    again = run("--unsafe-fixes", ".")
    assert "fixable" not in again.output
    for path in tmp_path.glob("*.py"):
        ast.parse(path.read_text())


def test_rl107_casts_to_float32_where_the_value_is_cast_down(tmp_path, monkeypatch):
    """`.half().float()` keeps the precision `.half()` lost (issue 25.7): the cast itself becomes float32; in an
    earlier assignment, which every later use of the name sees, only as an unsafe fix."""
    monkeypatch.chdir(tmp_path)
    source = ("import torch\n\n\ndef logps(logits, hidden):\n    a = torch.log_softmax(logits.half(), dim=-1)\n"
              "    h = hidden.to(torch.bfloat16)\n    return a, h.log_softmax(-1)\n")
    Path("train.py").write_text(source)
    assert run("--select", "RL107", "--fix", "train.py").exit_code == 1  # the unsafe one is left
    assert Path("train.py").read_text() == source.replace("logits.half()", "logits.float()")
    run("--select", "RL107", "--fix", "--unsafe-fixes", "train.py")
    assert Path("train.py").read_text() == source.replace("logits.half()", "logits.float()").replace(
        "torch.bfloat16", "torch.float32")
