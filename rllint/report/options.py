"""What some formats need besides the findings, given by the command line."""
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from rllint.diagnostic import Diagnostic


def _no_lines(diagnostic: Diagnostic) -> Optional[Sequence[str]]:
    return None


@dataclass(frozen=True)
class ReportOptions:
    # `docs-url`: where rule pages are (the links of `sarif`); None: the pages shipped with rllint.
    docs_url: Optional[str] = None
    # `--unsafe-fixes`: an unsafe fix counts as applicable (`[*]` in `full`).
    unsafe_fixes: bool = False
    # The lines of the file (of the cell, in a notebook) a finding is in, for the code frame of `full`;
    # None when they cannot be shown. Reporters never read files themselves.
    lines: Callable[[Diagnostic], Optional[Sequence[str]]] = _no_lines
