"""Fixes: text edits that replace the syntax nodes a finding is about, built per rule with libcst.

A builder (one per rule code, in the family modules of this package) is given the reported node
and the file's facts, and returns the nodes to replace and their replacements, built with
libcst's `with_changes`. The fix is one `Edit` over the replaced nodes' span, its text taken
from the module rendered with the replacements, so everything outside stays byte for byte;
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


def build_fix(code: str, node: cst.CSTNode, file: Any, positions: Mapping[cst.CSTNode, CodeRange]) -> Optional[Fix]:
    """The fix of a finding of rule `code` at `node`, or None when the rule has no fix or this finding
    cannot be fixed.

    The changes are made on the module's tree and the module is rendered again, so that every
    replacement is indented as its place needs. The edit spans the replaced nodes (`positions`);
    everything around them is the file's own text, byte for byte."""
    builder = load_builders().get(code)
    plan = builder.build(node, file) if builder is not None else None
    if plan is None or any(original not in positions for original, _ in plan.changes):
        return None
    old_text = file.text
    new_text = file.module.visit(_Replace(plan.changes)).code
    starts = _line_starts(old_text)
    spans = [positions[original] for original, _ in plan.changes]
    first = min((span.start.line, span.start.column) for span in spans)
    last = max((span.end.line, span.end.column) for span in spans)
    start, end = _offset(starts, first[0], first[1] + 1), _offset(starts, last[0], last[1] + 1)
    kept = len(old_text) - end
    if new_text == old_text or new_text[:start] != old_text[:start] or new_text[len(new_text) - kept:] != old_text[end:]:
        return None
    edit = Edit(first[0], first[1] + 1, last[0], last[1] + 1, new_text[start:len(new_text) - kept])
    return Fix(plan.message, (edit,), builder.safe and not plan.unsafe)


class _Replace(cst.CSTTransformer):
    """Puts each change's replacement in place of its node (matched by identity)."""

    def __init__(self, changes: Sequence[Change]) -> None:
        super().__init__()
        self._changes = {id(original): replacement for original, replacement in changes}

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        return self._changes.get(id(original_node), updated_node)


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
