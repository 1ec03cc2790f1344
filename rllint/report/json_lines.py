"""One JSON object per line, for tools that stream findings."""
import json
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic


def write(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    for d in diagnostics:
        stream.write(json.dumps(d.to_dict(), ensure_ascii=False) + "\n")
