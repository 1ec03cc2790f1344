"""One JSON array of findings (`Diagnostic.to_dict()`), then the files that could not be linted
(`FileError.to_dict`); an empty run writes `[]`."""
import json
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic, FileError


def write(diagnostics: Sequence[Diagnostic], stream: TextIO, errors: Sequence[FileError] = (), root=None) -> None:
    json.dump([d.to_dict() for d in diagnostics] + [e.to_dict() for e in errors], stream, indent=2,
              ensure_ascii=False)
    stream.write("\n")
