"""Each output format on hand-made findings, including the characters that formats must escape."""
import io
import json
from pathlib import Path

import pytest

from rllint.diagnostic import Diagnostic, Severity
from rllint.report import FORMATS, ReportOptions, full, github, json_array, json_lines, sarif, text


def finding(path="src/train.py", line=3, column=5, code="RL000", name="syntax-error",
            severity=Severity.ERROR, message="syntax error: invalid syntax", end=(3, 9)):
    return Diagnostic(path, line, column, end[0], end[1], code, name, severity, message)


def written(writer, diagnostics):
    stream = io.StringIO()
    writer(diagnostics, stream)
    return stream.getvalue()


def test_format_names():
    assert set(FORMATS) == {"text", "concise", "full", "json", "json-lines", "github", "sarif"}
    assert FORMATS["concise"] is FORMATS["text"] is text.write


def test_text_is_flake8s_format():
    assert written(text.write, [finding(), finding(line=10, column=1)]) == (
        "src/train.py:3:5: RL000 syntax error: invalid syntax\n"
        "src/train.py:10:1: RL000 syntax error: invalid syntax\n")
    assert written(text.write, []) == ""


def test_json_is_an_array_of_the_diagnostic_fields():
    diagnostic = finding(message="naïve ratio")
    parsed = json.loads(written(json_array.write, [diagnostic]))
    assert parsed == [{"path": "src/train.py", "line": 3, "column": 5, "end_line": 3, "end_column": 9,
                       "code": "RL000", "name": "syntax-error", "severity": "error",
                       "message": "naïve ratio", "fix": None, "cell": None}]
    assert json.loads(written(json_array.write, [])) == []


def test_json_lines_is_one_object_per_line():
    out = written(json_lines.write, [finding(), finding(code="RL001", name="unused-suppression",
                                                         severity=Severity.INFO)])
    lines = out.splitlines()
    assert len(lines) == 2 and out.endswith("\n")
    assert [json.loads(line)["code"] for line in lines] == ["RL000", "RL001"]
    assert written(json_lines.write, []) == ""


def test_github_escapes_message_and_properties():
    diagnostic = finding(path="dir,1/a:b%.py", message="100% of it: a, b\nnext\rend %0A")
    assert written(github.write, [diagnostic]) == (
        "::error file=dir%2C1/a%3Ab%25.py,line=3,col=5,endLine=3,endColumn=9,title=rllint (RL000)"
        "::100%25 of it: a, b\\nnext\\rend %250A\n")


@pytest.mark.parametrize("severity, command", [
    (Severity.ERROR, "error"), (Severity.WARNING, "warning"), (Severity.INFO, "notice")])
def test_github_levels_follow_severity(severity, command):
    assert written(github.write, [finding(severity=severity)]).startswith(f"::{command} file=")


def test_github_escape_helpers():
    assert github.escape_data("a%b\r\nc:d,e") == "a%25b\\r\\nc:d,e"
    assert github.escape_property("a%b\r\nc:d,e") == "a%25b\\r\\nc%3Ad%2Ce"


def test_sarif_log(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outside = Path("/elsewhere/x y.py")
    diagnostics = [
        finding(),
        finding(path="src/a b.py", line=1, column=8, code="RL001", name="unused-suppression",
                severity=Severity.INFO, message="unused", end=(1, 8)),
        finding(path=str(outside), severity=Severity.WARNING, code="RL999", name="probe", message="probe"),
    ]
    log = json.loads(written(sarif.write, diagnostics))
    assert log["version"] == "2.1.0" and log["$schema"] == sarif.SCHEMA
    (run,) = log["runs"]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": tmp_path.as_uri() + "/"}}
    driver = run["tool"]["driver"]
    assert driver["name"] == "rllint"
    rules = driver["rules"]
    assert [rule["id"] for rule in rules] == ["RL000", "RL001", "RL999"]
    assert rules[0]["name"] == "syntax-error"
    assert rules[0]["defaultConfiguration"] == {"level": "error", "enabled": True}
    assert rules[1]["defaultConfiguration"] == {"level": "note", "enabled": False}
    assert rules[0]["help"]["markdown"].startswith("# RL000 syntax-error\n")
    assert rules[2] == {"id": "RL999", "name": "probe"}  # not in the catalogue: what the finding says
    results = run["results"]
    assert [(r["ruleId"], r["ruleIndex"], r["level"]) for r in results] == [
        ("RL000", 0, "error"), ("RL001", 1, "note"), ("RL999", 2, "warning")]
    assert results[0]["message"] == {"text": "syntax error: invalid syntax"}
    locations = [r["locations"][0]["physicalLocation"] for r in results]
    assert locations[0] == {"artifactLocation": {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"},
                            "region": {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 9}}
    assert locations[1]["artifactLocation"] == {"uri": "src/a%20b.py", "uriBaseId": "%SRCROOT%"}
    assert locations[2]["artifactLocation"] == {"uri": "file:///elsewhere/x%20y.py"}


def test_sarif_of_a_clean_run_has_an_empty_result_list():
    (run,) = json.loads(written(sarif.write, []))["runs"]
    assert run["results"] == [] and run["tool"]["driver"]["rules"] == []


# A name and a message that would forge a second GitHub annotation, or drive the terminal, if printed raw.
FORGED = "x.py\n::error file=setup.py,line=1::forged\x1b[2J\x9b31m\u2028\u202e"


@pytest.mark.parametrize("writer", [text.write, full.write, github.write], ids=["text", "full", "github"])
def test_control_characters_are_escaped_in_human_formats(writer):
    out = written(writer, [finding(path=FORGED, message=FORGED)])
    commands = [line for line in out.splitlines() if line.startswith("::")]
    assert len(commands) == (1 if writer is github.write else 0)  # the finding's own annotation, nothing forged
    assert not any(char in out for char in "\x1b\x9b\u2028\u202e\r")
    assert "\\x1b[2J" in out and "\\u202e" in out


@pytest.mark.parametrize("writer", [json_array.write, json_lines.write, sarif.write],
                         ids=["json", "json-lines", "sarif"])
def test_machine_formats_escape_every_control_character_and_keep_the_text(writer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = written(writer, [finding(path="x.py", message=FORGED)])
    assert not any(char in out for char in "\x1b\x9b\u2028\u202e\r")
    document = json.loads(out) if writer is not json_lines.write else [json.loads(out)]
    messages = [document[0]["message"]] if writer is not sarif.write else \
        [result["message"]["text"] for result in document["runs"][0]["results"]]
    assert messages == [FORGED]  # escaped in the JSON text, the same string once parsed


def test_full_shows_a_code_frame_with_the_span_underlined_and_the_fix():
    from rllint.fix import Edit, Fix

    lines = ["import torch", "", "", "def logps(logits):", "\treturn torch.log(torch.softmax(logits, -1))", ""]
    fix = Fix("Use `log_softmax`", (Edit(5, 9, 5, 45, "torch.log_softmax(logits, -1)"),), safe=True)
    fixable = Diagnostic("a.py", 5, 9, 5, 45, "RL108", "log-of-softmax", Severity.ERROR, "log of softmax", fix)
    plain = finding(path="a.py", line=1, column=1, end=(1, 13), code="RL999", message="first line")
    stream = io.StringIO()
    full.write([plain, fixable], stream, options=ReportOptions(lines=lambda d: lines))
    assert stream.getvalue() == (
        "a.py:1:1: RL999 first line\n"
        "  |\n"
        "1 | import torch\n"
        "  | ^^^^^^^^^^^^ RL999\n"
        "2 |\n"
        "3 |\n"
        "  |\n"
        "\n"
        "a.py:5:9: RL108 [*] log of softmax\n"
        "  |\n"
        "3 |\n"
        "4 | def logps(logits):\n"
        "5 |     return torch.log(torch.softmax(logits, -1))\n"  # a tab as four spaces, as ruff
        "  |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ RL108\n"
        "6 |\n"
        "  |\n"
        "  = help: Use `log_softmax`\n"
        "\n")


def test_full_marks_an_unsafe_fix_only_with_unsafe_fixes_and_needs_no_lines():
    from rllint.fix import Edit, Fix

    fix = Fix("strict", (Edit(1, 1, 1, 2, "y"),), safe=False)
    unsafe = Diagnostic("a.py", 1, 1, 1, 2, "RL404", "zip", Severity.WARNING, "zip", fix)
    assert written(full.write, [unsafe]) == "a.py:1:1: RL404 zip\n\n"
    stream = io.StringIO()
    full.write([unsafe], stream, options=ReportOptions(unsafe_fixes=True))
    assert stream.getvalue() == "a.py:1:1: RL404 [*] zip\n\n"
