"""Differences of log-probs between the policy, the old policy and the reference, and the KL estimators
built from them.

A log-ratio is a signed sum of per-token log-probs whose roles (`Tensors.role`: "new", "old",
"ref") are known: `logp - ref_logp` is {"new": 1, "ref": -1}. The KL estimators of
KL(policy || reference) are written in those terms (Schulman, "Approximating KL divergence"):
k1 = `logp - ref`, k2 = `0.5 * (logp - ref) ** 2`, k3 = `exp(ref - logp) - (ref - logp) - 1`.
`k3_exponents` finds the `exp(d)` of the k3 form `exp(d) - d - 1` (in any order of its terms, as
`expm1(d) - d`, and weighted by a ratio: `w * exp(d) - d - 1`); `linear_terms` reads a loss or a
reward through the reductions, masks and mask counts that keep its sign. `says_reverse` is the author's word that an estimator is
of the other direction, KL(reference || policy).
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

import libcst as cst

from rllint.analysis.tensors import LOGPROBS, MASK, NEGLOGP, Tensors, last_part

Roles = Dict[str, int]

_REDUCTIONS = {"mean", "sum", "nanmean", "nansum", "masked_mean", "masked_sum", "agg_loss"}
_REVERSE_WORDS = re.compile(r"revers|\brkl\b|(^|_)rkl(_|$)|(^|_)rev_kl|kl\s*\(\s*(ref|reference|π_?ref|pi_?ref)\b"
                            r"|\(\s*(ref|reference)\s*(\|\||‖)", re.IGNORECASE)


def log_ratio(tensors: Tensors, expr: cst.BaseExpression) -> Optional[Roles]:
    """The signed roles of `expr` when it is a sum of per-token log-probs of known roles (negative
    log-probs count with the opposite sign), read through the masks, reductions and positive scales that keep
    each term's sign (`(logp - ref) * mask`), else None."""
    terms = linear_terms(tensors, expr)
    if not terms or len(terms) < 2:
        return None
    signs = {"new": 0, "old": 0, "ref": 0}
    for sign, leaf in terms:
        role = _leaf_role(tensors, leaf)
        if role is None:
            return None
        signs[role[0]] += sign * role[1]
    return signs


def _leaf_role(tensors: Tensors, leaf: cst.BaseExpression) -> Optional[Tuple[str, int]]:
    kind = tensors.kind(leaf)
    role = tensors.role(leaf)
    if kind is None or kind.kind not in (LOGPROBS, NEGLOGP) or (kind.vocab and not kind.by_name) or role is None:
        return None
    return role, -1 if kind.kind == NEGLOGP else 1


def k3_exponents(tensors: Tensors, node: cst.BinaryOperation) -> List[cst.Call]:
    """The `exp(d)` calls of `node` that make it the k3 form `exp(d) - d - 1` (`r - 1 - d` with `r = exp(d)`,
    `expm1(d) - d`, `expm1(-d) + d`, and `w * exp(d) - d - 1`, k3 weighted by an importance ratio)."""
    if not isinstance(node.operator, (cst.Add, cst.Subtract)):
        return []
    terms = tensors.terms(node, depth=0)
    if terms is None or len(terms) < 2:
        return []
    found = []
    for position, (sign, leaf) in enumerate(terms):
        for factor in _product_factors(leaf):
            call = tensors.resolve(factor) if isinstance(factor, cst.Name) else factor
            if not isinstance(call, cst.Call):
                continue
            op, operand = tensors.call_name(call)
            if op not in ("exp", "expm1") or operand is None:
                continue
            inner = tensors.terms(operand, depth=0)
            rest = [t for i, t in enumerate(terms) if i != position]
            if inner and all(any(s2 == -sign * s1 and l2.deep_equals(l1) for s2, l2 in rest) for s1, l1 in inner):
                found.append(call)
    return found


def _product_factors(expr: cst.BaseExpression) -> List[cst.BaseExpression]:
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return _product_factors(expr.left) + _product_factors(expr.right)
    return [expr]


def weighted_by_name(tensors: Tensors, expr: cst.BaseExpression) -> bool:
    """Whether `expr` is a product with a named coefficient (`-beta * kl`): a penalty, whose sign belongs to
    where it is added, not an estimator."""
    def bare(node: cst.BaseExpression) -> cst.BaseExpression:
        while isinstance(node, cst.UnaryOperation):
            node = node.expression
        return node
    return any(isinstance(bare(factor), (cst.Name, cst.Attribute)) and tensors.positive_factor(bare(factor))
               for factor in _product_factors(bare(expr)))


def linear_terms(tensors: Tensors, expr: cst.BaseExpression, depth: int = 4) -> List[Tuple[int, cst.BaseExpression]]:
    """`expr` as a signed sum, also through reductions (`x.mean()`, `masked_mean(x, mask)`, `torch.sum(x)`)
    and mask factors (`x * mask`), which keep the sign of every term; a leaf that is none of these stays
    a leaf."""
    out: List[Tuple[int, cst.BaseExpression]] = []
    for sign, leaf in tensors.terms(expr) or [(1, expr)]:
        inner = _through_sign_keeping(tensors, leaf) if depth else None
        if inner is None:
            out.append((sign, leaf))
        else:
            out.extend((sign * s, sub) for s, sub in linear_terms(tensors, inner, depth - 1))
    return out


def _through_sign_keeping(tensors: Tensors, leaf: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    if isinstance(leaf, cst.Call):
        op, operand = tensors.call_name(leaf)
        if op in _REDUCTIONS:
            if operand is None and leaf.args and leaf.args[0].keyword is None:
                operand = leaf.args[0].value  # a local helper: `masked_mean(x, mask)`
            return operand
        return None
    if isinstance(leaf, cst.BinaryOperation) and isinstance(leaf.operator, cst.Multiply):
        for kept, other in ((leaf.left, leaf.right), (leaf.right, leaf.left)):
            kind = tensors.kind(other)
            if kind is not None and kind.kind == MASK:
                return kept
    if isinstance(leaf, cst.BinaryOperation) and isinstance(leaf.operator, cst.Divide) and _count(tensors, leaf.right):
        return leaf.left  # `(x * mask).sum() / mask.sum()`: a masked mean
    return None


def _count(tensors: Tensors, expr: cst.BaseExpression) -> bool:
    """A positive normaliser: the count of a mask (`mask.sum().clamp(min=1)`), `len(x)`, a positive constant."""
    if tensors.positive_factor(expr) == 1 or (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name)
                                               and expr.func.value == "len"):
        return True
    for step in tensors.history(expr):
        kind = tensors.kind(step) if isinstance(step, (cst.Name, cst.Attribute, cst.Subscript)) else None
        if kind is not None:
            return kind.kind == MASK
    return False


def says_reverse(tensors: Tensors, node: cst.CSTNode, name: Optional[str] = None) -> bool:
    """Whether the estimator at `node` is declared KL(reference || policy): by the name it is bound to, or by
    the name or the docstring of a function it is in."""
    if name and _REVERSE_WORDS.search(name):
        return True
    scope = tensors.scope(node)
    while scope is not None:
        function = scope.node
        if isinstance(function, cst.FunctionDef):
            doc = function.get_docstring() or ""
            if _REVERSE_WORDS.search(doc) or _REVERSE_WORDS.search(function.name.value):
                return True
        scope = scope.parent
    return False


def bound_name(target: cst.BaseExpression) -> Optional[str]:
    return last_part(target) if isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)) else None
