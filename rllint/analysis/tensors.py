"""What tensors hold, how they were made, and how the batch is laid out.

Several rules ask the same questions about a tensor expression: is it vocabulary-shaped
logits, log-probs or probabilities, negative log-probs, token ids, a mask, rewards or
advantages (its *kind*)? Does an expression grow or shrink with one of its operands
(*polarity*)? Was it cast to half precision with no upcast since (*casts*)? Were logits
and ids shifted against each other (*shift*)? Are the completions of one prompt
contiguous or tiled (*layout*)?

Facts come from walks done only when a rule asks: each function (or the module body) is
walked once, the first time a rule asks about an expression inside it (`rllint.rules.bases.TensorRule`
keeps track of where the traversal is). The walk records, for every node, its scope and
its visiting order, and for every scope its assignments; a name then stands for its
latest assignment before the use. Layout evidence comes from one pass over the `ast`
tree. Where the source of a value is not visible (a parameter, an attribute, a
dictionary key), its *name* is the evidence; where the source is visible, the source
decides.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from rllint.analysis.imports import Imports
from rllint.analysis.syntax import bound_names, children

LOGITS = "logits"
LOGPROBS = "logprobs"
PROBS = "probs"
NEGLOGP = "neglogp"
TOKEN_IDS = "token_ids"
MASK = "mask"
REWARDS = "rewards"
ADVANTAGES = "advantages"


@dataclass(frozen=True)
class Kind:
    """What a tensor holds. `vocab`: it has a vocabulary axis; `dim`: the axis of the softmax
    that made it (when literal); `rank`: its number of axes when the source shows it;
    `by_name`: only the name says so."""

    kind: str
    vocab: bool = False
    rank: Optional[int] = None
    dim: Optional[int] = None
    by_name: bool = False


# Name evidence, matched against the last part of a name, attribute or string key.
# `logprobs_old`, `logp_new`: a role written after the kind.
_ROLE_SUFFIX = r"(old|new|ref|cur|curr|current|behaviou?r|rollout|policy|pi|w|l|chosen|rejected)"
_NAME_KINDS = (
    (NEGLOGP, re.compile(r"(^|_)(neg_?log_?p\w*|nlls?|neg_?logprobs?|ce)(_" + _ROLE_SUFFIX + r")?$")),
    (LOGPROBS, re.compile(r"(^|_)(log_?probs?|log_?ps?|logprobs?|lps?|log_?pi|log_?likelihoods?)(_" + _ROLE_SUFFIX
                          + r")?$")),
    (PROBS, re.compile(r"(^|_)(probs|probabilities|prob)$")),
    (LOGITS, re.compile(r"(^|_)logits$")),
    (TOKEN_IDS, re.compile(r"(^|_)(ids|labels|actions|tokens|sequences|seqs|targets)$")),
    (MASK, re.compile(r"(^|_)masks?$")),
    (ADVANTAGES, re.compile(r"(^|_)(advantages?|advs?)$")),
    (REWARDS, re.compile(r"(^|_)(rewards?|scores)$")),
)
# Names that, alone, are a whole vocabulary distribution rather than one value per token.
_VOCAB_NAMES = re.compile(r"^(all_)?(logits|log_?probs|logprobs|logps|probs)$")
OLD_ROLE = re.compile(r"(^|_)(old|behaviou?r|behav|rollout|sampl\w*|vllm|inference|infer|prev|mu|prox\w*|beh)(_|$)")
REF_ROLE = re.compile(r"(^|_)(ref|reference|init|sft)(_|$)")
CHOSEN = re.compile(r"(^|_)(chosen|preferred|win|winner|winning|w|yw|pos|positive|accepted|good|better)(_|$)")
REJECTED = re.compile(r"(^|_)(rejected|dispreferred|lose|loser|losing|l|yl|neg|negative|bad|worse)(_|$)")
_POSITIVE_SCALE = re.compile(r"^(beta|scale|scaling|temperature|temp|tau|alpha|coef|\w+_coef|\w+_scale|inv_\w+|gamma|lam|lambda_?)$")
_GROUP_SIZE = re.compile(
    r"^(num_generations|group_size|n_samples_per_prompt|num_samples_per_prompt|samples_per_prompt|"
    r"n_generations|generations_per_prompt|num_completions|n_completions|num_rollouts_per_prompt|"
    r"rollout_n|n_rollouts|num_return_sequences|rloo_k|n_samples|num_samples|n_responses|num_responses|"
    r"responses_per_prompt)$"
)
_BATCH_SIZE = re.compile(r"(^|_)batch_size$")

# Calls that keep what a tensor holds (`_rank_after` says what they do to its rank).
_KEEP = {
    "float", "half", "bfloat16", "double", "to", "type", "contiguous", "detach", "clone", "cpu", "cuda",
    "view", "reshape", "squeeze", "unsqueeze", "transpose", "permute", "flatten", "masked_fill", "clamp",
    "clamp_min", "clip", "narrow", "expand", "expand_as", "repeat_interleave", "roll", "view_as", "reshape_as",
    "requires_grad_",
}
_FLOAT_UP = {"float", "double"}
_FLOAT_HALF = {"half", "bfloat16"}
_HALF_DTYPES = {"float16", "half", "bfloat16"}
_FULL_DTYPES = {"float32", "float", "float64", "double"}
_SOFTMAX_LIKE = {"log_softmax", "softmax"}
_MONOTONE = {"sigmoid", "logsigmoid", "softplus", "exp", "log", "log1p", "tanh", "expm1"}
_GATHERS = {"gather", "take_along_dim"}
_REDUCTIONS = {"sum", "mean", "nansum", "nanmean"}
_WRAPS = {"tensor", "as_tensor", "from_numpy", "asarray", "array", "stack", "cat", "concatenate"}
_MASK_CASTS = {"float", "bool", "long", "int", "to", "detach", "type_as", "half", "bfloat16", "contiguous",
               "unsqueeze", "view", "reshape", "flatten", "expand", "expand_as", "squeeze"}  # the same positions
_GROUP_STATS = {"mean", "std", "var", "sum", "nanmean", "nanstd", "nanvar", "nansum", "max", "min", "amax", "logsumexp"}
_EPSILON_NAME = re.compile(r"(^|_)(eps|epsilon)$", re.IGNORECASE)


def int_value(expr: Optional[cst.BaseExpression]) -> Optional[int]:
    """The int an expression spells literally (`2`, `-1`), else None."""
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = int_value(expr.expression)
        return None if inner is None else -inner
    return None


def number_value(expr: Optional[cst.BaseExpression]) -> Optional[float]:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return float(expr.evaluated_value)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        inner = number_value(expr.expression)
        if inner is not None:
            return -inner if isinstance(expr.operator, cst.Minus) else inner
    return None


def argument(call: cst.Call, position: Optional[int], keyword: Optional[str] = None) -> Optional[cst.BaseExpression]:
    """The value passed to `call` as `keyword=` or at positional `position`."""
    positional = 0
    for arg in call.args:
        if arg.keyword is not None:
            if keyword is not None and arg.keyword.value == keyword:
                return arg.value
        elif arg.star:
            position = None  # positions after `*args` are unknown
        else:
            if positional == position:
                return arg.value
            positional += 1
    return None


def last_part(expr: Optional[cst.BaseExpression]) -> Optional[str]:
    """The name a value goes by: `x`, `self.x` -> `x`, `batch["x"]` -> `x`."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        index = expr.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            return index.value.evaluated_value if isinstance(index.value.evaluated_value, str) else None
    return None


def name_kind(name: Optional[str]) -> Optional[Kind]:
    """The kind a name suggests, when nothing else is known."""
    if not name:
        return None
    lowered = name if name == "G" else name.lower()
    for kind, pattern in _NAME_KINDS:
        if pattern.search(lowered):
            return Kind(kind, vocab=bool(_VOCAB_NAMES.match(lowered)) and kind in (LOGITS, LOGPROBS, PROBS),
                        by_name=True)
    return None


@dataclass
class Gather:
    """A `gather` / `take_along_dim` call: source tensor, dim (None when not given), index."""

    call: cst.Call
    source: cst.BaseExpression
    dim: Optional[cst.BaseExpression]
    index: cst.BaseExpression


@dataclass
class GroupReshape:
    """A per-completion vector reshaped into groups: `rows` x `cols`, the group axis `axis`."""

    call: cst.Call
    source: cst.BaseExpression
    rows: cst.BaseExpression
    cols: cst.BaseExpression
    axis: int


@dataclass
class GroupStat:
    """A per-group statistic and how it was expanded back (None: still one value per group; "indexed": looked
    up by each completion's group key)."""

    call: cst.Call
    stat: str
    reshape: Optional[GroupReshape]  # None: grouped by key (a per-uid dict, a pandas `groupby`, a scatter)
    expanded: Optional[str]
    by: str = "reshape"  # or "key", "groupby", "scatter"


# The `if` statements a node sits in, each with the branch taken (0: body, 1: else / elif).
Branch = Tuple[Tuple[int, int], ...]


def exclusive(a: Branch, b: Branch) -> bool:
    """Whether two nodes sit in different branches of one `if`: neither runs after the other."""
    taken = dict(a)
    return any(taken.get(statement, branch) != branch for statement, branch in b)


class Scope:
    """A function body (or the module body): its parameters, its assignments in order."""

    def __init__(self, node: cst.CSTNode, parent: Optional["Scope"]) -> None:
        self.node = node
        self.parent = parent
        self.params: Set[str] = set()
        self.assignments: Dict[str, List[Tuple[int, Optional[cst.BaseExpression]]]] = {}
        self.occurrences: Dict[str, int] = {}  # Name nodes in the body, targets included
        self.branches: Dict[int, Branch] = {}  # the `if` branches an assignment (by its order) sits in
        self.dims: Dict[str, int] = {}  # names unpacked from a shape: `B, T = ids.shape` -> B: 0, T: 1
        self.items: Dict[str, List[Tuple[cst.BaseExpression, cst.BaseExpression]]] = {}  # `d[key] = value`

    def assign(self, name: str, order: int, value: Optional[cst.BaseExpression], branch: "Branch" = ()) -> None:
        self.assignments.setdefault(name, []).append((order, value))
        if branch:
            self.branches[order] = branch

    def unused(self, name: str) -> bool:
        """A parameter or assigned name that is never read in the body."""
        count = self.occurrences.get(name, 0) - len(self.assignments.get(name, ()))
        return (name in self.params or name in self.assignments) and count <= 0


class _Walker:
    """Records one scope: the order and scope of its nodes, its assignments and its autocast
    regions. Nested functions and classes are scopes of their own, walked when asked.

    It iterates over the nodes' fields itself: libcst's visitor rebuilds every node it
    passes, which costs several times more than this walk needs."""

    def __init__(self, tensors: "Tensors", scope: Scope) -> None:
        self.t = tensors
        self.scope = scope
        self.counter = 0
        self.autocast = 0
        self.branch: Branch = ()

    def walk(self) -> None:
        root = self.scope.node
        if isinstance(root, cst.FunctionDef):
            params = root.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                self.scope.params.add(param.name.value)
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    self.scope.params.add(star.name.value)
            self._visit(root.body)
        else:
            for statement in root.body:
                self._visit(statement)

    def _visit(self, node: cst.CSTNode) -> None:
        self.counter += 1
        t, scope, cls = self.t, self.scope, type(node)
        t.order[id(node)] = self.counter
        t.scope_of[id(node)] = scope
        if cls is cst.Name:
            scope.occurrences[node.value] = scope.occurrences.get(node.value, 0) + 1
            if self.branch:
                t.branch_of[id(node)] = self.branch
            return
        if cls is cst.FunctionDef or cls is cst.ClassDef:
            return
        if cls is cst.If:  # an assignment in one branch does not reach a use in the other
            self._visit(node.test)
            outer = self.branch
            for taken, part in enumerate((node.body, node.orelse)):
                if part is not None:
                    self.branch = outer + ((id(node), taken),)
                    self._visit(part)
            self.branch = outer
            return
        autocast = False
        if cls is cst.Call:
            if self.autocast:
                t.autocast.add(id(node))
        elif cls is cst.With and any(t.is_autocast(item.item) for item in node.items):
            autocast = True
            self.autocast += 1
        for child in children(node):
            self._visit(child)
        if autocast:
            self.autocast -= 1
        self._leave(node, cls)

    def _leave(self, node: cst.CSTNode, cls: type) -> None:
        scope = self.scope
        if cls is cst.Assign:
            for target in node.targets:
                self._bind(scope, target.target, node.value)
                target = target.target
                if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and \
                        len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
                    scope.items.setdefault(target.value.value, []).append((target.slice[0].slice.value, node.value))
        elif cls is cst.AnnAssign and node.value is not None:
            self._bind(scope, node.target, node.value)
        elif cls is cst.AugAssign or cls is cst.For or cls is cst.CompFor:
            for name in bound_names(node.target):
                scope.assign(name, self.counter, None)
        elif cls is cst.With:
            for item in node.items:
                if item.asname is not None:
                    for name in bound_names(item.asname.name):
                        scope.assign(name, self.counter, None)

    def _bind(self, scope: Scope, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            scope.assign(target.value, self.counter, value, self.branch)
        elif isinstance(target, (cst.Tuple, cst.List)):
            values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
            if values is not None and len(values) == len(target.elements):
                for element, item in zip(target.elements, values):
                    self._bind(scope, element.value, item.value)
            else:
                for name in bound_names(target):
                    scope.assign(name, self.counter, None)
                if _is_shape(value):
                    for axis, element in enumerate(target.elements):
                        if isinstance(element.value, cst.Name):
                            scope.dims[element.value.value] = axis


def _is_shape(value: cst.BaseExpression) -> bool:
    """`x.shape`, `x.size()`: the sizes of a tensor's axes."""
    if isinstance(value, cst.Call) and not value.args:
        value = value.func
        return isinstance(value, cst.Attribute) and value.attr.value == "size"
    return isinstance(value, cst.Attribute) and value.attr.value == "shape"


class Tensors:
    """Kinds, polarity, casts, shift and batch layout of the tensors of one file."""

    def __init__(self, file) -> None:
        self.imports: Imports = file.fact(Imports)
        self.module: cst.Module = file.module
        self.tree = file.tree
        self.scopes: Dict[int, Scope] = {}
        self.order: Dict[int, int] = {}
        self.scope_of: Dict[int, Scope] = {}
        self.autocast: Set[int] = set()
        self.branch_of: Dict[int, Branch] = {}  # Name nodes inside `if` branches
        self._layouts: Optional[Dict[Optional[tuple], Set[Evidence]]] = None
        self._shifted_names: Optional[Set[str]] = None
        self._centred: Dict[int, Dict[int, Set[int]]] = {}

    def enter(self, nesting: Sequence[cst.CSTNode]) -> None:
        """Make the facts of a node's scopes available: `nesting` is the module, then each
        enclosing function, outermost first. Each scope is walked once, when first entered."""
        parent = None
        for node in nesting:
            scope = self.scopes.get(id(node))
            if scope is None:
                scope = self.scopes[id(node)] = Scope(node, parent)
                _Walker(self, scope).walk()
            parent = scope

    def code(self, node: cst.CSTNode, limit: int = 90) -> str:
        """The source of `node` on one line, shortened for a message."""
        text = " ".join(self.module.code_for_node(node).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    # ---- names -------------------------------------------------------------------
    def value_of(self, name: cst.Name) -> Optional[cst.BaseExpression]:
        """The expression last assigned to `name` before this use, in its scope or an enclosing one."""
        scope = self.scope_of.get(id(name))
        at = self.order.get(id(name), 0)
        branch = self.branch_of.get(id(name), ())
        while scope is not None:
            history = scope.assignments.get(name.value)
            if history:
                earlier = [value for order, value in history
                           if order < at and not exclusive(branch, scope.branches.get(order, ()))]
                return earlier[-1] if earlier else None
            if name.value in scope.params:
                return None
            scope, at = scope.parent, 1 << 60
        return None

    def resolve(self, expr: cst.BaseExpression, depth: int = 8) -> cst.BaseExpression:
        """Follow a name through plain assignments to the expression it holds."""
        while isinstance(expr, cst.Name) and depth:
            value = self.value_of(expr)
            if value is None:
                return expr
            expr, depth = value, depth - 1
        return expr

    def qualified(self, func: cst.BaseExpression) -> Optional[str]:
        return self.imports.qualified(func)

    def is_function(self, func: cst.BaseExpression) -> bool:
        """Whether a callee is a module-level function (`torch.gather`, `F.softmax`, `np.exp`, an
        imported `log_softmax`) rather than a method of a tensor (`x.gather`)."""
        root = func
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or root.value not in self.imports.aliases:
            return False
        return isinstance(func, cst.Attribute) or (self.qualified(func) or "").startswith("torch.")

    def call_name(self, call: cst.Call) -> Tuple[Optional[str], Optional[cst.BaseExpression]]:
        """(operation, primary operand) of a call: `F.log_softmax(x)` and `x.log_softmax()` both
        give ("log_softmax", x). The operand is None for calls of other callables."""
        func = call.func
        if isinstance(func, cst.Attribute):
            if self.is_function(func):
                return func.attr.value, argument(call, 0, "input")
            return func.attr.value, func.value
        if isinstance(func, cst.Name):
            if self.is_function(func):
                return (self.qualified(func) or func.value).split(".")[-1], argument(call, 0, "input")
            return func.value, None
        return None, None

    # ---- history of a value --------------------------------------------------------
    def history(self, expr: cst.BaseExpression, depth: int = 24) -> Iterator[cst.BaseExpression]:
        """The expressions a value came through, from the use back to its origin, along its
        primary operand: method receivers, the tensor argument of torch functions, the
        sliced value, the left of `x / temperature`, and names' assignments."""
        seen = 0
        while expr is not None and seen < depth:
            seen += 1
            yield expr
            if isinstance(expr, cst.Name):
                expr = self.value_of(expr)
            elif isinstance(expr, cst.Call):
                op, operand = self.call_name(expr)
                if op in _KEEP or op in _SOFTMAX_LIKE or op in _GATHERS or op in _MONOTONE or op in _REDUCTIONS or \
                        op in ("logsumexp", "masked_fill"):
                    expr = operand
                else:
                    return
            elif isinstance(expr, cst.Subscript):
                if last_part(expr) is not None:  # batch["labels"]: a leaf, known by its key
                    return
                expr = expr.value
            elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Divide, cst.Multiply)):
                expr = expr.left
            else:
                return

    def origin_op(self, expr: cst.BaseExpression) -> Optional[str]:
        """The operation that decided what `expr` holds: the first call along its history that
        is not a cast, reshape, slice or gather (`softmax`, `log_softmax`, `exp`, `lm_head`...)."""
        for step in self.history(expr):
            if isinstance(step, cst.Call):
                op, _ = self.call_name(step)
                if op not in _KEEP and op not in _GATHERS:
                    return op
        return None

    def role(self, expr: cst.BaseExpression, depth: int = 4) -> Optional[str]:
        """Whose log-probs these are: "old" (old, behaviour, rollout policy), "ref" (reference)
        or "new" (the policy being trained), from the first name along the history. A name that says
        neither holds the policy's, unless the value was computed as the log-prob of a mixture of policies
        (`log(a * teacher_lp.exp() + (1 - a) * old_lp.exp())`): then whose its components are, if they agree."""
        named = False
        for step in self.history(expr):
            if named:
                mixture = self._mixture(step, depth)
                if mixture is not None:
                    return mixture or None
                continue
            name = last_part(step) if isinstance(step, (cst.Name, cst.Attribute, cst.Subscript)) else None
            if name:
                lowered = name.lower()
                if OLD_ROLE.search(lowered) and REF_ROLE.search(lowered):
                    return None  # `old_ref_logps`: the name says both
                if OLD_ROLE.search(lowered):
                    return "old"
                if REF_ROLE.search(lowered):
                    return "ref"
                named = True
        return "new" if named else None

    def _mixture(self, expr: cst.BaseExpression, depth: int) -> Optional[str]:
        """The role the components of a mixture's log-prob share ("" when they differ), where `expr` is the
        sum of probabilities it is the log of (`w * lp.exp() + ...`, `torch.exp(lp) + ...`); None for any other
        expression."""
        if depth <= 0 or not isinstance(expr, cst.BinaryOperation) or not isinstance(expr.operator, cst.Add):
            return None
        terms: List[cst.BaseExpression] = []
        work: List[cst.BaseExpression] = [expr]
        while work:
            term = work.pop()
            if isinstance(term, cst.BinaryOperation) and isinstance(term.operator, cst.Add):
                work.extend((term.left, term.right))
            else:
                terms.append(term)
        roles = set()
        for term in terms:
            if isinstance(term, cst.BinaryOperation) and isinstance(term.operator, cst.Multiply):
                term = next((side for side in (term.left, term.right) if isinstance(side, cst.Call)), term)
            op, operand = self.call_name(term) if isinstance(term, cst.Call) else (None, None)
            kind = self.kind(operand) if op == "exp" and operand is not None else None
            if kind is None or kind.kind != LOGPROBS:
                return None
            roles.add(self.role(operand, depth - 1))
        return roles.pop() or "" if len(roles) == 1 else ""

    # ---- kinds ----------------------------------------------------------------------
    def kind(self, expr: cst.BaseExpression, depth: int = 12) -> Optional[Kind]:
        """What `expr` holds: from its source where visible, else from its name."""
        if depth <= 0:
            return None
        if isinstance(expr, cst.Name):
            value = self.value_of(expr)
            found = self.kind(value, depth - 1) if value is not None else None
            return found or name_kind(expr.value)
        if isinstance(expr, cst.Attribute):
            attr = expr.attr.value
            if attr == "logits":
                return Kind(LOGITS, vocab=True)
            if attr in ("input_ids", "sequences"):
                return Kind(TOKEN_IDS)
            return name_kind(attr)
        if isinstance(expr, cst.Subscript):
            key = last_part(expr)
            if key is not None:
                return name_kind(key)
            inner = self.kind(expr.value, depth - 1)
            if inner is None:
                return None
            rank = _subscript_rank(expr, inner.rank)
            if inner.kind == LOGITS and inner.vocab and rank is None and _time_slice(expr):
                rank = 3  # logits cut along time: [batch, time, vocab]
            return replace(inner, rank=rank)
        if isinstance(expr, cst.Comparison):
            return Kind(MASK)
        if isinstance(expr, cst.UnaryOperation):
            inner = self.kind(expr.expression, depth - 1)
            if isinstance(expr.operator, cst.BitInvert):
                return Kind(MASK)  # `~` negates boolean tensors
            if isinstance(expr.operator, cst.Minus) and inner is not None:
                flipped = {NEGLOGP: LOGPROBS, LOGPROBS: NEGLOGP}.get(inner.kind)
                return replace(inner, kind=flipped) if flipped else None
            return None
        if isinstance(expr, cst.BinaryOperation):
            if isinstance(expr.operator, (cst.Divide, cst.Multiply)) and _is_scalar_like(expr.right):
                return self.kind(expr.left, depth - 1)
            if isinstance(expr.operator, (cst.Add, cst.Subtract)):
                left, right = self.kind(expr.left, depth - 1), self.kind(expr.right, depth - 1)
                scores = (REWARDS, ADVANTAGES)
                if left is not None and left.kind in scores and (
                        (right is not None and right.kind in scores) or number_value(expr.right) is not None):
                    return left  # `rewards - baseline` still holds one score per completion
                return None
            if isinstance(expr.operator, cst.Multiply):
                left, right = self.kind(expr.left, depth - 1), self.kind(expr.right, depth - 1)
                if left and right and left.kind == MASK and right.kind == MASK:
                    return Kind(MASK)
                for kept, other in ((left, right), (right, left)):
                    if kept is not None and other is not None and other.kind == MASK and kept.kind != MASK:
                        return kept  # `logps * mask` still holds log-probs
            return None
        if isinstance(expr, cst.Call):
            return self._call_kind(expr, depth)
        return None

    def _call_kind(self, call: cst.Call, depth: int) -> Optional[Kind]:
        op, operand = self.call_name(call)
        if op is None:
            return None
        source = self.kind(operand, depth - 1) if operand is not None else None
        rank = source.rank if source else None
        if op in _SOFTMAX_LIKE:
            dim = int_value(argument(call, 1 if self.is_function(call.func) else 0, "dim"))
            vocab = source is None or source.vocab
            return Kind(LOGPROBS if op == "log_softmax" else PROBS, vocab=vocab, rank=rank, dim=dim)
        if op == "logsigmoid":
            return Kind(LOGPROBS)
        if op == "sigmoid":
            return Kind(PROBS)
        if op in ("cross_entropy", "nll_loss"):
            return Kind(NEGLOGP)
        if op in _GATHERS:
            if source is not None and source.vocab:
                return replace(source, vocab=False, dim=None)
            return None
        if op == "lm_head" or (isinstance(call.func, cst.Attribute) and call.func.attr.value == "lm_head"):
            return Kind(LOGITS, vocab=True, rank=rank)
        if op in ("bool",):
            return Kind(MASK)
        if source is None:
            return None
        if op == "exp" and source.kind == LOGPROBS:
            return replace(source, kind=PROBS)
        if op == "log" and source.kind == PROBS:
            return replace(source, kind=LOGPROBS)
        if op in _KEEP:
            return replace(source, rank=self._rank_after(op, call, rank))
        if op in _WRAPS and self.is_function(call.func):
            return replace(source, rank=None)
        if op in _REDUCTIONS and source.kind in (LOGPROBS, NEGLOGP, REWARDS, ADVANTAGES) and (
                not source.vocab or source.by_name):
            return replace(source, rank=None)  # a sequence's log-prob is the sum of its tokens'
        return None

    def _rank_after(self, op: str, call: cst.Call, rank: Optional[int]) -> Optional[int]:
        if op in ("view", "reshape"):
            if len(call.args) == 1 and not isinstance(call.args[0].value, (cst.Integer, cst.UnaryOperation)):
                return None
            return None if any(arg.star for arg in call.args) else len(call.args)
        if op == "unsqueeze":
            return None if rank is None else rank + 1
        if op == "squeeze":
            return None if rank is None or not call.args else rank - 1
        if op == "flatten":
            return None
        return rank

    def is_vocab(self, expr: cst.BaseExpression) -> Optional[Kind]:
        """The kind of `expr` if it has a vocabulary axis (logits, log-probs, probabilities)."""
        found = self.kind(expr)
        return found if found is not None and found.vocab else None

    # ---- gathers ----------------------------------------------------------------------
    def gather(self, call: cst.Call) -> Optional[Gather]:
        """`torch.gather(x, dim, index)`, `x.gather(dim, index)`, `torch.take_along_dim(x, index, dim)`."""
        op, operand = self.call_name(call)
        if op not in _GATHERS or operand is None:
            return None
        first = 1 if self.is_function(call.func) else 0
        if op == "gather":
            dim, index = argument(call, first, "dim"), argument(call, first + 1, "index")
        else:
            index, dim = argument(call, first, "indices"), argument(call, first + 1, "dim")
        if index is None:
            return None
        return Gather(call, operand, dim, index)

    def token_gather(self, expr: cst.BaseExpression) -> Optional[cst.Call]:
        """The gather that made `expr` one log-prob per token (`[B, T]`): a gather of a vocabulary-shaped
        tensor reached through casts, reshapes, slices and scaling only. None after a reduction (a
        sequence's log-prob) or any other operation, and when no such gather is visible."""
        for step in self.history(expr):
            if isinstance(step, cst.Call):
                op, operand = self.call_name(step)
                if op in _GATHERS:
                    return step if operand is not None and self.is_vocab(operand) is not None else None
                if op not in _KEEP:
                    return None
        return None

    def several_picks(self, expr: cst.BaseExpression) -> Optional[cst.Call]:
        """The gather that made `expr` (through casts, reshapes and slices) when its index is not shown to get a
        trailing axis of one (`ids.unsqueeze(-1)`, `ids[:, :, None]`): its last axis may then hold several picks
        of one distribution (the k items of one joint action), not one pick per position. None otherwise."""
        for step in self.history(expr):
            if isinstance(step, cst.Call):
                op, _ = self.call_name(step)
                if op in _GATHERS:
                    gather = self.gather(step)
                    return step if gather is not None and not self._trailing_unit(gather.index) else None
                if op not in _KEEP:
                    return None
        return None

    def _trailing_unit(self, index: cst.BaseExpression) -> bool:
        """Whether an index tensor visibly gets a last axis of size one: `.unsqueeze(-1)`, `[..., None]`,
        `.view(b, t, 1)`, `ids[:, t:t + 1]`."""
        for step in self.history(index):
            if isinstance(step, cst.Call):
                op, _ = self.call_name(step)
                first = 1 if self.is_function(step.func) else 0
                if op == "unsqueeze" and int_value(argument(step, first, "dim")) == -1:
                    return True
                if op in ("view", "reshape") and step.args and int_value(step.args[-1].value) == 1:
                    return True
            elif isinstance(step, cst.Subscript) and step.slice:
                last = step.slice[-1].slice
                if isinstance(last, cst.Index) and isinstance(last.value, cst.Name) and last.value.value == "None":
                    return True
                if len(step.slice) > 1 and _width_one(last):
                    return True
        return False

    def unsqueezed(self, index: cst.BaseExpression) -> bool:
        """Whether an index tensor got its trailing axis (`.unsqueeze(-1)`, `[..., None]`, `.view(..., 1)`)
        anywhere along its history, or its source is not visible enough to say."""
        for step in self.history(index):
            if isinstance(step, cst.Call):
                op, _ = self.call_name(step)
                if op in ("unsqueeze", "view", "reshape", "expand", "unsqueeze_", "view_as", "expand_as",
                          "reshape_as"):
                    return True
            elif isinstance(step, cst.Subscript) and any(
                    isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Name) and e.slice.value.value
                    == "None" for e in step.slice):
                return True
            elif isinstance(step, cst.Subscript) and len(step.slice) > 1 and _width_one(step.slice[-1].slice):
                return True  # `ids[:, t:t + 1]` keeps its last axis, of size one
        return False

    # ---- polarity -------------------------------------------------------------------
    def terms(self, expr: cst.BaseExpression, depth: int = 6) -> Optional[List[Tuple[int, cst.BaseExpression]]]:
        """`expr` as a signed sum of leaves, through unary minus, `+`/`-`, products and quotients
        with positive factors (literals and names like `beta`), and names assigned such sums.
        None when some part is not such a sum with a known sign."""
        if isinstance(expr, cst.UnaryOperation):
            if isinstance(expr.operator, (cst.Minus, cst.Plus)):
                inner = self.terms(expr.expression, depth)
                sign = -1 if isinstance(expr.operator, cst.Minus) else 1
                return None if inner is None else [(sign * s, leaf) for s, leaf in inner]
            return None
        if isinstance(expr, cst.BinaryOperation):
            op = expr.operator
            if isinstance(op, (cst.Add, cst.Subtract)):
                left, right = self.terms(expr.left, depth), self.terms(expr.right, depth)
                if left is None or right is None:
                    return None
                sign = -1 if isinstance(op, cst.Subtract) else 1
                return left + [(sign * s, leaf) for s, leaf in right]
            if isinstance(op, cst.Multiply):
                for factor, other in ((expr.left, expr.right), (expr.right, expr.left)):
                    sign = self.positive_factor(factor)
                    if sign:
                        inner = self.terms(other, depth)
                        return None if inner is None else [(sign * s, leaf) for s, leaf in inner]
                return [(1, expr)]
            if isinstance(op, cst.Divide):
                sign = self.positive_factor(expr.right)
                if sign:
                    inner = self.terms(expr.left, depth)
                    return None if inner is None else [(sign * s, leaf) for s, leaf in inner]
                return [(1, expr)]
            return [(1, expr)]
        if isinstance(expr, cst.Name) and depth > 0:
            value = self.value_of(expr)
            if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation, cst.Name)):
                return self.terms(value, depth - 1)
            if isinstance(value, cst.Call):
                expanded = self.terms(value, depth - 1)  # `d = torch.clamp(old - new, -20, 20)`
                if expanded is not None and (len(expanded) != 1 or expanded[0][1] is not value):
                    return expanded
        if isinstance(expr, cst.Call):
            op, operand = self.call_name(expr)
            if op in ("clamp", "clip") and isinstance(operand, (cst.BinaryOperation, cst.UnaryOperation, cst.Name)):
                return self.terms(operand, depth)  # clamping keeps the direction
        return [(1, expr)]

    def positive_factor(self, expr: cst.BaseExpression) -> int:
        """+1 / -1 for a factor of known sign (a literal, a name bound to one, `beta`, `-beta`, `self.kl_beta`),
        else 0."""
        number = number_value(expr)
        if number is not None:
            return (number > 0) - (number < 0)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return -self.positive_factor(expr.expression)
        name = last_part(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if name and (_POSITIVE_SCALE.match(name) or _POSITIVE_SCALE.match(name.rsplit("_", 1)[-1])):
            return 1  # `beta`, and a coefficient named for what it weighs: `kl_beta`, `entropy_alpha`
        if isinstance(expr, cst.Name):
            value = number_value(self.value_of(expr) or expr)
            if value is not None:
                return (value > 0) - (value < 0)  # `w = 0.1` above
        return 0

    def polarity(self, expr: cst.BaseExpression, operand: Callable[[cst.BaseExpression], bool],
                 depth: int = 6) -> Optional[int]:
        """+1 if `expr` grows with the leaves `operand` accepts, -1 if it shrinks, 0 if they do
        not occur, None if mixed or unknown. Sees through `sigmoid`, `logsigmoid`, `softplus`,
        `exp`, `log` (increasing)."""
        terms = self.terms(expr)
        if terms is None:
            return None
        total: Set[int] = set()
        for sign, leaf in terms:
            if operand(leaf):
                total.add(sign)
                continue
            if isinstance(leaf, cst.Call) and depth > 0:
                op, inner = self.call_name(leaf)
                if op in _MONOTONE and inner is not None:
                    found = self.polarity(inner, operand, depth - 1)
                    if found is None:
                        return None
                    if found:
                        total.add(sign * found)
                    continue
            if _mentions(leaf, operand):
                return None
        if len(total) > 1:
            return None
        return total.pop() if total else 0

    # ---- casts ----------------------------------------------------------------------
    def half_cast(self, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """The cast to float16/bfloat16 that `expr` went through with no upcast since, else None."""
        for step in self.history(expr):
            if not isinstance(step, cst.Call):
                continue
            op, _ = self.call_name(step)
            precision = self.cast_precision(step, op)
            if precision == "full":
                return None
            if precision == "half":
                return step
        return None

    def cast_precision(self, call: cst.Call, op: Optional[str]) -> Optional[str]:
        """"half", "full" or None for a call that casts (`.half()`, `.to(torch.bfloat16)`,
        `.float()`, `dtype=` of the op itself)."""
        if op in _FLOAT_HALF:
            return "half"
        if op in _FLOAT_UP:
            return "full"
        dtype = argument(call, None, "dtype")
        if dtype is None and op in ("to", "type"):
            dtype = argument(call, 0, "dtype")
            if dtype is not None and not isinstance(dtype, (cst.Attribute, cst.Name)):
                dtype = None
        if dtype is None:
            return None
        name = last_part(dtype) if isinstance(dtype, (cst.Attribute, cst.Name)) else None
        qualified = self.qualified(dtype) or ""
        if name in _HALF_DTYPES and qualified.startswith("torch."):
            return "half"
        if name in _FULL_DTYPES and (qualified.startswith("torch.") or name == "float"):
            return "full"
        return None

    def in_autocast(self, node: cst.CSTNode) -> bool:
        return id(node) in self.autocast

    def is_autocast(self, expr: cst.BaseExpression) -> bool:
        if not isinstance(expr, cst.Call):
            return False
        name = self.qualified(expr.func) or ""
        enabled = argument(expr, None, "enabled")
        off = isinstance(enabled, cst.Name) and enabled.value == "False"
        return name.split(".")[-1] == "autocast" and not off

    # ---- shift ----------------------------------------------------------------------
    def shifted(self, expr: cst.BaseExpression) -> bool:
        """Whether a sequence tensor was shifted or cut along time before this use: a bounded
        slice of a non-batch axis (`[:, :-1]`, `[:, 1:]`, `[..., :-1, :]`), a shift helper
        (`shift_logits(...)`, `torch.roll`), a name that says so (`shift_labels`), or a model
        call that keeps only the last logits (`logits_to_keep=`)."""
        for step in self.history(expr):
            if isinstance(step, cst.Subscript) and _time_slice(step):
                return True
            name = last_part(step) if isinstance(step, (cst.Name, cst.Attribute, cst.Subscript)) else None
            if name and "shift" in name.lower():
                return True
            if isinstance(step, cst.Attribute) and isinstance(step.value, cst.Call):
                if _keeps_last_logits(step.value):
                    return True
            if isinstance(step, cst.Attribute) and isinstance(step.value, cst.Name):
                origin = self.value_of(step.value)
                if isinstance(origin, cst.Call) and _keeps_last_logits(origin):
                    return True
            if isinstance(step, cst.Call):
                op, operand = self.call_name(step)
                if op == "roll" or (op and "shift" in op.lower()):
                    return True
        return False

    def built_shifted(self, name: str) -> bool:
        """Whether the file builds a value of this name already shifted (`labels = ids[:, 1:]`,
        `{"labels": ids[:, 1:]}`): ids made by a helper that line up with unshifted logits."""
        if self._shifted_names is None:
            self._shifted_names = shifted_names(self.tree)
        return name in self._shifted_names

    def model_logits(self, expr: cst.BaseExpression) -> Optional[cst.Call]:
        """The model call whose logits `expr` comes from, when its history shows it here (`.logits`
        of a call or of a name bound to a call, `lm_head(...)`), else None."""
        for step in self.history(expr):
            if isinstance(step, cst.Attribute) and step.attr.value == "logits":
                base = step.value
                if isinstance(base, cst.Name):
                    base = self.value_of(base)
                return base if isinstance(base, cst.Call) else None
            if isinstance(step, cst.Call):
                op, _ = self.call_name(step)
                if op == "lm_head" or (isinstance(step.func, cst.Attribute) and step.func.attr.value == "lm_head"):
                    return step
        return None

    # ---- batch layout -----------------------------------------------------------------
    def is_group_size(self, expr: Optional[cst.BaseExpression]) -> bool:
        """A group size by its name (`num_generations`, `G`, `cfg.rollout.n`), through a local alias
        (`n = args.num_generations`), or by its use: the count the prompts were repeated by here
        (`k` of `prompt_ids.repeat_interleave(k)`)."""
        if expr is None:
            return False
        for candidate in (expr, self.resolve(expr)):
            if isinstance(candidate, cst.Attribute) and _group_size_name(candidate.attr.value,
                                                                         last_part(candidate.value)):
                return True
            if isinstance(candidate, cst.Name) and _group_size_name(candidate.value, None):
                return True
        return self._repeat_count(expr)

    def is_batch_size(self, expr: Optional[cst.BaseExpression]) -> bool:
        """A batch size by its name (`per_device_batch_size`), or by how it is measured: the first
        axis of a tensor (`B, T = ids.shape`, `bsz = x.size(0)`, `x.shape[0]`) or a list's length
        (`len(prompts)`)."""
        if isinstance(expr, cst.Name):
            value = self.value_of(expr)
            if value is None:
                return self._unpacked_dim(expr) == 0 or self._name_is_batch_size(expr)
            return self._measures_first_axis(value) or self._name_is_batch_size(expr)
        return self._measures_first_axis(expr) or self._name_is_batch_size(expr)

    @staticmethod
    def _name_is_batch_size(expr: Optional[cst.BaseExpression]) -> bool:
        name = last_part(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        return bool(name and _BATCH_SIZE.search(name.lower()))

    def _measures_first_axis(self, expr: cst.BaseExpression) -> bool:
        """`x.size(0)`, `x.shape[0]`, `len(prompts)` (of a batch's inputs: not `len(reward_funcs)`)."""
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Name) and func.value == "len" and len(expr.args) == 1:
                return bool(_BATCH_INPUT.search(last_part(expr.args[0].value) or ""))
            return isinstance(func, cst.Attribute) and func.attr.value == "size" and len(expr.args) == 1 and \
                int_value(expr.args[0].value) == 0
        return isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) and \
            expr.value.attr.value == "shape" and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) \
            and int_value(expr.slice[0].slice.value) == 0

    def _unpacked_dim(self, name: cst.Name) -> Optional[int]:
        """The axis a name was unpacked from (`B, T = ids.shape`: B is axis 0), in its scope or an enclosing one."""
        scope = self.scope_of.get(id(name))
        while scope is not None:
            if name.value in scope.dims:
                return scope.dims[name.value]
            scope = scope.parent
        return None

    def layout(self, node: cst.CSTNode, size: Optional[cst.BaseExpression] = None, any_count: bool = False
               ) -> Optional[str]:
        """"contiguous" or "tiled": how the completions of one prompt are arranged, from the
        evidence in the enclosing functions, else in the whole file, else the framework (TRL,
        verl and OpenRLHF keep them contiguous); None when unknown or contradictory. A repeat by a
        count that is not a group size by its name is evidence only about the reshapes by `size`,
        the same count (or about any reshape, with `any_count`)."""
        sizes = self._codes(size) if size is not None else set()
        for found in self._evidence(node):
            # an unnamed count makes `repeat(k, 1)` tiled only for a batch of several prompts, which a
            # single prompt repeated into a group is not: only the contiguous forms speak for themselves
            layouts = {layout for layout, count, named in found
                       if named or any_count or (count in sizes and layout == "contiguous")}
            if len(layouts) == 1:
                return next(iter(layouts))
            if layouts:
                return None
        if self.imports.imports_from("trl", "verl", "openrlhf"):
            return "contiguous"
        return None

    def _evidence(self, node: cst.CSTNode) -> Iterator[Set[Evidence]]:
        """The layout evidence of each function around `node`, innermost first, then of the file."""
        if self._layouts is None:
            self._layouts = _layouts(self.tree)
        scope = self.scope_of.get(id(node))
        while scope is not None:
            if isinstance(scope.node, cst.FunctionDef):
                yield self._layouts.get(_function_key_cst(scope.node), set())
            scope = scope.parent
        yield self._layouts.get(None, set())

    def same_value(self, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
        """The same code, or a name and what it holds."""
        return bool(self._codes(a) & self._codes(b))

    def _codes(self, expr: cst.BaseExpression) -> Set[str]:
        """The code of an expression and of what a name holds (`k` and `cfg.samples_per_q`)."""
        return {" ".join(self.module.code_for_node(e).split()) for e in (expr, self.resolve(expr))}

    def _repeat_count(self, expr: cst.BaseExpression) -> bool:
        """Whether the prompts were repeated by `expr` in the function it is in (names are local) or, for an
        attribute (`self.k`, `cfg.samples_per_q`), anywhere in the file."""
        codes = self._codes(expr)
        attribute = any(isinstance(e, cst.Attribute) for e in (expr, self.resolve(expr)))
        for found in self._evidence(expr):
            if any(count in codes for _, count, _ in found):
                return True
            if not attribute:
                return False
        return False

    # ---- groups -----------------------------------------------------------------------
    def group_reshape(self, expr: cst.BaseExpression, source: Optional[cst.BaseExpression] = None
                      ) -> Optional[GroupReshape]:
        """`x.view(-1, G)`, `x.reshape(G, -1)`, `torch.reshape(x, (-1, G))` (through names): a
        per-completion vector cut into groups. The group axis is the one sized by a group size
        (`is_group_size`), else, for `view(-1, k)` / `view(k, -1)`, the axis of `k` when the rows are
        centred by their mean, or when their statistic meets `source`, the vector that was cut."""
        expr = self.resolve(expr)
        if not isinstance(expr, cst.Call):
            return None
        op, operand = self.call_name(expr)
        if op not in ("view", "reshape") or operand is None:
            return None
        dims = [arg.value for arg in expr.args if arg.keyword is None and not arg.star]
        if self.is_function(expr.func):
            dims = dims[1:]
        if len(dims) == 1 and isinstance(dims[0], (cst.Tuple, cst.List)):
            dims = [element.value for element in dims[0].elements]
        if len(dims) != 2:
            return None
        for axis in (1, 0):
            if self.is_group_size(dims[axis]):
                return GroupReshape(expr, operand, dims[0], dims[1], axis)
        free = [axis for axis, size in enumerate(dims) if int_value(size) == -1]
        if len(free) != 1:
            return None
        axis = 1 - free[0]
        if not isinstance(dims[axis], (cst.Name, cst.Attribute)) or self.is_batch_size(dims[axis]):
            return None
        # whatever the size is called: the rows are centred by their own mean, or their statistic is
        # combined with the very vector that was cut (`x - x.view(-1, k).mean(1)`)
        if axis in self.centred_axes(expr) or (source is not None and self.same_value(operand, source)):
            return GroupReshape(expr, operand, dims[0], dims[1], axis)
        return None

    def centred_axes(self, reshape: cst.Call) -> Set[int]:
        """The axes along which the value a reshape is bound to is centred by its own mean in its
        function: `g = x.view(k, -1)` then `g - g.mean(dim=0, keepdim=True)` gives {0}."""
        scope = self.scope_of.get(id(reshape))
        if scope is None:
            return set()
        if id(scope) not in self._centred:
            self._centred[id(scope)] = self._centring(scope)
        return self._centred[id(scope)].get(id(reshape), set())

    def _centring(self, scope: Scope) -> Dict[int, Set[int]]:
        """id(reshape call) -> the axes `name - name.mean(axis)` centres it along, for the names of a scope."""
        found: Dict[int, Set[int]] = {}
        body = scope.node.body if isinstance(scope.node, cst.FunctionDef) else scope.node
        stack: List[cst.CSTNode] = [body]
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                continue
            stack.extend(node.children)
            if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract)
                    and isinstance(node.left, cst.Name)):
                continue
            mean = node.right
            while True:
                if isinstance(mean, cst.Subscript):
                    mean = mean.value
                elif isinstance(mean, cst.Call) and self.call_name(mean)[0] in ("unsqueeze", "detach"):
                    mean = self.call_name(mean)[1]
                else:
                    break
            if not isinstance(mean, cst.Call):
                continue
            op, operand = self.call_name(mean)
            if op not in ("mean", "nanmean") or not isinstance(operand, cst.Name) or operand.value != node.left.value:
                continue
            method = isinstance(mean.func, cst.Attribute) and not self.is_function(mean.func)
            dim = int_value(argument(mean, 0 if method else 1, "dim") or argument(mean, None, "axis"))
            bound = self.resolve(node.left)
            if dim is not None and isinstance(bound, cst.Call):
                found.setdefault(id(bound), set()).add(dim % 2)
        return found

    def group_stat(self, expr: cst.BaseExpression, depth: int = 8, source: Optional[cst.BaseExpression] = None
                   ) -> Optional[GroupStat]:
        """A statistic of each group (`grouped.mean(dim=1)`, `x.view(-1, G).std(-1)`), seen through
        names, `+ eps`, casts and clamps, with how it was brought back to the completion axis:
        `repeat_interleave` ("contiguous"), `.repeat` ("tiled"), `unsqueeze` / `[:, None]` /
        `expand` / `view` ("broadcast"), `keepdim=True` ("keepdim"), or not at all (None)."""
        expanded: Optional[str] = None
        while depth > 0:
            depth -= 1
            if isinstance(expr, cst.Name):
                value = self.value_of(expr)
                if value is None:
                    return None
                expr = value
            elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)) and (
                    number_value(expr.right) is not None or _is_epsilon_name(expr.right)):
                expr = expr.left
            elif isinstance(expr, cst.Subscript):
                table = self._per_key_stat(expr)
                if table is not None:
                    return GroupStat(table[0], table[1], None, "indexed", "key")
                if any(isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Name)
                       and e.slice.value.value == "None" for e in expr.slice):
                    expanded = expanded or "broadcast"
                elif len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) and \
                        not isinstance(expr.slice[0].slice.value, cst.Ellipsis):
                    expanded = expanded or "indexed"  # `group_mean[group_ids]`, `means[i // G]`: picked per completion
                expr = expr.value
            elif isinstance(expr, cst.Call):
                op, operand = self.call_name(expr)
                if operand is None and op in _GROUP_STATS:  # a local helper: `nanstd(x, dim=1)`
                    operand = argument(expr, 0)
                scattered = _scatter_stat(expr, op)
                if scattered is not None:  # `zeros(n).scatter_reduce(0, gid, r, "mean")`, `scatter_std(r, gid)`
                    return GroupStat(expr, scattered, None, expanded, "scatter")
                if operand is None:
                    return None
                if op == "transform" and self._grouped_by(operand):  # pandas: `df.groupby(k)[c].transform("std")`
                    name = argument(expr, 0, "func")
                    stat = name.evaluated_value if isinstance(name, cst.SimpleString) else None
                    return GroupStat(expr, stat, None, expanded or "broadcast", "groupby") if stat in _GROUP_STATS \
                        else None
                if op in _GROUP_STATS and self._grouped_by(operand):  # `df.groupby(k)[c].std()`: one per group
                    return GroupStat(expr, op, None, expanded, "groupby")
                if op in _GROUP_STATS:
                    reshape = self.group_reshape(operand, source)
                    if reshape is None:
                        return None
                    method = isinstance(expr.func, cst.Attribute) and not self.is_function(expr.func)
                    dim = int_value(argument(expr, 0 if method else 1, "dim") or argument(expr, None, "axis"))
                    if dim is None or dim not in (reshape.axis, reshape.axis - 2):
                        return None
                    keepdim = argument(expr, None, "keepdim") or argument(expr, None, "keepdims")  # torch, numpy
                    if isinstance(keepdim, cst.Name) and keepdim.value == "True":
                        expanded = expanded or "keepdim"
                    return GroupStat(expr, op, reshape, expanded)
                if op == "repeat_interleave":
                    expanded = expanded or "contiguous"
                elif op == "repeat":
                    expanded = expanded or "tiled"
                elif op in ("unsqueeze", "expand", "expand_as", "view", "reshape", "view_as", "broadcast_to"):
                    expanded = expanded or "broadcast"
                elif op not in _KEEP and op not in ("clamp", "clamp_min", "clip", "add"):
                    return None
                expr = operand
            else:
                return None
        return None

    def _grouped_by(self, expr: cst.BaseExpression, depth: int = 8) -> bool:
        """A pandas (or polars) selection made from a `groupby`: `df.groupby("uid")["reward"]`."""
        while depth > 0:
            depth -= 1
            if isinstance(expr, cst.Name):
                expr = self.value_of(expr)
            elif isinstance(expr, (cst.Attribute, cst.Subscript)):
                expr = expr.value
            elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
                if expr.func.attr.value in ("groupby", "group_by"):
                    return True
                expr = expr.func.value
            else:
                return False
        return False

    def _per_key_stat(self, lookup: cst.Subscript) -> Optional[Tuple[cst.Call, str]]:
        """`id2std[index[i]]`, `uid2mean[u]`: a lookup, by a computed key, in a table of per-key statistics
        (verl's form): `{u: np.std(v) for u, v in groups.items()}`, or a dict filled in a loop with
        `id2std[idx] = torch.std(...)`. (stat call, statistic); string keys (`stats["std"]`) are not per group."""
        if len(lookup.slice) != 1 or not isinstance(lookup.slice[0].slice, cst.Index) or \
                not isinstance(lookup.value, cst.Name) or _literal_key(lookup.slice[0].slice.value):
            return None
        table = self.value_of(lookup.value)
        if isinstance(table, cst.DictComp):
            values = [] if _literal_key(table.key) else [table.value]
        elif (isinstance(table, cst.Dict) and not table.elements) or (isinstance(table, cst.Call) and (
                last_part(table.func) == "defaultdict" or (last_part(table.func) == "dict" and not table.args))):
            values = [value for key, value in self._items(lookup.value) if not _literal_key(key)]
        else:
            return None
        found = {}
        branches = [part for value in values for part in (
            (value.body, value.orelse) if isinstance(value, cst.IfExp) else (value,))]
        for value in branches:
            call = self._stat_call(value)
            if call is not None:
                found.setdefault(call[1], call[0])
        if len(found) != 1:
            return None
        stat, call = next(iter(found.items()))
        return call, stat

    def _items(self, name: cst.Name) -> List[Tuple[cst.BaseExpression, cst.BaseExpression]]:
        """The `name[key] = value` assignments of the scope that binds `name`."""
        scope = self.scope_of.get(id(name))
        while scope is not None and name.value not in scope.assignments and name.value not in scope.params:
            scope = scope.parent
        return scope.items.get(name.value, []) if scope is not None else []

    def _stat_call(self, value: cst.BaseExpression) -> Optional[Tuple[cst.Call, str]]:
        """The statistic a value is, through conversions: `float(np.std(v))`, `torch.std(t).item()`."""
        for _ in range(6):
            if not isinstance(value, cst.Call):
                return None
            op, operand = self.call_name(value)
            if op in _GROUP_STATS or op in ("stdev", "pstdev", "fmean"):
                return value, {"stdev": "std", "pstdev": "std", "fmean": "mean"}.get(op, op)
            if operand is None and isinstance(value.func, cst.Name) and op in ("float", "tensor") and value.args:
                operand = value.args[0].value
            if operand is None or op not in ("item", "float", "tensor", "as_tensor", "to", "detach", "cpu"):
                return None
            value = operand
        return None

    def masked_sum(self, expr: cst.BaseExpression) -> Optional[Tuple[cst.BaseExpression, cst.BaseExpression, Optional[int]]]:
        """`(x * mask).sum(d)`, `torch.sum(x * mask, dim=d)`: (x, mask, d); d is None for a full sum."""
        if not isinstance(expr, cst.Call):
            return None
        op, operand = self.call_name(expr)
        if op not in ("sum", "nansum") or not isinstance(operand, cst.BinaryOperation) or \
                not isinstance(operand.operator, cst.Multiply):
            return None
        dim = argument(expr, 1 if self.is_function(expr.func) else 0, "dim")
        factors = _factors(operand)
        masks = [f for f in factors if (self.kind(f) or Kind("")).kind == MASK]
        values = [f for f in factors if not any(f is m for m in masks)]
        if not masks or not values:
            return None
        mask = masks[0]
        if len(masks) > 1:  # `x * m1 * m2`: the product of the masks is the mask
            for other in masks[1:]:
                mask = cst.BinaryOperation(left=mask, operator=cst.Multiply(), right=other)
            mask = mask.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return values[0], mask, int_value(dim) if dim is not None else None

    def mask_count(self, expr: cst.BaseExpression) -> Optional[Tuple[cst.BaseExpression, Optional[int]]]:
        """`mask.sum(d)`, `torch.sum(mask)`, with `.clamp(min=1)` / `.clamp_min(1)` / `torch.clamp` /
        `+ eps` around it, through a name: (mask, d); d is None for a full count."""
        expr = self.resolve(expr)
        while isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add) and (
                number_value(expr.right) is not None or _is_epsilon_name(expr.right)):
            expr = self.resolve(expr.left)  # `mask.sum() + 1e-8`
        while isinstance(expr, cst.Call):
            op, operand = self.call_name(expr)
            if operand is None:
                return None
            if op in ("clamp", "clamp_min", "clip", "float", "to", "detach", "maximum", "max"):
                expr = self.resolve(operand)
                continue
            if op != "sum":
                return None
            kind = self.kind(operand)
            if kind is None or kind.kind != MASK:
                return None
            dim = argument(expr, 1 if self.is_function(expr.func) else 0, "dim")
            return operand, int_value(dim) if dim is not None else None
        return None

    def same_mask(self, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
        """Whether two mask expressions hold the same mask: the same code, or one a plain alias or
        cast of the other (`mask = completion_mask.float()`), or rows of it (`mask[start:stop]`: a chunk
        summed over the whole batch's count accumulates); a product of masks is another mask, and a mask
        times itself is that mask (its entries are 0 or 1)."""
        if self._mask_aliases(a) & self._mask_aliases(b):
            return True
        mine, theirs = self._mask_factors(a), self._mask_factors(b)
        if len(mine) != len(theirs):
            return False
        unmatched = [self._mask_aliases(f) for f in theirs]
        for factor in mine:
            aliases = self._mask_aliases(factor)
            match = next((i for i, other in enumerate(unmatched) if aliases & other), None)
            if match is None:
                return False
            unmatched.pop(match)
        return True

    def _mask_factors(self, expr: cst.BaseExpression) -> List[cst.BaseExpression]:
        """The distinct masks a product of masks multiplies (`m1 * m2`, `m1 & m2`, names bound to one): a
        factor repeated (`m * m`) counts once."""
        distinct: List[cst.BaseExpression] = []
        seen: Set[str] = set()
        for factor in self._product_of_masks(expr, 4):
            aliases = self._mask_aliases(factor)
            if not aliases & seen:
                distinct.append(factor)
            seen |= aliases
        return distinct

    def _product_of_masks(self, expr: cst.BaseExpression, depth: int) -> List[cst.BaseExpression]:
        resolved = self.resolve(expr)
        if depth == 0 or not isinstance(resolved, cst.BinaryOperation) or \
                not isinstance(resolved.operator, (cst.Multiply, cst.BitAnd)):
            return [expr]
        return [inner for factor in _factors(resolved, (cst.Multiply, cst.BitAnd))
                for inner in self._product_of_masks(factor, depth - 1)]

    def _mask_aliases(self, expr: cst.BaseExpression) -> Set[str]:
        names: Set[str] = set()
        for _ in range(8):
            if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
                    expr.func.attr.value in _MASK_CASTS:
                expr = expr.func.value
                continue
            if isinstance(expr, cst.Subscript) and all(_whole_axis(e.slice) for e in expr.slice[1:]) and (
                    _whole_axis(expr.slice[0].slice) or isinstance(expr.slice[0].slice, cst.Slice)):
                expr = expr.value  # `mask[:, :, None]`, and its rows `mask[start:stop]`
                continue
            names.add(self.code(expr, 1000))
            if not isinstance(expr, cst.Name):
                break
            value = self.value_of(expr)
            if value is None:
                break
            expr = value
        return names

    def scope(self, node: cst.CSTNode) -> Optional[Scope]:
        return self.scope_of.get(id(node))


_SCATTER_FUNCTIONS = {"scatter_mean": "mean", "scatter_std": "std", "scatter_max": "max", "scatter_min": "min"}


def _scatter_stat(call: cst.Call, op: Optional[str]) -> Optional[str]:
    """The statistic a scatter computes per index: torch's `scatter_reduce` / `index_reduce` with
    `reduce="mean"`, torch_scatter's `scatter_mean` / `scatter_std`."""
    if op in _SCATTER_FUNCTIONS:
        return _SCATTER_FUNCTIONS[op]
    if op in ("scatter_reduce", "scatter_reduce_", "index_reduce", "index_reduce_"):
        strings = [a.value for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
        reduce = argument(call, None, "reduce") or (strings[0] if strings else None)
        if isinstance(reduce, cst.SimpleString) and reduce.evaluated_value in ("mean", "amax", "amin"):
            return {"amax": "max", "amin": "min"}.get(reduce.evaluated_value, reduce.evaluated_value)
    return None


def _literal_key(expr: cst.BaseExpression) -> bool:
    """A key written as a literal (`stats["std"]`, `row[0]`): a named slot, not one per group."""
    return isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer))


def _is_scalar_like(expr: cst.BaseExpression) -> bool:
    """A literal or a name of a scalar setting (`temperature`, `beta`, `args.temperature`)."""
    if number_value(expr) is not None:
        return True
    name = last_part(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    return bool(name and (_POSITIVE_SCALE.match(name) or name in ("temperature", "temp", "tau")))


def _subscript_rank(expr: cst.Subscript, rank: Optional[int]) -> Optional[int]:
    if rank is None:
        return None
    added = 0
    for element in expr.slice:
        index = element.slice
        if isinstance(index, cst.Index):
            if isinstance(index.value, cst.Name) and index.value.value == "None":
                added += 1
            elif not isinstance(index.value, cst.Ellipsis):
                return None
    return rank + added


def _factors(expr: cst.BaseExpression, operators: tuple = (cst.Multiply,)) -> List[cst.BaseExpression]:
    """The factors of a product: `a * b * c` -> a, b, c."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, operators):
        return _factors(expr.left, operators) + _factors(expr.right, operators)
    return [expr]


def _width_one(index: cst.BaseSlice) -> bool:
    """A slice of one position: `t:t + 1`, `3:4`, `-1:`."""
    if not isinstance(index, cst.Slice) or index.step is not None or index.lower is None:
        return False
    lower, upper = int_value(index.lower), index.upper
    if upper is None:
        return lower == -1
    if lower is not None and int_value(upper) is not None:
        return int_value(upper) == lower + 1
    return (isinstance(upper, cst.BinaryOperation) and isinstance(upper.operator, cst.Add)
            and int_value(upper.right) == 1 and upper.left.deep_equals(index.lower))


def _whole_axis(index: cst.BaseSlice) -> bool:
    """`:`, `...` or `None` in a subscript: it selects no positions."""
    if isinstance(index, cst.Slice):
        return index.lower is None and index.upper is None and index.step is None
    return isinstance(index.value, cst.Ellipsis) or (isinstance(index.value, cst.Name) and index.value.value == "None")


def _bounded(index: cst.BaseSlice) -> bool:
    return isinstance(index, cst.Slice) and (index.lower is not None or index.upper is not None)


def _time_slice(expr: cst.Subscript) -> bool:
    """A bounded slice on an axis other than the first: `x[:, :-1]`, `x[..., 1:]`, `x[..., :-1, :]`."""
    elements = [e.slice for e in expr.slice]
    has_ellipsis = any(isinstance(e, cst.Index) and isinstance(e.value, cst.Ellipsis) for e in elements)
    for position, index in enumerate(elements):
        if _bounded(index) and (position > 0 or has_ellipsis):
            return True
    return False


def _keeps_last_logits(call: cst.Call) -> bool:
    return any(arg.keyword is not None and arg.keyword.value in ("logits_to_keep", "num_logits_to_keep")
               for arg in call.args)


def shifted_names(tree: ast.AST) -> Set[str]:
    """Names, attributes and string keys bound to a slice that drops the first position, and tensors written
    shifted in place: `labels[:, :-1] = ids[:, 1:]`, or ids written one position early
    (`labels[i, start - 1:end - 1] = response_ids`)."""
    found: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(_written_early(t) for t in node.targets):
            found.update(t.value.id for t in node.targets if _written_early(t))
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _drops_first(node.value):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(target, ast.Name):
                    found.add(target.id)
                elif isinstance(target, ast.Attribute):
                    found.add(target.attr)
                elif isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
                    found.add(str(target.slice.value))
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    found.add(target.value.id)
        elif isinstance(node, ast.Dict):
            found.update(key.value for key, value in zip(node.keys, node.values)
                         if isinstance(key, ast.Constant) and isinstance(key.value, str) and _drops_first(value))
    return found


def _written_early(target: ast.expr) -> bool:
    """`name[..., k - 1:...] = ...` / `name[i, t - 1] = ...`: a store into a tensor one position before `k`."""
    if not isinstance(target, ast.Subscript) or not isinstance(target.value, ast.Name):
        return False
    parts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
    for part in parts:
        start = part.lower if isinstance(part, ast.Slice) else part
        if isinstance(start, ast.BinOp) and isinstance(start.op, ast.Sub) and isinstance(start.right, ast.Constant) \
                and start.right.value == 1:
            return True
    return False


def _drops_first(value: ast.expr) -> bool:
    """`x[:, 1:]`, `x[..., 1:].contiguous()`, `x[1:]`: a slice from position 1 on."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _KEEP:
        value = value.func.value
    if not isinstance(value, ast.Subscript):
        return False
    parts = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
    return any(isinstance(part, ast.Slice) and isinstance(part.lower, ast.Constant) and part.lower.value == 1
               and part.upper is None for part in parts)


def _mentions(expr: cst.CSTNode, operand: Callable[[cst.BaseExpression], bool]) -> bool:
    """Whether any name, attribute or key inside `expr` is one `operand` accepts."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)) and operand(node):
            return True
        stack.extend(node.children)
    return False


def _group_size_name(name: str, owner: Optional[str]) -> bool:
    """`num_generations`, `group_size`, `G`, `NUM_GENERATIONS`, `n_samples_per_prompt`, `rollout.n`..."""
    return name == "G" or bool(_GROUP_SIZE.match(name.lower())) or (name == "n" and (owner or "").lower() == "rollout")


def _ast_group_size(node: Optional[ast.expr]) -> bool:
    if isinstance(node, ast.Name):
        return _group_size_name(node.id, None)
    if isinstance(node, ast.Attribute):
        owner = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", None)
        return _group_size_name(node.attr, owner)
    return False


def _function_key_cst(node: cst.FunctionDef) -> tuple:
    params = node.params
    return (node.name.value, tuple(p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)))


def _function_key_ast(node: ast.AST) -> tuple:
    args = node.args
    return (node.name, tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)))


# What a layout replicates: prompts and their encodings, not statistics.
_BATCH_INPUT = re.compile(r"prompt|input|ids|token|quer|question|example|sample|batch|text|message|attention|"
                          r"problem|answer|gold|label|data|item", re.IGNORECASE)


def _base_name(node: ast.AST) -> str:
    while isinstance(node, (ast.Subscript, ast.Call)):
        node = node.value if isinstance(node, ast.Subscript) else node.func
        if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute, ast.Subscript,
                                                                      ast.Call)):
            node = node.value if not isinstance(node.value, ast.Name) else node
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def layout_of(node: ast.AST, any_receiver: bool = False) -> Optional[Tuple[str, Optional[ast.expr]]]:
    """The layout one expression shows, with the count it repeats by (the group size, whatever its
    name; None when not written): `prompt_ids.repeat_interleave(G)`, `np.repeat(ids, G)`,
    verl's `batch.repeat(repeat_times=n, interleave=True)`, `[p for p in ps for _ in range(G)]`
    and TRL's `RepeatSampler` keep a prompt's completions contiguous; `prompt_ids.repeat(G)`,
    `np.tile(ids, G)`, `prompts * G` and `[p for _ in range(G) for p in ps]` tile them. The repeated
    tensor is one of prompts by its name, unless `any_receiver` (the engine follows where its rows go)."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in ("RepeatSampler", "RepeatRandomSampler"):  # TRL: each prompt index repeated in a row
            return "contiguous", None
        if name not in ("repeat_interleave", "repeat", "tile"):
            return None
        keywords = {k.arg: k.value for k in node.keywords}
        module_call = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in (
            "torch", "np", "numpy")
        if module_call:
            receiver = node.args[0] if node.args else keywords.get("input")
            first = node.args[1] if len(node.args) > 1 else None
        else:
            receiver = func.value if isinstance(func, ast.Attribute) else None
            first = node.args[0] if node.args else None
        if receiver is None or not any_receiver and not _BATCH_INPUT.search(_base_name(receiver)):
            return None
        if name == "repeat_interleave":
            return _counted("contiguous", keywords.get("repeats", first))
        if name == "repeat" and (module_call or "repeat_times" in keywords):
            # `np.repeat(x, G)` repeats each element in place; verl's `DataProto.repeat(repeat_times=G,
            # interleave=True)` too (interleave is its default)
            count = keywords.get("repeat_times", keywords.get("repeats", first))
            interleave = keywords.get("interleave")
            if isinstance(interleave, ast.Constant) and interleave.value is False:
                return _counted("tiled", count)
            return _counted("contiguous", count)
        if name in ("repeat", "tile"):
            return _counted("tiled", keywords.get("reps", first))
    elif isinstance(node, (ast.ListComp, ast.GeneratorExp)) and len(node.generators) == 2:
        def repeats(generator: ast.comprehension) -> Optional[ast.expr]:
            """The count of `for _ in range(count)`: a loop whose variable is not used."""
            it, target = generator.iter, generator.target
            if isinstance(it, ast.Call) and getattr(it.func, "id", None) == "range" and len(it.args) == 1 and (
                    _ast_group_size(it.args[0]) or isinstance(target, ast.Name) and target.id.startswith("_")):
                return it.args[0]
            return None
        outer, inner = (repeats(g) for g in node.generators)
        if inner is not None and outer is None:
            return _counted("contiguous", inner)
        if outer is not None and inner is None:
            return _counted("tiled", outer)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for items, count in ((node.left, node.right), (node.right, node.left)):
            name = items.id if isinstance(items, ast.Name) else items.attr if isinstance(items, ast.Attribute) else ""
            if "prompt" in name.lower() and name.endswith("s"):
                return _counted("tiled", count)
    return None


def _counted(layout: str, count: Optional[ast.expr]) -> Optional[Tuple[str, Optional[ast.expr]]]:
    """A repeat by a group-size name, or by a name or attribute that the reshapes then have to use
    to count as the group size; a literal count (`repeat(1, 2)`) or none is no layout evidence."""
    if isinstance(count, (ast.Name, ast.Attribute)):
        return layout, count
    return None


# One piece of layout evidence: the layout, the code of its count ("" when none is written) and
# whether the count is a group size by its name.
Evidence = Tuple[str, str, bool]


def _evidence(found: Tuple[str, Optional[ast.expr]]) -> Evidence:
    layout, count = found
    return layout, ast.unparse(count) if count is not None else "", count is None or _ast_group_size(count)


def _layouts(tree: ast.Module) -> Dict[Optional[tuple], Set[Evidence]]:
    """Layout evidence per function (keyed by name and parameters) and, under None, per file.

    A function also gets the evidence of the local functions it calls by name and, when it
    is a method, of the other methods of its class (a trainer generates in one method and
    groups rewards in another)."""
    own: Dict[Optional[tuple], Set[Evidence]] = {None: set()}
    calls: Dict[tuple, Set[str]] = {}
    keys_by_name: Dict[str, List[tuple]] = {}
    class_of: Dict[tuple, str] = {}
    aliases: Dict[Tuple[Optional[tuple], str], ast.expr] = {}  # (function, name) -> what it was last assigned

    def visit(node: ast.AST, key: Optional[tuple], cls: Optional[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = _function_key_ast(child)
                own.setdefault(inner, set())
                calls.setdefault(inner, set())
                keys_by_name.setdefault(child.name, []).append(inner)
                if cls is not None:
                    class_of[inner] = cls
                visit(child, inner, None)
                continue
            if isinstance(child, ast.ClassDef):
                visit(child, key, child.name)
                continue
            if isinstance(child, ast.Assign) and len(child.targets) == 1 and isinstance(child.targets[0], ast.Name):
                aliases[(key, child.targets[0].id)] = child.value
            layout = layout_of(child)
            if layout and isinstance(child, ast.BinOp) and id(child) in counts:
                layout = None  # `n = num_prompts * group_size` used as `range(n)`, a shape: a count, not a list
            if layout:
                evidence = {_evidence(layout)}
                count = layout[1]
                if isinstance(count, ast.Name) and (key, count.id) in aliases:  # `k = cfg.per_q`: `cfg.per_q` too
                    evidence.add(_evidence((layout[0], aliases[(key, count.id)])))
                own[None].update(evidence)
                if key is not None:
                    own[key].update(evidence)
            if key is not None and isinstance(child, ast.Call):
                func = child.func
                if isinstance(func, ast.Name):
                    calls[key].add(func.id)
                elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
                    calls[key].add(func.attr)
            visit(child, key, cls)

    counts = _used_as_counts(tree)
    visit(tree, None, None)
    found: Dict[Optional[tuple], Set[Evidence]] = {None: own[None]}
    for key in calls:
        evidence = set(own[key])
        for name in calls[key]:
            for callee in keys_by_name.get(name, ()):
                evidence |= own[callee]
        if not evidence and key in class_of:
            for other, cls in class_of.items():
                if cls == class_of[key]:
                    evidence |= own[other]
        found[key] = evidence
    return found


_SIZED = frozenset({"range", "view", "reshape", "zeros", "ones", "full", "empty", "arange", "rand", "randn",
                    "randint", "new_zeros", "new_ones", "new_full", "new_empty", "expand", "split", "chunk"})


def _used_as_counts(tree: ast.Module) -> Set[int]:
    """The products a file uses as numbers: written where a size goes (`range(n)`, `x.view(n, -1)`,
    `torch.zeros((n, T))`, the count of `[x] * n`), or bound to a name that its function (or a function nested in
    it, which reads its names) uses there. A product of two counts (`num_prompts * group_size`) is no list of
    prompts tiled. One walk: each scope's size names and named products, then matched."""
    sizes: Dict[int, Set[str]] = {}  # scope id -> names used as sizes in it or in the functions nested in it
    products: Dict[int, Dict[str, List[ast.BinOp]]] = {}  # scope id -> name -> products bound to it there
    found: Set[int] = set()

    stack: List[Tuple[ast.AST, Tuple[int, ...]]] = [(tree, (id(tree),))]
    while stack:
        node, scopes = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scopes = scopes + (id(node),)
        counted: List[ast.expr] = []
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in _SIZED:
                for arg in node.args:
                    counted.extend(arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg])
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            counted.extend(count for items, count in ((node.left, node.right), (node.right, node.left))
                           if isinstance(items, ast.List))  # `[x] * n`: `n` counts
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Mult):
            products.setdefault(scopes[-1], {}).setdefault(node.targets[0].id, []).append(node.value)
        for size in counted:
            if isinstance(size, ast.BinOp):
                found.add(id(size))
            elif isinstance(size, ast.Name):
                for scope in scopes if len(scopes) == 1 else scopes[1:]:  # the module's names: its own uses only
                    sizes.setdefault(scope, set()).add(size.id)
        stack.extend((child, scopes) for child in ast.iter_child_nodes(node))
    for scope, named in products.items():
        for name in sizes.get(scope, ()) & named.keys():
            found.update(id(product) for product in named[name])
    return found


class GroupBaselines:
    """The baseline each group size of a file feeds, by the size's name: `rewards.view(-1, NUM_GENERATIONS)`
    whose rows are then averaged ("mean") or also divided by their std ("std"). A group size set in a
    hand-written loop is known to be one by this use, whatever config holds it."""

    def __init__(self, file) -> None:
        reshaped: Dict[str, str] = {}  # a name bound to a reshape into groups -> the size's name
        nodes = list(ast.walk(file.tree))
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                size = _grouped_by_size(node.value)
                if size:
                    reshaped[node.targets[0].id] = size
        self.by_size: Dict[str, str] = {}
        for call in nodes:
            func = call.func if isinstance(call, ast.Call) else None
            if not isinstance(func, ast.Attribute) or func.attr not in ("mean", "std", "var", "nanmean", "nanstd"):
                continue
            size = reshaped.get(func.value.id) if isinstance(func.value, ast.Name) else _grouped_by_size(func.value)
            if size:
                stat = "std" if func.attr in ("std", "var", "nanstd") else "mean"
                self.by_size[size] = "std" if "std" in (stat, self.by_size.get(size)) else "mean"

    def of(self, name: str) -> Optional[str]:
        """"std", "mean" or None for the size named `name` (the last part: `cfg.num_generations` is `num_generations`)."""
        return self.by_size.get(name.rsplit(".", 1)[-1].lstrip("-"))


def _grouped_by_size(node: ast.expr) -> Optional[str]:
    """`x.view(-1, size)` / `x.reshape(size, -1)`: the name of `size` (its last part)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("view", "reshape")
            and len(node.args) == 2):
        return None
    first, second = node.args
    minus_one = [isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub) and isinstance(a.operand, ast.Constant)
                 and a.operand.value == 1 for a in (first, second)]
    if sum(minus_one) != 1:
        return None
    size = second if minus_one[0] else first
    return size.id if isinstance(size, ast.Name) else size.attr if isinstance(size, ast.Attribute) else None


def _is_epsilon_name(expr: cst.BaseExpression) -> bool:
    name = last_part(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    return bool(name and _EPSILON_NAME.search(name))
