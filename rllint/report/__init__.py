"""Output formats: one module per format, each with `write(diagnostics, stream)`.

Reporters only format: paths arrive as they should be shown, and no reporter reads
a source file.
"""
from typing import Callable, Dict, Sequence, TextIO

from rllint.diagnostic import Diagnostic
from rllint.report import github, json_array, json_lines, sarif, text

Writer = Callable[[Sequence[Diagnostic], TextIO], None]

# `concise` is an alias of `text`: the default is already flake8's one line per finding.
FORMATS: Dict[str, Writer] = {
    "text": text.write,
    "concise": text.write,
    "json": json_array.write,
    "json-lines": json_lines.write,
    "github": github.write,
    "sarif": sarif.write,
}
