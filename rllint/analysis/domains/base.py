"""The hooks a domain implements (`rllint.analysis.domains`); every hook answers None when it does not know."""
from __future__ import annotations

from typing import Dict, List, Optional, TYPE_CHECKING

import libcst as cst

from rllint.analysis.facts import Value

if TYPE_CHECKING:  # pragma: no cover
    from rllint.analysis.flow import Frame


class Domain:
    """The semantics of one library for the interpreter; every hook answers None when it does not know."""

    def call(self, frame: "Frame", qual: str, node: cst.Call, args: List[Value], kwargs: Dict[str, Value]
             ) -> Optional[Value]:
        """A call of an imported name (`qual` is its dotted name through the imports)."""
        return None

    def method(self, frame: "Frame", receiver: Value, name: str, node: cst.Call, args: List[Value],
               kwargs: Dict[str, Value]) -> Optional[Value]:
        """`receiver.name(...)`."""
        return None

    def attribute(self, frame: "Frame", base: Value, attr: str, node: cst.Attribute) -> Optional[Value]:
        """`base.attr`, read."""
        return None

    def subscript(self, frame: "Frame", base: Value, node: cst.Subscript) -> Optional[Value]:
        """`base[...]` that is not a constant key of a container."""
        return None

    def arith(self, frame: "Frame", operator: cst.CSTNode, left: Value, right: Value, node: cst.CSTNode
              ) -> Optional[Value]:
        """`left <op> right`."""
        return None

    def call_value(self, frame: "Frame", callee: Value, node: cst.Call, args: List[Value],
                   kwargs: Dict[str, Value]) -> Optional[Value]:
        """A call of a value this domain made (a model called for its forward)."""
        return None
