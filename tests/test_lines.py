"""Lines as Python counts them (issue 26.3): only \\n, \\r\\n and \\r end a line, so that `--add-noqa` and the
language server's quick fixes put their edits on the line a finding names, never inside a string or
before the code (a form feed, \\v, U+0085 or U+2028 is inside a line for Python, not for `str.splitlines`)."""
import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from rllint import cli
from rllint.fix import Edit, edited
from rllint.source import split_lines

REGEX = "FORMAT = re.compile(r'<think>.*?</think>')"
# Characters that `str.splitlines` breaks at and Python does not.
NOT_LINE_ENDINGS = ["\f", "\v", "\x1c", "\x85", "\u2028", "\u2029"]


def test_split_lines_ends_lines_where_python_does():
    text = "a\nb\r\nc\rd\fe\u2028f\x85g"
    assert split_lines(text) == ["a\n", "b\r\n", "c\r", "d\fe\u2028f\x85g"]
    assert [node.lineno for node in ast.parse("x = 1\ny = '\u2028'\rz = 3").body] == [1, 2, 3]
    assert split_lines("") == [] and split_lines("a\n") == ["a\n"]


@pytest.mark.parametrize("separator", NOT_LINE_ENDINGS, ids=repr)
def test_add_noqa_lands_on_the_findings_line(separator, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = f"import re\nNOTE = 'a{separator}b'  # c{separator}d\n{REGEX}\n"
    Path("train.py").write_bytes(source.encode())
    run = CliRunner().invoke(cli.main, ["--select", "RL302", "--add-noqa", "train.py"])
    assert run.output == "Added 1 noqa directive.\n"
    fixed = Path("train.py").read_bytes().decode()
    assert fixed == source.replace(REGEX, REGEX + "  # noqa: RL302")
    assert ast.dump(ast.parse(fixed)) == ast.dump(ast.parse(source))
    assert CliRunner().invoke(cli.main, ["--select", "RL302", "train.py"]).exit_code == 0


def test_add_noqa_with_lone_carriage_returns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = f"import re\rTEXT = '''a\rb'''\r{REGEX}\r"
    Path("train.py").write_bytes(source.encode())
    CliRunner().invoke(cli.main, ["--select", "RL302", "--add-noqa", "train.py"])
    assert Path("train.py").read_bytes().decode() == source.replace(REGEX, REGEX + "  # noqa: RL302")
    assert CliRunner().invoke(cli.main, ["--select", "RL302", "train.py"]).exit_code == 0  # the comment is seen


def test_edits_count_lines_as_python():
    text = "s = 'a\u2028b'\nx = 1\n"
    assert edited(text, [Edit(2, 5, 2, 6, "2")]) == "s = 'a\u2028b'\nx = 2\n"


def test_server_quick_fixes_count_lines_as_python():
    pytest.importorskip("pygls")
    from lsprotocol import types
    from pygls.workspace import TextDocument

    from rllint.runner import lint_text
    from rllint.server import _actions
    from rllint.settings import Settings

    source = f"import re\nNOTE = 'a\u2028b\fc'\n{REGEX}\n"
    uri = "file:///project/train.py"
    document = TextDocument(uri, source)
    findings = [d for d in lint_text(source, "/project/train.py", Settings(select=["RL302"])).diagnostics]
    assert [(d.code, d.line) for d in findings] == [("RL302", 3)]

    class Server:
        class workspace:
            @staticmethod
            def get_text_document(_):
                return document

    Server.findings = {uri: findings}
    Server.docs_urls = {}
    whole = types.Range(start=types.Position(0, 0), end=types.Position(3, 0))
    actions = _actions(Server(), types.CodeActionParams(types.TextDocumentIdentifier(uri), whole,
                                                        types.CodeActionContext(diagnostics=[])))
    assert [action.diagnostics[0].range.start.line for action in actions] == [2, 2]
    fix, noqa = (_apply_lsp(source, action.edit.changes[uri]) for action in actions)
    assert noqa == source.replace(REGEX, REGEX + "  # noqa: RL302")
    assert fix == source.replace(REGEX, REGEX[:-1] + ", flags=re.DOTALL)")


def _apply_lsp(text: str, edits) -> str:
    """Apply LSP text edits as an editor does: lines end at \\n, \\r\\n and \\r only (the LSP specification);
    every character of this text is one UTF-16 unit."""
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        lines = split_lines(text)
        start = sum(map(len, lines[:edit.range.start.line])) + edit.range.start.character
        end = sum(map(len, lines[:edit.range.end.line])) + edit.range.end.character
        text = text[:start] + edit.new_text + text[end:]
    return text
