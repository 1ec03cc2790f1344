"""Notebooks (issues 25.5, 26.4, 26.5): --fix, --diff and --add-noqa edit code cells and leave every other
byte of the notebook as it was; SARIF regions and the README's problem matcher name the cell; the size
bounds hold for the code cells' text, not for image outputs; malformed JSON is one line, never a crash."""
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rllint import cli, notebook, runner
from rllint.settings import Settings

REGEX = "FORMAT = re.compile(r'<think>.*?</think>')"
FIXED = "FORMAT = re.compile(r'<think>.*?</think>', flags=re.DOTALL)"
README = Path(__file__).resolve().parent.parent / "README.md"


def run(*args):
    return CliRunner().invoke(cli.main, ["--select", "RL302", *args])


def nbformat(cells, **metadata) -> str:
    """A notebook as Jupyter writes one: sorted keys, one space of indentation, sources as lists of lines."""
    found = []
    for kind, source in cells:
        cell = {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
        if kind == "code":
            cell.update(execution_count=7, outputs=[{
                "data": {"image/png": "iVBORw0KGgo=", "text/plain": ["<Figure size 640x480>"]},
                "metadata": {"needs_background": "light"}, "output_type": "display_data"}])
        found.append(cell)
    document = {"cells": found, "metadata": {"kernelspec": {"name": "python3"}, **metadata}, "nbformat": 4,
                "nbformat_minor": 5}
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


CELLS = [("markdown", "# Run ✓\n"), ("code", "import re\n"), ("code", f"%%time\nx = 1\n{REGEX}\n")]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_fix_edits_the_cell_and_keeps_every_other_byte(folder):
    # Numbers beyond a float and over Python's 4,300 digits stay as written (issue 26.5).
    original = nbformat(CELLS).replace('"nbformat_minor": 5', '"nbformat_minor": 5, "x": 1e400, "y": ' + "7" * 5000)
    Path("train.ipynb").write_text(original)
    result = run("--fix", "train.ipynb")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "Found 1 finding (1 fixed, 0 remaining)."
    assert Path("train.ipynb").read_text() == original.replace(f'"{REGEX}\\n"', f'"{FIXED}\\n"')
    assert run("train.ipynb").exit_code == 0


def test_a_source_written_as_one_string_stays_one(folder):
    document = json.loads(nbformat(CELLS))
    document["cells"][2]["source"] = "".join(document["cells"][2]["source"])
    original = json.dumps(document, indent=2)
    Path("train.ipynb").write_text(original)
    run("--fix", "train.ipynb")
    assert Path("train.ipynb").read_text() == original.replace(REGEX, FIXED)


def test_diff_names_the_cell_and_writes_nothing(folder):
    Path("train.ipynb").write_text(nbformat(CELLS))
    result = run("--diff", "train.ipynb")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[:2] == ["--- a/train.ipynb:cell 3", "+++ b/train.ipynb:cell 3"]
    assert f"-{REGEX}" in result.stdout and f"+{FIXED}" in result.stdout
    assert Path("train.ipynb").read_text() == nbformat(CELLS)


def test_json_fix_edits_count_the_cells_lines_and_the_hint_counts_them(folder):
    Path("train.ipynb").write_text(nbformat(CELLS))
    (finding,) = json.loads(run("--format", "json", "train.ipynb").stdout)
    assert (finding["cell"], finding["line"]) == (3, 3)
    assert [(e["location"]["row"], e["end_location"]["row"]) for e in finding["fix"]["edits"]] == [(3, 3)]
    assert run("train.ipynb").stdout.splitlines()[-1] == "1 fixable with `--fix`."


def test_add_noqa_comments_cells(folder):
    cells = CELLS + [("code", REGEX + "\n")]
    Path("train.ipynb").write_text(nbformat(cells))
    result = run("--add-noqa", "train.ipynb")
    assert (result.exit_code, result.output) == (0, "Added 2 noqa directives.\n")
    text = Path("train.ipynb").read_text()
    assert text == nbformat(cells).replace(f'"{REGEX}\\n"', f'"{REGEX}  # noqa: RL302\\n"').replace(
        f'"{REGEX}"', f'"{REGEX}  # noqa: RL302"')
    assert run("train.ipynb").exit_code == 0


def test_a_notebook_that_cannot_be_changed_says_why(folder):
    old = {"nbformat": 3, "worksheets": [{"cells": [{"cell_type": "code", "input": ["import re\n", REGEX + "\n"]}]}]}
    Path("old.ipynb").write_text(json.dumps(old))
    Path("train.ipynb").write_text(nbformat(CELLS))
    result = run("--fix", ".")
    assert result.exit_code == 2
    assert result.stderr == ("rllint: error: old.ipynb: not changed: only notebooks of nbformat 4 (a top-level list "
                             "of cells) are changed\n")
    assert Path("old.ipynb").read_text() == json.dumps(old) and FIXED in Path("train.ipynb").read_text()


def test_sarif_regions_name_the_cell(folder):
    Path("train.ipynb").write_text(nbformat(CELLS))
    (result,) = json.loads(run("--format", "sarif", "train.ipynb").stdout)["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["properties"] == {"cell": 3} and region["message"] == {"text": "cell 3, line 3"}
    assert (region["startLine"], region["startColumn"]) == (3, 10)


def test_the_readme_problem_matcher_reads_cell_positions():
    (pattern,) = re.findall(r'"regexp": "(.*)"', README.read_text())
    matcher = re.compile(json.loads(f'"{pattern}"'))
    found = matcher.match("train.ipynb:cell 3:2:13: RL302 pattern ...")
    assert found.group(1, 2, 3, 4) == ("train.ipynb", "2", "13", "RL302")
    assert matcher.match("src/train.py:10:64: RL601 rate").group(1, 2, 3, 4) == ("src/train.py", "10", "64", "RL601")


def test_image_outputs_do_not_count_against_the_bounds_but_code_cells_do(folder, monkeypatch):
    """The bounds lowered, as the file sizes they stand for would fill the machine."""
    monkeypatch.setattr(runner, "MAX_FILE_BYTES", 4_000)
    monkeypatch.setattr(runner, "MAX_NOTEBOOK_BYTES", 40_000)
    monkeypatch.setattr(runner, "MAX_PYTHON_BYTES", 2_000)
    images = json.loads(nbformat(CELLS))
    images["cells"][1]["outputs"][0]["data"]["image/png"] = "A" * 20_000
    data = json.dumps(images).encode()
    assert [d.code for d in runner.lint_bytes(data, "train.ipynb", Settings(select=["RL302"])).diagnostics] == ["RL302"]
    compiled = []
    monkeypatch.setattr(notebook, "_syntax_error", lambda lines: compiled.append(lines))
    code = nbformat([("code", "x = (\n" * 500)])  # a cell Python would parse (and fail on) at great cost
    result = runner.lint_bytes(code.encode(), "big.ipynb", Settings())
    assert [e.message for e in result.errors] == [
        "too large to lint (0.0 MiB of Python; rllint lints Python files up to 0 MiB)"]
    assert compiled == []  # refused before any cell was parsed
    huge = runner.lint_bytes(b" " * 40_001, "huge.ipynb", Settings())
    assert [e.message for e in huge.errors] == ["too large to lint (0.0 MiB; rllint reads files up to 0 MiB)"]


@pytest.mark.parametrize("value, message", [
    ("[" * 5000 + "]" * 5000, "not a valid notebook: its JSON is nested too deeply to read"),
    ('"\\ud800" ', None),  # a lone surrogate in metadata: read, never a crash
])
def test_malformed_json_is_one_line_never_an_internal_error(value, message, folder):
    text = nbformat(CELLS).replace('"nbformat": 4', f'"x": {value}, "nbformat": 4')
    Path("train.ipynb").write_text(text)
    result = run("train.ipynb")
    if message is None:
        assert result.exit_code == 1 and result.stderr == ""
    else:
        assert (result.exit_code, result.stderr) == (2, f"rllint: error: train.ipynb: {message}\n")


def test_a_fix_that_would_break_its_cell_leaves_the_notebook_as_it_was():
    """A cell that does not parse is left out of the joined text, so the joined text alone would not say so."""
    from rllint.diagnostic import Diagnostic, Severity
    from rllint.fix import Edit, Fix
    from rllint.fix.apply import FixError, _fixed_notebook

    data = nbformat(CELLS).encode()
    broken = Diagnostic("train.ipynb", 2, 1, 2, 6, "RL302", "think-regex-without-dotall", Severity.ERROR, "m",
                        Fix("break it", (Edit(2, 1, 2, 6, "x = ("),), True), cell=3)
    with pytest.raises(FixError, match=r"produced code that does not parse \(cell 3: "):
        _fixed_notebook(data, [broken])
