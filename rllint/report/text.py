"""flake8's format: `path:line:col: CODE message`, columns 1-based; in a notebook, ruff's
`path:cell N:line:col: CODE message`, the line counted from the top of the cell; a finding in a
training log says the step instead: `run/trainer_state.json: step 420: RL701 message`."""
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic, FileError
from rllint.report.escape import printable
from rllint.report.options import ReportOptions


def location(d: Diagnostic) -> str:
    path = printable(d.path)
    if d.step is not None:
        return f"{path}: step {d.step}"
    cell = f"cell {d.cell}:" if d.cell is not None else ""
    return f"{path}:{cell}{d.line}:{d.column}"


def write(diagnostics: Sequence[Diagnostic], stream: TextIO, errors: Sequence[FileError] = (),
          options: ReportOptions = ReportOptions()) -> None:
    for d in diagnostics:
        stream.write(f"{location(d)}: {d.code} {printable(d.message)}\n")
