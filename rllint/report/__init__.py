"""Output formats: one module per format, each with `write(diagnostics, stream, errors, options)`.

Reporters only format: paths arrive as they should be shown (relative to the working folder, as
ruff's, in every format), and no reporter reads a source file (`full` is given the lines it shows).
`errors` are the files that could not be linted: text formats leave them to the CLI's stderr
lines, machine formats carry them so that a CI job or a dashboard sees them too. Control characters
of names and messages are escaped in every format (`rllint.report.escape`).
"""
from typing import Callable, Dict

from rllint.report import full, github, json_array, json_lines, sarif, text
from rllint.report.options import ReportOptions

Writer = Callable[..., None]

# `concise` is an alias of `text`: the default is already flake8's one line per finding.
FORMATS: Dict[str, Writer] = {
    "text": text.write,
    "concise": text.write,
    "full": full.write,
    "json": json_array.write,
    "json-lines": json_lines.write,
    "github": github.write,
    "sarif": sarif.write,
}
# Formats that carry file errors themselves (text formats leave them to the CLI's stderr lines).
MACHINE_FORMATS = ("json", "json-lines", "github", "sarif")
# Formats `--statistics` can be written in, as ruff's: counts in text, or a JSON array.
STATISTICS_FORMATS = ("text", "concise", "full", "json")

__all__ = ["FORMATS", "MACHINE_FORMATS", "STATISTICS_FORMATS", "ReportOptions"]
