"""Where a name's value is read as a number: an operand of arithmetic.

A value bound to a name may be used as a flag (`if ok:`, `and ok`), passed on, or computed
with (`(x - m) / std`, `-std`, `total += n`). Rules that ask what a binding holds need the
last kind: a boolean read in arithmetic silently becomes 0 or 1. `NumberReads.after(binding)`
gives those reads of an assignment expression's target, in the function (or module level)
that binds it, from the binding on until the name is bound again.
"""
from __future__ import annotations

from typing import Dict, List, Set, Tuple

import libcst as cst

from rllint.analysis.syntax import bound_nodes, walk

# Operators whose operands are numbers; `%` (also string formatting) and the bitwise ones (also
# boolean logic) are left out.
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Power, cst.MatrixMultiply)
_AUGMENTED = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign, cst.FloorDivideAssign,
              cst.PowerAssign, cst.MatrixMultiplyAssign)


class NumberReads:
    """The nodes of each function (and of the module's top level) in source order, with the names
    read as numbers and the names bound, from one walk of the file."""

    def __init__(self, file) -> None:
        self._bodies: List[List[cst.CSTNode]] = []
        self._where: Dict[int, Tuple[int, int]] = {}  # id of an assignment expression -> (body, position)
        self._numeric: Set[int] = set()  # ids of Name nodes read as numbers
        self._bound: Set[int] = set()  # ids of Name nodes that are assignment targets
        for scope in walk(file.module, into_functions=True):
            if isinstance(scope, (cst.Module, cst.FunctionDef)):
                self._collect(scope)

    def _collect(self, scope: cst.CSTNode) -> None:
        nodes = list(walk(scope.body if isinstance(scope, cst.FunctionDef) else scope))
        index = len(self._bodies)
        self._bodies.append(nodes)
        for position, node in enumerate(nodes):
            if isinstance(node, cst.NamedExpr):
                self._where[id(node)] = (index, position)
                self._bound.update(id(n) for n in bound_nodes(node.target))
            elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _ARITHMETIC):
                self._numeric.update(id(side) for side in (node.left, node.right) if isinstance(side, cst.Name))
            elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
                if isinstance(node.expression, cst.Name):
                    self._numeric.add(id(node.expression))
            elif isinstance(node, cst.AugAssign):
                bound = list(bound_nodes(node.target))
                self._bound.update(id(n) for n in bound)
                if isinstance(node.operator, _AUGMENTED):
                    self._numeric.update(id(n) for n in bound)
                    if isinstance(node.value, cst.Name):
                        self._numeric.add(id(node.value))
            elif isinstance(node, cst.Assign):
                self._bound.update(id(n) for t in node.targets for n in bound_nodes(t.target))
            elif isinstance(node, (cst.AnnAssign, cst.For, cst.CompFor)):
                self._bound.update(id(n) for n in bound_nodes(node.target))
            elif isinstance(node, cst.AsName):
                self._bound.update(id(n) for n in bound_nodes(node.name))

    def after(self, binding: cst.NamedExpr) -> List[cst.Name]:
        """The reads as a number of `binding`'s target that follow it in its function, up to the
        next statement that binds the name again."""
        if not isinstance(binding.target, cst.Name) or id(binding) not in self._where:
            return []
        name = binding.target.value
        index, position = self._where[id(binding)]
        found: List[cst.Name] = []
        for node in self._bodies[index][position + 1:]:
            if not isinstance(node, cst.Name) or node.value != name or node is binding.target:
                continue
            if id(node) in self._numeric:
                found.append(node)  # `n += 1` reads `n` before it binds it again
            if id(node) in self._bound:
                break
        return found
