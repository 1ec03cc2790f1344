"""Fixes of the log-prob rules: RL107, RL108."""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from rllint.analysis.tensors import Tensors, argument
from rllint.analysis.text import number
from rllint.fix import Plan, fixes

_EPSILON_NAMES = ("eps", "epsilon", "tiny")


@fixes("RL107", safe=True, safety="""
    The fix casts the value to float32 where it was cast down, instead of after: `logits.half()` becomes
    `logits.float()`, `.to(torch.bfloat16)` becomes `.to(torch.float32)`, so the op runs on the values
    at the precision they had. (`.half().float()` would keep what the cast to half threw away.) Where
    the cast is written in the op's own argument only this op sees the change, and the fix is safe.
    Where it is written before, in an assignment (`logits = logits.half()`), every later use of that
    name gets float32 too, which costs memory and changes dtypes downstream: that fix is unsafe. There
    is no fix when the op itself asks for a half dtype (`dtype=torch.bfloat16`), when the cast is in
    another function, or when the dtype is a bare name (`bfloat16` imported from torch).""")
def upcast(node: cst.CSTNode, file) -> Optional[Plan]:
    if not isinstance(node, cst.Call):
        return None
    tensors = file.fact(Tensors)
    op, operand = tensors.call_name(node)
    if operand is None or tensors.cast_precision(node, op) == "half":
        return None
    cast = tensors.half_cast(operand)
    change = _to_float32(cast, tensors) if isinstance(cast, cst.Call) else None
    if change is None:
        return None
    original, replacement = change
    low = "bfloat16" if "bfloat16" in tensors.code(cast, 1000) else "float16"
    return Plan(f"Cast to float32 instead of {low}", [(original, replacement)], unsafe=not _within(cast, operand))


def _to_float32(cast: cst.Call, tensors: Tensors) -> Optional[Tuple[cst.CSTNode, cst.CSTNode]]:
    """The node of a cast to half precision to replace, and its float32 twin: the method (`x.half()` ->
    `x.float()`), else the dtype argument (`torch.bfloat16` -> `torch.float32`)."""
    op, _ = tensors.call_name(cast)
    if op in ("half", "bfloat16") and isinstance(cast.func, cst.Attribute) and not tensors.is_function(cast.func):
        return cast.func, cast.func.with_changes(attr=cst.Name("float"))
    dtype = argument(cast, None, "dtype") or (argument(cast, 0) if op in ("to", "type") else None)
    if isinstance(dtype, cst.Attribute):
        return dtype, dtype.with_changes(attr=cst.Name("float32"))
    return None


def _within(node: cst.CSTNode, tree: cst.CSTNode) -> bool:
    return node is tree or any(_within(node, child) for child in tree.children)


@fixes("RL108", safe=True, safety="""
    The fix turns `log(softmax(x))` into `log_softmax(x)` and `x.softmax(d).log()` into
    `x.log_softmax(d)`. It is safe where the log is taken of the softmax itself: the values are the
    same, minus the underflow. Where an epsilon is added first (`log(softmax(x) + 1e-8)`), dropping
    it changes the values of rare tokens, so that fix is unsafe. There is no fix when the softmax is
    computed elsewhere and the log is taken of a variable.""")
def log_softmax(node: cst.CSTNode, file) -> Optional[Plan]:
    if not isinstance(node, cst.Call):
        return None
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "log" and not node.args:
        operand = node.func.value  # `x.softmax(-1).log()`
    elif len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
        operand = node.args[0].value  # `torch.log(torch.softmax(x, -1))`
    else:
        return None
    softmax = operand
    while isinstance(softmax, cst.BinaryOperation) and isinstance(softmax.operator, cst.Add):
        if _epsilon(softmax.right):
            softmax = softmax.left
        elif _epsilon(softmax.left):
            softmax = softmax.right
        else:
            return None
    if not (isinstance(softmax, cst.Call) and isinstance(softmax.func, cst.Attribute)
            and softmax.func.attr.value == "softmax"):
        return None
    replacement = softmax.with_changes(func=softmax.func.with_changes(attr=cst.Name("log_softmax")),
                                       lpar=node.lpar, rpar=node.rpar)
    return Plan("Use `log_softmax`", [(node, replacement)], unsafe=softmax is not operand)


def _epsilon(expr: cst.BaseExpression) -> bool:
    """A literal or an epsilon name (`eps`, `self.epsilon`, `EPS`)."""
    name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
    return number(expr) is not None or name.lower().strip("_") in _EPSILON_NAMES
