"""flake8's format: `path:line:col: CODE message`, columns 1-based."""
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic


def write(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    for d in diagnostics:
        stream.write(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}\n")
