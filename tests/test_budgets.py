"""What a run costs: the memory bounds of one file (README, "Limits") and what commands import."""
import subprocess
import sys

import pytest

from rllint import runner
from rllint.runner import lint_files, lint_text
from rllint.settings import Settings

TRIGGERING = "import torch\nloss = (ratio * advantages).mean()\nloss.backward()\n"


def test_python_text_beyond_the_byte_bound_is_one_error_before_any_tree_is_built(monkeypatch):
    monkeypatch.setattr(runner, "Suppressions", None)  # the first use of Python's tree
    text = TRIGGERING + "".join(f"weight_{i} = {i}\n" for i in range(80_000))  # 1.6 MiB
    result = lint_text(text, "weights.py", Settings(select=["RL"]))
    assert result.diagnostics == []
    assert [e.message for e in result.errors] == [
        "too large to lint (1.6 MiB of Python; rllint lints Python files up to 1 MiB)"]


def test_a_file_beyond_the_node_bound_is_one_error_and_the_others_are_linted(tmp_path):
    dense = tmp_path / "table.py"
    dense.write_text(TRIGGERING + "".join(f"row_{i} = ({i}, {i + 1})\n" for i in range(12_000)))  # 0.25 MiB
    script = tmp_path / "train.py"
    script.write_text("import torch\nratio = torch.exp(old_logp - logp)\n")
    result = lint_files([str(dense), str(script)], Settings(select=["RL"]), isolated=False)
    assert [(e.path, e.message.split(" syntax nodes")[0]) for e in result.errors] == [
        (str(dense), "too large to lint (84,021")]
    assert {d.code for d in result.diagnostics} == {"RL101"}


@pytest.mark.parametrize("argv", [["--version"], ["clean", "--help"]])
def test_commands_that_lint_nothing_import_no_libcst(argv):
    probe = ("import runpy, sys\nsys.argv = ['rllint', *sys.argv[1:]]\ntry:\n"
             "    runpy.run_module('rllint', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('libcst', 'astroid', 'yaml') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
