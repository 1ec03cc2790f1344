"""flake8's format: `path:line:col: CODE message`, columns 1-based; in a notebook, ruff's
`path:cell N:line:col: CODE message`, the line counted from the top of the cell."""
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic, FileError


def location(d: Diagnostic) -> str:
    cell = f"cell {d.cell}:" if d.cell is not None else ""
    return f"{d.path}:{cell}{d.line}:{d.column}"


def write(diagnostics: Sequence[Diagnostic], stream: TextIO, errors: Sequence[FileError] = (), root=None) -> None:
    for d in diagnostics:
        stream.write(f"{location(d)}: {d.code} {d.message}\n")
