"""PPO/GRPO clipping: ratio clamps and their clip range, the clipped surrogate's pair of bounds, and
importance ratios of whole sequences.

A clamp is `torch.clamp(r, lo, hi)`, `r.clamp(lo, hi)`, `torch.clip` / `np.clip` / `jnp.clip`,
with positional or `min=` / `max=` bounds (`clamp_of`). It keeps a ratio near 1 when its bounds
are built `1 - c` and `1 + c` (or are numbers on either side of 1); `c`, the clip range, is read
with the shared value analysis (`clip_range`).

The clipped surrogate is `min(r * A, clamp(r, 1 - c, 1 + c) * A)`: two operands that are the
same product except that one holds the ratio and the other its clamp (`surrogate_sign`). Its sign
is followed through unary minus, positive factors and names, as `Tensors.terms` does, so the
negated form (a loss, whose pessimistic bound is the `max`) is told from the objective.

A ratio of whole sequences is `exp` of a sum over tokens of a policy-minus-old log-ratio:
`exp((logp - old).sum(-1))`, `exp(logp.sum(-1) - old.sum(-1))` (`summed_log_ratio`). A mean over
tokens (`.mean(-1)`, `sum / mask.sum()`, GSPO's length-normalised ratio) is not such a sum.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import libcst as cst

from rllint.analysis.imports import Imports
from rllint.analysis.kl import log_ratio
from rllint.analysis.tensors import MASK, Tensors, argument, int_value, number_value
from rllint.analysis.values import Values

_CLAMP_FUNCTIONS = ("torch.clamp", "torch.clip", "numpy.clip", "jax.numpy.clip", "mlx.core.clip")
_SUMS = ("sum", "nansum")
# Calls that keep a ratio what it is on its way from `exp` to a clamp: casts, reshapes, detaching.
_KEEP = ("float", "double", "to", "detach", "view", "reshape", "unsqueeze", "squeeze", "expand_as", "contiguous")


@dataclass(frozen=True)
class Clamp:
    """A clamp call: its operand and bounds (None where a bound is not given)."""

    call: cst.Call
    operand: cst.BaseExpression
    lower: Optional[cst.BaseExpression]
    upper: Optional[cst.BaseExpression]


def clamp_of(imports: Imports, call: cst.Call) -> Optional[Clamp]:
    """`torch.clamp(x, lo, hi)`, `x.clamp(lo, hi)`, `np.clip(x, a_min=lo, a_max=hi)`... as a Clamp, else None."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("clamp", "clip"):
        return None
    if imports.qualified(func) in _CLAMP_FUNCTIONS:
        operand = argument(call, 0)
        lower, upper = argument(call, 1, "min") or _keyword(call, "a_min"), \
            argument(call, 2, "max") or _keyword(call, "a_max")
    else:
        operand, lower, upper = func.value, argument(call, 0, "min"), argument(call, 1, "max")
    return None if operand is None else Clamp(call, operand, lower, upper)


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def one_and(expr: Optional[cst.BaseExpression], operator: type) -> Optional[cst.BaseExpression]:
    """`c` of `1 - c` (operator `cst.Subtract`) or `1 + c` (`cst.Add`), else None."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, operator) and \
            number_value(expr.left) == 1.0:
        return expr.right
    return None


def around_one(tensors: Tensors, clamp: Clamp) -> bool:
    """Whether a clamp keeps its operand in a band around 1: `[1 - c, 1 + c']`, or numbers below and above 1."""
    lower = tensors.resolve(clamp.lower) if clamp.lower is not None else None
    upper = tensors.resolve(clamp.upper) if clamp.upper is not None else None
    low, high = number_value(lower), number_value(upper)
    return (one_and(lower, cst.Subtract) is not None or (low is not None and 0 < low < 1)) and \
        (one_and(upper, cst.Add) is not None or (high is not None and high > 1))


def clip_range(tensors: Tensors, values: Values, clamp: Clamp) -> Optional[float]:
    """The clip range `c` of a clamp to `[1 - c, 1 + c]`: the number the lower bound's `c` holds (else the
    upper bound's), through the shared value analysis; `1 - lo` for a numeric lower bound. None if unknown."""
    for bound, operator in ((clamp.lower, cst.Subtract), (clamp.upper, cst.Add)):
        if bound is None:
            continue
        resolved = tensors.resolve(bound)
        c = one_and(resolved, operator)
        if c is not None:
            value = values.of(c)
            if value is not None and not isinstance(value.number, bool):
                return float(value.number)
        elif operator is cst.Subtract:
            value = values.of(bound)
            if value is not None and not isinstance(value.number, bool) and 0 < value.number < 1:
                return 1.0 - float(value.number)
    return None


# ---- the clipped surrogate ------------------------------------------------------------------------

def surrogate_sign(tensors: Tensors, imports: Imports, first: cst.BaseExpression,
                   second: cst.BaseExpression) -> Optional[int]:
    """+1 when `first` and `second` are the clipped surrogate's terms `r * A` and `clamp(r, 1 - c, 1 + c) * A`
    (in either order, with masks as further common factors): the objective, to maximise; -1 when both are
    negated (`-r * A`, `-A * clamp(...)`): the loss. None when they are not such a pair or their signs differ."""
    sign_one, one = _signed_factors(tensors, first)
    sign_two, two = _signed_factors(tensors, second)
    if sign_one != sign_two or len(one) != len(two):
        return None
    codes_one, codes_two = [_code(tensors, f) for f in one], [_code(tensors, f) for f in two]
    only_one = [f for f, code in zip(one, codes_one) if code not in codes_two]
    only_two = [f for f, code in zip(two, codes_two) if code not in codes_one]
    if len(only_one) != 1 or len(only_two) != 1:
        return None
    if not (_clamps(tensors, imports, only_two[0], only_one[0]) or _clamps(tensors, imports, only_one[0], only_two[0])):
        return None
    weights = [f for f, code in zip(one, codes_one) if code in codes_two and not _is_mask(tensors, f)]
    return sign_one if len(weights) == 1 else None


def _is_mask(tensors: Tensors, expr: cst.BaseExpression) -> bool:
    kind = tensors.kind(expr)
    return kind is not None and kind.kind == MASK


def _code(tensors: Tensors, expr: cst.BaseExpression) -> str:
    return tensors.code(tensors.resolve(expr), 1000)


def _clamps(tensors: Tensors, imports: Imports, clamped: cst.BaseExpression, ratio: cst.BaseExpression) -> bool:
    """Whether `clamped` is a clamp of `ratio` to a band around 1. The ratio may itself be capped from above
    (`clamp(r, max=delta)`: TRL's two-sided clipping) and still be the ratio the band clamps."""
    call = tensors.resolve(clamped)
    clamp = clamp_of(imports, call) if isinstance(call, cst.Call) else None
    if clamp is None or not around_one(tensors, clamp):
        return False
    capped = tensors.resolve(ratio)
    cap = clamp_of(imports, capped) if isinstance(capped, cst.Call) else None
    operands = {_code(tensors, ratio)} | ({_code(tensors, cap.operand)} if cap is not None and cap.lower is None else set())
    return _code(tensors, clamp.operand) in operands


def _signed_factors(tensors: Tensors, expr: cst.BaseExpression, depth: int = 6, top: bool = True
                    ) -> Tuple[int, List[cst.BaseExpression]]:
    """`expr` as a sign and the factors of a product, through unary minus, factors of known sign
    (`Tensors.positive_factor`: literals, `beta`) and names: the operand's own name (`surr1 = ratio * adv`)
    and, inside, names of a negation (`neg = -adv`). A factor's name that holds a product (`ratio = w * mask`)
    stays one factor, as the clamp of it sees it; anything else is one factor too."""
    resolved = tensors.resolve(expr) if depth else expr
    if not top and isinstance(expr, cst.Name) and not _negation(resolved):
        resolved = expr
    if isinstance(resolved, cst.UnaryOperation) and isinstance(resolved.operator, cst.Minus) and depth:
        sign, factors = _signed_factors(tensors, resolved.expression, depth - 1, top=False)
        return -sign, factors
    if isinstance(resolved, cst.BinaryOperation) and isinstance(resolved.operator, cst.Multiply) and depth:
        left_sign, left = _signed_factors(tensors, resolved.left, depth - 1, top=False)
        right_sign, right = _signed_factors(tensors, resolved.right, depth - 1, top=False)
        return left_sign * right_sign, left + right
    sign = tensors.positive_factor(resolved)
    return (sign, []) if sign else (1, [expr])


def _negation(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus)


# ---- whole-sequence ratios ------------------------------------------------------------------------

def exponent_of(tensors: Tensors, ratio: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`d` when `ratio` is `exp(d)` (through names, casts and reshapes), else None."""
    expr = tensors.resolve(ratio)
    for _ in range(8):
        if not isinstance(expr, cst.Call):
            return None
        op, operand = tensors.call_name(expr)
        if operand is None:
            return None
        if op == "exp":
            return operand
        if op not in _KEEP:
            return None
        expr = tensors.resolve(operand)
    return None


def summed_log_ratio(tensors: Tensors, exponent: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The sum over tokens that makes `exponent` a whole-sequence log-ratio of the policy to the old policy:
    `(logp - old).sum(-1)`, `torch.sum((logp - old) * mask, dim=1)`, `logp.sum(-1) - old.sum(-1)`. None for
    per-token log-ratios and for means over tokens (`.mean(-1)`, a sum divided by a length)."""
    expr = tensors.resolve(exponent)
    inner = _token_sum(tensors, expr)
    if inner is not None:
        return expr if log_ratio(tensors, _unmasked(tensors, inner)) == _NEW_OVER_OLD else None
    terms = tensors.terms(expr)
    if not terms or len(terms) != 2 or log_ratio(tensors, expr) != _NEW_OVER_OLD:
        return None
    if all(_token_sum(tensors, tensors.resolve(leaf)) is not None for _, leaf in terms):
        return expr
    return None


_NEW_OVER_OLD = {"new": 1, "old": -1, "ref": 0}


def _token_sum(tensors: Tensors, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The summed operand of a sum over the last (token) axis: `x.sum(-1)`, `x.sum(dim=1)`, `torch.sum(x, -1)`,
    and `x.sum()` of a single sequence. None when a summed log-prob was gathered with an index not shown to pick
    one entry per position (`Tensors.several_picks`): that axis may be the picks of one joint action."""
    if not isinstance(expr, cst.Call):
        return None
    op, operand = tensors.call_name(expr)
    if op not in _SUMS or operand is None:
        return None
    dim = argument(expr, 1 if tensors.is_function(expr.func) else 0, "dim")
    if dim is not None and int_value(dim) not in (-1, 1):
        return None
    summed = _unmasked(tensors, operand)
    if any(tensors.several_picks(leaf) is not None for _, leaf in tensors.terms(summed) or [(1, summed)]):
        return None
    return operand


def _unmasked(tensors: Tensors, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`d` of `d * mask` / `mask * d`."""
    expr = tensors.resolve(expr)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        for kept, other in ((expr.left, expr.right), (expr.right, expr.left)):
            if _is_mask(tensors, other):
                return kept
    return expr
