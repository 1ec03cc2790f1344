"""Minibatches: the part of a batch each pass of a loop takes, how many samples it holds, and the statistics
taken over such a part (RL211).

A loop over `range(start, stop, step)` binds a number that grows by `step` on every pass; a slice whose two
bounds grow with the same loop (`x[i:i + mb]`, `x[i * mb:(i + 1) * mb]`) takes `mb` samples, another `mb` on
each pass; so does an index holding such a slice (`x[perm[i:i + mb]]`), a batch of a `DataLoader` (`batch_size`,
1 when not given), of a `BatchSampler`, and a chunk of `split(mb)`. Element-wise views and conversions of a part (`.to(device)`, `.float()`, `torch.tensor`)
are the same samples, and so are the items and attributes of a part that holds several tensors
(`batch["advantages"]`, `rollout.advantages`). The inputs TRL hands the `compute_loss` of a GRPO trainer subclass
are a part too: `per_device_train_batch_size` completions, another on each call (`Flow._framework_argument`).
Whether a count is known is the numbers domain's business:
literals, defaults, argparse, dataclass fields, YAML and launch flags (`rllint.analysis.domains.config`).

Facts (absent = unknown):
- `stride`: on a number that grows with the passes of a loop, (loop, scale, offset): `scale * k + offset` on
  pass k of `loop` (the `for` statement; None until a `for` binds it, as on the element of `range(...)`). `scale`
  is a float, or the `range` call whose step is not known (two numbers with the same one still differ by a known
  offset); `offset` is a NUMBER value, with the origin of its number.
- `samples`: on a value that holds part of a batch, another part on each pass of a loop: (count, loop), `count` a
  NUMBER value whose number is how many samples the part holds (at most: the last part may hold fewer).
- `batch_stat`: on the mean or the spread of all the elements of such a part (`x.mean()`, `torch.std(x)`, not
  along a dim: not a group's), (kind, samples), kind "mean" or "spread".

Events: `centred`, a part with its own mean subtracted (`x - x.mean()`, a library's whitening helper): its target
is the part, and the node is a source of the result, so a rule can follow the centred values to where they
weight the policy's log-probs.
"""
from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import libcst as cst

from rllint.analysis.syntax import walk
from rllint.analysis.facts import BOOL, FUNCTION, MASK, NUMBER, TEXT, TUPLE, Value, value, with_sources

# Methods and functions whose result holds the same samples as their first operand: conversions and views.
_SAME_SAMPLES = frozenset({"to", "float", "double", "half", "bfloat16", "cpu", "cuda", "detach", "clone",
                           "contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze", "type_as", "numpy"})
_CONVERSIONS = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy", "numpy.array", "numpy.asarray"})
_MEANS = frozenset({"mean", "nanmean"})
_SPREADS = frozenset({"std", "var"})
_REDUCERS = {"torch.mean": "mean", "torch.nanmean": "mean", "numpy.mean": "mean", "torch.std": "spread",
             "torch.var": "spread", "numpy.std": "spread", "numpy.var": "spread"}
# Library helpers that centre (and scale) all the elements they are given (their documented behaviour: the mean
# over every element where the mask is set is subtracted, unless `shift_mean=False`).
WHITENERS = frozenset({"trl.core.whiten", "trl.core.masked_whiten", "trl.trainer.utils.masked_whiten",
                       "verl.utils.torch_functional.masked_whiten", "openrlhf.models.utils.masked_normalize"})
_BATCH_SAMPLERS = frozenset({"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"})


class Part(NamedTuple):
    """The `samples` fact: how many samples a part of a batch holds, and the loop that takes another each pass."""

    count: Value
    loop: Optional[cst.CSTNode]

    @property
    def number(self) -> Optional[float]:
        return self.count.facts.get("number")

    def same(self, other: "Part") -> bool:
        return self.loop is other.loop and self.number is not None and self.number == other.number


def counter(call: cst.Call, args: List[Value]) -> Value:
    """What `range(...)` yields: a number that grows with the passes of the loop over it."""
    start = args[0] if len(args) >= 2 else value((call,), type=NUMBER, number=0.0, origin="literal")
    step = args[2] if len(args) == 3 else None
    if step is None:
        scale: Any = 1.0
    else:
        scale = step.facts.get("number") if step.facts.get("type") == NUMBER else None
        scale = call if scale is None else scale
    if start.facts.get("type") != NUMBER or start.facts.get("number") is None:
        return Value({})
    return Value({"element": Value({"type": NUMBER, "stride": (None, scale, start)})})


def on_pass(bound: Value, loop: cst.CSTNode) -> Value:
    """What a `for` statement binds on each pass: the numbers and parts it takes, now known to be its own."""
    changes: Dict[str, Any] = {}
    stride = bound.facts.get("stride")
    if stride is not None and stride[0] is None:
        changes["stride"] = (loop,) + tuple(stride[1:])
    part = bound.facts.get("samples")
    if part is not None and part.loop is None:
        changes["samples"] = Part(part.count, loop)
    items = bound.facts.get("items")
    if bound.facts.get("type") == TUPLE and items:  # `enumerate(range(...))`, `zip(a.split(mb), b.split(mb))`
        passed = tuple((key, on_pass(item, loop)) for key, item in items)
        if any(new is not old for (_, new), (_, old) in zip(passed, items)):
            changes["items"] = passed
    return bound.but(**changes) if changes else bound


def arith(operator: cst.CSTNode, left: Value, right: Value, node: cst.CSTNode, result: Value,
          compute) -> Tuple[Value, Optional[Value]]:
    """The result of `left <op> right` with what this module knows of it, and the part it centres (None)."""
    stride = _stride(operator, left, right, node, compute)
    if stride is not None:
        return result.but(stride=stride), None
    if isinstance(operator, (cst.Subtract, cst.SubtractAssign)):
        part, stat = left.facts.get("samples"), right.facts.get("batch_stat")
        if part is not None and stat is not None and stat[0] == "mean" and part.same(stat[1]):
            return result.but(sources=result.sources | {node}), left
    return result, None


def _stride(operator: cst.CSTNode, left: Value, right: Value, node: cst.CSTNode, compute) -> Optional[Tuple]:
    """The stride of a number computed from one that grows with a loop: plus or minus a known number (or another
    of the same loop and scale, minus), or times a known number."""
    mine, other = left.facts.get("stride"), right.facts.get("stride")
    if mine is None and other is None:
        return None
    if isinstance(operator, (cst.Add, cst.AddAssign, cst.Subtract, cst.SubtractAssign)):
        if mine is not None and other is None and _known(right):
            return mine[0], mine[1], _combined(operator, mine[2], right, node, compute)
        if other is not None and mine is None and _known(left) and isinstance(operator, (cst.Add, cst.AddAssign)):
            return other[0], other[1], _combined(operator, other[2], left, node, compute)
        return None
    if isinstance(operator, (cst.Multiply, cst.MultiplyAssign)):
        grows, factor = (mine, right) if mine is not None else (other, left)
        if (mine is None) == (other is None) or not _known(factor) or not isinstance(grows[1], float):
            return None
        times = cst.Multiply()
        return grows[0], grows[1] * factor.facts["number"], _combined(times, grows[2], factor, node, compute)
    return None


def _known(number: Value) -> bool:
    return number.facts.get("type") == NUMBER and number.facts.get("number") is not None and \
        "stride" not in number.facts


def _combined(operator: cst.CSTNode, a: Value, b: Value, node: cst.CSTNode, compute) -> Value:
    """`a <op> b` of two known numbers, with the origin that is not a literal (where a setting is written)."""
    number = compute(operator, a.facts["number"], b.facts["number"])
    literal = [v for v in (a, b) if v.facts.get("origin") in (None, "literal")]
    named = [v for v in (b, a) if v not in literal]
    origin = named[0].facts.get("origin") if named else "literal"
    why = named[0].reason("number") if named else (node,)
    return Value({"type": NUMBER, "number": number, "origin": origin}, {"number": why})


def least(args: List[Value]) -> Optional[Value]:
    """`min(i + mb, n)`: at most the number that grows with the loop, which bounds the part a slice takes (None:
    no argument, or several, grow with a loop)."""
    grows = [a for a in args if a.facts.get("stride") is not None]
    if len(grows) != 1 or any(a.facts.get("type") not in (NUMBER, None) for a in args):
        return None
    return Value({"type": NUMBER, "stride": grows[0].facts["stride"]})


def sliced(node: cst.Subscript, bounds: Dict[int, Tuple[Optional[Value], Optional[Value]]],
           indexes: Dict[int, Value], base: Value, result: Value) -> Value:
    """`x[lo:hi]` whose bounds grow with the same loop, `x[idx]` of an index that holds a part: a part of `x`; an
    item (`batch["adv"]`) of a part: the same samples. A row picked by the loop's number (`x[i]`) is not counted:
    what one row holds (a sequence's tokens, a prompt's group of completions) is not known."""
    part = base.facts.get("samples") if _holds_parts(base, result) else None
    if node.slice:
        if 0 in bounds:
            lower, upper = bounds[0]
            part = _width(lower, upper) or part
        elif 0 in indexes:
            index = indexes[0]
            if index.facts.get("samples") is not None and index.facts.get("content") != MASK and \
                    index.facts.get("type") != BOOL:
                part = index.facts["samples"]
    if part is None or result.facts.get("samples") == part:
        return result
    return result.but(samples=part)


def _width(lower: Optional[Value], upper: Optional[Value]) -> Optional[Part]:
    if lower is None or upper is None:
        return None
    low, high = lower.facts.get("stride"), upper.facts.get("stride")
    if low is None or high is None or low[0] is not high[0] or low[1] != high[1]:
        return None
    width = high[2].facts["number"] - low[2].facts["number"]
    if width <= 0:
        return None
    source = high[2] if high[2].facts.get("origin") not in (None, "literal") else low[2]
    count = Value({"type": NUMBER, "number": width, "origin": source.facts.get("origin", "literal")},
                  {"number": source.reason("number")})
    return Part(count, low[0])


def _holds_parts(base: Value, result: Value) -> bool:
    """An item or attribute of a part is the same samples, unless it is a setting or a method (a number, text)."""
    return result.facts.get("type") not in (NUMBER, BOOL, TEXT, FUNCTION)


def read(base: Value, result: Value) -> Value:
    """`part.advantages`, `adv, ids = part`: an attribute or item of a part that holds several tensors holds the
    same samples."""
    part = base.facts.get("samples")
    if part is None or "samples" in result.facts or not _holds_parts(base, result) or "bound" in result.facts:
        return result
    return result.but(samples=part)


def called(qual: Optional[str], name: str, node: cst.Call, receiver: Optional[Value], args: List[Value],
           kwargs: Dict[str, Value], result: Value) -> Tuple[Value, Optional[Value]]:
    """A call's result with what this module knows of it, and the part a whitening helper centres (None)."""
    if qual in WHITENERS and args and args[0].facts.get("samples") is not None:
        shift = kwargs.get("shift_mean")
        if shift is None or shift.facts.get("number") != 0.0:
            return with_sources(result, frozenset({node})), args[0]
    if qual is not None and qual.startswith("torch.utils.data.") and qual.rsplit(".", 1)[-1] == "DataLoader":
        return _loader(node, kwargs, result), None
    if qual in _BATCH_SAMPLERS:
        size = kwargs.get("batch_size") or (args[1] if len(args) > 1 else None)
        if size is not None and size.facts.get("number") is not None:
            return Value({"element": Value({"samples": Part(size, None)})}), None
        return result, None
    method = isinstance(node.func, cst.Attribute) and qual is None
    operand = receiver if method else (args[0] if args and qual is not None else None)
    extra = args if method else args[1:]
    if (qual == "torch.split" or method and name == "split") and len(extra) == 1 and not kwargs and \
            _known(extra[0]) and (operand is None or operand.facts.get("type") not in (TEXT, NUMBER)):
        chunk = result.facts.get("element") or Value({})
        return result.but(element=chunk.but(samples=Part(extra[0], None))), None
    part = operand.facts.get("samples") if operand is not None else None
    if part is None:
        return result, None
    tail = name if method else (qual or "").rsplit(".", 1)[-1]
    if (method and name in _SAME_SAMPLES) or qual in _CONVERSIONS:
        return (result if "samples" in result.facts else result.but(samples=part)), None
    if not extra and not any(k in kwargs for k in ("dim", "axis")):
        kind = _REDUCERS.get(qual or "") if not method else "mean" if tail in _MEANS else \
            "spread" if tail in _SPREADS else None
        if kind is not None:
            return result.but(batch_stat=(kind, part)), None
    return result, None


def _loader(node: cst.Call, kwargs: Dict[str, Value], result: Value) -> Value:
    """A DataLoader yields `batch_size` samples a batch (1 when it is not given and no sampler makes batches)."""
    if "batch_sampler" in kwargs or any(a.star for a in node.args):
        return result
    positional = [a for a in node.args if a.keyword is None]
    size = kwargs.get("batch_size")
    if size is None and len(positional) >= 2:
        return result  # given by position: read as any argument
    if size is None:
        size = value((node,), type=NUMBER, number=1.0, origin="the default batch size of DataLoader")
    if size.facts.get("number") is None or result.facts.get("type") is None:
        return result
    batch = result.facts.get("element") or Value({})
    if batch.facts.get("type") in (NUMBER, TEXT):
        return result
    return result.but(element=batch.but(samples=Part(size, None)))


class Renormalised(NamedTuple):
    """A minibatch of the update centred on its own mean (RL211): `node` is where to report it (the centring, or
    the call of this file that runs it in a helper, which may whiten a whole batch elsewhere), `part` the
    minibatch."""

    node: cst.CSTNode
    centring: cst.CSTNode
    part: Part


def renormalised(flow) -> List[Renormalised]:
    """The parts of a batch of known size that are centred on their own mean inside a loop that takes a
    policy-gradient step on every pass, and then weight the policy's log-probs (advantages, not a critic's
    returns). A part of rows laid out in groups (`repeat_interleave`) may be a group: not one of these."""
    flow.analyze_all()
    weights = [event.extra["weight"].sources for event in flow.events("policy_gradient") if "weight" in event.extra]
    found: List[Renormalised] = []
    steps: Dict[cst.CSTNode, bool] = {}
    for event in flow.events("centred"):
        part: Part = event.target.facts["samples"]
        if part.number is None or part.loop is None or not any(event.node in sources for sources in weights):
            continue
        if part.loop not in steps:
            steps[part.loop] = flow.steps_in(part.loop)
        if not steps[part.loop] or flow.layout(event.target) is not None:
            continue
        # a helper run on each pass is fixed where the loop calls it; a loop run by a caller, where it centres
        called = event.via is not None and event.via in set(walk(part.loop))
        node = event.via if called or not event.local else event.node
        if node is not None and all(node is not f.node for f in found):
            found.append(Renormalised(node, event.node, part))
    return found
