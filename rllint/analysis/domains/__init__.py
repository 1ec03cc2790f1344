"""The libraries the interpreter knows, one domain each: what their calls, methods, attributes and
operators do to abstract values (`rllint.analysis.facts.Value`).

A domain answers None for what it does not know; the interpreter (`rllint.analysis.flow`) then asks
the next one, and an op nobody knows gives an unknown value that keeps its operands' sources. The
facts a domain gives come from the library's documented behaviour (`AutoModelForCausalLM` returns
`[B, T, V]` logits, `log_softmax(dim=-1)` is a distribution over the last axis, `decode` of sampled
ids is completion text), never from how the user named a variable.
"""
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


def domains() -> List[Domain]:
    """Every domain, in the order they are asked."""
    global _DOMAINS
    if _DOMAINS is None:
        from rllint.analysis.domains.config import CONFIG_DOMAIN
        from rllint.analysis.domains.models import MODELS
        from rllint.analysis.domains.stats import STATS
        from rllint.analysis.domains.text import TEXT_DOMAIN
        from rllint.analysis.domains.torch_ops import TORCH

        _DOMAINS = [MODELS, TORCH, STATS, TEXT_DOMAIN, CONFIG_DOMAIN]
    return _DOMAINS


_DOMAINS: Optional[List[Domain]] = None

__all__ = ["Domain", "domains"]
