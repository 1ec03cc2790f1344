"""Fixes of the log-prob rules: RL107, RL108."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from rllint.analysis.imports import Imports
from rllint.analysis.syntax import keyword, positional
from rllint.analysis.text import number
from rllint.fix import Plan, fixes
from rllint.fix.edits import method_call

# Ops whose first argument (or receiver, for the method form) is the tensor to upcast.
_UPCAST_FUNCTIONS = ("log_softmax", "softmax", "logsumexp", "cross_entropy")
_UPCAST_METHODS = ("log_softmax", "softmax", "logsumexp")
_EPSILON_NAMES = ("eps", "epsilon", "tiny")


@fixes("RL107", safe=True, safety="""
    The fix upcasts the operand with `.float()` (`F.log_softmax(logits.float(), dim=-1)`). It is safe:
    the values only gain precision, and PyTorch promotes what they are later combined with. The
    float32 copy of a vocabulary-sized tensor costs memory, which is the trade the rule asks for.
    There is no fix when the op itself asks for a half dtype (`dtype=torch.bfloat16`).""")
def upcast(node: cst.CSTNode, file) -> Optional[Plan]:
    if not isinstance(node, cst.Call) or not isinstance(node.func, (cst.Attribute, cst.Name)) or keyword(node, "dtype"):
        return None
    name = node.func.attr.value if isinstance(node.func, cst.Attribute) else node.func.value
    if (file.fact(Imports).qualified(node.func) or "").startswith("torch."):  # `F.log_softmax(logits, -1)`
        argument = keyword(node, "input")
        operand = argument.value if argument is not None else positional(node, 0)
        if name not in _UPCAST_FUNCTIONS or operand is None:
            return None
    elif name in _UPCAST_METHODS and isinstance(node.func, cst.Attribute):
        operand = node.func.value  # `logits.log_softmax(-1)`: the receiver is the tensor
    else:
        return None
    return Plan("Upcast with `.float()` first", [(operand, method_call(operand, "float"))])


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
