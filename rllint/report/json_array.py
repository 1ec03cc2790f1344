"""One JSON array of findings (`Diagnostic.to_dict()`); an empty run writes `[]`."""
import json
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic


def write(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    json.dump([d.to_dict() for d in diagnostics], stream, indent=2, ensure_ascii=False)
    stream.write("\n")
