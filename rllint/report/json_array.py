"""One JSON array of findings (`Diagnostic.to_dict()`), then the files that could not be linted
(`FileError.to_dict`); an empty run writes `[]`."""
import json
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic, FileError
from rllint.report.escape import json_printable
from rllint.report.options import ReportOptions


def write(diagnostics: Sequence[Diagnostic], stream: TextIO, errors: Sequence[FileError] = (),
          options: ReportOptions = ReportOptions()) -> None:
    entries = [d.to_dict() for d in diagnostics] + [e.to_dict() for e in errors]
    stream.write(json_printable(json.dumps(entries, indent=2, ensure_ascii=False)) + "\n")
