"""What a rule reports: one finding at one place in one file, and what linting one file gives."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    from rllint.fix import Fix


class Severity(str, enum.Enum):
    """How sure a rule is: `error` almost surely a bug, `info` a choice worth making consciously."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Tier(str, enum.Enum):
    """How a rule earned its place (clippy's tiers): `correctness` fires only on bugs; `suspicious` runs by
    default while its precision on the primer's real repositories stays >= 0.9; `pedantic` runs on request."""

    CORRECTNESS = "correctness"
    SUSPICIOUS = "suspicious"
    PEDANTIC = "pedantic"


@dataclass(frozen=True)
class Diagnostic:
    """A finding. Lines are 1-based; columns are 1-based, as in flake8's and ruff's output.

    In a notebook, `cell` is the 1-based index of the cell (markdown cells counted) and lines
    count from the top of that cell; it is None in every other file.
    """

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    severity: Severity
    message: str
    fix: Optional["Fix"] = None
    cell: Optional[int] = None
    # For a finding in a training log (`rllint logs`): the step where the condition began.
    step: Optional[int] = None

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "fix": None if self.fix is None else self.fix.to_dict(),
            "cell": self.cell,
            **({} if self.step is None else {"step": self.step}),
        }


@dataclass(frozen=True)
class FileError:
    """A file that could not be linted at all (unreadable, undecodable, too deep): exit status 2."""

    path: str
    message: str

    def to_dict(self) -> dict:
        """In the JSON formats: the fields of a finding, with `code` and the position null."""
        return {"path": self.path, "line": None, "column": None, "end_line": None, "end_column": None,
                "code": None, "name": "file-error", "severity": Severity.ERROR.value, "message": self.message,
                "fix": None, "cell": None}


@dataclass
class FileResult:
    """The findings and errors of one linted file (or of a run), and what a cached copy depends on."""

    diagnostics: List[Diagnostic] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)
    # Other files the result depends on (path -> content hash): a cached result is stale when one changes.
    dependencies: Dict[str, str] = field(default_factory=dict)
    # Suppression comments of other files that silenced a finding of this one: (path, line, selector).
    used_elsewhere: List[Tuple[str, int, str]] = field(default_factory=list)
    # One line each for the user about what the lint could not see; they change no exit status, and a
    # cached result does not repeat them.
    notes: List[str] = field(default_factory=list)
