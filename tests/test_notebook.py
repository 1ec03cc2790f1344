"""Notebooks: code cells joined with their boundaries kept, IPython syntax masked, findings placed in cells;
and files named on the command line that rllint does not lint are warned about."""
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rllint import cli
from rllint.notebook import NotebookError, read_cells


def notebook(*cells, markdown_first=True) -> str:
    found = [{"cell_type": "markdown", "metadata": {}, "source": ["# A GRPO run\n"]}] if markdown_first else []
    for source in cells:
        lines = source.splitlines(keepends=True)
        found.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": lines})
    return json.dumps({"cells": found, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def run(*args):
    return CliRunner().invoke(cli.main, list(args))


IMPORTS = "!pip install trl\n%matplotlib inline\nimport re\n"
REGEX = "%%time\nFORMAT = re.compile(r'<think>.*?</think>')\n"


def test_cells_are_joined_with_magics_masked_and_lines_kept():
    cells = read_cells(notebook(IMPORTS, REGEX, "%%bash\necho hi\nif [ -x ]; then\n", "files = !ls\nx = 1\n").encode())
    assert cells.text == "pass\npass\nimport re\n\nFORMAT = re.compile(r'<think>.*?</think>')\n\n\n\npass\nx = 1\n"
    assert cells.origins == ((2, 1), (2, 2), (2, 3), (3, 1), (3, 2), (4, 1), (4, 2), (4, 3), (5, 1), (5, 2))


def test_a_percent_that_continues_a_statement_is_python():
    source = "msg = ('loss %f'\n       % loss)\nvalue = ratio\\\n    % 2\n%time f()\n"
    assert read_cells(notebook(source).encode()).text == (
        "msg = ('loss %f'\n       % loss)\nvalue = ratio\\\n    % 2\npass\n")


def test_help_and_indented_magics_become_pass_at_their_indentation():
    source = "torch.log_softmax?\nfor i in range(3):\n    %time step(i)\n"
    assert read_cells(notebook(source).encode()).text == "pass\nfor i in range(3):\n    pass\n"


def test_automagics_are_masked_where_they_are_no_python():
    source = "cd ..\npip install trl\nls = [1]\nls\nrun = 3\nconfig = dict(\n    a=1,\n)\ntime.sleep(1)\n"
    assert read_cells(notebook(source).encode()).text == (
        "pass\npass\nls = [1]\nls\nrun = 3\nconfig = dict(\n    a=1,\n)\ntime.sleep(1)\n")


def test_a_cell_that_does_not_parse_is_left_out_and_reported_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cells = read_cells(notebook("x = 1\n", "train +\n", "y = (x\n").encode())
    assert cells.text == "x = 1\n\n\n"
    assert [(cell, line) for cell, line, _, _, _ in cells.broken] == [(3, 1), (4, 1)]
    Path("scratch.ipynb").write_text(notebook("import re\n", "train +\n", REGEX))
    lines = run("scratch.ipynb").stdout.splitlines()
    assert lines[0].startswith("scratch.ipynb:cell 3:1:8: RL000 syntax error: invalid syntax")
    assert lines[1].startswith("scratch.ipynb:cell 4:2:10: RL302")  # the other cells are still linted


NEWER = 'row = {"name": "x"}\nprint(f"{row["name"]}")\n'  # an f-string that reuses its quotes: Python 3.12


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the running Python parses 3.12 f-strings")
@pytest.mark.parametrize("kernel, syntax_error", [("3.13.1", False), (None, False), ("3.11.4", True)])
def test_a_cell_of_newer_python_is_a_syntax_error_only_for_the_kernel_that_ran_it(tmp_path, monkeypatch, kernel,
                                                                                 syntax_error):
    """A cell the running Python cannot parse but libcst can is newer Python: RL000 only when the notebook ran
    on a Python no newer than the running one (its kernel's `language_info`); otherwise a one-line error that
    says to run rllint on a newer Python, as for a .py file, and the other cells are linted."""
    monkeypatch.chdir(tmp_path)
    data = json.loads(notebook("import re\n", NEWER, REGEX))
    if kernel is not None:
        data["metadata"]["language_info"] = {"name": "python", "version": kernel}
    Path("scratch.ipynb").write_text(json.dumps(data))
    result = run("scratch.ipynb")
    assert ("scratch.ipynb:cell 3:2:" in result.stdout and "RL000" in result.stdout) is syntax_error
    assert ("cell 3 uses syntax that Python" in result.output and "run rllint on a newer Python" in result.output) \
        is not syntax_error
    assert "scratch.ipynb:cell 4:2:10: RL302" in result.stdout


def test_nbformat_3_worksheets():
    old = {"nbformat": 3, "worksheets": [{"cells": [{"cell_type": "code", "input": ["x = 1\n"]}]}]}
    assert read_cells(json.dumps(old).encode()).text == "x = 1\n"


@pytest.mark.parametrize("data, message", [
    (b"{not json", "not a valid notebook: Expecting property name"),
    (b"[1, 2]", "not a valid notebook: the file holds no JSON object"),
    (b'{"cells": {}}', "not a valid notebook: no list of cells"),
    (b'{"cells": [{"cell_type": "code", "source": 3}]}', "not a valid notebook: the source of cell 1 is not text"),
])
def test_malformed_notebooks(data, message):
    with pytest.raises(NotebookError, match=message.replace("(", r"\(")):
        read_cells(data)


def test_findings_point_at_the_cell_and_its_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("train.ipynb").write_text(notebook(IMPORTS, REGEX, "x = 1\nQUIET = re.compile(r'<think>.*?</think>')  # noqa: RL302\n"))
    result = run("train.ipynb")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].startswith("train.ipynb:cell 3:2:10: RL302 pattern '<think>.*?</think>'")
    assert result.stdout.splitlines()[1] == "Found 1 finding in 1 file."
    (finding,) = json.loads(run("--format", "json", "train.ipynb").stdout)
    assert (finding["cell"], finding["line"], finding["column"], finding["end_line"]) == (3, 2, 10, 2)
    assert "file=train.ipynb,title=rllint (RL302)::cell 3, line 2: pattern" in run("--format", "github", "train.ipynb").stdout


def test_folders_are_walked_for_notebooks_and_a_malformed_one_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("good.ipynb").write_text(notebook(IMPORTS, REGEX))
    Path("broken.ipynb").write_text("{")
    result = run(".")
    assert result.exit_code == 2
    assert result.stdout.splitlines()[0].startswith("good.ipynb:cell 3:2:10: RL302")
    assert result.stderr.splitlines() == [
        "rllint: error: broken.ipynb: not a valid notebook: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)"]


def test_a_named_file_of_another_kind_is_warned_about(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("notes.txt").write_text("RL notes\n")
    result = run("notes.txt")
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        "rllint: warning: notes.txt: not a kind of file rllint lints (Python, notebooks, YAML and shell launch "
        "configs); skipped",
        "rllint: warning: No Python files found under the given paths."]


def test_a_folder_without_python_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("README.md").write_text("# nothing to lint\n")
    result = run(".")
    assert (result.exit_code, result.stderr) == (0, "rllint: warning: No Python files found under the given paths.\n")
    assert run("-q", ".").stderr == ""


def test_identical_findings_in_different_cells_are_each_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("train.ipynb").write_text(notebook("import re\n", REGEX, REGEX))
    lines = run("train.ipynb").stdout.splitlines()
    assert [line.split(": RL")[0] for line in lines[:2]] == ["train.ipynb:cell 3:2:10", "train.ipynb:cell 4:2:10"]
    assert lines[2] == "Found 2 findings in 1 file."
