"""flake8's format: `path:line:col: CODE message`, columns 1-based; a finding in a training log
says the step instead: `run/trainer_state.json: step 420: RL701 message`."""
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic


def write(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    for d in diagnostics:
        where = f"{d.path}:{d.line}:{d.column}:" if d.step is None else f"{d.path}: step {d.step}:"
        stream.write(f"{where} {d.code} {d.message}\n")
