"""One JSON object per line, for tools that stream findings; files that could not be linted last."""
import json
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic, FileError


def write(diagnostics: Sequence[Diagnostic], stream: TextIO, errors: Sequence[FileError] = (), root=None) -> None:
    for entry in [d.to_dict() for d in diagnostics] + [e.to_dict() for e in errors]:
        stream.write(json.dumps(entry, ensure_ascii=False) + "\n")
