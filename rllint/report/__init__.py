"""Output formats: one module per format, each with `write(diagnostics, stream, errors, root)`.

Reporters only format: paths arrive as they should be shown (relative to `root`, the project's
root, for `ROOTED_FORMATS`), and no reporter reads a source file. `errors` are the files that could
not be linted: text formats leave them to the CLI's stderr lines, machine formats carry them so
that a CI job or a dashboard sees them too.
"""
from typing import Callable, Dict

from rllint.report import github, json_array, json_lines, sarif, text

Writer = Callable[..., None]

# `concise` is an alias of `text`: the default is already flake8's one line per finding.
FORMATS: Dict[str, Writer] = {
    "text": text.write,
    "concise": text.write,
    "json": json_array.write,
    "json-lines": json_lines.write,
    "github": github.write,
    "sarif": sarif.write,
}
# Formats that carry file errors themselves (text formats leave them to the CLI's stderr lines).
MACHINE_FORMATS = ("json", "json-lines", "github", "sarif")
# Formats whose paths are relative to the project root, as ruff's: annotations and code scanning
# resolve them against the repository.
ROOTED_FORMATS = ("github", "sarif")

