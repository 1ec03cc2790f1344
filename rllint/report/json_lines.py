"""One JSON object per line, for tools that stream findings; files that could not be linted last."""
import json
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic, FileError
from rllint.report.escape import json_printable
from rllint.report.options import ReportOptions


def write(diagnostics: Sequence[Diagnostic], stream: TextIO, errors: Sequence[FileError] = (),
          options: ReportOptions = ReportOptions()) -> None:
    for entry in [d.to_dict() for d in diagnostics] + [e.to_dict() for e in errors]:
        stream.write(json_printable(json.dumps(entry, ensure_ascii=False)) + "\n")
