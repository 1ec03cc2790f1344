"""ruff's fix flags and keys (issue 25.7, 25.8): --fix and --diff on standard input, --show-fixes, --fix-only,
--exit-non-zero-on-fix, fixable / unfixable, and --target-version / target-version (with RL404's fix)."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rllint import cli, settings as settings_module
from rllint.runner import lint_text
from rllint.settings import Settings

REGEX = "FORMAT = re.compile(r'<think>.*?</think>')"
FIXED = "FORMAT = re.compile(r'<think>.*?</think>', flags=re.DOTALL)"
SOURCE = f"import re\n{REGEX}\n"
SAFE_AND_UNSAFE = ("import torch\nimport re\n\n\ndef logps(logits):\n    a = torch.log_softmax(logits.half(), -1)\n"
                   "    h = logits.to(torch.bfloat16)\n    return a, h.log_softmax(-1)\n")


def run(*args, stdin=None):
    return CliRunner().invoke(cli.main, list(args), input=stdin)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_fix_on_standard_input_prints_the_fixed_source(folder):
    result = run("-", "--fix", "--select", "RL302", "--stdin-filename", "train.py", stdin=SOURCE)
    assert (result.exit_code, result.stdout, result.stderr) == (0, f"import re\n{FIXED}\n", "")
    left = run("-", "--fix", "--select", "RL107", "--stdin-filename", "train.py", stdin=SAFE_AND_UNSAFE)
    assert left.stdout == SAFE_AND_UNSAFE.replace("logits.half()", "logits.float()")
    assert left.exit_code == 1 and left.stderr.startswith("train.py:8:15: RL107 ")  # the unsafe one is left
    assert not Path("train.py").exists()  # nothing is written


def test_diff_on_standard_input_prints_the_diff(folder):
    result = run("-", "--diff", "--select", "RL302", "--stdin-filename", "train.py", stdin=SOURCE)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[:2] == ["--- a/train.py", "+++ b/train.py"]
    assert f"+{FIXED}" in result.stdout.splitlines()


def test_fix_on_standard_input_of_a_notebook_prints_its_json(folder):
    notebook = {"cells": [{"cell_type": "code", "source": ["import re\n", REGEX]}], "metadata": {}, "nbformat": 4,
                "nbformat_minor": 5}
    text = json.dumps(notebook, indent=1)
    result = run("-", "--fix", "--select", "RL302", "--stdin-filename", "train.ipynb", stdin=text)
    assert result.stdout == text.replace(json.dumps(REGEX), json.dumps(FIXED))


def test_standard_input_that_cannot_be_fixed_is_printed_unchanged(folder):
    data = f"# coding: unicode_escape\n{SOURCE}".encode()
    result = run("-", "--fix", "--select", "RL302", "--stdin-filename", "train.py", stdin=data)
    assert result.exit_code == 2 and result.stdout_bytes == data
    assert result.stderr.startswith("rllint: error: train.py: not changed: its encoding (unicode_escape)")


def test_show_fixes_lists_what_was_fixed_per_file_and_rule(folder):
    Path("train.py").write_text(SOURCE + REGEX.replace("FORMAT", "OTHER") + "\n")
    result = run("--fix", "--show-fixes", "--select", "RL302", "train.py")
    assert result.stdout == ("Fixed 2 findings:\n- train.py:\n    2 × RL302 (think-regex-without-dotall)\n"
                             "Found 2 findings (2 fixed, 0 remaining).\n")
    Path("train.py").write_text(SOURCE)
    assert run("--diff", "--show-fixes", "--select", "RL302", "train.py").stderr == (
        "Would fix 1 finding:\n- train.py:\n    1 × RL302 (think-regex-without-dotall)\n")


def test_fix_only_reports_nothing_left_and_exit_non_zero_on_fix(folder):
    Path("train.py").write_text(SAFE_AND_UNSAFE)
    result = run("--fix-only", "--select", "RL107", "train.py")
    assert (result.exit_code, result.output) == (0, "Fixed 1 finding.\n")  # the unsafe finding left is not reported
    Path("train.py").write_text(SAFE_AND_UNSAFE)
    assert run("--fix-only", "--exit-non-zero-on-fix", "--select", "RL107", "train.py").exit_code == 1
    assert run("--fix-only", "--exit-non-zero-on-fix", "--select", "RL107", "train.py").exit_code == 0  # nothing left
    Path("train.py").write_text(SOURCE)
    fixed_all = run("--fix", "--exit-non-zero-on-fix", "--select", "RL302", "train.py")
    assert fixed_all.exit_code == 1 and fixed_all.stdout == "Found 1 finding (1 fixed, 0 remaining).\n"


def test_fixable_and_unfixable_keys_and_flags(folder):
    Path("train.py").write_text(SAFE_AND_UNSAFE.replace("import re\n", f"import re\n{REGEX}\n"))
    Path("rllint.toml").write_text('unfixable = ["RL107"]\n')
    found = json.loads(run("--select", "RL302,RL107", "--format", "json", "train.py").stdout)
    assert {d["code"]: d["fix"] is not None for d in found} == {"RL302": True, "RL107": False}
    assert run("--select", "RL302,RL107", "train.py").stdout.splitlines()[-1] == "1 fixable with `--fix`."
    run("--select", "RL302,RL107", "--fix", "--unsafe-fixes", "train.py")
    assert "logits.half()" in Path("train.py").read_text() and FIXED in Path("train.py").read_text()
    Path("rllint.toml").write_text('fixable = ["low-precision-log-softmax"]\n')  # names select as codes do
    Path("train.py").write_text(SAFE_AND_UNSAFE.replace("import re\n", f"import re\n{REGEX}\n"))
    run("--select", "RL302,RL107", "--fix", "train.py")
    assert "logits.float()" in Path("train.py").read_text() and FIXED not in Path("train.py").read_text()
    run("--select", "RL302,RL107", "--fix", "--fixable", "RL3", "--unfixable", "RL107", "train.py")
    assert FIXED in Path("train.py").read_text()
    Path("rllint.toml").write_text('unfixable = ["RL999"]\n')
    bad = run("train.py")
    assert bad.exit_code == 2 and "rllint.toml: 'unfixable'" in bad.stderr


REWARD = ("def accuracy_reward(completions, solutions, **kwargs):\n"
          "    return [1.0 if c == s else 0.0 for c, s in zip(completions, solutions)]\n")


def test_rl404_follows_the_running_python_when_nothing_says_otherwise(monkeypatch):
    monkeypatch.setattr(settings_module, "RUNNING_PYTHON", (3, 9))
    assert lint_text(REWARD, "rewards.py", Settings(select=["RL404"])).diagnostics == []
    monkeypatch.setattr(settings_module, "RUNNING_PYTHON", (3, 11))
    (finding,) = lint_text(REWARD, "rewards.py", Settings(select=["RL404"])).diagnostics
    assert finding.fix is not None


def test_target_version_flag_and_key_win_over_requires_python(folder):
    Path("rewards.py").write_text(REWARD)
    Path("pyproject.toml").write_text('[project]\nrequires-python = ">=3.9"\n[tool.rllint]\nselect = ["RL404"]\n')
    assert run("rewards.py").exit_code == 0
    assert run("--target-version", "py310", "rewards.py").exit_code == 1
    Path("pyproject.toml").write_text('[project]\nrequires-python = ">=3.9"\n[tool.rllint]\nselect = ["RL404"]\n'
                                      'target-version = "py311"\n')
    assert run("rewards.py").exit_code == 1
    assert "# target Python: 3.11" in run("--show-settings", "rewards.py").stdout
    assert run("--target-version", "py39", "rewards.py").exit_code == 0
    bad = run("--target-version", "3.9", "rewards.py")
    assert bad.exit_code == 2 and "--target-version must be a Python version such as \"py39\"" in bad.stderr
