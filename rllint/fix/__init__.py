"""Fixes: text edits that replace the syntax nodes a finding is about, built per rule with libcst.

A builder (one per rule code, in the family modules of this package) is given the reported node
and the file's facts, and returns the nodes to replace and their replacements, built with
libcst's `with_changes`. The fix is the `Edit` of the text that changes when the tree is
rendered with them, so everything outside it stays byte for byte; `rllint.fix.apply` applies
edits, re-parses the result and lints again until nothing fixable is left.

A fix is *safe* when it does what the rule's page asks for and nothing else; *unsafe* when it
may change behaviour beyond the bug (it then needs `--unsafe-fixes`). Each builder says which
and why, and the rule's page prints it under "Fix safety".
"""
from __future__ import annotations

import bisect
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst

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


def load_builders() -> Dict[str, Builder]:
    """Import every family module of this package once; the builders by rule code."""
    for module in pkgutil.iter_modules(__path__):
        if module.name != "apply":
            importlib.import_module(f"{__name__}.{module.name}")
    return BUILDERS


def build_fix(code: str, node: cst.CSTNode, file: Any) -> Optional[Fix]:
    """The fix of a finding of rule `code` at `node`, or None when the rule has no fix or this finding
    cannot be fixed.

    The changes are made on the module's tree and the module is rendered again, so that every
    replacement is indented as its place needs; the edit is the one stretch of text that differs,
    and everything around it is the file's own text, byte for byte."""
    builder = load_builders().get(code)
    plan = builder.build(node, file) if builder is not None else None
    if plan is None:
        return None
    new_text = file.module.visit(_Replace(plan.changes)).code
    old_text = file.text
    if new_text == old_text:
        return None
    prefix = 0
    limit = min(len(old_text), len(new_text))
    while prefix < limit and old_text[prefix] == new_text[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old_text[-1 - suffix] == new_text[-1 - suffix]:
        suffix += 1
    starts = _line_starts(old_text)
    (line, column), (end_line, end_column) = _position(starts, prefix), _position(starts, len(old_text) - suffix)
    edit = Edit(line, column, end_line, end_column, new_text[prefix:len(new_text) - suffix])
    return Fix(plan.message, (edit,), builder.safe and not plan.unsafe)


class _Replace(cst.CSTTransformer):
    """Puts each change's replacement in place of its node (matched by identity)."""

    def __init__(self, changes: Sequence[Change]) -> None:
        super().__init__()
        self._changes = {id(original): replacement for original, replacement in changes}

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        return self._changes.get(id(original_node), updated_node)


def _position(starts: List[int], offset: int) -> Tuple[int, int]:
    """1-based line and column of a text offset."""
    line = bisect.bisect_right(starts, offset) - 1
    line = min(line, len(starts) - 2) if len(starts) > 1 else 0
    return line + 1, offset - starts[line] + 1


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
    """Offsets of the first character of each line, as libcst counts lines (\\n, \\r\\n, \\r)."""
    starts = [0]
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\r" and text[index + 1:index + 2] == "\n":
            index += 1
        if char in "\r\n":
            starts.append(index + 1)
        index += 1
    starts.append(len(text))
    return starts
