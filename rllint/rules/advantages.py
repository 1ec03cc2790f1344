"""RL2xx: advantage estimation (normalisation epsilons, group layouts, masks and normalisers)."""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.context import tokens
from rllint.analysis.domains.distributed import local_count, main_process_only
from rllint.analysis.facts import BATCH, FUNCTION, NORM, NUMBER, STD, TIME, VAR
from rllint.analysis.flow import Flow
from rllint.analysis.imports import Imports
from rllint.analysis.logged import LoggedOnly
from rllint.analysis.minibatches import renormalised
from rllint.analysis.numbers import NumberReads
from rllint.analysis.positions import Lines
from rllint.analysis.purpose import RLCodeOnly
from rllint.analysis.returns import PaddedRows, Recursions, full_width
from rllint.analysis.syntax import walk
from rllint.analysis.tensors import (ADVANTAGES, MASK, REWARDS, Kind, Tensors, int_value,
                                     last_part)
from rllint.analysis.values import Value, Values, format_number
from rllint.diagnostic import Severity, Tier
from rllint.registry import CSTRule, Option
from rllint.rules.bases import TensorRule

MAX_EPSILON = Option(
    "max-epsilon", float, 0.1,
    "RL201: the smallest stability epsilon (added to or clamping a std / norm / variance in a "
    "denominator) that is reported; 1e-3 widens the rule.",
)

MIN_ADVANTAGE_BATCH = Option(
    "min-advantage-batch", int, 5,
    "RL211: the smallest minibatch (in samples) whose advantages may be normalised on their own statistics "
    "inside the update loop without being reported.",
)

# The spreads the engine proves (`stat`), as messages name them.
_STATS = {STD: "std", VAR: "variance", NORM: "norm"}
# Named like a spread: evidence only for the broad form (RL201 named).
_SPREAD_WORDS = {"std": "std", "stds": "std", "stdev": "std", "sigma": "std", "rstd": "std", "var": "variance",
                 "vars": "variance", "variance": "variance", "norm": "norm", "norms": "norm", "rms": "norm"}
# Shape-only operations between a spread and the epsilon (`std.repeat_interleave(G) + eps`).
_SHAPE_METHODS = {"repeat_interleave", "repeat", "unsqueeze", "view", "reshape", "expand", "expand_as", "squeeze",
                  "to", "float", "double", "detach", "flatten", "clone", "contiguous", "type_as", "item", "abs"}
_CLAMPS = {"clamp", "clip", "clamp_min", "maximum", "max", "fmax"}
_NORMALISER_WORDS = {"advantage", "advantages", "adv", "whiten", "whitening", "normalize", "normalise", "normalized",
                     "normalised", "normalization", "normalisation", "standardize", "standardise", "zscore", "scale"}
_EPSILON_WORDS = {"eps", "epsilon", "floor", "min", "tiny", "delta"}
_CLIP_WORDS = {"clip", "ratio", "low", "high", "loss", "policy", "pg", "surrogate", "kl"}
# `1e4`, `1e+8`: a minus sign lost from `1e-4`.
_POSITIVE_EXPONENT = re.compile(r"^[0-9_.]+[eE]\+?0*[1-9]")


def _is_normaliser(name: str) -> bool:
    """An advantage / whitening / normalising function by its name (broad form): `whiten`, `normalize_advantages`."""
    words = set(tokens(name))
    return bool(words & _NORMALISER_WORDS) and not words & _CLIP_WORDS


def _is_epsilon(name: str) -> bool:
    """`eps`, `epsilon`, `std_eps`; not a clip epsilon (`clip_eps`, `epsilon_low`)."""
    words = set(tokens(name))
    return bool(words & {"eps", "epsilon"}) and not words & _CLIP_WORDS


def _is_typo(value: Value) -> bool:
    """A literal written with a positive exponent (`1e4`, `1e+8`): `1e-4` with its minus sign lost."""
    return isinstance(value.node, (cst.Float, cst.Integer)) and bool(_POSITIVE_EXPONENT.match(value.node.value))


def _strip_shape(node: cst.BaseExpression) -> cst.BaseExpression:
    """The tensor under shape-only operations and conversions: `std` of `float(std.repeat_interleave(G)[i])`."""
    while True:
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in _SHAPE_METHODS):
            node = node.func.value
        elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("float", "abs")
              and len(node.args) == 1):
            node = node.args[0].value
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            return node


def _call_tail(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Call):
        func = node.func
        return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    return None


def _is_half(exponent: cst.BaseExpression) -> bool:
    """`** 0.5` or `** (1 / 2)`."""
    if isinstance(exponent, cst.Float):
        return exponent.value in ("0.5", ".5")
    return (isinstance(exponent, cst.BinaryOperation) and isinstance(exponent.operator, cst.Divide)
            and isinstance(exponent.left, cst.Integer) and isinstance(exponent.right, cst.Integer)
            and exponent.left.value == "1" and exponent.right.value == "2")


def _has_square(expr: cst.BaseExpression) -> bool:
    """`x ** 2`, `x.pow(2)`, `x.square()`, also weighted (`(x - m) ** 2 * mask`)."""
    expr = _strip_shape(expr)
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Power):
            return isinstance(expr.right, cst.Integer) and expr.right.value == "2"
        if isinstance(expr.operator, cst.Multiply):
            return _has_square(expr.left) or _has_square(expr.right)
        return False
    tail = _call_tail(expr)
    if tail == "square":
        return True
    return tail == "pow" and any(isinstance(a.value, cst.Integer) and a.value.value == "2" for a in expr.args)


class LargeEpsilon(RLCodeOnly, CSTRule):
    """
    ## What it does
    Reports a stability epsilon of at least `max-epsilon` (default `0.1`) added to a
    standard deviation, norm, variance or square root in a denominator, or clamping one
    from below: `(r - mean) / (std + 1e4)`, `eps=1.0` then `/ (std + eps)`, `torch.sqrt(var + 1e+2)`,
    `std.clamp(min=0.1)`, in RL post-training code. A literal with a positive exponent
    (`1e4`, `1e+8`: `1e-4` without its minus sign) is reported whatever `max-epsilon` says.

    The spread is known by what computes it: a `std` / `var` / `norm` call (torch, numpy,
    `statistics`), a square root, or a second moment under a root (`(x ** 2).mean()`),
    directly or through assignments, attributes and the return of a helper. The epsilon's
    value is followed to where it is written: a literal, a constant (also in another module),
    a parameter default, a config field, an argparse or environment default. An epsilon
    parameter of a function is reported where a call of it passes a large value, when the
    body adds it to a spread in a denominator. When the value is written elsewhere, the
    finding points where it is written.

    A floor on a norm (`g / max(g.norm(), 1.0)`) bounds the norm (it is how gradients are
    clipped) and is not reported.

    ## Why is this bad?
    The epsilon only guards against division by zero. Rewards of a group often have a
    std of 0.1 to 1; an epsilon of that size or more dominates the denominator, so every
    advantage shrinks toward zero and the policy gradient vanishes without any error.
    `1e4` and `1e+4` are usually a typo for `1e-4`.

    ## Example
    ```python
    ADV_EPS = 1e4

    def group_advantages(rewards):
        return (rewards - rewards.mean()) / (rewards.std() + ADV_EPS)
    ```

    ## Use instead
    ```python
    ADV_EPS = 1e-4

    def group_advantages(rewards):
        return (rewards - rewards.mean()) / (rewards.std() + ADV_EPS)
    ```

    The PPO/GRPO clip `epsilon=0.2`, an optimizer's or a normalisation layer's `eps`, and
    `1e-8`, `1e-6`, `1e-4` are not reported.

    ## Options
    - `max-epsilon` (float, default `0.1`): epsilons at least this large are reported;
      `1e-3` widens the rule to epsilons that are merely large.

    Naming the rule (`--select RL201`) adds its broad form: a spread known only by its
    name (a variable called `std`, `sigma` or `var`), and the epsilon parameter of a
    function named like an advantage or whitening function (`whiten(x, eps=1.0)`).
    """

    code = "RL201"
    name = "large-epsilon"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "epsilon {value}{where} {role}; {consequence} (use 1e-6 to 1e-4){hint}"
    options = (MAX_EPSILON,)
    triggers = ("std", "var", "norm", "sqrt", "sigma", "rms", "whiten", "dvantage", "stdev")

    def __init__(self, file) -> None:
        super().__init__(file)
        self._reported: Set[int] = set()
        # Per function (and the module): what names are assigned, and the names divided by.
        self._pending: List[Tuple[Dict[str, List[cst.BaseExpression]], Set[str]]] = [({}, set())]
        # Parameters a function adds to something in a denominator (function -> parameter -> (that something,
        # under a root)), proven a spread only for a call that passes a large value; every call by its callee's
        # last name.
        self._epsilon_params: Dict[cst.FunctionDef, Dict[str, List[Tuple[cst.BaseExpression, bool]]]] = {}
        self._calls: Dict[str, List[cst.Call]] = {}

    @property
    def _broad(self) -> bool:
        return self.file.settings.names(self.code)

    # ---- denominators --------------------------------------------------------------

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, (cst.Divide, cst.FloorDivide)) and not self._scalar(node.left):
            self._denominator(node.right)

    def _scalar(self, numerator: cst.BaseExpression) -> bool:
        """A number divided by `c + spread` (`1.0 / (1.0 + loss.std())`, `eps / (1 + grad_norm)`) maps the spread
        to a score or a scale: nothing with that spread is normalised, so `c` guards no division."""
        facts = self.file.fact(Flow).value(numerator).facts
        return facts.get("type") == NUMBER or facts.get("optional") == NUMBER

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, (cst.DivideAssign, cst.FloorDivideAssign)):
            self._denominator(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        tail = _call_tail(node)
        if tail is None:
            return
        self._calls.setdefault(tail, []).append(node)
        if tail == "rsqrt":  # x * rsqrt(var + eps) divides by the root
            subject = self._call_subject(node)
            if subject is not None:
                self._inside_root(subject)
        elif self._broad and _is_normaliser(tail):
            # `masked_whiten(adv, mask, eps=1.0)`: the epsilon given to a function named like a normaliser.
            for arg in node.args:
                if arg.keyword is not None and _is_epsilon(arg.keyword.value):
                    value = self._large(arg.value)
                    if value is not None:
                        self._flag(value, "std", "is the stability epsilon given to {}()".format(tail))

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self._pending[-1][0].setdefault(node.targets[0].target.value, []).append(node.value)

    def _denominator(self, expr: cst.BaseExpression) -> None:
        bare = _strip_shape(expr)
        if isinstance(bare, cst.Name):
            self._pending[-1][1].add(bare.value)
        for found in self._epsilons(expr, under_root=False):
            self._flag(*found)

    def _inside_root(self, expr: cst.BaseExpression) -> None:
        for found in self._epsilons(expr, under_root=True):
            self._flag(*found)

    def _epsilons(self, expr: cst.BaseExpression, under_root: bool) -> List[tuple]:
        """(value, what, role) for each too-large epsilon that `expr` adds to or clamps a spread with."""
        expr = _strip_shape(expr)
        found = []
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            for spread, other in ((expr.left, expr.right), (expr.right, expr.left)):
                if isinstance(other, cst.Name):
                    parameter = self.file.fact(Values).parameter_of(other)
                    if parameter is not None:
                        self._epsilon_params.setdefault(parameter, {}).setdefault(other.value, []).append(
                            (spread, under_root))
                value = self._large(other)
                what = self._spread_beside(spread, other, under_root) if value is not None else None
                if what:
                    found.append((value, what, "added to the {}".format(what)))
                    break
        elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Power):
            if _is_half(expr.right):
                found.extend(self._epsilons(expr.left, under_root=True))
        elif isinstance(expr, cst.Call):
            tail = _call_tail(expr)
            if tail in ("sqrt", "rsqrt"):
                target = self._call_subject(expr)
                if target is not None:
                    found.extend(self._epsilons(target, under_root=True))
            elif tail in _CLAMPS or tail == "add":
                found.extend(self._clamped(expr, tail))
        return found

    def _spread_beside(self, spread: cst.BaseExpression, epsilon: cst.BaseExpression, under_root: bool
                       ) -> Optional[str]:
        """What spread `spread` is, when `epsilon` added to it is not one too."""
        what = self._spread(spread) or ("variance" if under_root and self._squares(spread) else None)
        return what if what and self._spread(epsilon) is None else None

    def _large(self, expr: cst.BaseExpression) -> Optional[Value]:
        """The number `expr` holds when it is at least `max-epsilon` or a positive-exponent typo."""
        value = self.file.fact(Values).of(expr)
        if value is None or isinstance(value.number, bool):
            return None
        return value if value.number >= self.option(MAX_EPSILON) or _is_typo(value) else None

    def _clamped(self, expr: cst.Call, tail: str) -> List[tuple]:
        subject = self._call_subject(expr)
        args = [a for a in expr.args if not a.star]
        others = [a.value for a in args if a.keyword is None and a.value is not subject]  # `max(0.5, std)` too
        keywords = {a.keyword.value: a.value for a in args if a.keyword is not None}
        bound = keywords.get({"clamp": "min", "clip": "min", "add": "other"}.get(tail, "min")) or (
            others[0] if others else keywords.get("a_min"))
        value = self._large(bound) if bound is not None else None
        what = self._spread(subject) if value is not None and subject is not None else None
        if what is None or (what == "norm" and tail != "add"):
            return []  # `g / max(g.norm(), 1.0)` bounds the norm: how gradients are clipped, not an epsilon
        role = "added to the {}".format(what) if tail == "add" else "clamping the {} from below".format(what)
        return [(value, what, role)]

    def _call_subject(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """The tensor a call works on: `x` of `x.sqrt()`, `torch.sqrt(x)`, `max(x, c)`."""
        func = call.func
        if isinstance(func, cst.Attribute) and not _is_module(call, self):
            return func.value
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if not positional:
            return None
        if _call_tail(call) in ("max", "maximum", "fmax") and len(positional) == 2:
            # max(c, std) as well as max(std, c): the spread is whichever side is one.
            if self._spread(positional[1]) and not self._spread(positional[0]):
                return positional[1]
        return positional[0]

    def _spread(self, expr: Optional[cst.BaseExpression]) -> Optional[str]:
        """What kind of spread `expr` holds (std, variance, norm, square root) by what computes it, or None;
        in the broad form also by its name."""
        if expr is None:
            return None
        bare = _strip_shape(expr)
        if isinstance(bare, cst.Call):
            tail = _call_tail(bare)
            if tail in ("sqrt", "rsqrt"):
                return None if self._plain_number(self._call_subject(bare)) else "square root"
            if tail in _CLAMPS and bare.args:
                return self._spread(self._call_subject(bare))
        elif isinstance(bare, cst.BinaryOperation) and isinstance(bare.operator, cst.Power) and _is_half(bare.right):
            return None if self._plain_number(bare.left) else "square root"
        flow = self.file.fact(Flow)
        stat = flow.value(bare).facts.get("stat") or flow.value(expr).facts.get("stat")
        if stat in _STATS:
            return _STATS[stat]
        if not self._broad:
            return None
        name = bare.attr.value if isinstance(bare, cst.Attribute) else bare.value if isinstance(bare, cst.Name) else None
        words = tokens(name) if name else []
        if _EPSILON_WORDS.intersection(words):
            return None
        return next((_SPREAD_WORDS[w] for w in words if w in _SPREAD_WORDS), None)

    def _plain_number(self, root: Optional[cst.BaseExpression]) -> bool:
        """A number no statistic computed (`len(v)`, a constant): its root scales (a standard error's
        `sqrt(n)`), it is no spread an epsilon guards."""
        if root is None:
            return False
        found = self.file.fact(Flow).value(root)
        return found.facts.get("type") == NUMBER and not found.facts.get("stat") and not self._squares(root)

    def _squares(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """A second moment: `x.pow(2).mean()`, `(x ** 2).sum()`, `((x - m) ** 2 * mask).sum() / mask.sum()`, or a
        name assigned one."""
        expr = _strip_shape(expr)
        if isinstance(expr, cst.Name) and depth < 3:
            assigned = self.file.fact(Values).assigned(expr)
            return assigned is not None and self._squares(assigned, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide):
            return self._squares(expr.left, depth)  # a mean written as a sum over a count
        if _call_tail(expr) in ("mean", "sum", "nanmean", "nansum"):
            inner = self._call_subject(expr)
            return inner is not None and _has_square(inner)
        return False

    # ---- names assigned a spread with an epsilon, divided by later ---------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pending.append(({}, set()))
        if self._broad:
            self._signature(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._settle(*self._pending.pop())

    def leave_Module(self, original_node: cst.Module) -> None:
        self._settle(*self._pending.pop())
        self._passed()

    def _settle(self, assigned: Dict[str, List[cst.BaseExpression]], divisors: Set[str]) -> None:
        """`sigma = std + 1e4` and later `/ sigma`."""
        for name, values in assigned.items():
            if name in divisors:
                for value in values:
                    for found in self._epsilons(value, under_root=False):
                        self._flag(*found)

    def _passed(self) -> None:
        """`whiten(x, eps=1.0)` where `whiten` adds `eps` to a spread in a denominator: the value passed."""
        flow = self.file.fact(Flow)
        for function, params in self._epsilon_params.items():
            for call in self._calls.get(function.name.value, ()):
                if not any(self._large(arg) for arg in _arguments(function, call, params)):
                    continue
                callee = flow.value(call.func)
                target = callee.facts.get("function") if callee.facts.get("type") == FUNCTION else None
                if target is None or target.node is not function:
                    continue
                bound = target.bind(call, method="bound" in callee.facts)
                for param, uses in params.items():
                    value = self._large(bound[param]) if param in bound else None
                    what = next((w for w in (self._spread_beside(spread, bound[param], root) for spread, root in uses)
                                 if w), None) if value is not None else None
                    if what:
                        self._flag(value, what, "is the stability epsilon given to {}()".format(function.name.value))

    def _signature(self, node: cst.FunctionDef) -> None:
        """`def whiten(values, eps=1.0)`: the epsilon default of a function named like a normaliser (broad form)."""
        if not _is_normaliser(node.name.value):
            return
        for param in list(node.params.params) + list(node.params.kwonly_params):
            if param.default is None or not _is_epsilon(param.name.value):
                continue
            value = self._large(param.default)
            if value is not None:
                self._flag(value, "std", "is the stability epsilon of {}()".format(node.name.value))

    def _flag(self, value: Value, what: str, role: str) -> None:
        if id(value.node) in self._reported:
            return
        self._reported.add(id(value.node))
        where = "" if value.origin == "literal" else " ({})".format(value.origin)
        hint = ""
        if _is_typo(value):
            hint = "; a positive exponent: did you mean {}?".format(
                re.sub(r"[eE]\+?", "e-", value.node.value, count=1))
        if role.startswith("clamping"):
            consequence = "a floor that large flattens the advantages of every low-variance group"
        else:
            consequence = "it dominates the {} in the denominator and advantages shrink toward zero".format(what)
        self.report(value.node, value=format_number(value.number), where=where, role=role, consequence=consequence,
                    hint=hint)


def _arguments(function: cst.FunctionDef, call: cst.Call, names) -> List[cst.BaseExpression]:
    """What `call` passes the parameters `names` of `function`, read from the syntax alone (a method called
    through an attribute skips `self`): a cheap look before the engine says which function is called."""
    params = list(function.params.posonly_params) + list(function.params.params)
    if params and params[0].name.value in ("self", "cls") and isinstance(call.func, cst.Attribute):
        params = params[1:]
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    found = [a.value for a in call.args if a.keyword is not None and a.keyword.value in names]
    found.extend(positional[i] for i, p in enumerate(params) if p.name.value in names and i < len(positional))
    return found


def _is_module(call: cst.Call, rule: CSTRule) -> bool:
    """Whether `call.func` is a module function (`torch.sqrt`, `np.std`) rather than a method of a tensor."""
    qualified = rule.file.fact(Imports).qualified(call.func.value) if isinstance(call.func, cst.Attribute) else None
    return qualified is not None and qualified.split(".")[0] in ("torch", "numpy", "math", "statistics", "np", "jax",
                                                                   "F", "scipy")


# ---- RL202-RL207: group layouts, group statistics, masks and normalisers ----

_LOSS_NAME = re.compile(r"loss", re.IGNORECASE)
_SEQUENCE_MASK = re.compile(r"(^|_)(completion|response|resp|loss|action|generation|gen|answer|eos)_masks?$")


def _callee(call: cst.Call) -> Optional[str]:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None


def _reduced_by_helper(tensors: Tensors, expr: cst.BaseExpression) -> bool:
    """Whether `expr` was made by a call handed a mask and a time axis (`agg(token_loss, response_mask, axis=1)`,
    also scaled by a constant): a masked reduction over that axis, one value per sequence."""
    value = tensors.value_of(expr) if isinstance(expr, cst.Name) else None
    pending = [value] if value is not None else []
    while pending:
        node = pending.pop()
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Multiply, cst.Divide)):
            pending.extend((node.left, node.right))
        elif isinstance(node, cst.Call):
            axis = next((arg.value for arg in node.args if arg.keyword is not None and
                         arg.keyword.value in ("axis", "dim")), None)
            masked = any(arg.keyword is None and (tensors.kind(arg.value) or _NO_KIND).kind == MASK
                         for arg in node.args)
            if masked and axis is not None and int_value(axis) in (1, -1):
                return True
    return False


def _is_loss(tensors: Tensors, expr: cst.BaseExpression) -> bool:
    """A per-token loss by its name (`per_token_loss`, `pg_losses`, `loss_mat`)."""
    for step in tensors.history(expr):
        name = last_part(step) if isinstance(step, (cst.Name, cst.Attribute, cst.Subscript)) else None
        if name:
            return bool(_LOSS_NAME.search(name))
    return False


def _per_completion(tensors: Tensors, expr: cst.BaseExpression) -> bool:
    """One value per completion (`[B*G]`): rewards, scores or advantages not cut into groups."""
    kind = tensors.kind(expr)
    if kind is None or kind.kind not in (REWARDS, ADVANTAGES) or kind.rank not in (None, 1):
        return False
    return not any(tensors.group_reshape(step) for step in tensors.history(expr)) and \
        tensors.group_stat(expr) is None


class GroupLayoutMismatch(TensorRule):
    """
    ## What it does
    Reports a group reshape of rewards or advantages that disagrees with how the batch was
    laid out: `rewards.view(G, -1)` / `reshape(num_generations, -1)` when the completions of
    one prompt are contiguous (`prompt_ids.repeat_interleave(G)`, `np.repeat(ids, G)`,
    `[p for p in prompts for _ in range(G)]`, verl's `batch.repeat(repeat_times=n,
    interleave=True)`, TRL's `RepeatSampler`, or a file that imports TRL, verl or OpenRLHF),
    `view(-1, G)` when prompts were tiled (`prompts * G`, `prompt_ids.repeat(G, 1)`,
    `np.tile(ids, G)`), and `view(-1, batch_size)` where the group size was meant. The
    layout is read from the enclosing function (with the helpers it calls and, for a
    method, its class), then from the whole file; when the evidence shows both layouts,
    or none, only the batch-size reshape is reported.

    It also reports a `zip` that pairs, row by row, two sequences repeated by the same count in
    different layouts (`prompt_ids.repeat_interleave(G)` handed to the sampler, the answers
    tiled as `[a for _ in range(G) for a in answers]`): the engine follows each layout from
    where it is made through generation, decoding and the file's helpers to the pairing.

    Sizes are known by what they are, not by their names: the group size is a group-size
    setting, a local alias of one (`n = cfg.num_generations`), the count the prompts were
    repeated by (`k` of `prompt_ids.repeat_interleave(k)`), or the size of rows that are
    then centred by their own mean; a batch size is one by its name, the first axis of a
    tensor (`B, T = ids.shape`, `x.size(0)`) or a length (`len(prompts)`). With tiled
    prompts, `view(-1, B)` (one group per column) is fine.

    ## Why is this bad?
    Each row of the reshaped tensor is supposed to hold the completions of one prompt. With
    the wrong orientation every "group" mixes prompts, so group baselines compare answers to
    different questions: advantages are noise, and nothing fails.

    ## Example
    ```python
    prompt_ids = prompt_ids.repeat_interleave(G, dim=0)   # p0 p0 p0 p1 p1 p1
    grouped = rewards.view(G, -1)                          # rows mix prompts
    answers = [a for _ in range(G) for a in answers]       # a0 a1 a0 a1 a0 a1
    scores = [grade(a, c) for a, c in zip(answers, completions)]  # p0's completion meets a1
    ```

    ## Use instead
    ```python
    grouped = rewards.view(-1, G)                          # one row per prompt
    answers = [a for a in answers for _ in range(G)]       # in the prompts' layout
    ```

    ## Options
    None.

    ## References
    - prime-rl #600, flash-linear-attention #1073 (a batch size used as the group size).
    """

    code = "RL202"
    name = "group-layout-mismatch"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "`{expr}` {problem}"
    triggers = ("view(", "reshape(", "repeat")
    _MIXED = ": each row mixes completions of different prompts, so group baselines are wrong"

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "zip":
            self._paired(node)
            return
        if _callee(node) not in ("view", "reshape") or len(node.args) < 2:
            return
        tensors = self.tensors()
        op, operand = tensors.call_name(node)
        if operand is None:
            return
        dims = [arg.value for arg in node.args if arg.keyword is None]
        if tensors.is_function(node.func):
            dims = dims[1:]
        if len(dims) != 2:
            return
        rows, cols = dims
        if not (_per_completion(tensors, operand) or (  # scores by their kind, or by their use: a vector cut by
                tensors.kind(operand) is None and tensors.centred_axes(node)  # a group size into rows that are
                and (tensors.is_group_size(rows) or tensors.is_group_size(cols)))):  # centred by their mean
            return
        reshape = tensors.group_reshape(node)
        axis = reshape.axis if reshape is not None else None
        if int_value(rows) == -1 and tensors.is_batch_size(cols) and not tensors.is_group_size(cols) and \
                tensors.layout(node, any_count=True) != "tiled" and 0 not in tensors.centred_axes(node):
            # with tiled prompts `view(-1, B)` has one group per column, and is centred along dim 0
            problem = f"cuts the batch into rows of `{tensors.code(cols)}`, the batch size, not the group size"
        elif axis == 0 and not tensors.is_group_size(cols) and tensors.layout(node, rows) == "contiguous":
            problem = (f"puts `{tensors.code(rows)}` rows first, but the completions of one prompt are contiguous "
                       f"here (use `.view(-1, {tensors.code(rows)})`)")
        elif axis == 1 and not tensors.is_group_size(rows) and tensors.layout(node, cols) == "tiled":
            problem = (f"groups consecutive completions, but the prompts were tiled here "
                       f"(use `.view({tensors.code(cols)}, -1)` and reduce over dim 0)")
        else:
            return
        self.report(node, expr=tensors.code(node), problem=problem + self._MIXED)

    def _paired(self, node: cst.Call) -> None:
        """`zip(a, b)` of two sequences whose rows were repeated by the same count in different layouts (the
        engine's `Flow.layout`: one prompt's copies contiguous in one, the batch tiled in the other): the i-th
        completion meets another prompt's row."""
        flow: Flow = self.file.fact(Flow)
        laid = [(arg.value, flow.layout(flow.value(arg.value))) for arg in node.args if arg.star == ""]
        laid = [(expr, found) for expr, found in laid if found is not None]
        for (first, (layout, count, made)), (second, (other, other_count, other_made)) in zip(laid, laid[1:]):
            if layout != other and count == other_count:
                lines = self.file.fact(Lines)
                where = {"contiguous": "", "tiled": ""}
                where[layout], where[other] = self._written(made, lines), self._written(other_made, lines)
                code = self.tensors().code
                self.report(node, expr=code(node), problem=(
                    f"pairs `{code(first)}` and `{code(second)}`, whose rows were repeated by `{count}` in different "
                    f"layouts (each prompt's copies in a row at {where['contiguous']}, the batch tiled at "
                    f"{where['tiled']}): each completion is paired with another prompt's row"))
                return

    def _written(self, nodes: List[cst.CSTNode], lines: Lines) -> str:
        found = [lines.line(n) for n in nodes if lines.holds(n)]
        return f"line {min(found)}" if found else "another module"


class GroupStatsNotBroadcast(TensorRule):
    """
    ## What it does
    Reports per-group statistics (one value per prompt, `[B]`: `rewards.view(-1, G).mean(dim=1)`
    or `.std(dim=1)`) combined with per-completion values (`[B*G]`) without bringing them
    back to the completion axis, and statistics expanded in the wrong layout: `.repeat(G)`
    against contiguous completions, `repeat_interleave(G)` against tiled ones. Statistics
    kept with `keepdim=True` (numpy's `keepdims=True`), `unsqueeze`d or `repeat_interleave`d
    correctly are fine; numpy's `axis=` counts as `dim=`. A statistic of `x.view(-1, k)` met
    with `x` itself is per-group whatever `k` is called; statistics looked up per group key
    (a per-uid dict, a pandas `groupby(...).transform`) are already per completion. Statistics
    scattered into one slot per group id (`scatter_reduce(..., reduce="mean")`, torch_scatter's
    `scatter_mean`) are reported unless indexed back by the ids (`group_mean[group_ids]`).

    ## Why is this bad?
    `[B*G] - [B]` either raises a shape error or, when `B` happens to divide evenly or be 1,
    broadcasts silently so that each completion is compared with another prompt's mean.
    Expanded in the wrong layout, every completion gets the baseline of a different prompt.

    ## Example
    ```python
    mean_grouped = rewards.view(-1, G).mean(dim=1)
    advantages = rewards - mean_grouped
    ```

    ## Use instead
    ```python
    mean_grouped = rewards.view(-1, G).mean(dim=1).repeat_interleave(G)
    advantages = rewards - mean_grouped
    ```

    ## Options
    None.
    """

    code = "RL203"
    name = "group-stats-not-broadcast"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "`{expr}` combines per-completion values with the per-group {stat} `{stats}`, {problem}"
    triggers = ("view(", "reshape(")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)):
            return
        if isinstance(node.left, (cst.Integer, cst.Float)) or isinstance(node.right, (cst.Integer, cst.Float)):
            return
        tensors = self.tensors()
        for values, stats in ((node.left, node.right), (node.right, node.left)):
            stat = tensors.group_stat(stats, source=values)
            if stat is None or stat.expanded in ("broadcast", "keepdim", "indexed") or \
                    (stat.reshape is None and stat.by != "scatter"):
                continue
            source = stat.reshape.source if stat.reshape is not None else None
            if not (_per_completion(tensors, values) or (
                    source is not None and tensors.kind(values) is None and tensors.same_value(values, source))):
                continue  # neither scores by their kind nor the very vector that was cut
            if stat.reshape is None:  # scattered into one slot per group id
                self.report(node, expr=tensors.code(node), stat=stat.stat, stats=tensors.code(stat.call, 50),
                            problem="one value per group against one per completion: index it by the group ids "
                                    "first (`stats[group_ids]`)")
                return
            size = stat.reshape.cols if stat.reshape.axis == 1 else stat.reshape.rows
            layout = tensors.layout(node, size)
            if stat.expanded is None:
                group = tensors.code(size)
                problem = (f"one value per prompt against one per completion: expand it first "
                           f"(`.repeat_interleave({group})`)")
            elif stat.expanded == "tiled" and layout == "contiguous":
                problem = "expanded with `.repeat` (tiled) while the completions of one prompt are contiguous"
            elif stat.expanded == "contiguous" and layout == "tiled":
                problem = "expanded with `repeat_interleave` while the prompts were tiled"
            else:
                continue
            self.report(node, expr=tensors.code(node), stat=stat.stat, stats=tensors.code(stat.call, 50),
                        problem=problem)
            return


def _strip_epsilon(tensors: Tensors, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`std + eps`, `std.clamp(min=eps)`, `torch.clamp(std, min=eps)` -> `std`."""
    for _ in range(4):
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            expr = expr.left
        elif isinstance(expr, cst.Call) and _callee(expr) in ("clamp", "clamp_min", "clip"):
            _, operand = tensors.call_name(expr)
            if operand is None:
                return expr
            expr = operand
        else:
            return expr
    return expr


class StdNormalizedAdvantages(TensorRule):
    """
    ## What it does
    Reports advantages divided by the per-group standard deviation of the rewards, as in
    the original GRPO: `(r - mean_g) / (std_g + eps)` where `std_g` is the std of each group
    (`rewards.view(-1, G).std(dim=1)`, possibly `repeat_interleave`d, or
    `grouped.std(dim=-1, keepdim=True)`), or looked up per group key: verl's per-uid dicts
    (`id2std[idx] = torch.std(...)`, then `/ (id2std[index[i]] + eps)`), a dict comprehension of
    stds, a pandas `groupby(...).transform("std")`. Batch-level whitening
    (`(adv - adv.mean()) / (adv.std() + eps)`) is not per-group and is not reported, and
    neither are config keys that choose the division (`norm_adv_by_std_in_grpo`,
    `scale_rewards`).

    ## Why is this bad?
    It is a choice, not a bug: dividing by the group std up-weights prompts whose rewards
    barely differ (too easy or too hard), amplifying noise, and biases the objective by
    question difficulty. Dr. GRPO removes it. Make the choice knowingly.

    ## Example
    ```python
    advantages = (rewards - mean_grouped) / (std_grouped + 1e-4)
    ```

    ## Use instead
    ```python
    advantages = rewards - mean_grouped  # Dr. GRPO
    ```

    ## Options
    Off by default; turn it on with `extend-select = ["RL204"]`.

    ## References
    - Liu et al., "Understanding R1-Zero-Like Training: A Critical Perspective" (Dr. GRPO), 2025.
    """

    code = "RL204"
    name = "std-normalized-advantages"
    severity = Severity.INFO
    tier = Tier.PEDANTIC
    message = ("`{expr}` divides by the per-group std `{std}`: prompts whose rewards barely differ get their noise "
               "amplified (Dr. GRPO drops this division)")
    triggers = ("std(",)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Divide):
            return
        tensors = self.tensors()
        stat = tensors.group_stat(_strip_epsilon(tensors, node.right))
        if stat is not None and stat.stat in ("std", "nanstd"):
            self.report(node, expr=tensors.code(node), std=tensors.code(stat.call, 50))


class LengthNormalizedLoss(TensorRule):
    """
    ## What it does
    Reports per-sequence length normalisation of a per-token loss in code:
    `(loss * mask).sum(-1) / mask.sum(-1)` (also `torch.sum(..., dim=-1)` and a clamped
    count). Only values named as losses are considered: masked means of KL or entropy for
    logging are fine, and so are config keys that choose the aggregation
    (`loss_agg_mode`, `loss_type`).

    ## Why is this bad?
    It is a choice, not a bug: dividing each sequence by its own length gives the tokens of
    short completions more weight than those of long ones, so long wrong answers are
    penalised less per token and responses drift longer. Dr. GRPO sums over tokens and
    divides by a constant.

    ## Example
    ```python
    loss = ((per_token_loss * completion_mask).sum(-1) / completion_mask.sum(-1)).mean()
    ```

    ## Use instead
    ```python
    loss = (per_token_loss * completion_mask).sum() / (completion_mask.size(0) * max_completion_length)
    ```

    ## Options
    Off by default; turn it on with `extend-select = ["RL205"]`.

    ## References
    - Liu et al., "Understanding R1-Zero-Like Training: A Critical Perspective" (Dr. GRPO), 2025.
    """

    code = "RL205"
    name = "length-normalized-loss"
    severity = Severity.INFO
    tier = Tier.PEDANTIC
    message = ("`{expr}` normalises each sequence's loss by its own length: tokens of long completions weigh less "
               "(length bias; Dr. GRPO divides the token sum by a constant)")
    triggers = ("mask",)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Divide) or not isinstance(node.left, cst.Call) or \
                _callee(node.left) not in ("sum", "nansum"):
            return
        tensors = self.tensors()
        numerator = tensors.masked_sum(node.left)
        count = tensors.mask_count(node.right)
        if numerator is None or count is None:
            return
        values, mask, dim = numerator
        if dim not in (-1, 1) or count[1] != dim or not _is_loss(tensors, values):
            return
        if tensors.same_mask(mask, count[0]):
            self.report(node, expr=tensors.code(node))


class MeanOverPadding(RLCodeOnly, TensorRule):
    """
    ## What it does
    Reports a masked per-token loss reduced with `.mean()`: `(per_token_loss * mask).mean()`,
    or `per_token_loss.mean()` in a function that has a completion / response / loss /
    action mask (a parameter or a local) and never uses it, in RL post-training code; also
    `(per_token_loss * weights).mean()` with such an unused mask, when the weights are not the
    mask. A masked sum over `mask.sum()`, a `masked_mean(x, mask)` helper and the mean of values
    already selected with `x[mask]` are fine.

    By default it reports only where the engine proves that what is averaged has a time axis: the
    loss or the mask comes from a model's forward or generated ids (`policy.generate(...)`,
    `(ids != pad).float()`, log-probs gathered from `.logits`), or is the completion mask a trainer
    framework hands its loss. A loss already reduced to one value per sequence (`.sum(-1)` of the
    per-token loss) times a per-sequence keep mask is not reported, and nor is a loss or mask of
    unknown shape (a helper's result out of sight, a parameter without callers): a `(B,)` mask of
    kept samples or pairs is not a token mask. When RL206 is selected by name, losses and masks of
    unknown shape are judged by their names too, except a loss that a helper handed the mask and
    the time axis made (`agg(token_loss, response_mask, axis=1)`): it is one value per sequence.

    ## Why is this bad?
    `.mean()` divides by every position, padding included. The padding zeros dilute the
    loss and its gradient by the padding fraction, which changes from batch to batch: the
    effective learning rate follows the length of the longest completion.

    ## Example
    ```python
    loss = (per_token_loss * completion_mask).mean()
    ```

    ## Use instead
    ```python
    loss = (per_token_loss * completion_mask).sum() / completion_mask.sum().clamp(min=1)
    ```

    ## Options
    None.

    ## References
    - UniRL #448, trl #6654.
    """

    code = "RL206"
    name = "mean-over-padding"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("`{expr}` averages a per-token loss over every position, padding included{why}: padding dilutes the "
               "gradient; divide the masked sum by `{mask}.sum()`")
    triggers = ("mask",)

    def __init__(self, file) -> None:
        super().__init__(file)
        self.normalised: Set[int] = set()

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        """`(x * mask).mean() / mask.mean()` is a masked mean: remember its numerator."""
        right = node.right
        while isinstance(right, cst.Call) and isinstance(right.func, cst.Attribute) and \
                right.func.attr.value in ("clamp", "clamp_min", "float"):
            right = right.func.value
        if isinstance(node.operator, cst.Divide) and isinstance(right, cst.Call) and _callee(right) == "mean":
            tensors = self.tensors()
            _, operand = tensors.call_name(right)
            kind = tensors.kind(operand) if operand is not None else None
            if kind is not None and kind.kind == MASK:
                self.normalised.add(id(node.left))

    def visit_Call(self, node: cst.Call) -> None:
        if _callee(node) != "mean" or id(node) in self.normalised:
            return
        tensors = self.tensors()
        op, operand = tensors.call_name(node)
        if operand is None or node.args[1 if tensors.is_function(node.func) else 0:]:
            return
        broad = self.file.settings.names(self.code)
        reduced: Tuple[cst.BaseExpression, ...] = (operand,)  # what must have a time axis in the default form
        if isinstance(operand, cst.BinaryOperation) and isinstance(operand.operator, cst.Multiply):
            factors = (operand.left, operand.right)
            kinds = [tensors.kind(f) for f in factors]
            for (values, mask), kind in zip((factors, factors[::-1]), kinds[::-1]):
                if kind is not None and kind.kind == MASK and _is_loss(tensors, values):
                    if self._over_tokens(operand, mask) or broad and not self._per_sequence(operand) and \
                            not _reduced_by_helper(tensors, values):
                        self.report(node, expr=tensors.code(node), why="", mask=tensors.code(mask, 40))
                    return
            # `(loss * weights).mean()`: weights that are not the mask, while the mask goes unused
            if any(k is not None and k.kind == MASK for k in kinds) or \
                    not any(isinstance(f, cst.Name) and _is_loss(tensors, f) for f in factors):
                return
            reduced = (operand, *factors)
        elif not isinstance(operand, cst.Name) or not _is_loss(tensors, operand):
            return
        if not self._over_tokens(*reduced) and not (broad and not self._per_sequence(operand)):
            return
        scope = tensors.scope(node)
        while scope is not None and not isinstance(scope.node, cst.FunctionDef):
            scope = scope.parent
        if scope is None:
            return
        for name in sorted(scope.params | set(scope.assignments)):
            if _SEQUENCE_MASK.search(name) and scope.unused(name):
                self.report(node, expr=tensors.code(node), why=f" while `{name}` goes unused", mask=name)
                return

    def _over_tokens(self, *exprs: cst.BaseExpression) -> bool:
        """Whether the engine proves that one of `exprs` has a time axis (from a model's forward, generated
        ids, a framework's completion mask): only then does a `.mean()` of it average padding positions."""
        flow = self.file.fact(Flow)
        return any(TIME in (flow.value(expr).facts.get("axes") or ()) for expr in exprs)

    def _per_sequence(self, expr: cst.BaseExpression) -> bool:
        """Whether the engine proves `expr` holds one value per sequence: its axes are known, with the batch
        and without time (a per-token loss already reduced over its time axis)."""
        axes = self.file.fact(Flow).value(expr).facts.get("axes") or ()
        return BATCH in axes and TIME not in axes


class MismatchedMaskNormalizer(RLCodeOnly, TensorRule):
    """
    ## What it does
    Reports a masked sum divided by the count of a different mask:
    `(loss * completion_mask).sum() / attention_mask.sum()`, in RL post-training code. The
    same mask above and below (an alias, a cast or a reshape of it, `mask.unsqueeze(-1)`), the
    same product of masks (`(x * m1 * m2).sum() / (m1 * m2).sum()`) and a constant divisor
    (Dr. GRPO) are fine.

    ## Why is this bad?
    The numerator counts one set of tokens and the denominator another (prompt tokens,
    truncated completions): the loss is scaled by their ratio, which varies from batch to
    batch and silently changes the effective learning rate.

    ## Example
    ```python
    loss = (per_token_loss * completion_mask).sum() / attention_mask.sum()
    ```

    ## Use instead
    ```python
    loss = (per_token_loss * completion_mask).sum() / completion_mask.sum()
    ```

    ## Options
    None.

    ## References
    - trl #6439.
    """

    code = "RL207"
    name = "mismatched-mask-normalizer"
    severity = Severity.WARNING
    message = ("`{expr}` sums over `{numerator}` but divides by the count of `{denominator}`: the loss is scaled by "
               "their ratio; divide by `{numerator}.sum()`")
    triggers = ("mask",)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Divide) or not isinstance(node.left, cst.Call) or \
                _callee(node.left) not in ("sum", "nansum"):
            return
        tensors = self.tensors()
        numerator = tensors.masked_sum(node.left)
        count = tensors.mask_count(node.right)
        if numerator is None or count is None:
            return
        _, mask, dim = numerator
        if count[1] != dim or tensors.same_mask(mask, count[0]):
            return
        self.report(node, expr=tensors.code(node), numerator=tensors.code(mask, 40),
                    denominator=tensors.code(count[0], 40))


_NO_KIND = Kind("")


class GAEOverPadding(RLCodeOnly, TensorRule):
    """
    ## What it does
    Reports a GAE or discounted-return loop that runs backwards over every position of padded
    rows (`for t in reversed(range(values.size(-1)))` reading `values[:, t]`, or per row
    `for t in reversed(range(starts[i], T))` reading `values[i, t]`) when a tensor it reads was
    computed where the file shows it (a critic forward, per-token rewards: in the function, in a
    helper of the file that returns it, or by the callers of the function when it is a parameter)
    and never zeroed after the response ends, and no mask or done flag takes part in the
    recursion. Only rows that pass through a function dealing in token sequences (token ids or
    masks in sight) are judged: the fixed-length episodes of a control task have no padding.

    Loops bounded by the length of one response, rows multiplied by the response mask (or
    filled with `masked_fill` / `where`, built from zeros, or zeroed in place after the end)
    before the loop, here, in a helper or at a caller, recursions that multiply by a mask or
    `1 - dones[:, t]`, and rows whose origin is not visible (a parameter no caller of the file
    passes, a batch key) are not reported.

    ## Why is this bad?
    At the last real token the recursion bootstraps from `values[:, t + 1]`, the critic's
    output on a padding token, and padding rewards flow back through `gamma * lam`: every
    advantage of the response carries the value of padding, and more so the shorter the
    response. DeepSpeed-Chat fixed exactly this upstream.

    ## Example
    ```python
    values = critic(seqs).values[:, -T:]
    for t in reversed(range(values.size(1))):
        next_v = values[:, t + 1] if t + 1 < values.size(1) else 0.0
        delta = rewards[:, t] + gamma * next_v - values[:, t]
        gae = delta + gamma * lam * gae
    ```

    ## Use instead
    ```python
    values = critic(seqs).values[:, -T:] * response_mask
    rewards = rewards * response_mask
    ```

    ## Options
    None.
    """

    code = "RL208"
    name = "gae-over-padding"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("the backward recursion runs over every position of the padded rows, and `{row}` is not zeroed "
               "after the response ends: padding values and rewards leak into every advantage (multiply `{row}` "
               "by the response mask first, or mask the recursion)")
    triggers = ("reversed(range(", ", -1, -1)")

    def visit_For(self, node: cst.For) -> None:
        recursion = self.file.fact(Recursions).at(node)
        if recursion is None or recursion.stopped or not recursion.rows:
            return
        if not full_width(self.tensors().resolve(recursion.bound)):
            return
        rows = self.file.fact(PaddedRows)
        uses = {n.value: n for n in walk(node.body) if isinstance(n, cst.Name)}
        for row in recursion.rows:
            if rows.leaking(uses[row]):
                self.report(node, row=row)
                return


# Comparisons that test a magnitude (`std > 0`, `n != 0`); equality, membership and identity tests
# make flags that counting code adds up on purpose (`hits += hit`).
_MAGNITUDE_TESTS = (cst.GreaterThan, cst.GreaterThanEqual, cst.LessThan, cst.LessThanEqual, cst.NotEqual)


class WalrusBindsComparison(CSTRule):
    """
    ## What it does
    Reports an assignment expression whose value is an unparenthesised magnitude test
    (`std := x.std() > 0`, `n := len(xs) >= 1`) when its target is then used as a number
    in the same function: an operand of `+ - * / // ** @`, negated, or updated in place
    (`total += n`).

    `(std := x.std()) > 0`, a comparison the author parenthesised on purpose
    (`ok := (score > 0.5)`), targets only used as flags (`if`, `and`, `not`, passed on),
    and equality, membership and identity tests (`hit := pred == gold`, whose flag counting
    code adds up on purpose) are not reported.

    ## Why is this bad?
    `:=` binds more loosely than any comparison, so `std := x.std() > 0` stores
    `x.std() > 0`, that is `True`, in `std`. Inside the `if` the "std" is always 1: the
    advantages are divided by 1 instead of the spread, and nothing fails. The pattern was
    found in the advantage code of a public reasoning-RL project
    (`if std := np.std(x) > 0:`).

    ## Example
    ```python
    if std := rewards.std() > 0:
        advantages = (rewards - rewards.mean()) / std
    ```

    ## Use instead
    ```python
    if (std := rewards.std()) > 0:
        advantages = (rewards - rewards.mean()) / std
    ```

    ## Options
    None.
    """

    code = "RL209"
    name = "walrus-binds-comparison"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("`{target} := {test}` stores the comparison (True or False) in `{target}`, not `{left}`, and "
               "`{target}` is used as a number on line {line}: write `({target} := {left}){rest}`")
    triggers = (":=",)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        test = node.value
        if not (isinstance(node.target, cst.Name) and isinstance(test, cst.Comparison)) or test.lpar:
            return
        if not isinstance(test.comparisons[0].operator, _MAGNITUDE_TESTS) or isinstance(
                test.left, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)):
            return
        uses = self.file.fact(NumberReads).after(node)
        if uses:
            code = self.file.module.code_for_node
            left = code(test.left)
            self.report(node, target=node.target.value, test=code(test), left=left,
                        rest=code(test)[len(left):], line=self.file.fact(Values).line(uses[0]))


class MinibatchAdvantageRenorm(RLCodeOnly, CSTRule):
    """
    ## What it does
    Reports advantages normalised again on the statistics of one minibatch, inside the loop
    of the update, where that minibatch holds fewer than `min-advantage-batch` samples (1 to
    4 by default): `(adv - adv.mean()) / (adv.std() + eps)`, or a whitening helper (the
    project's own, or `masked_whiten` of TRL / verl), applied to the part of the rollout batch
    one pass of the loop takes. The engine proves each step: the tensor is a part of a batch
    taken per pass (`adv[i:i + mb]`, `adv[perm[i:i + mb]]`, a batch of a `DataLoader` or
    `BatchSampler`, a chunk of `split(mb)`; not a row `adv[i]`, which may hold a whole
    group), the number of samples it holds (a literal, a default, an argparse flag, a
    dataclass field, a YAML key or launch flag; a `DataLoader` without `batch_size` yields
    1), the loop backpropagates a policy-gradient loss on every pass, and the normalised
    values weight the policy's log-probs. The `compute_loss` of a TRL GRPO trainer subclass
    counts as such a pass: TRL hands it `per_device_train_batch_size` completions (of the
    config every construction of the class is given) and backpropagates what it returns.
    Not reported: normalisation of the whole rollout batch before the loop; minibatches
    whose size is not known or is at least `min-advantage-batch`; values or returns
    normalised for a critic (they weight no log-probs); statistics of groups
    (`view(-1, G).mean(dim=1)`, or a part of rows laid out in groups: GRPO's group
    normalisation, RL604's concern).

    The rule is on by default (`suspicious`) because it reports only where both facts are
    proven, the normalisation per pass and a size of 1 to 4, and it reports nothing on the
    primer's repositories. A loop over the groups of a GRPO batch, sliced from rows whose
    layout the engine does not see, would look like a minibatch loop: silence it there.

    ## Why is this bad?
    The mean and the std of two, three or four samples are noise. A single sample
    normalises to 0 (or NaN, since its std is undefined: stable-baselines3 #325, #1028); two
    samples normalise to about -0.7 and +0.7 whatever their rewards, so the worse of two good
    answers is pushed down and the better of two bad ones is pushed up. Every minibatch is
    forced to zero mean advantage, and the policy follows sampling noise instead of the
    reward. Normalise once over the whole rollout batch, before the minibatch loop.

    ## Example
    ```python
    for start in range(0, n, args.mini_batch_size):  # mini_batch_size = 2
        idx = perm[start:start + args.mini_batch_size]
        adv = advantages[idx]
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        loss = -(ratio(idx) * adv).mean()
        loss.backward()
    ```

    ## Use instead
    ```python
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    for start in range(0, n, args.mini_batch_size):
        idx = perm[start:start + args.mini_batch_size]
        loss = -(ratio(idx) * advantages[idx]).mean()
        loss.backward()
    ```

    ## Options
    - `min-advantage-batch` (default 5): the smallest minibatch, in samples, that is not
      reported.

    ## References
    - stable-baselines3 #325 and #1028: NaN advantages from a minibatch of one.
    """

    code = "RL211"
    name = "minibatch-advantage-renorm"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    message = ("`{expr}` normalises advantages over a minibatch of {count} ({origin}) on every pass of the update: "
               "with so few samples the mean and std are noise and signs flip (normalise the whole rollout batch "
               "once, before the minibatch loop)")
    options = (MIN_ADVANTAGE_BATCH,)
    triggers = ("mean", "whiten", "normali")

    def visit_Module(self, node: cst.Module) -> None:
        smallest = self.option(MIN_ADVANTAGE_BATCH)
        for found in renormalised(self.file.fact(Flow)):
            count = found.part.number
            if 1 <= count < smallest:
                origin = found.part.count.facts.get("origin") or "literal"
                samples = f"{count:g} sample" + ("" if count == 1 else "s")
                self.report(found.node, expr=_short(self.file.module.code_for_node(found.node)), count=samples,
                            origin=origin)


def _short(code: str, limit: int = 60) -> str:
    text = " ".join(code.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


class GatheredThenLocalSlice(RLCodeOnly, CSTRule):
    """
    ## What it does
    Reports a slice that starts at 0 (`all_rewards[:n]`) of a value gathered across ranks,
    cut to one rank's count: rewards, advantages, scores or log-probs given by a collective
    gather (`accelerator.gather(x)` / `gather_for_metrics(x)` of an `accelerate.Accelerator`
    or of a transformers / TRL trainer's `self.accelerator`, `accelerate.utils.gather` /
    `gather_object`, `torch.distributed.all_gather(parts, x)` then `torch.cat(parts)`,
    `all_gather_object(parts, x)` then `[v for part in parts for v in part]`,
    `all_gather_into_tensor(out, x)`), and what elementwise arithmetic, casts and
    reductions over later axes make of it, sliced to `n` where the engine proves `n` counts
    one rank's share: `len(x)`, `x.size(0)` or `x.shape[0]` of the value that was gathered,
    of the batch a transformers / TRL trainer hands one process (the `inputs` of
    `compute_loss`, `training_step`, `_generate_and_score_completions`...) or of a list
    made item by item from it, or the per-device batch setting
    (`args.per_device_train_batch_size`). The values are followed through assignments,
    helpers (of other modules too) and `self` attributes.

    Not reported: a slice with a rank offset (`[rank * n:(rank + 1) * n]`, a `slice(...)`
    built from the process index); a slice inside a branch that runs on the main process
    only (`if accelerator.is_main_process:`, `if dist.get_rank() == 0:`), where the first
    share is that process's own; a slice whose value only reaches logging calls (`print`,
    `logger.info`, `wandb.log`, directly or through names read only there): a sample of
    the batch to look at; a bound that is the global size (`gather_for_metrics(x)
    [:len(dataset)]` removes the padding of an uneven last batch); a count the engine cannot
    tie to one rank; gathers never sliced; single-process code (nothing is gathered).

    ## Why is this bad?
    A gather lays the ranks' values end to end, rank 0's first. `[:n]` with `n` the local
    count keeps rank 0's values on every rank: each process then trains its own completions
    with rank 0's rewards or advantages. Nothing fails, the shapes match, and with one GPU
    the code is even right, so the bug shows only as a run that learns slowly or not at all
    on several GPUs. TRL's GRPO trainer takes each process's share with
    `slice(process_index * len(prompts), (process_index + 1) * len(prompts))`.

    ## Example
    ```python
    all_rewards = accelerator.gather(rewards)
    advantages = (all_rewards - all_rewards.mean()) / (all_rewards.std() + 1e-4)
    advantages = advantages[: len(rewards)]
    ```

    ## Use instead
    ```python
    n = len(rewards)
    advantages = advantages[accelerator.process_index * n:(accelerator.process_index + 1) * n]
    ```

    ## Options
    None.
    """

    code = "RL210"
    name = "gathered-then-local-slice"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("`{value}` holds every rank's values end to end ({gather}), and `[:{bound}]` cuts it to one rank's "
               "count: every rank keeps rank 0's values, not its own; slice from `process_index * {bound}`")
    # a gather in the file, or a slice from 0 of a value a helper of another module gathered
    triggers = ("gather", "[:", "[0:", "[0 :")

    def __init__(self, file) -> None:
        super().__init__(file)
        self._ifs: List[cst.If] = []  # the `if` statements that enclose the visited node

    def visit_If(self, node: cst.If) -> None:
        self._ifs.append(node)

    def leave_If(self, original_node: cst.If) -> None:
        self._ifs.pop()

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Slice):
            return
        part = node.slice[0].slice
        if part.upper is None or part.step is not None or part.lower is not None and not _zero(part.lower):
            return
        flow = self.file.fact(Flow)
        base = flow.value(node.value)
        found = base.facts.get("gathered")
        if found is None or local_count(flow.value(part.upper), base) is None or \
                main_process_only(flow, [i.test for i in self._ifs if any(n is node for n in walk(i.body))]) or \
                self.file.fact(LoggedOnly).only_logged(node):
            return
        code = self.file.module.code_for_node
        lines = self.file.fact(Lines)
        where = f"gathered at line {lines.line(found[0])}" if lines.holds(found[0]) else "gathered in another module"
        self.report(node, value=code(node.value), bound=code(part.upper), gather=where)


def _zero(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.evaluated_value == 0
