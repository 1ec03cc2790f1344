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

from rllint.analysis.facts import REF
from rllint.analysis.syntax import walk
from rllint.analysis.text import call_tail
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


# What a project function does with the log-probs it is given under a reference's name (RL111): a slot is only
# the reference's if the callee uses it as one.
UNUSED, RATIO_DENOMINATOR = "unused", "ratio-denominator"
_EXP = {"exp"}
_HELPER_DEPTH = 2
_CLIPS = {"clamp", "clip", "clamp_", "clip_"}


def reference_use(function, param: str, depth: int = 0, clipped: Optional[bool] = None) -> Optional[str]:
    """How `function` (an `ir.FunctionIR`) uses its parameter `param`: UNUSED when its body never reads it;
    RATIO_DENOMINATOR when every read subtracts it from log-probs (`logp - param`, or hands it to a method of
    the same class that does) and the exponential of that difference is clamped, as an importance ratio
    pi / pi_old is (a KL estimator is not clamped as a bare exponential; `clipped`: a caller clamps what this
    method returns); None otherwise."""
    if function is None or function.is_module or function.param(param) is None:
        return None
    stores = {id(t.target) for n in walk(function.node) if isinstance(n, cst.Assign) for t in n.targets}
    reads = [n for n in walk(function.node.body) if isinstance(n, cst.Name) and n.value == param
             and id(n) not in stores]
    if not reads:  # an abstract method's (`...`, `raise NotImplementedError`) is the overrides' to say
        return UNUSED if not _abstract(function) else None
    parents = _parents(function.node.body)
    clipped = clipped or _clipped_exponentials(function, depth)
    for read in reads:
        parent = parents.get(id(read))
        if isinstance(parent, cst.Comparison) and any(
                isinstance(c.comparator, cst.Name) and c.comparator.value == "None" for c in parent.comparisons):
            continue  # `if param is None`
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Subtract) \
                and parent.right is read and clipped:
            continue
        if isinstance(parent, cst.Arg) and clipped and depth < _HELPER_DEPTH and _helper_use(
                function, parents, parent, depth) == RATIO_DENOMINATOR:
            continue
        return None
    return RATIO_DENOMINATOR


def _abstract(function) -> bool:
    return all(isinstance(stmt, (cst.Pass, cst.Raise)) or isinstance(stmt, cst.Expr) and isinstance(
        stmt.value, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)) for stmt in function.statements)


def _parents(node: cst.CSTNode) -> Dict[int, cst.CSTNode]:
    found: Dict[int, cst.CSTNode] = {}
    for parent in walk(node):
        for child in parent.children:
            found[id(child)] = parent
    return found


def _method(function, call: cst.Call):
    """The method of `function`'s class that `self.name(...)` calls."""
    func = call.func
    if function.cls is None or not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name) \
            or func.value.value != "self":
        return None
    return function.module.flow.method_of(function.cls, func.attr.value)


def _helper_use(function, parents: Dict[int, cst.CSTNode], arg: cst.Arg, depth: int) -> Optional[str]:
    """What the method of the class that the argument `arg` is given to does with it."""
    call = parents.get(id(arg))
    method = _method(function, call) if isinstance(call, cst.Call) else None
    if method is None:
        return None
    bound = method.bind(call, method=True)
    name = next((n for n, v in bound.items() if v is arg.value), None)
    return reference_use(method, name, depth + 1, clipped=True) if name is not None else None


def _clipped_exponentials(function, depth: int) -> Optional[bool]:
    """Whether `function` clamps an exponential: `clamp(exp(d))`, `clamp(r)` with `r = exp(d)` or `r` what a
    method of the class returns as one. None when it clamps none."""
    ratios = set()
    for node in walk(function.node.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            if _exponential(node.value) or (isinstance(node.value, cst.Call) and depth < _HELPER_DEPTH
                                            and _returns_exponential(_method(function, node.value))):
                ratios.add(node.targets[0].target.value)
    for node in walk(function.node.body):
        if isinstance(node, cst.Call) and call_tail(node) in _CLIPS:
            # `r.clamp(lo, hi)` clamps its receiver, `torch.clamp(r, lo, hi)` its first argument (another module's
            # imports are not read here, so a module function is told by the value its receiver holds)
            held = function.module.flow.value(node.func.value) if isinstance(node.func, cst.Attribute) else None
            receiver = held is not None and held.facts.get("type") != REF
            clamped = node.func.value if receiver else (node.args[0].value if node.args else None)
            if clamped is not None and (_exponential(clamped) or
                                        isinstance(clamped, cst.Name) and clamped.value in ratios):
                return True
    return None


def _exponential(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and call_tail(expr) in _EXP


def _returns_exponential(method) -> bool:
    if method is None:
        return False
    exps = {t.target.value for n in walk(method.node.body) if isinstance(n, cst.Assign) and _exponential(n.value)
            for t in n.targets if isinstance(t.target, cst.Name)}
    return bool(method.returns) and all(r.value is not None and (_exponential(r.value) or isinstance(
        r.value, cst.Name) and r.value.value in exps) for r in method.returns)
