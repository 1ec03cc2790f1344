"""The line each node of a file starts on, for the messages that name a line (`file.fact(Lines).line(node)`)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Optional

import libcst as cst


class Lines:
    """Start lines of a file's nodes, computed on the first question (most files have no finding)."""

    def __init__(self, file) -> None:
        self._module: cst.Module = file.module
        self._lines: Optional[Dict[cst.CSTNode, int]] = None

    def line(self, node: cst.CSTNode) -> int:
        if self._lines is None:
            self._lines = _start_lines(self._module)
        return self._lines[node]

    def holds(self, node: cst.CSTNode) -> bool:
        """Whether `node` is of this file (a value may come from another module's tree)."""
        if self._lines is None:
            self._lines = _start_lines(self._module)
        return node in self._lines


def _start_lines(module: cst.Module) -> Dict[cst.CSTNode, int]:
    """The line each node starts on, as libcst's PositionProvider gives it, from one code generation
    that counts newlines only: several times cheaper than the full positions, which matters because
    a value used from another module makes every importing file word a line. Falls back to
    PositionProvider should libcst's code generation internals change."""
    try:
        state = _line_state()(default_indent=module.default_indent, default_newline=module.default_newline)
        module._codegen(state)
        return state.lines
    except (ImportError, AttributeError, TypeError):
        from libcst.metadata import MetadataWrapper, PositionProvider

        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        return {node: where.start.line for node, where in positions.items()}


@lru_cache(maxsize=None)
def _line_state() -> type:
    """A libcst CodegenState that records start lines the way PositionProvider's state records positions."""
    from contextlib import contextmanager

    from libcst._nodes.internal import CodegenState

    @dataclass(frozen=False)
    class LineState(CodegenState):
        lines: Dict[cst.CSTNode, int] = dataclasses.field(default_factory=dict)
        line: int = 1
        starts: List[int] = dataclasses.field(default_factory=list)

        def add_indent_tokens(self) -> None:
            for token in self.indent_tokens:
                self.add_token(token)

        def add_token(self, value: str) -> None:
            self.tokens.append(value)
            if "\n" in value or "\r" in value:
                self.line += value.count("\n") + value.count("\r") - value.count("\r\n")

        def before_codegen(self, node: cst.CSTNode) -> None:
            self.starts.append(self.line)

        def after_codegen(self, node: cst.CSTNode) -> None:
            start = self.starts.pop()
            if node not in self.lines:  # a syntactic start recorded inside the node wins
                self.lines[node] = start

        @contextmanager
        def record_syntactic_position(self, node, *, start_node=None, end_node=None):
            start = self.line
            try:
                yield
            finally:
                self.lines[node] = self.lines[start_node] if start_node is not None else start

    return LineState
