"""Fixes of the gradient rules: RL504."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from rllint.analysis.imports import Imports
from rllint.analysis.syntax import dotted, walk
from rllint.analysis.text import number
from rllint.fix import Plan, fixes
from rllint.fix.edits import method_call, module_alias

# In-place methods whose out-of-place form is the same name without the underscore.
_OUT_OF_PLACE = frozenset({
    "abs_", "add_", "addcmul_", "addcdiv_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "div_", "exp_",
    "index_fill_", "log_", "masked_fill_", "masked_scatter_", "mul_", "neg_", "pow_", "scatter_",
    "scatter_add_", "sigmoid_", "sqrt_", "sub_", "tanh_",
})
_AUGMENTED = {cst.MultiplyAssign: cst.Multiply, cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract,
              cst.DivideAssign: cst.Divide}


@fixes("RL504", safe=False, safety="""
    The fix rebinds the name to an out-of-place result: `x.mul_(m)` becomes `x = x.mul(m)`,
    `x[mask] = 0.0` becomes `x = x.masked_fill(mask, 0.0)` and `x[mask] *= c` becomes
    `x = torch.where(mask, x * c, x)` (for a mask written as a comparison or `~m`, and a number).
    It is unsafe: other references to the tensor (a view of it, a list or dict that holds it, the
    caller's variable) no longer see the change.""")
def out_of_place(node: cst.CSTNode, file) -> Optional[Plan]:
    if isinstance(node, cst.Call):
        return _method(node, file)
    if isinstance(node, cst.Assign) and len(node.targets) == 1:
        return _masked(node, node.targets[0].target, node.value, None, file)
    if isinstance(node, cst.AugAssign) and type(node.operator) in _AUGMENTED:
        return _masked(node, node.target, node.value, _AUGMENTED[type(node.operator)](), file)
    return None


def _method(call: cst.Call, file) -> Optional[Plan]:
    """`x.mul_(m)` standing as a statement of its own -> `x = x.mul(m)`."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in _OUT_OF_PLACE and dotted(func.value)):
        return None
    statement = next((node for node in walk(file.module, into_functions=True)
                      if isinstance(node, cst.Expr) and node.value is call), None)
    if statement is None:
        return None  # the call's value is used (`y = x.mul_(m)`): rebinding would change what `y` holds
    rebound = cst.Assign(targets=[cst.AssignTarget(func.value)],
                         value=call.with_changes(func=func.with_changes(attr=cst.Name(func.attr.value[:-1]))),
                         semicolon=statement.semicolon)
    return Plan(f"Use `{func.attr.value[:-1]}` and rebind the name", [(statement, rebound)])


def _masked(statement: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression,
            operator: Optional[cst.BaseBinaryOp], file) -> Optional[Plan]:
    if not (isinstance(target, cst.Subscript) and len(target.slice) == 1 and dotted(target.value)
            and isinstance(target.slice[0].slice, cst.Index) and number(value) is not None):
        return None
    mask = target.slice[0].slice.value
    if not (isinstance(mask, cst.Comparison) or (isinstance(mask, cst.UnaryOperation)
                                                  and isinstance(mask.operator, cst.BitInvert))):
        return None
    tensor = target.value
    if operator is None:
        replaced = method_call(tensor, "masked_fill", mask, value)
        message = "Use `masked_fill` and rebind the name"
    else:
        torch = module_alias(file.fact(Imports), "torch")
        if torch is None:
            return None
        where = cst.Attribute(value=cst.Name(torch), attr=cst.Name("where"))
        changed = cst.BinaryOperation(left=tensor, operator=operator, right=value)
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        replaced = cst.Call(func=where, args=[cst.Arg(mask, comma=comma), cst.Arg(changed, comma=comma), cst.Arg(tensor)])
        message = "Use `torch.where` and rebind the name"
    return Plan(message, [(statement, cst.Assign(targets=[cst.AssignTarget(tensor)], value=replaced,
                                                 semicolon=statement.semicolon))])
