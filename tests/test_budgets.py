"""What a run costs: the memory bounds of one file (README, "Limits") and what commands import."""
import io
import subprocess
import sys
import tokenize
from pathlib import Path
from types import SimpleNamespace

import pytest

from rllint import runner
from rllint.runner import lint_files, lint_text
from rllint.settings import Settings
from rllint.source import token_estimate

TRIGGERING = "import torch\nloss = (ratio * advantages).mean()\nloss.backward()\n"


def test_python_text_beyond_the_byte_bound_is_one_error_before_any_tree_is_built(monkeypatch):
    monkeypatch.setattr(runner, "Suppressions", None)  # the first use of Python's tree
    text = TRIGGERING + "".join(f"weight_{i} = {i}\n" for i in range(80_000))  # 1.6 MiB
    result = lint_text(text, "weights.py", Settings(select=["RL"]))
    assert result.diagnostics == []
    assert [e.message for e in result.errors] == [
        "too large to lint (1.6 MiB of Python; rllint lints Python files up to 1 MiB)"]


@pytest.mark.slow
def test_a_file_beyond_the_node_bound_is_one_error_and_the_others_are_linted(tmp_path):
    dense = tmp_path / "table.py"
    dense.write_text(TRIGGERING + "".join(f"row_{i} = ({i}, {i + 1})\n" for i in range(12_000)))  # 0.25 MiB
    script = tmp_path / "train.py"
    script.write_text("import torch\nratio = torch.exp(old_logp - logp)\n")
    result = lint_files([str(dense), str(script)], Settings(select=["RL"]), isolated=False)
    assert [(e.path, e.message.split(" syntax nodes")[0]) for e in result.errors] == [
        (str(dense), "too large to lint (84,021")]
    assert {d.code for d in result.diagnostics} == {"RL101"}


@pytest.mark.parametrize("argv", [["--version"], ["clean", "--help"], ["rules"], ["rules", "--format", "json"]])
def test_commands_that_lint_nothing_import_no_libcst(argv):
    probe = ("import runpy, sys\nsys.argv = ['rllint', *sys.argv[1:]]\ntry:\n"
             "    runpy.run_module('rllint', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('libcst', 'astroid', 'yaml') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_dense_text_within_the_byte_bound_is_refused_by_its_tokens_before_python_parses_it(monkeypatch):
    def parsed(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr(runner, "ast", SimpleNamespace(parse=parsed))
    text = TRIGGERING + "".join(f"k{i % 10}=[{i % 7},{i % 3}]\n" for i in range(30_000))  # 0.4 MiB, 8 tokens a line
    result = lint_text(text, "table.py", Settings(select=["RL"]))
    assert result.diagnostics == []
    assert [e.message.split(" tokens")[0] for e in result.errors] == ["too large to lint (about 240,021"]


@pytest.mark.slow
def test_text_below_the_token_bound_is_parsed_and_linted():
    padding = "".join(f'SCALE_{i} = "{"x" * 40}"  # {"y" * 40}\n' for i in range(2_000))  # 0.2 MiB, 10k tokens
    flagged = "import torch\nratio = torch.exp(old_logp - logp)\n"
    result = lint_text(flagged + padding, "scaled.py", Settings(select=["RL"]))
    assert result.errors == []
    assert {d.code for d in result.diagnostics} == {"RL101"}


@pytest.mark.parametrize("text, tokens", [
    ("total = f(x) + 1\n", 9),
    ('doc = """several words {inside}\n# not a comment\n"""  # a comment of many words\n', 6),
    ("name = rb'raw \\' quote' if flag else u\"\"\n", 8),
    ("shown = f'{a}:{b!r}'\n", 6),  # each `{` counts for the field the parser makes of it
    ("open = '''never closed\nwords and words\n", 3),  # to the end of the text
    ("cut = 'to the end of the line\nnext\n", 6),
])
def test_token_estimate_counts_strings_and_comments_as_one_token(text, tokens):
    assert token_estimate(text) == tokens


def test_token_estimate_is_never_far_below_pythons_count():
    sample = Path(runner.__file__).read_text()
    counted = sum(1 for t in tokenize.generate_tokens(io.StringIO(sample).readline)
                  if t.type not in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER))
    assert counted <= token_estimate(sample) <= 1.3 * counted
