"""Rule base classes that several families share (they hold no rule of their own)."""
from __future__ import annotations

from typing import List

import libcst as cst

from rllint.analysis.tensors import Tensors
from rllint.registry import CSTRule


class TensorRule(CSTRule):
    """Base of rules that ask `Tensors` about the expressions they visit. It keeps the nesting
    of the functions being visited, so that only those scopes are walked, and only once a
    rule finds a candidate worth asking about."""

    def __init__(self, file) -> None:
        super().__init__(file)
        self._nesting: List[cst.CSTNode] = [file.module]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._nesting.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._nesting.pop()

    def tensors(self) -> Tensors:
        tensors = self.file.fact(Tensors)
        tensors.enter(self._nesting)
        return tensors
