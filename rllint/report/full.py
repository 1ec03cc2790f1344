"""ruff's `full` format: each finding's line, `[*]` when `--fix` can fix it, then a code frame: the
lines around the finding with the reported span underlined, and the fix's description.

```
train.py:7:12: RL108 [*] log of softmax ...
  |
5 | def policy_logps(logits):
6 |     # the probabilities first
7 |     return torch.log(torch.softmax(logits, dim=-1))
  |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ RL108
  |
  = help: Use `log_softmax`
```

The frame shows the lines that `options.lines` gives (in a notebook, those of the cell), never
read here; a finding whose lines are not known (a training log, a file gone since) has none. A span
over several lines is underlined on its first line, to its end.
"""
from typing import Sequence, TextIO

from rllint.diagnostic import Diagnostic, FileError
from rllint.report.escape import printable
from rllint.report.options import ReportOptions
from rllint.report.text import location

CONTEXT = 2  # lines shown above and below the finding's line, as ruff


def write(diagnostics: Sequence[Diagnostic], stream: TextIO, errors: Sequence[FileError] = (),
          options: ReportOptions = ReportOptions()) -> None:
    for d in diagnostics:
        fixable = d.fix is not None and (d.fix.safe or options.unsafe_fixes)
        stream.write(f"{location(d)}: {d.code} {'[*] ' if fixable else ''}{printable(d.message)}\n")
        lines = options.lines(d) if d.step is None else None
        if lines is not None and 1 <= d.line <= len(lines):
            stream.write(_frame(d, lines))
        stream.write("\n")


def _frame(d: Diagnostic, lines: Sequence[str]) -> str:
    first, last = max(1, d.line - CONTEXT), min(len(lines), d.line + CONTEXT)
    width = len(str(last))
    gutter = " " * width + " |"
    out = [gutter]
    for number in range(first, last + 1):
        out.append(f"{number:>{width}} | {_shown(lines[number - 1])}".rstrip())
        if number == d.line:
            out.append(f"{gutter} {_underline(d, lines[number - 1])} {d.code}")
    out.append(gutter)
    if d.fix is not None:
        out.append(f"{' ' * width} = help: {printable(d.fix.message)}")
    return "\n".join(out) + "\n"


def _shown(text: str) -> str:
    """A source line as the frame shows it: tabs as four spaces (as ruff), control characters escaped."""
    return printable(text.replace("\t", "    "))


def _underline(d: Diagnostic, line: str) -> str:
    """Carets under the span on its first line, as wide as the frame shows it."""
    start = min(d.column - 1, len(line))
    end = d.end_column - 1 if d.end_line == d.line else len(line)
    return " " * len(_shown(line[:start])) + "^" * max(1, len(_shown(line[start:end])))
