"""Fixes: text edits that replace the syntax nodes a finding is about, built per rule with libcst.

A builder (one per rule code, in the family modules of this package) is given the reported node
and the file's facts, and returns the nodes to replace and their replacements, built with
libcst's `with_changes`. The fix is one `Edit` over the replaced nodes' span, its text taken
from their statement rendered with the replacements, so everything outside stays byte for byte;
`rllint.fix.apply` applies edits, re-parses the result and lints again until nothing fixable is left.

A fix is *safe* when it does what the rule's page asks for and nothing else; *unsafe* when it
may change behaviour beyond the bug (it then needs `--unsafe-fixes`). Each builder says which
and why, and the rule's page prints it under "Fix safety".
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import CodeRange

from rllint.source import split_lines

# A node of the file and the node that replaces it.
Change = Tuple[cst.CSTNode, cst.CSTNode]


@dataclass(frozen=True)
class Plan:
    """What a builder returns: a one-line description and the changes. `unsafe` marks this one fix
    unsafe where its rule's fixes are otherwise safe (RL108 dropping an epsilon)."""

    message: str
    changes: Sequence[Change]
    unsafe: bool = False


@dataclass(frozen=True)
class Edit:
    """Replace the text from (line, column) up to (end_line, end_column) with `content`.
    Lines and columns are 1-based, columns in code points, as in findings; the end is exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_dict(self) -> dict:
        return {"content": self.content, "location": {"row": self.line, "column": self.column},
                "end_location": {"row": self.end_line, "column": self.end_column}}


@dataclass(frozen=True)
class Fix:
    message: str
    edits: Tuple[Edit, ...]
    safe: bool

    @property
    def applicability(self) -> str:
        return "safe" if self.safe else "unsafe"

    def to_dict(self) -> dict:
        return {"message": self.message, "applicability": self.applicability,
                "edits": [edit.to_dict() for edit in self.edits]}


@dataclass(frozen=True)
class Builder:
    code: str
    build: Callable[[cst.CSTNode, Any], Optional[Plan]]  # (reported node, FileContext) -> fix or None
    safe: bool
    safety: str  # the "Fix safety" section of the rule's page


BUILDERS: Dict[str, Builder] = {}


def fixes(code: str, safe: bool, safety: str) -> Callable:
    """Register the decorated function as the fix builder of rule `code`."""
    def register(build: Callable[[cst.CSTNode, Any], Optional[Plan]]) -> Callable:
        BUILDERS[code] = Builder(code, build, safe, " ".join(safety.split()))
        return build
    return register


_NOT_FAMILIES = {"apply", "edits", "write"}  # the fix driver, the node helpers and the file writer


def load_builders() -> Dict[str, Builder]:
    """Import every family module of this package once; the builders by rule code."""
    for module in pkgutil.iter_modules(__path__):
        if module.name not in _NOT_FAMILIES:
            importlib.import_module(f"{__name__}.{module.name}")
    return BUILDERS


def build_fix(code: str, node: cst.CSTNode, file: Any, positions: Mapping[cst.CSTNode, CodeRange]) -> Optional[Fix]:
    """The fix of a finding of rule `code` at `node`, or None when the rule has no fix or this finding
    cannot be fixed.

    The changes are made on the tree of the module-level statement that holds them, which is rendered
    again, so that every replacement is indented as its place needs (a statement at module level
    renders exactly as it is written). The edit spans the replaced nodes (`positions`); everything
    around them is the file's own text, byte for byte."""
    builder = BUILDERS.get(code) or load_builders().get(code)  # the runner imports the one module it needs
    plan = builder.build(node, file) if builder is not None else None
    if plan is None or any(original not in positions for original, _ in plan.changes):
        return None
    spans = [positions[original] for original, _ in plan.changes]
    first = min((span.start.line, span.start.column) for span in spans)
    last = max((span.end.line, span.end.column) for span in spans)
    statement = next((top for top in file.module.body if top in positions
                      and (positions[top].start.line, positions[top].start.column) <= first
                      and last <= (positions[top].end.line, positions[top].end.column)), None)
    if statement is None:
        return None
    old = file.module.code_for_node(statement)
    new = file.module.code_for_node(statement.visit(_Replace(plan.changes, positions)))
    if statement is file.module.body[-1] and not file.module.has_trailing_newline:
        # libcst renders the last statement with a line ending that a file without a final newline lacks.
        ending = file.module.default_newline
        old, new = old.removesuffix(ending), new.removesuffix(ending)
    starts = _line_starts(file.text)
    start, end = _offset(starts, first[0], first[1] + 1), _offset(starts, last[0], last[1] + 1)
    where = file.text.find(old, max(0, end - len(old)))
    kept = where + len(old) - end  # the statement's text after the edit
    if where < 0 or where > start or new[:start - where] != old[:start - where] or new[len(new) - kept:] != old[len(old) - kept:]:
        return None
    edit = Edit(first[0], first[1] + 1, last[0], last[1] + 1, new[start - where:len(new) - kept])
    return Fix(plan.message, (edit,), builder.safe and not plan.unsafe)


class _Replace(cst.CSTTransformer):
    """Puts each change's replacement in place of its node (matched by identity), descending only
    into nodes whose span holds a node to replace."""

    def __init__(self, changes: Sequence[Change], positions: Mapping[cst.CSTNode, CodeRange]) -> None:
        super().__init__()
        self._changes = {id(original): replacement for original, replacement in changes}
        self._spans = [positions[original] for original, _ in changes]
        self._positions = positions

    def on_visit(self, node: cst.CSTNode) -> bool:
        span = self._positions.get(node)
        return span is None or any(_holds(span, target) for target in self._spans)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        return self._changes.get(id(original_node), updated_node)


def _holds(outer: CodeRange, inner: CodeRange) -> bool:
    return ((outer.start.line, outer.start.column) <= (inner.start.line, inner.start.column)
            and (inner.end.line, inner.end.column) <= (outer.end.line, outer.end.column))


def edited(text: str, edits: Sequence[Edit]) -> str:
    """`text` with `edits` (which must not overlap) applied."""
    starts = _line_starts(text)
    pieces: List[str] = []
    end = len(text)
    for edit in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        start = _offset(starts, edit.line, edit.column)
        stop = _offset(starts, edit.end_line, edit.end_column)
        pieces.append(text[stop:end])
        pieces.append(edit.content)
        end = start
    pieces.append(text[:end])
    return "".join(reversed(pieces))


def _offset(starts: List[int], line: int, column: int) -> int:
    return starts[line - 1] + column - 1


def _line_starts(text: str) -> List[int]:
    """Offsets of the first character of each line, as Python and libcst count lines (\\n, \\r\\n, \\r),
    and the end of the text."""
    starts = [0]
    for line in split_lines(text):
        starts.append(starts[-1] + len(line))
    starts.append(len(text))
    return starts
