"""The torch domain: what tensor operations do to rank, axis roles, the distribution axis, content,
gradient, and which tensors an op saves for its backward.

Each transfer is a function of the abstract operands (`Value`s), written from PyTorch's documented
semantics, for `torch.*` / `F.*` calls, tensor methods, indexing and arithmetic. An op that is not
listed gives a tensor whose shape is unknown; its gradient still follows from its operands.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst

from rllint.analysis.domains.base import Domain
from rllint.analysis.facts import (BOOL, DETACHED, EOS, EXPONENTIAL, GRAPH, GUMBEL, IDS, LOG_SPACE, LOGITS, LOGPROBS, MASK,
                                   NEG_EXPONENTIAL, NEG_GUMBEL, NO_GRAD, NORM, NUMBER, PROBS, SHAPE, STD, TENSOR, TIME,
                                   TOKEN_LOGPROBS, TUPLE, UNIFORM, UNKNOWN, VAR, WEIGHTS, Value, value, with_sources)
from rllint.analysis.syntax import keyword, same_expression
from rllint.analysis.text import literal_text


class Operands:
    """The operands of one op: the receiver (for methods), positional and keyword values, the call node,
    and the gradient mode where it runs (None: unknown)."""

    __slots__ = ("receiver", "args", "kwargs", "node", "grad_mode", "ints")

    def __init__(self, receiver: Optional[Value], args: List[Value], kwargs: Dict[str, Value], node: cst.Call,
                 grad_mode: Optional[bool], ints: Callable[[int, str], Optional[int]]) -> None:
        self.receiver, self.args, self.kwargs, self.node, self.grad_mode = receiver, args, kwargs, node, grad_mode
        self.ints = ints  # (position, keyword) -> the int literal written there, else None

    def arg(self, position: int, keyword: str = "") -> Optional[Value]:
        if keyword and keyword in self.kwargs:
            return self.kwargs[keyword]
        return self.args[position] if position < len(self.args) else None

    def tensors(self) -> List[Value]:
        found = [self.receiver] if self.receiver is not None else []
        return found + list(self.args) + list(self.kwargs.values())


# ---------------------------------------------------------------- gradient

def gradient(operands: Sequence[Optional[Value]], mode: Optional[bool], node: cst.CSTNode
             ) -> Tuple[Optional[str], Tuple[cst.CSTNode, ...], Optional[cst.CSTNode]]:
    """The gradient fact of an op's result, its provenance, and `cut`: none under no_grad; a graph when an
    operand has one; none when every operand is known to have none; else unknown. `cut` is where a model's
    graph was cut on the way (a forward under no_grad, a `.detach()`) when an operand was cut and none
    carries a graph (operands of unknown gradient do not hide the cut: they are what code out of sight made)."""
    cut = next((v.facts["cut"] for v in operands if v is not None and v.facts.get("cut") is not None), None)
    if mode is False:
        graph = next((v for v in operands if v is not None and v.facts.get("grad") == GRAPH), None)
        return NO_GRAD, (node,), cut if cut is not None else (node if graph is not None else None)
    unknown = False
    for operand in operands:
        if operand is None:
            continue
        grad = operand.facts.get("grad")
        if grad == GRAPH:
            return (GRAPH, operand.reason("grad"), None) if mode else (None, (), None)
        if grad is None and operand.facts.get("type") not in (NUMBER, BOOL, SHAPE, "text", "none"):
            unknown = True
    if unknown:
        return None, (), cut
    return NO_GRAD, (node,), cut


def tensor_result(operands: Operands, **facts) -> Value:
    """A new tensor computed from the operands: their gradient and sources, and `facts`."""
    inputs = operands.tensors()
    grad, why, cut = gradient(inputs, operands.grad_mode, operands.node)
    sources = frozenset()
    forwards = frozenset()
    logp = False
    for operand in inputs:
        if operand is not None:
            sources |= operand.sources
            logp = logp or bool(operand.facts.get("logp"))
            if operand.facts.get("grad") == GRAPH:
                forwards |= operand.facts.get("forwards", frozenset())
    result = {"type": TENSOR, "obj": operands.node, **{k: v for k, v in facts.items() if v is not None}}
    if logp:
        result["logp"] = True
    if forwards and grad == GRAPH:
        result["forwards"] = forwards
    reasons = {k: (operands.node,) for k in result if k not in ("type", "obj")}
    if grad is not None:
        result["grad"] = grad
        reasons["grad"] = why
    if cut is not None:
        result["cut"] = cut
    if sources:
        result["sources"] = sources
    return Value(result, reasons)


# ---------------------------------------------------------------- log-probs read linearly

# `lp`: the tensor is, elementwise and up to masks, reductions and a common scale, a signed sum of log-probs
# (`log_softmax` outputs, gathered or not): (graph, fixed), the summed signs of those that carry the policy's
# gradient and of those that do not (a reference's, the old policy's, detached ones). `lp_at`: where a
# difference of the two kinds was written (`logp - ref_logp`), for a rule to point at. `lp_exp`: the tensor
# holds `exp` of such a difference (a ratio), written at that node; `exp(d) - d` is then the k3 estimator, whose
# linear part `-d` is no k1 estimator of its own. `lp_seq`: the sum was taken over the time axis of per-token
# terms and not divided by a length since (a sequence's log-prob, `(logp * mask).sum(-1)`); `lp_seq_exp`: the
# tensor holds `exp` of a difference that is such a sum (a whole-sequence ratio), written at that node. `lp_some`:
# the log-probs are those of one path only (`kl = logp - ref if beta else torch.tensor(0.)`), whose gradient the
# value's joined `grad` no longer says: on that path they carry the graph their `lp` counts.
LINEAR = frozenset({"sum", "mean", "nanmean", "gather", "take_along_dim", "squeeze", "unsqueeze", "transpose",
                    "permute", "view", "reshape", "flatten", "float", "double", "half", "bfloat16", "to", "type",
                    "contiguous", "clone", "cuda", "cpu", "detach"})


def settle(result: Value, lp: Optional[Tuple[int, int]], at: Optional[cst.CSTNode] = None, some: bool = False
           ) -> Value:
    """`result` holding the log-probs `lp`: fixed ones are those computed without gradient where they were
    made (a reference's, a rollout's); the policy's, cut from their graph later, and any whose gradient is
    unknown, make no known sum. `some`: an operand's log-probs are those of one path (`lp_some`), whose
    gradient the joined value does not know; only a known cut (`.detach()`, no_grad) drops them."""
    if lp is None:
        return result
    graph, fixed = lp
    grad = result.facts.get("grad")
    if grad is None and not some:
        return result.but(lp=None, lp_at=None, lp_some=None)
    if grad not in (GRAPH, None) and graph:  # the policy's log-probs cut from their graph (`logp.detach()`)
        return result.but(lp=None, lp_at=None, lp_some=None)
    if not graph and not fixed:
        return result.but(lp=None, lp_at=None, lp_some=None)
    result = result.but(lp_some=True if some else None)
    if at is None or graph != -fixed:
        return result.but(lp=(graph, fixed), lp_at=None)
    return result.but(lp=(graph, fixed), lp_at=at)


def _some(*operands: Value) -> bool:
    """Whether an operand holds the log-probs of one path only (`lp_some`)."""
    return any(v.facts.get("lp_some") for v in operands if v.facts.get("lp") is not None)


def sequence(result: Value, summed: bool) -> Value:
    """`result` marked as a sum of log-probs over the time axis (`lp_seq`) when `summed` and it holds some."""
    return result.but(lp_seq=True) if summed and result.facts.get("lp") is not None else result.but(lp_seq=None)


def _over_time(ops: Operands, x: Value) -> bool:
    """Whether a reduction `ops` runs over the time axis of `x` (`(logp * mask).sum(-1)` of a `[B, T]` tensor)."""
    rank, axes = x.facts.get("rank"), x.facts.get("axes")
    axis = norm_axis(ops.ints(1 if ops.receiver is None else 0, "dim"), rank)
    return axes is not None and axis is not None and axis < len(axes) and axes[axis] == TIME


def balanced(lp: Optional[Tuple[int, int]]) -> bool:
    """A difference of the policy's log-probs and fixed ones, with opposite signs (`logp - ref_logp`)."""
    return lp is not None and lp[0] != 0 and lp[0] == -lp[1]


def negated(v: Value) -> Value:
    """`-v`: log-probs change sign, noise its law (`-log(U)` is exponential), logits are no longer tempered ones."""
    lp = v.facts.get("lp")
    noise = _NEGATED.get(v.facts.get("noise"))
    v = v.but(temperature=None, gumbel_max=None, noise=noise, noise_scale=v.facts.get("noise_scale") if noise else None)
    return v if lp is None else v.but(lp=(-lp[0], -lp[1]))


def _k3(left: Value, right: Value) -> bool:
    """`exp(d) - d` (in either order, with constants): the k3 estimator's parts, of one difference `d`."""
    for ratio, linear in ((left, right), (right, left)):
        exponent, at = ratio.facts.get("lp_exp"), linear.facts.get("lp_at")
        if exponent is not None and at is not None and ratio.facts.get("lp") is None and \
                same_expression(exponent, at):
            return True
    return False


def _linear_arith(operator: cst.CSTNode, left: Value, right: Value, node: cst.CSTNode, result: Value) -> Value:
    """`lp` of a sum, a difference, a product with a mask or a number, a quotient by a number or a count."""
    a, b = left.facts.get("lp"), right.facts.get("lp")
    if a is None and b is None:
        exponent = left.facts.get("lp_exp") or right.facts.get("lp_exp")
        if exponent is not None and isinstance(operator, (cst.Add, cst.Subtract)) and \
                not (left.facts.get("lp_exp") and right.facts.get("lp_exp")):
            return result.but(lp_exp=exponent)  # `exp(d) - 1`
        return result
    if isinstance(operator, (cst.Add, cst.Subtract)) and _k3(left, right):
        return result.but(lp=None, lp_at=None)
    if isinstance(operator, (cst.Add, cst.Subtract, cst.AddAssign, cst.SubtractAssign)):
        sign = -1 if isinstance(operator, (cst.Subtract, cst.SubtractAssign)) else 1
        a, b = a or (0, 0), b or (0, 0)
        lp = (a[0] + sign * b[0], a[1] + sign * b[1])
        at = left.facts.get("lp_at") if balanced(a) else right.facts.get("lp_at") if balanced(b) else node
        summed = all(v.facts.get("lp_seq") for v in (left, right) if v.facts.get("lp") is not None)
        return sequence(settle(result, lp, at, _some(left, right)), summed)
    if a is not None and b is not None:
        return result.but(lp=None, lp_at=None)
    held, other = (left, right) if a is not None else (right, left)
    lp, at, some = held.facts["lp"], held.facts.get("lp_at"), _some(held)
    multiply = isinstance(operator, (cst.Multiply, cst.MultiplyAssign))
    if not multiply and (held is right or not isinstance(operator, (cst.Divide, cst.DivideAssign))):
        return result.but(lp=None, lp_at=None)
    if other.facts.get("type") == NUMBER:
        number = other.facts.get("number")
        if number is None:
            return settle(result, lp, at, some) if balanced(lp) else result.but(lp=None, lp_at=None)
        if number == 0:
            return result.but(lp=None, lp_at=None)
        return sequence(settle(result, lp if number > 0 else (-lp[0], -lp[1]), at, some),
                        multiply and held.facts.get("lp_seq"))
    if other.facts.get("type") == TENSOR and other.facts.get("grad") != GRAPH and (
            (multiply and other.facts.get("content") == MASK) or (not multiply and balanced(lp))) or \
            multiply and other.facts.get("type") in (BOOL, None) and other.facts.get("content") == MASK:
        # masked (a masked sequence sum stays one), or divided by a count (`.sum() / mask.sum()`: a mean)
        return sequence(settle(result, lp, at, some), multiply and held.facts.get("lp_seq"))
    return result.but(lp=None, lp_at=None)


# ---------------------------------------------------------------- shapes

def norm_axis(axis: Optional[int], rank: Optional[int]) -> Optional[int]:
    if axis is None or rank is None:
        return None
    if axis < 0:
        axis += rank
    return axis if 0 <= axis < rank else None


def kept(v: Optional[Value]) -> Dict:
    """The shape facts an elementwise op keeps (and the rows' layout over ranks, `gathered`)."""
    if v is None:
        return {}
    return {k: v.facts[k] for k in ("rank", "axes", "dist", "content", "gathered") if k in v.facts}


def broadcast(a: Optional[Value], b: Optional[Value]) -> Dict:
    """Shape facts of an elementwise op of two operands: the larger rank wins when both are known; a
    scalar (number or rank-0) keeps the other's facts."""
    def scalar(v: Optional[Value]) -> bool:
        return v is not None and (v.facts.get("type") in (NUMBER, BOOL) or v.facts.get("rank") == 0)

    if scalar(b):
        return kept(a)
    if scalar(a):
        return kept(b)
    if a is None or b is None:
        return {}
    ra, rb = a.facts.get("rank"), b.facts.get("rank")
    rows = next(({"gathered": v.facts["gathered"]} for v in (a, b) if "gathered" in v.facts and
                 (ra is None or rb is None or v.facts.get("rank") == max(ra, rb))), {})
    if ra is None or rb is None:
        return rows  # the gathered operand's rows, which broadcasting keeps (or refuses)
    big = a if ra >= rb else b
    facts = {"rank": max(ra, rb), **rows}
    if ra == rb and a.facts.get("axes") and a.facts.get("axes") == b.facts.get("axes"):
        facts["axes"] = a.facts["axes"]
    elif big.facts.get("axes") and ra != rb:
        facts["axes"] = big.facts["axes"]
    return facts


def reduced(v: Value, dim: Optional[int], keepdim: bool, has_dim: bool) -> Dict:
    """Shape facts after a reduction over `dim` (all axes when no dim is given)."""
    rank = v.facts.get("rank")
    if not has_dim:
        return {"rank": 0}
    axis = norm_axis(dim, rank)
    position = axis if axis is not None else dim
    rows = {"gathered": v.facts["gathered"]} if "gathered" in v.facts and position is not None and position > 0 \
        else {}
    if axis is None:
        return rows  # reduced over a later axis: one value per gathered row
    axes = v.facts.get("axes")
    if keepdim:
        facts = {"rank": rank, **rows}
        if axes:
            facts["axes"] = axes[:axis] + (None,) + axes[axis + 1:]
        return facts
    facts = {"rank": rank - 1, **rows}
    if axes:
        facts["axes"] = axes[:axis] + axes[axis + 1:]
    dist = v.facts.get("dist")
    if dist is not None and dist != axis:
        facts["dist"] = dist - (1 if dist > axis else 0)
    return facts


def removed_axis(v: Value, axis: Optional[int]) -> Dict:
    rank = v.facts.get("rank")
    axis = norm_axis(axis, rank)
    if axis is None:
        return {}
    facts: Dict = {"rank": rank - 1}
    axes = v.facts.get("axes")
    if axes:
        facts["axes"] = axes[:axis] + axes[axis + 1:]
    dist = v.facts.get("dist")
    if dist is not None and dist != axis:
        facts["dist"] = dist - (1 if dist > axis else 0)
    if "content" in v.facts and dist != axis:
        facts["content"] = v.facts["content"]
    return facts


def inserted_axis(v: Value, axis: Optional[int]) -> Dict:
    rank = v.facts.get("rank")
    if rank is None or axis is None:
        return {}
    if axis < 0:
        axis += rank + 1
    if not 0 <= axis <= rank:
        return {}
    facts: Dict = {"rank": rank + 1}
    axes = v.facts.get("axes")
    if axes:
        facts["axes"] = axes[:axis] + (None,) + axes[axis:]
    dist = v.facts.get("dist")
    if dist is not None:
        facts["dist"] = dist + (1 if dist >= axis else 0)
    if "content" in v.facts:
        facts["content"] = v.facts["content"]
    return facts


def permuted(v: Value, order: Sequence[Optional[int]]) -> Dict:
    rank = v.facts.get("rank")
    if rank is None or len(order) != rank or any(o is None for o in order):
        return {"rank": rank} if rank is not None else {}
    order = [norm_axis(o, rank) for o in order]
    if any(o is None for o in order) or sorted(order) != list(range(rank)):
        return {}
    facts: Dict = {"rank": rank}
    axes = v.facts.get("axes")
    if axes:
        facts["axes"] = tuple(axes[o] for o in order)
    dist = v.facts.get("dist")
    if dist is not None:
        facts["dist"] = order.index(dist)
    if "content" in v.facts:
        facts["content"] = v.facts["content"]
    return facts


def reshaped(v: Value, sizes: Sequence[Value]) -> Dict:
    """`view` / `reshape`: the rank is the number of sizes; an axis keeps its role where its size is read
    from that axis of a tensor (`x.view(-1, x.size(-1))` keeps the vocabulary axis last)."""
    if len(sizes) == 1 and sizes[0].facts.get("type") in (TUPLE, SHAPE) and sizes[0].facts.get("items") is not None:
        sizes = [x for _, x in sizes[0].facts["items"]]
    if any(s.facts.get("type") not in (NUMBER, None) for s in sizes):
        return {}
    rank = len(sizes)
    roles = tuple(s.facts.get("axis_role") for s in sizes)
    facts: Dict = {"rank": rank}
    if any(roles):
        facts["axes"] = roles
    dist_role = _dist_role(v)
    if dist_role is not None and roles and roles[-1] == dist_role and v.facts.get("dist") == v.facts.get("rank", 0) - 1:
        facts["dist"] = rank - 1
        if "content" in v.facts:
            facts["content"] = v.facts["content"]
    return facts


def _dist_role(v: Value) -> Optional[str]:
    axes, dist = v.facts.get("axes"), v.facts.get("dist")
    if axes and dist is not None and dist < len(axes):
        return axes[dist]
    return None


# ---------------------------------------------------------------- tables

def _softmax(content: str, saved: str) -> Callable[[Operands, Value], Value]:
    def transfer(ops: Operands, x: Value) -> Value:
        rank = x.facts.get("rank")
        dim = ops.ints(1 if ops.receiver is None else 0, "dim")
        axis = norm_axis(dim, rank)
        facts = {"rank": rank, "axes": x.facts.get("axes"), "content": content, "saved": saved, "logp": True}
        if axis is not None:
            facts["dist"] = axis
        result = tensor_result(ops, **facts)
        if content != LOGPROBS or result.facts.get("grad") is None:
            return result
        return result.but(lp=(1, 0) if result.facts["grad"] == GRAPH else (0, 1))
    return transfer


def _token_nll(ops: Operands, x: Value) -> Value:
    """`cross_entropy(logits, targets, reduction="none")`: each target's negative log-prob under the logits,
    log-probs with their sign flipped (`-cross_entropy(...)` is them); a reduced loss is not per token."""
    reduction = keyword(ops.node, "reduction") if isinstance(ops.node, cst.Call) else None
    if reduction is None or literal_text(reduction.value) != "none" or x.facts.get("content") != LOGITS:
        return tensor_result(ops)
    rank = x.facts.get("rank")
    result = tensor_result(ops, rank=None if rank is None else rank - 1, logp=True)
    if result.facts.get("grad") is None:
        return result
    return result.but(lp=(-1, 0) if result.facts["grad"] == GRAPH else (0, -1))


def _elementwise(saved: Optional[str] = None, stat: Optional[str] = None) -> Callable[[Operands, Value], Value]:
    def transfer(ops: Operands, x: Value) -> Value:
        facts = kept(x)
        if stat is not None:
            facts = {**facts, "stat": stat}
        elif x.facts.get("stat") in (VAR,) and saved == "sqrt":
            facts = {**facts, "stat": STD}
        return tensor_result(ops, saved=saved, **facts)
    return transfer


def _cast(ops: Operands, x: Value) -> Value:
    """`.float()`, `.to(...)`, `.contiguous()`, `.clone()`: the same facts, a new object (except `to`)."""
    result = tensor_result(ops, **kept(x), stat=x.facts.get("stat"))
    return with_mask_facts(result, x)


def _detach(ops: Operands, x: Value) -> Value:
    result = tensor_result(ops, **kept(x), stat=x.facts.get("stat"))
    cut = ops.node if x.facts.get("grad") == GRAPH else x.facts.get("cut")
    return result.but(grad=DETACHED, cut=cut, why={"grad": (ops.node,)})


def _reduction(stat: Optional[str] = None, tuple_result: bool = False) -> Callable[[Operands, Value], Value]:
    def transfer(ops: Operands, x: Value) -> Value:
        position = 1 if ops.receiver is None else 0
        other = ops.arg(position, "other")
        dim = ops.ints(position, "dim")
        if tuple_result and other is not None and "dim" not in ops.kwargs and dim is None:
            if other.facts.get("type") == TENSOR:  # `torch.max(a, b)`: elementwise
                return tensor_result(ops, **broadcast(x, other))
            if other.facts.get("type") != NUMBER:  # a tensor or a dim: which one, and so the result, is unknown
                return with_sources(UNKNOWN, x.sources | other.sources)
        has_dim = dim is not None or ops.arg(position, "dim") is not None
        keepdim_value = ops.kwargs.get("keepdim")
        keepdim = bool(keepdim_value is not None and keepdim_value.facts.get("number"))
        facts = reduced(x, dim, keepdim, has_dim)
        if stat is not None:
            facts["stat"] = stat
        result = tensor_result(ops, **facts)
        if tuple_result and has_dim:  # `x.max(dim)` -> (values, indices)
            indices = tensor_result(ops, **{k: v for k, v in facts.items() if k != "stat"}, content=IDS).but(
                grad=NO_GRAD)
            return Value({"type": TUPLE, "items": ((0, result), (1, indices)), "sources": result.sources})
        return result
    return transfer


def _log_partition(ops: Operands, x: Value) -> Value:
    """`logits.logsumexp(dim)` over the distribution axis of a model's logits: the log-normaliser of the softmax at
    the logits' temperature (`partition`); subtracted from logits (gathered or not) it makes their log-probs, a
    `log_softmax` written out."""
    result = _reduction()(ops, x)
    position = 1 if ops.receiver is None else 0
    axis = norm_axis(ops.ints(position, "dim"), x.facts.get("rank"))
    if x.facts.get("content") == LOGITS and "temperature" in x.facts and axis is not None and \
            axis == x.facts.get("dist"):
        result = result.but(partition=x.facts["temperature"], why={"partition": (ops.node,)})
    return result


def _gather(ops: Operands, x: Value) -> Value:
    """`x.gather(dim, index)`: the index's shape on `dim`; gathering log-probs along their distribution axis
    gives per-token log-probs. The result's gradient is the source's (an index has none)."""
    position = 1 if ops.receiver is None else 0
    dim = ops.ints(position, "dim")
    rank = x.facts.get("rank")
    axis = norm_axis(dim, rank)
    facts: Dict = {}
    if rank is not None:
        facts["rank"] = rank
        axes = x.facts.get("axes")
        if axes and axis is not None:
            facts["axes"] = axes[:axis] + (None,) + axes[axis + 1:]
    if x.facts.get("content") == LOGPROBS and axis is not None and axis == x.facts.get("dist"):
        facts["content"] = TOKEN_LOGPROBS
    source_only = Operands(None, [x], {}, ops.node, ops.grad_mode, ops.ints)
    return tensor_result(source_only, **facts)


def _squeeze(ops: Operands, x: Value) -> Value:
    position = 1 if ops.receiver is None else 0
    if ops.arg(position, "dim") is None:
        facts = {}  # which axes have size 1 is not known
    else:
        facts = removed_axis(x, ops.ints(position, "dim"))
        if x.facts.get("content") == TOKEN_LOGPROBS:
            facts["content"] = TOKEN_LOGPROBS
    return tensor_result(ops, **facts, stat=x.facts.get("stat"))


def _unsqueeze(ops: Operands, x: Value) -> Value:
    position = 1 if ops.receiver is None else 0
    return tensor_result(ops, **inserted_axis(x, ops.ints(position, "dim")))


def _transpose(ops: Operands, x: Value) -> Value:
    rank = x.facts.get("rank")
    position = 1 if ops.receiver is None else 0
    a, b = norm_axis(ops.ints(position, "dim0"), rank), norm_axis(ops.ints(position + 1, "dim1"), rank)
    if rank is None or a is None or b is None:
        return tensor_result(ops, rank=rank)
    order = list(range(rank))
    order[a], order[b] = order[b], order[a]
    return tensor_result(ops, **permuted(x, order))


def _permute(ops: Operands, x: Value) -> Value:
    count = len(ops.args) - (0 if ops.receiver is not None else 1)
    order = [ops.ints(i + (0 if ops.receiver is not None else 1), "") for i in range(count)]
    return tensor_result(ops, **permuted(x, order))


def _view(ops: Operands, x: Value) -> Value:
    sizes = ops.args if ops.receiver is not None else ops.args[1:]
    return tensor_result(ops, **reshaped(x, sizes))


def _flatten(ops: Operands, x: Value) -> Value:
    rank = x.facts.get("rank")
    position = 1 if ops.receiver is None else 0
    start = ops.ints(position, "start_dim")
    end = ops.ints(position + 1, "end_dim")
    start = 0 if start is None and ops.arg(position, "start_dim") is None else start
    end = -1 if end is None and ops.arg(position + 1, "end_dim") is None else end
    a, b = norm_axis(start, rank), norm_axis(end, rank)
    if rank is None or a is None or b is None or b < a:
        return tensor_result(ops)
    facts: Dict = {"rank": rank - (b - a)}
    axes = x.facts.get("axes")
    if axes:
        facts["axes"] = axes[:a] + (None,) + axes[b + 1:]
    dist = x.facts.get("dist")
    if dist is not None and (dist < a or dist > b):
        facts["dist"] = dist if dist < a else dist - (b - a)
        facts["content"] = x.facts.get("content")
    return tensor_result(ops, **facts)


def _masked(ops: Operands, x: Value) -> Value:
    """`masked_fill`, `where`-like ops that keep the shape of their first tensor."""
    return tensor_result(ops, **kept(x), stat=x.facts.get("stat"))


def _where(ops: Operands, x: Value) -> Value:
    a, b = ops.arg(1, "input"), ops.arg(2, "other")
    facts = broadcast(a, b)
    return tensor_result(Operands(None, [v for v in (a, b) if v is not None], {}, ops.node, ops.grad_mode, ops.ints),
                         **facts)


def _compare(ops: Operands, x: Value) -> Value:
    result = tensor_result(ops, **{k: v for k, v in kept(x).items() if k in ("rank", "axes")}, content=MASK)
    result = result.but(grad=NO_GRAD, why={"grad": (ops.node,)})
    name = _tail(ops.node.func)
    if name == "bool":
        return with_mask_facts(result, x)
    if name == "ne":
        return excluding_eos(result, x, ops.arg(1 if ops.receiver is None else 0, "other"), ops.node)
    return result


def excluding_eos(mask: Value, ids: Value, other: Optional[Value], node: cst.CSTNode) -> Value:
    """`mask`, made by `ids != other`: sampled ids compared unequal to the EOS id leave out the EOS the model
    sampled (`excludes_eos`, proved by the comparison). Ids cut to end one before the last (`seqs[:, n - 1:-1]`,
    each the token before a sampled one) leave out the positions after EOS, not EOS itself."""
    if ids.facts.get("sampled") and other is not None and other.facts.get("special") == EOS and \
            not _before_each(ids.facts.get("view")):
        return mask.but(excludes_eos=node, why={"excludes_eos": (node,)})
    return mask


def _before_each(view: Optional[cst.CSTNode]) -> bool:
    """A slice whose last axis ends at -1 (`seqs[:, start - 1:-1]`): the tokens that precede the next ones."""
    if not isinstance(view, cst.Subscript) or not isinstance(view.slice[-1].slice, cst.Slice):
        return False
    upper = view.slice[-1].slice.upper
    return upper is not None and int_literal(upper) == -1


def with_mask_facts(result: Value, mask: Optional[Value]) -> Value:
    """`result`, a mask made of `mask` with the same 0s (a cast, a slice, a product with another mask): it leaves
    out what `mask` leaves out."""
    if mask is None or mask.facts.get("excludes_eos") is None or result.facts.get("content") != MASK:
        return result
    return result.but(excludes_eos=mask.facts["excludes_eos"], why={"excludes_eos": mask.reason("excludes_eos")})


def _ids(ops: Operands, x: Value) -> Value:
    """`argmax`, `multinomial`, `topk` indices...: integer tensors, no gradient."""
    result = tensor_result(ops, content=IDS)
    return result.but(grad=NO_GRAD, why={"grad": (ops.node,)})


def _integer(ops: Operands, x: Value) -> Value:
    """`.long()` / `.int()`: a mask cast to integers is still a mask of the same shape; other tensors become ids."""
    if x.facts.get("content") != MASK:
        return _ids(ops, x)
    return with_mask_facts(tensor_result(ops, **kept(x)).but(grad=NO_GRAD, why={"grad": (ops.node,)}), x)


def _creation(ops: Operands, x: Optional[Value]) -> Value:
    """`torch.zeros(B, T)`, `torch.ones_like(x)`...: a new tensor without history (unless it asks for grad)."""
    name = _tail(ops.node.func)
    facts: Dict = {}
    if name.endswith("_like") and x is not None:
        facts = {k: v for k, v in kept(x).items() if k in ("rank", "axes")}
    elif name in ("zeros", "ones", "empty", "full", "rand", "randn") and ops.args:
        sizes = ops.args[:-1] if name == "full" else ops.args
        if len(sizes) == 1 and sizes[0].facts.get("type") in (TUPLE, SHAPE) and sizes[0].facts.get("items"):
            facts = {"rank": len(sizes[0].facts["items"])}
        elif all(s.facts.get("type") == NUMBER for s in sizes):
            facts = {"rank": len(sizes)}
    if name in ("zeros", "zeros_like", "ones", "ones_like"):
        facts["filled"] = 0 if name.startswith("zeros") else 1  # a mask once 0s and 1s are written into it
    if name in ("rand", "rand_like"):
        facts["noise"] = UNIFORM
    requires = ops.kwargs.get("requires_grad")
    grad = GRAPH if requires is not None and requires.facts.get("number") else NO_GRAD
    return Value({"type": TENSOR, "obj": ops.node, "grad": grad, **facts}, {"grad": (ops.node,)})


def written(container: Value, item: Value) -> Value:
    """A tensor after `container[...] = item`: a tensor of zeros or ones written with 0, 1, booleans or a
    mask is a mask (`m = torch.zeros_like(ids); m[:, p:] = 1`); a mask written with anything else is not."""
    binary = item.facts.get("content") == MASK or item.facts.get("type") == BOOL or \
        (item.facts.get("type") == NUMBER and item.facts.get("number") in (0, 1))
    if binary and (container.facts.get("filled") is not None or container.facts.get("content") == MASK):
        return container.but(content=MASK)
    if container.facts.get("content") == MASK or container.facts.get("filled") is not None:
        return container.but(content=None, filled=None)
    return container


def _tail(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


Transfer = Callable[[Operands, Value], Value]

# Methods of tensors and the `torch.` / `F.` functions of the same name (the tensor is the receiver, or the
# first argument).
OPS: Dict[str, Transfer] = {
    "softmax": _softmax(PROBS, "softmax"),
    "log_softmax": _softmax(LOGPROBS, "log_softmax"),
    "exp": _elementwise("exp"),
    "sigmoid": _elementwise("sigmoid"),
    "tanh": _elementwise("tanh"),
    "sqrt": _elementwise("sqrt"),
    "rsqrt": _elementwise("rsqrt"),
    "pow": _elementwise("pow"),
    "log": _elementwise(),
    "log1p": _elementwise(),
    "expm1": _elementwise("exp"),
    "logsigmoid": _elementwise(),
    "softplus": _elementwise(),
    "relu": _elementwise(),
    "abs": _elementwise(),
    "neg": _elementwise(),
    "square": _elementwise(),
    "clamp": _masked,
    "clip": _masked,
    "clamp_min": _masked,
    "clamp_max": _masked,
    "nan_to_num": _masked,
    "masked_fill": _masked,
    "float": _cast,
    "double": _cast,
    "half": _cast,
    "bfloat16": _cast,
    "to": _cast,
    "type": _cast,
    "contiguous": _cast,
    "clone": _cast,
    "cuda": _cast,
    "cpu": _cast,
    "detach": _detach,
    "sum": _reduction(),
    "nansum": _reduction(),
    "mean": _reduction(),
    "nanmean": _reduction(),
    "std": _reduction(STD),
    "var": _reduction(VAR),
    "norm": _reduction(NORM),
    "vector_norm": _reduction(NORM),
    "logsumexp": _log_partition,
    "prod": _reduction(),
    "amax": _reduction(),
    "amin": _reduction(),
    "max": _reduction(tuple_result=True),
    "min": _reduction(tuple_result=True),
    "gather": _gather,
    "take_along_dim": _gather,
    "squeeze": _squeeze,
    "unsqueeze": _unsqueeze,
    "transpose": _transpose,
    "permute": _permute,
    "view": _view,
    "reshape": _view,
    "flatten": _flatten,
    "eq": _compare,
    "ne": _compare,
    "gt": _compare,
    "lt": _compare,
    "ge": _compare,
    "le": _compare,
    "isnan": _compare,
    "isinf": _compare,
    "logical_not": _compare,
    "bool": _compare,
    "long": _integer,
    "int": _integer,
    "argmax": _ids,
    "argmin": _ids,
    "argsort": _ids,
    "multinomial": _ids,
    "nonzero": _ids,
}
def _autograd_grad(ops: Operands, x: Value) -> Value:
    """`torch.autograd.grad(...)`: plain gradient tensors, with a graph only under `create_graph=True`."""
    create = ops.kwargs.get("create_graph")
    graph = create is not None and bool(create.facts.get("number"))
    element = Value({"type": TENSOR, "grad": GRAPH if graph else NO_GRAD, "obj": ops.node}, {"grad": (ops.node,)})
    return Value({"type": TUPLE, "element": element})


# torch.* functions that are not tensor methods
FUNCTIONS: Dict[str, Transfer] = {
    "where": _where,
    "cross_entropy": _token_nll,
    "grad": _autograd_grad,
}
CREATION = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "tensor", "as_tensor",
                      "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "from_numpy",
                      "eye", "linspace"})
# In-place ops: they change their receiver's values (RL504).
INPLACE = frozenset({"masked_fill_", "mul_", "add_", "sub_", "div_", "zero_", "clamp_", "clamp_min_", "clamp_max_",
                     "clip_", "copy_", "fill_", "index_fill_", "index_add_", "index_copy_", "scatter_", "scatter_add_",
                     "masked_scatter_", "neg_", "exp_", "log_", "pow_", "sqrt_", "abs_", "sigmoid_", "tanh_", "relu_",
                     "nan_to_num_", "addcmul_", "addcdiv_", "lerp_", "floor_", "ceil_", "round_", "normal_",
                     "uniform_"})
# Ops whose backward needs their *output*: writing into it in place makes backward raise.
SAVES_OUTPUT = frozenset({"exp", "softmax", "log_softmax", "sigmoid", "tanh", "sqrt", "rsqrt", "pow"})
# Calls that turn a tensor into a Python number or array: its gradient stops there (RL503).
STOPPERS = frozenset({"item", "tolist", "numpy"})


# ---------------------------------------------------------------- sampling: tempered logits, noise, draws

# A number at most this small added to a tensor guards a log or a division (`noise + 1e-10`): the law is kept.
_GUARD = 1e-3
# Ops that keep what a tensor holds along the vocabulary: its temperature, its noise, its Gumbel-max draw.
_KEEPS_SAMPLING = frozenset({"float", "double", "half", "bfloat16", "to", "type", "contiguous", "clone", "cuda", "cpu",
                             "detach", "squeeze", "unsqueeze", "view", "reshape", "flatten", "masked_fill"})
SAMPLING_FACTS = ("temperature", "noise", "noise_scale", "gumbel_max")
# What a view, a cast, a slice or a row of a tensor keeps of it: what it holds along the vocabulary, and the forward
# whose own output it is (`forward_output`: the call of a model that returned it).
KEPT_BY_VIEWS = (*SAMPLING_FACTS, "forward_output")
_NEGATED = {EXPONENTIAL: NEG_EXPONENTIAL, NEG_EXPONENTIAL: EXPONENTIAL, GUMBEL: NEG_GUMBEL, NEG_GUMBEL: GUMBEL}
_LOGGED = {UNIFORM: NEG_EXPONENTIAL, EXPONENTIAL: NEG_GUMBEL}  # log(U) = -E, log(E) = -G
_ONE = Value({"type": NUMBER, "number": 1.0})


def raw_logits(node: cst.CSTNode) -> Tuple[Value, str]:
    """The `temperature` of a model's own logits: not divided by anything."""
    return Value({"type": NUMBER, "number": 1.0, "origin": "raw logits"}, {"number": (node,)}), LOG_SPACE


def _number(v: Optional[Value]) -> Optional[float]:
    return v.facts.get("number") if v is not None and v.facts.get("type") == NUMBER else None


def _times(a: Value, b: Value) -> Value:
    """The product of a temperature and a factor (NUMBER values), with where the one that is not 1 is written;
    a number whose value is not known when either is not."""
    x, y = _number(a), _number(b)
    if x is None or y is None:
        return Value({"type": NUMBER})
    if y == 1:
        return a
    if x == 1:
        return b
    return Value({"type": NUMBER, "number": x * y, "origin": a.facts.get("origin") or b.facts.get("origin") or "literal"},
                 {"number": a.reason("number") + b.reason("number")})


def _sampling(name: str, ops: Operands, x: Optional[Value], result: Value) -> Value:
    """What an op's result keeps of the distribution `x` holds over the vocabulary: a cast, a view, a top-k mask
    keep it; `softmax` / `log_softmax` over the last axis and `exp` / `log` change its form; `log` changes the law
    of noise (`-log(U)` is exponential, `-log(E)` Gumbel); a draw from uniform or exponential noise makes it."""
    if result.facts.get("type") != TENSOR or x is None:
        return result
    if name in _KEEPS_SAMPLING:
        return result.but(**{k: x.facts[k] for k in KEPT_BY_VIEWS if k in x.facts})
    tempered, noise = x.facts.get("temperature"), x.facts.get("noise")
    if name in ("softmax", "log_softmax") and tempered is not None and tempered[1] == LOG_SPACE:
        rank, dim = x.facts.get("rank"), ops.ints(1 if ops.receiver is None else 0, "dim")
        if dim == -1 or (rank is not None and norm_axis(dim, rank) == rank - 1):
            return result.but(temperature=(tempered[0], WEIGHTS if name == "softmax" else LOG_SPACE))
    if name == "exp" and tempered is not None and tempered[1] == LOG_SPACE:
        return result.but(temperature=(tempered[0], WEIGHTS))
    if name == "log" and tempered is not None and tempered[1] == WEIGHTS:
        return result.but(temperature=(tempered[0], LOG_SPACE))
    if name == "log" and noise in _LOGGED and "noise_scale" not in x.facts:
        return result.but(noise=_LOGGED[noise])
    return result


def sampling_arith(operator: cst.CSTNode, left: Value, right: Value, result: Value) -> Value:
    """The sampling facts of `left <op> right`: logits divided by a temperature (`logits / T`), shifted or guarded
    by a number; noise scaled (`s * G`, `E ** s`); and the Gumbel-max perturbations, whose argmax draws a token:
    logits at T plus Gumbel noise s * G (at T * s), weights at T divided by exponential noise E ** s (at T * s)."""
    add = isinstance(operator, (cst.Add, cst.AddAssign))
    subtract = isinstance(operator, (cst.Subtract, cst.SubtractAssign))
    divide = isinstance(operator, (cst.Divide, cst.DivideAssign))
    lt, rt = left.facts.get("type"), right.facts.get("type")
    if lt == TENSOR and rt == TENSOR:
        for a, b in ((left, right), (right, left)) if add else ((left, right),):
            tempered, noise = a.facts.get("temperature"), b.facts.get("noise")
            scale = b.facts.get("noise_scale", _ONE)
            if tempered is None:
                continue
            if tempered[1] == LOG_SPACE and ((add and noise == GUMBEL) or (subtract and noise == NEG_GUMBEL)) or \
                    tempered[1] == WEIGHTS and divide and noise == EXPONENTIAL:
                return result.but(gumbel_max=_times(tempered[0], scale))
        return result
    if (lt == TENSOR) == (rt == TENSOR) or NUMBER not in (lt, rt):
        return result
    tensor, number = (left, right) if lt == TENSOR else (right, left)
    tempered, noise, amount = tensor.facts.get("temperature"), tensor.facts.get("noise"), _number(number)
    if (add or subtract and tensor is left) and amount is not None and abs(amount) <= _GUARD:
        return result.but(**{k: tensor.facts[k] for k in SAMPLING_FACTS if k in tensor.facts})
    if (add or subtract) and tempered is not None and tempered[1] == LOG_SPACE:
        return result.but(temperature=tempered)  # a shift leaves the softmax as it was
    if divide and tensor is left and tempered is not None and tempered[1] == LOG_SPACE:
        return result.but(temperature=(_times(tempered[0], number), LOG_SPACE))
    if "noise_scale" in tensor.facts:
        return result
    if isinstance(operator, cst.Power) and tensor is left and noise == EXPONENTIAL:
        return result.but(noise=EXPONENTIAL, noise_scale=number)
    if isinstance(operator, (cst.Multiply, cst.MultiplyAssign)) and noise == GUMBEL:
        return result.but(noise=GUMBEL, noise_scale=number)
    return result


def draw(frame, name: str, ops: Operands, x: Optional[Value]) -> None:
    """A token drawn from tempered logits: `multinomial` of weights at T, the argmax of a Gumbel-max perturbation at
    T, and greedy decoding (the argmax of the logits over the vocabulary) at 0. The event's target is T (a NUMBER
    value, its number absent when not known)."""
    if x is None:
        return
    tempered = x.facts.get("temperature")
    if name == "multinomial" and tempered is not None and tempered[1] == WEIGHTS:
        frame.emit("draw", ops.node, tempered[0])
    elif name == "argmax" and x.facts.get("gumbel_max") is not None:
        frame.emit("draw", ops.node, x.facts["gumbel_max"])
    elif name == "argmax" and tempered is not None:
        rank, dim = x.facts.get("rank"), ops.ints(1 if ops.receiver is None else 0, "dim")
        if dim == -1 or (rank is not None and norm_axis(dim, rank) == rank - 1):
            frame.emit("draw", ops.node, Value({"type": NUMBER, "number": 0.0, "origin": "greedy"}, {"number": (ops.node,)}))


def apply(name: str, ops: Operands, x: Optional[Value]) -> Optional[Value]:
    """The result of op `name` on tensor `x` (the receiver, or the first argument), or None when unknown."""
    transfer = OPS.get(name) or FUNCTIONS.get(name)
    if transfer is None:
        if name in CREATION:
            return _creation(ops, x)
        return None
    result = _sampling(name, ops, x, transfer(ops, x if x is not None else UNKNOWN))
    if x is None or x.facts.get("lp") is None or result.facts.get("type") != TENSOR:
        return result
    if name in LINEAR:
        summed = _over_time(ops, x) if name == "sum" else x.facts.get("lp_seq") and name not in ("mean", "nanmean")
        return sequence(settle(result, x.facts["lp"], x.facts.get("lp_at"), _some(x)), summed)
    if name in ("exp", "expm1") and balanced(x.facts["lp"]) and x.facts.get("lp_at") is not None:
        return result.but(lp_exp=x.facts["lp_at"], lp_seq_exp=x.facts["lp_at"] if x.facts.get("lp_seq") else None)
    return result


def int_reader(node: cst.Call) -> Callable[[int, str], Optional[int]]:
    """(position, keyword) -> the int literal written there (positions count the call's own arguments)."""
    def read(position: int, keyword: str) -> Optional[int]:
        for arg in node.args:
            if keyword and arg.keyword is not None and arg.keyword.value == keyword:
                return int_literal(arg.value)
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if position < len(positional):
            return int_literal(positional[position].value)
        return None
    return read


def int_literal(node: cst.CSTNode) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and \
            isinstance(node.expression, cst.Integer):
        return -int(node.expression.evaluated_value)
    return None


def shape_of(tensor: Value, node: cst.CSTNode) -> Value:
    """`x.shape` / `x.size()`: one number per axis, each remembering the axis's role."""
    rank = tensor.facts.get("rank")
    if rank is None:
        return value(type=SHAPE)
    axes = tensor.facts.get("axes") or (None,) * rank
    items = tuple((i, value((node,), type=NUMBER).but(axis_role=axes[i])) for i in range(rank))
    return value((node,), type=SHAPE).but(items=items)


def index_tensor(base: Value, node: cst.Subscript, is_number: Callable[[cst.CSTNode], bool]) -> Value:
    """`x[...]`: integers drop axes, slices keep them, `None` adds one, `...` stands for the axes not named;
    tensors and masks as indices (advanced indexing) leave the shape unknown. The result is a view of `x`."""
    rank = base.facts.get("rank")
    facts: Dict = {}
    if rank is not None:
        axes = list(base.facts.get("axes") or (None,) * rank)
        dist = base.facts.get("dist")
        elements = list(node.slice)

        def kind(element) -> str:
            if not isinstance(element.slice, cst.Index):
                return "slice"
            index = element.slice.value
            if isinstance(index, cst.Ellipsis):
                return "ellipsis"
            if isinstance(index, cst.Name) and index.value == "None":
                return "new"
            return "int" if is_number(index) else "advanced"

        kinds = [kind(e) for e in elements]
        named = sum(1 for k in kinds if k in ("slice", "int", "advanced"))
        out: List[Optional[str]] = []
        new_dist: Optional[int] = None
        dropped_dist = False
        axis = 0
        ok = "advanced" not in kinds and named <= rank

        def keep() -> None:
            nonlocal axis, new_dist
            if axis == dist:
                new_dist = len(out)
            out.append(axes[axis])
            axis += 1

        if ok:
            for k in kinds:
                if k == "ellipsis":
                    for _ in range(rank - named):
                        keep()
                elif k == "new":
                    out.append(None)
                elif k == "int":
                    dropped_dist = dropped_dist or axis == dist
                    axis += 1
                else:
                    keep()
            while axis < rank:
                keep()
            facts["rank"] = len(out)
            if any(out):
                facts["axes"] = tuple(out)
            if new_dist is not None:
                facts["dist"] = new_dist
            if "content" in base.facts and not dropped_dist:
                facts["content"] = base.facts["content"]
    result = Value({"type": TENSOR, "obj": base.facts.get("obj", node), "view": node, **facts},
                   {k: (node,) for k in facts})
    for fact in ("grad", "cut", "sources", "stat", "saved", "sampled", "excludes_eos", "logp", "forwards", "lp",
                 "lp_at", "lp_seq", "lp_some", *KEPT_BY_VIEWS):
        if fact in base.facts:
            result.facts[fact] = base.facts[fact]
            if fact in base.why:
                result.why[fact] = base.why[fact]
    return result


class Torch(Domain):
    def call(self, frame, qual, node, args, kwargs):
        if not qual.startswith("torch."):
            return None
        tail = qual.rsplit(".", 1)[-1]
        if tail in ("no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "autocast"):
            return UNKNOWN
        ops = Operands(None, args, kwargs, node, frame.mode, int_reader(node))
        first = args[0] if args else kwargs.get("input")
        result = apply(tail, ops, first)
        draw(frame, tail, ops, first)
        if result is not None:
            return result
        if tail in ("cat", "stack", "concat"):
            return _concat(tail, ops, args)
        if qual.startswith(("torch.nn.", "nn.")) and tail[:1].isupper() and not qual.startswith("torch.nn.functional"):
            return Value({"type": "model", "model": node, "layer": tail}, {"model": (node,)})  # a module of layers
        return tensor_result(ops) if tail[:1].islower() else None

    def method(self, frame, receiver, name, node, args, kwargs):
        if receiver.facts.get("type") == "output" and receiver.facts.get("arch") is None and name in OPS:
            receiver = _returned_tensor(receiver)
        if receiver.facts.get("type") != TENSOR:
            return None
        if name in INPLACE or name == "exponential_":
            frame.inplace(node, receiver, f".{name}()")
            if name == "exponential_" or name == "uniform_" and len(args) in (0, 2) and \
                    [_number(a) for a in args] in ([], [0, 1]):  # refilled with noise of that law
                return receiver.but(noise=EXPONENTIAL if name == "exponential_" else UNIFORM, noise_scale=None,
                                    temperature=None, gumbel_max=None)
            return receiver
        if name == "requires_grad_":  # a leaf that requires grad from here on (or no longer does)
            flag = args[0].facts.get("number") if args else 1.0
            if flag is None:
                return receiver.but(grad=None, cut=None)
            return receiver.but(grad=GRAPH if flag else NO_GRAD, cut=None, why={"grad": (node,)})
        if name in ("mul", "multiply", "div", "divide") and args:  # `a.mul(b)` is `a * b`
            operator = cst.Multiply() if name in ("mul", "multiply") else cst.Divide()
            return self.arith(frame, operator, receiver, args[0], node)
        if name == "size":
            dim = int_reader(node)(0, "dim")
            if dim is None and not args:
                return shape_of(receiver, node)
            rank, axes = receiver.facts.get("rank"), receiver.facts.get("axes")
            axis = norm_axis(dim, rank)
            role = axes[axis] if axes and axis is not None else None
            return value((node,), type=NUMBER).but(axis_role=role)
        ops = Operands(receiver, args, kwargs, node, frame.mode, int_reader(node))
        result = apply(name, ops, receiver)
        draw(frame, name, ops, receiver)
        return result if result is not None else tensor_result(ops)

    def attribute(self, frame, base, attr, node):
        if base.facts.get("type") != TENSOR:
            return None
        if attr == "shape":
            return shape_of(base, node)
        if attr == "data":
            return base.but(grad=DETACHED, why={"grad": (node,)})
        if attr in ("T", "mT"):
            return base.derived().but(obj=node)
        return None

    def subscript(self, frame, base, node):
        if base.facts.get("type") == "output" and base.facts.get("arch") is None and len(node.slice) > 1 and \
                any(isinstance(element.slice, cst.Slice) for element in node.slice):
            base = with_sources(_returned_tensor(base), base.sources)  # `critic(ids)[:, :-1]`: no tuple takes that
        if base.facts.get("type") != TENSOR:
            return None
        return index_tensor(base, node, frame.is_number)

    def arith(self, frame, operator, left, right, node):
        lt, rt = left.facts.get("type"), right.facts.get("type")
        if TENSOR not in (lt, rt):
            return None
        excluding = None
        if lt == TENSOR and rt == TENSOR:
            facts = broadcast(left, right)
            if isinstance(operator, (cst.Multiply, cst.BitAnd, cst.BitOr)) and \
                    left.facts.get("content") == right.facts.get("content") == MASK:
                facts["content"] = MASK  # `completion_mask * attention_mask`
                if not isinstance(operator, cst.BitOr):  # where either leaves a token out, so does the product
                    excluding = next((m for m in (left, right) if m.facts.get("excludes_eos") is not None), None)
        else:
            tensor, other = (left, right) if lt == TENSOR else (right, left)
            facts = {k: v for k, v in kept(tensor).items() if k != "dist" or other.facts.get("type") == NUMBER}
        stat = left.facts.get("stat") or right.facts.get("stat")
        if stat and isinstance(operator, (cst.Add, cst.Subtract, cst.AddAssign, cst.SubtractAssign)):
            facts = {**facts, "stat": stat}
        if not isinstance(operator, (cst.Multiply, cst.Divide, cst.MultiplyAssign, cst.DivideAssign)):
            facts.pop("dist", None)
            if facts.get("content") not in (MASK,):
                facts.pop("content", None)
        ops = Operands(None, [left, right], {}, node, frame.mode, lambda p, k: None)
        result = tensor_result(ops, **facts)
        if isinstance(operator, cst.Multiply) and any(v.facts.get("type") == NUMBER and v.facts.get("number") == 0
                                                     for v in (left, right)):
            return result.but(grad=NO_GRAD, cut=None, why={"grad": (node,)})  # a zero weight has zero gradient
        if isinstance(operator, (cst.Multiply, cst.Divide, cst.MultiplyAssign, cst.DivideAssign)):
            for mine, other in ((left, right), (right, left)):
                if other.facts.get("grad") == GRAPH:
                    frame.saved(mine, "mul" if isinstance(operator, (cst.Multiply, cst.MultiplyAssign)) else "div")
            advantage = _policy_gradient(left, right) if isinstance(operator, (cst.Multiply, cst.MultiplyAssign)) \
                else None
            if advantage is not None:
                frame.emit("policy_gradient", node, result, weight=advantage)
                result = result.but(sources=result.sources | {node})
            masked = eos_masked(left, right)
            if masked is not None and isinstance(operator, (cst.Multiply, cst.MultiplyAssign)):
                frame.emit("eos_masked", node, masked)
                result = result.but(sources=result.sources | {node})
            weight = _graph_weight(left, right)
            if weight is not None and isinstance(node, cst.BinaryOperation):
                factor = node.right if weight is right else node.left
                frame.emit("weighted", node, weight, factor=factor)
                result = result.but(sources=result.sources | {node})
        if isinstance(operator, cst.Power):
            result = result.but(saved="pow")
        result = with_mask_facts(result, excluding)
        return _linear_arith(operator, left, right, node, sampling_arith(operator, left, right, result))


def _returned_tensor(output: Value) -> Value:
    """The forward of a model of unknown class, used as a tensor: what it returned is one."""
    return Value({"type": TENSOR, **{k: output.facts[k] for k in ("grad", "cut", "forwards", "sources", "forward_output")
                                     if k in output.facts}}, {"grad": output.reason("grad")})


def _policy_gradient(left: Value, right: Value) -> Optional[Value]:
    """In a product of the policy's log-probs (or their ratio), not cut from the graph, and a per-sample weight
    without one that is not a mask (a policy-gradient term, `logps * advantages`): the weight."""
    for logps, weight in ((left, right), (right, left)):
        if logps.facts.get("grad") in (GRAPH, None) and logps.facts.get("cut") is None and logps.facts.get("logp") \
                and weight.facts.get("type") not in (NUMBER, BOOL) \
                and weight.facts.get("grad") != GRAPH and weight.facts.get("content") != MASK \
                and weight.facts.get("rank") != 0:
            return weight
    return None


def eos_masked(left: Value, right: Value) -> Optional[Value]:
    """In a product of per-token terms of the policy's log-probs (a per-token loss, not cut from the graph) with a
    mask that leaves out the sampled EOS, or in the terms such a mask selects (`terms[mask]`): that mask. The EOS
    gets no gradient from these terms."""
    for terms, mask in ((left, right), (right, left)):
        if mask.facts.get("excludes_eos") is not None and terms.facts.get("logp") and \
                terms.facts.get("grad") in (GRAPH, None) and terms.facts.get("cut") is None and \
                terms.facts.get("content") != MASK:
            return mask
    return None


def _graph_weight(left: Value, right: Value) -> Optional[Value]:
    """In a product of the policy's log-probs (or a ratio of them) with a weight that itself carries a graph
    from a model forward but no log-prob (a value prediction, a reward model's score): that weight."""
    for logps, weight in ((left, right), (right, left)):
        if logps.facts.get("grad") == GRAPH and logps.facts.get("logp") and weight.facts.get("grad") == GRAPH \
                and not weight.facts.get("logp") and weight.facts.get("forwards"):
            return weight
    return None


def _concat(name: str, ops: Operands, args: List[Value]) -> Value:
    parts = args[0] if args else UNKNOWN
    sampled = _padded_samples(parts)
    if sampled is not None:
        return sampled.but(obj=ops.node)
    element = parts.facts.get("element")
    if element is None:  # what the parts are is not known: nor is the result's gradient
        return with_sources(Value({"type": TENSOR, "obj": ops.node}), parts.sources)
    inputs = [element]
    facts: Dict = {}
    if element is not None and element.facts.get("rank") is not None:
        facts["rank"] = element.facts["rank"] + (1 if name == "stack" else 0)
    result = tensor_result(Operands(None, inputs, {}, ops.node, ops.grad_mode, ops.ints), **facts)
    result = settle(result, element.facts.get("lp"), element.facts.get("lp_at"), _some(element))
    if name == "stack" and "temperature" in element.facts:  # steps' logits stacked on a new axis: still at T
        result = result.but(temperature=element.facts["temperature"])
    if "partition" in element.facts:  # log-normalisers of rows computed one by one: still at their temperature
        result = result.but(partition=element.facts["partition"])
    if element.facts.get("content") == MASK:  # masks laid end to end: a mask, leaving out what each leaves out
        result = with_mask_facts(result.but(content=MASK), element)
    return with_sources(result, parts.sources)


def _padded_samples(parts: Value) -> Optional[Value]:
    """`torch.cat([sampled, torch.full(..., pad)])`: sampled ids and new tensors (padding) laid end to end are
    still the sampled ids, with their EOS where the model stopped."""
    items = [item for _, item in parts.facts.get("items") or ()]
    samples = [item for item in items if item.facts.get("sampled")]
    if not samples or any(not item.facts.get("sampled") and not _new(item) for item in items):
        return None
    return with_sources(samples[0].derived(), parts.sources)


def _new(tensor: Value) -> bool:
    """A tensor made by a creation op (`torch.full`, `zeros`), of nothing the code computed."""
    obj = tensor.facts.get("obj")
    return tensor.facts.get("type") == TENSOR and isinstance(obj, cst.Call) and _tail(obj.func) in CREATION and \
        tensor.facts.get("grad") == NO_GRAD and "content" not in tensor.facts


TORCH = Torch()
