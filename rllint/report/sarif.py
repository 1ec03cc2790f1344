"""SARIF 2.1.0, the format of GitHub code scanning and most SAST dashboards.

Relative paths are given against `%SRCROOT%`, the working folder (as every format's paths are), so
that an upload from the root of a checkout resolves to files of the repository. Rule links come
from `docs-url` (`rllint.pages`). Columns count code points, not SARIF's default UTF-16 units, and
the run says so. A notebook finding's region names its cell,
whose lines it counts. Files that could not be linted are tool execution notifications of the
invocation, which then did not succeed.
"""
import json
from pathlib import Path
from typing import Dict, Optional, Sequence, TextIO
from urllib.parse import quote

from rllint import __version__
from rllint.diagnostic import Diagnostic, FileError, Severity
from rllint.pages import index_url, rule_page_url
from rllint.report.escape import json_printable
from rllint.report.options import ReportOptions

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _artifact(path: str) -> Dict[str, str]:
    candidate = Path(path)
    if candidate.is_absolute():
        return {"uri": candidate.as_uri()}
    return {"uri": quote(candidate.as_posix()), "uriBaseId": "%SRCROOT%"}


def _rule_descriptor(code: str, name: str, docs_url: Optional[str]) -> dict:
    from rllint.docs import render_page, summary  # docs renders pages; imported only for this format
    from rllint.registry import load_rules  # the catalogue (and libcst) only when a SARIF report is written

    rule = load_rules().get(code)
    if rule is None:  # a rule outside the catalogue (a plugin or a test probe): what the finding says
        return {"id": code, "name": name}
    page = rule_page_url(rule.code, docs_url)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.name},
        "fullDescription": {"text": summary(rule)},
        "help": {"text": summary(rule), "markdown": render_page(rule)},
        **({} if page is None else {"helpUri": page}),
        "defaultConfiguration": {"level": _LEVELS[Severity(rule.severity)], "enabled": rule.default_enabled},
    }


def _region(d: Diagnostic) -> dict:
    """Where the finding is. In a notebook, lines count from the top of a code cell, not of the JSON file:
    the region names its cell (`properties.cell` and its message), so that no reader takes them for
    lines of the file."""
    region = {"startLine": d.line, "startColumn": d.column, "endLine": d.end_line, "endColumn": d.end_column}
    if d.cell is not None:
        region.update(message={"text": f"cell {d.cell}, line {d.line}"}, properties={"cell": d.cell})
    return region


def _message(d: Diagnostic) -> str:
    return d.message if d.cell is None else f"cell {d.cell}, line {d.line}: {d.message}"


def write(diagnostics: Sequence[Diagnostic], stream: TextIO, errors: Sequence[FileError] = (),
          options: ReportOptions = ReportOptions()) -> None:
    names = {d.code: d.name for d in diagnostics}
    codes = sorted(names)
    index = {code: number for number, code in enumerate(codes)}
    results = [
        {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _LEVELS[Severity(d.severity)],
            "message": {"text": _message(d)},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": _artifact(d.path),
                    "region": _region(d),
                },
            }],
            **({} if d.step is None else {"properties": {"step": d.step}}),
        }
        for d in diagnostics
    ]
    for result, d in zip(results, diagnostics):
        if d.cell is not None:
            result["properties"] = {"cell": d.cell}
    notifications = [{"level": "error", "message": {"text": error.message},
                      "locations": [{"physicalLocation": {"artifactLocation": _artifact(error.path)}}]}
                     for error in errors]
    home = index_url(options.docs_url)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "rllint",
                "version": __version__,
                **({} if home is None else {"informationUri": home}),
                "rules": [_rule_descriptor(code, names[code], options.docs_url) for code in codes],
            }},
            "invocations": [{"executionSuccessful": not errors, "toolExecutionNotifications": notifications}],
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    stream.write(json_printable(json.dumps(log, indent=2, ensure_ascii=False)) + "\n")
