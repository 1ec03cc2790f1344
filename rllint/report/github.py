"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request.

GitHub reads a workflow command from any line of the job's output that starts with `::`, so no
name or message may start a line: control characters are escaped (a line break is shown as `\\n`),
then GitHub's own escapes apply."""
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic, FileError, Severity
from rllint.report.escape import printable
from rllint.report.options import ReportOptions

_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(value: str) -> str:
    """The message after `::`. GitHub decodes `%25`, `%0D` and `%0A`; no line break is left to encode, and a
    `%` is written as `%25` so that a `%0A` of the text stays text."""
    return printable(value).replace("%", "%25")


def escape_property(value: str) -> str:
    """A `key=value` property, where `:` and `,` are separators too."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def write(diagnostics: Sequence[Diagnostic], stream: TextIO, errors: Sequence[FileError] = (),
          options: ReportOptions = ReportOptions()) -> None:
    for d in diagnostics:
        properties = {"file": d.path}
        if d.cell is None:  # lines of a notebook's cell are not lines of its file: the annotation is on the file
            properties.update({"line": d.line, "col": d.column, "endLine": d.end_line, "endColumn": d.end_column})
        properties["title"] = f"rllint ({d.code})"
        joined = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
        message = d.message if d.cell is None else f"cell {d.cell}, line {d.line}: {d.message}"
        stream.write(f"::{_LEVELS[Severity(d.severity)]} {joined}::{escape_data(message)}\n")
    for error in errors:
        stream.write(f"::error file={escape_property(error.path)},title=rllint::{escape_data(error.message)}\n")
