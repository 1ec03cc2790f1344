"""Abstract values of the fact engine: what the code proves about a value, each fact with its provenance.

A `Value` holds facts, each one *known* because of what the code does (the nodes in `why`); a fact
that is absent is *unknown*. Nothing here comes from a name: a tensor is `[B, T, V]` because it is
the `.logits` of a causal language model's forward, carries gradient because a trainable model's
forward ran with gradient enabled, is completion text because it was decoded from sampled ids.

Facts (absent = unknown):
- `type`: what the object is: TENSOR, MODEL, OUTPUT (a model's forward output), TEXT, TEXTS (a list of
  strings), NUMBER, BOOL, NONE, DICT, LIST, TUPLE, TOKENIZER, OPTIMIZER, PARAMS (`m.parameters()`),
  REF (a module or an imported name: `qual` is its dotted name), FUNCTION, CLASS, INSTANCE, SHAPE, TRAINER
  (a transformers / TRL trainer object: `rllint.analysis.domains.trainers`).
- tensors: `rank`; `axes`, the role of each axis (`BATCH`, `TIME`, `VOCAB`, or None); `dist`, the axis
  over which the tensor is a (log-)distribution (from `softmax` / `log_softmax`); `content`
  (LOGITS, LOGPROBS, PROBS, TOKEN_LOGPROBS, IDS, MASK, NLL).
- `grad`: GRAPH (records autograd history), NO_GRAD (never had any) or DETACHED (cut from it); `cut`: the
  node where a model's graph was cut on this value's way (a forward under no_grad, a `.detach()`, a call
  run under no_grad), when no operand carries a graph.
- `forwards`: on a tensor that carries a graph, the model forwards it came from, and the calls of project
  functions it came back through: each call is one run of the helper (the `via` of its events), so a helper
  called twice tells which run's graph reaches a loss.
- `saved`: the op that saved this tensor for its backward (`exp`, `softmax`, an operand of `mul`...).
- `stat`: a statistic of a batch: STD, VAR, NORM (an epsilon added to it guards a denominator).
- `text`: COMPLETION (decoded from sampled ids, or a scoring function's completion), PROMPT, GOLD.
- `rendered`: GENERATION_PROMPT on text a chat template rendered with `add_generation_prompt=True` (it ends in
  the assistant header the model continues); only that same text has it, not text made from it.
- `number`: the number, and `origin`, how it got here ("literal", "default of parameter `lr`"...); `typed`, on a
  BOOL whose truth follows from the kinds of values (`isinstance(model, dict)`), which hold for every caller.
- configuration (`rllint.analysis.domains.config`): `fields`, the arguments a dataclass instance was built
  with (field -> Value); `literal`, the text of a string setting; `fields_set`, attributes were set by a name
  the code does not write (`setattr(cfg, k, v)`): a field not in `fields` no longer holds its default (a join
  keeps it when either path has it); `settings`, on a dict read from settings files, (those files, the dotted
  key of the mapping it is: "" for the whole file, "lora." under `lora`).
- models: `model` (the node that built the object, its identity), `arch` (CAUSAL_LM, SEQ_CLS, VALUE_HEAD),
  `library` ("mlx" for an mlx_lm model, whose call returns its logits), `weightless` (an `nn.Module` of the
  project that holds no parameters: a loss written as a module); for an
  object from out of sight, known by its `place`, handed to another module: `trains` (an optimizer of the caller's
  file receives its parameters) or `outside` (it comes from outside the project: nothing there freezes it).
- containers: `items` (dict: key -> Value; tuple/list: position -> Value) and `element` (what any element
  of a list or a tensor's first axis holds).
- `lp` / `lp_at`: a linear combination of log-probs, (graph, fixed) signed counts, on some path
  (`rllint.analysis.domains.torch_ops.settle`); where a difference of the two kinds was written; `lp_seq`: summed
  over the time axis (a sequence's log-prob); `lp_seq_exp`: `exp` of such a difference (a whole-sequence ratio);
  `lp_some`: they are those of one path, which carries the graph they count whatever the joined `grad` says.
- token ids: `special`, on the id of a special token read from a tokenizer or a model's `config` /
  `generation_config` (`token_ids`: an object whose `eos_token_id` is the model's): EOS for `eos_token_id`;
  `excludes_eos`, on a mask of sampled ids compared unequal to the EOS id (`ids != tok.eos_token_id`, alone or
  and-ed with other masks): the comparison, a mask that leaves out the EOS the model sampled.
- `filled`: a new tensor of zeros (0) or ones (1), a mask once only 0s and 1s are written into it.
- sampling (`rllint.analysis.domains.torch_ops`): `temperature`, on logits and what keeps their distribution
  over the vocabulary (a slice, a cast, a top-k mask, `softmax`, `exp`): (T, form), T the NUMBER value the raw
  logits were divided by (1 for a model's `.logits`), form LOG_SPACE (`l / T` up to a constant per row: logits,
  log-probs) or WEIGHTS (`exp(l / T)` up to a positive factor per row: probabilities, unnormalised weights),
  T's `drawn` the sampler call whose own temperature it is (`generate`'s processed `scores`), whatever its number;
  `noise`, independent noise of a known law (UNIFORM `rand`, EXPONENTIAL `-log(U)`, GUMBEL `-log(E)`, and the
  negatives `log(U)`, `log(E)`) with `noise_scale`, the NUMBER value s of `s * G` or `E ** s`; `gumbel_max`,
  the NUMBER value T for which the argmax of this tensor draws a token from `softmax(l / T)` (logits at T plus
  Gumbel noise, weights at T divided by exponential noise).
- minibatches (`rllint.analysis.minibatches`): `stride`, a number that grows with the passes of a loop; `samples`,
  a part of a batch that a loop takes on each pass and how many samples it holds; `batch_stat`, the mean or spread
  of all of such a part.
- `optional`: NUMBER on a value that is a number on some paths and None on others (a parameter one caller
  passes None): whatever arithmetic uses it (None would raise there), it is a number.
- distributed (`rllint.analysis.domains.distributed`): `gathered`, (the gather call, the local value it was given) on
  a value that lays every rank's values end to end along its first axis; `shared`, the gather a place's value was
  given to (this rank's share of it); `counts`, on a number, the value whose first axis it counts (`len(x)`,
  `x.size(0)`, `x.shape[0]`); `per_rank`, on one process's batch as a trainer framework hands it (and a number that
  is the per-device batch size); `rank_index` (the process index) and `main_process` (a test true on rank 0 only).
- `sources`: nodes of interest whose result flows into this value (`.item()` calls, string slices):
  a value that reaches `backward()` carries the stoppers that cut its gradient in its sources.
- `obj`: the node that made this tensor object (aliases and views share it).
- `function` / `cls` / `bound`: a function of the project, a class, or a bound method's receiver; `candidates`:
  the function values a value joined from several may be (`fn = f if x else g`, `table[name]`), or the instances
  of project classes (`loss_fn = PPOLoss() if ppo else GRPOLoss()`, what a factory of modules returns).
"""
from __future__ import annotations

from typing import Any, Dict, FrozenSet, Iterable, Optional, Tuple

import libcst as cst

# types
TENSOR, MODEL, OUTPUT, TEXT, TEXTS, NUMBER, BOOL, NONE = ("tensor", "model", "output", "text", "texts", "number",
                                                         "bool", "none")
DICT, LIST, TUPLE, TOKENIZER, OPTIMIZER, PARAMS, REF = "dict", "list", "tuple", "tokenizer", "optimizer", "params", "ref"
FUNCTION, CLASS, INSTANCE, SHAPE, TRAINER = "function", "class", "instance", "shape", "trainer"
# axis roles
BATCH, TIME, VOCAB = "batch", "time", "vocab"
# tensor contents
LOGITS, LOGPROBS, PROBS, TOKEN_LOGPROBS, IDS, MASK = "logits", "logprobs", "probs", "token_logprobs", "ids", "mask"
NLL = "nll"  # a causal LM's `.loss` given `labels`: their mean negative log-likelihood under the raw logits
# gradient
GRAPH, NO_GRAD, DETACHED = "graph", "no_grad", "detached"
# statistics
STD, VAR, NORM = "std", "var", "norm"
# text
COMPLETION, PROMPT, GOLD = "completion", "prompt", "gold"
GENERATION_PROMPT = "generation_prompt"  # `rendered`: a chat rendered to be continued by the assistant
# special tokens
EOS = "eos"
# laws of noise, and the forms of tempered logits
UNIFORM, EXPONENTIAL, GUMBEL, NEG_EXPONENTIAL, NEG_GUMBEL = "uniform", "exponential", "gumbel", "-exponential", \
    "-gumbel"
LOG_SPACE, WEIGHTS = "log", "weights"
# architectures
CAUSAL_LM, SEQ_CLS, VALUE_HEAD, SEQ2SEQ = "causal_lm", "seq_cls", "value_head", "seq2seq"
# the sides a tokenizer object pads and truncates on: "left", "right", or the checkpoint's own default (none set)
PADDING_SIDE, TRUNCATION_SIDE, DEFAULT_SIDE = "padding_side", "truncation_side", "default"
SIDES = (PADDING_SIDE, TRUNCATION_SIDE)

NO_SOURCES: FrozenSet[cst.CSTNode] = frozenset()

# Facts that describe one object (its identity, what it is) and do not survive arithmetic.
_IDENTITY = ("model", "arch", "weightless", "obj", "function", "cls", "bound", "qual", "items", "element", "origin", "fields",
             "trains", "candidates", "settings", "gathered", "shared", "per_rank", "counts")
MAX_CANDIDATES = 8  # functions (instances) a joined value may be, each run at a call; more: which one is unknown


class Value:
    """An abstract value: known facts (attributes) and their provenance (`why`: fact -> nodes)."""

    __slots__ = ("facts", "why")

    def __init__(self, facts: Optional[Dict[str, Any]] = None, why: Optional[Dict[str, Tuple[cst.CSTNode, ...]]] = None
                 ) -> None:
        self.facts: Dict[str, Any] = facts or {}
        self.why: Dict[str, Tuple[cst.CSTNode, ...]] = why or {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self.facts.get(name)

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.facts.items() if not isinstance(v, (cst.CSTNode, frozenset))}
        return f"Value({shown})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Value) and self.facts == other.facts

    def __hash__(self) -> int:
        return hash(signature(self))

    @property
    def sources(self) -> FrozenSet[cst.CSTNode]:
        return self.facts.get("sources", NO_SOURCES)

    def known(self, fact: str) -> bool:
        return fact in self.facts

    def reason(self, fact: str) -> Tuple[cst.CSTNode, ...]:
        """The nodes that proved `fact`."""
        return self.why.get(fact, ())

    def but(self, why: Optional[Dict[str, Tuple[cst.CSTNode, ...]]] = None, **changes: Any) -> "Value":
        """A copy with `changes` (None removes a fact) and their provenance."""
        facts = dict(self.facts)
        reasons = dict(self.why)
        for key, value in changes.items():
            if value is None:
                facts.pop(key, None)
                reasons.pop(key, None)
            else:
                facts[key] = value
        if why:
            reasons.update(why)
        return Value(facts, reasons)

    def derived(self) -> "Value":
        """What a computation from this value keeps: everything but the object's identity."""
        return Value({k: v for k, v in self.facts.items() if k not in _IDENTITY},
                     {k: v for k, v in self.why.items() if k not in _IDENTITY})


UNKNOWN = Value()
# Kinds whose join with None is the kind.
_OPTIONAL = frozenset({TENSOR, FUNCTION, DICT, MODEL, TOKENIZER, INSTANCE, TRAINER})


def value(why: Iterable[cst.CSTNode] = (), **facts: Any) -> Value:
    """A value with `facts`, all proved by `why`."""
    nodes = tuple(why)
    facts = {k: v for k, v in facts.items() if v is not None}
    return Value(facts, {k: nodes for k in facts} if nodes else {})


def _merged(left: Tuple[cst.CSTNode, ...], right: Tuple[cst.CSTNode, ...]) -> Tuple[cst.CSTNode, ...]:
    """`left` and then the nodes of `right` it lacks; a set, as a value joined in a loop gathers long provenance
    and testing each node against a tuple made joins quadratic (nodes compare by identity either way)."""
    if not right:
        return left
    seen = set(left)
    return left + tuple(n for n in right if n not in seen)


def join(a: Optional[Value], b: Optional[Value]) -> Value:
    """What holds on both paths: facts that agree (provenance of both), sources of either."""
    if a is None or a is b:
        return b if b is not None else UNKNOWN
    if b is None:
        return a
    kinds = (a.facts.get("type"), b.facts.get("type"))
    if (kinds[0] == NONE) != (kinds[1] == NONE) and any(kind in _OPTIONAL for kind in kinds):
        # an optional tensor (`ref = model(x) if beta else None`), function (`fn = table.get(name)`), mapping
        # (`lora = cfg["lora"] if cfg["use_lora"] else None`), model, tokenizer, trainer or instance of a project
        # class (`self.model = None`, `self.algo = None` in `__init__`, built by `setup()`): wherever it is used as
        # one, it is the other path's
        held, other = (a, b) if kinds[1] == NONE else (b, a)
        return with_sources(held, other.sources)
    if _empty_list(a) or _empty_list(b):  # no element: the other path's elements are all there can be
        empty, full = (a, b) if _empty_list(a) else (b, a)
        if full.facts.get("type") == "list" and "element" in full.facts:
            return with_sources(Value({"type": "list", "element": full.facts["element"]}), a.sources | b.sources)
    facts: Dict[str, Any] = {}
    why: Dict[str, Tuple[cst.CSTNode, ...]] = {}
    for key, left in a.facts.items():
        if key == "sources":
            continue
        right = b.facts.get(key, _ABSENT)
        if right is _ABSENT:
            continue
        if key == "items":
            facts[key] = _join_items(left, right)
            continue
        if key == "fields":
            facts[key] = _join_fields(left, right)
            continue
        if key == "element":
            facts[key] = join(left, right)
            continue
        if left == right:
            facts[key] = left
            reasons = _merged(a.why.get(key, ()), b.why.get(key, ()))
            if reasons:
                why[key] = reasons
    if ("fields" in a.facts) != ("fields" in b.facts) and facts.get("cls") is not None:  # the other at its defaults
        facts["fields"] = _join_fields(a.facts.get("fields") or (), b.facts.get("fields") or ())
    if a.facts.get("fields_set") or b.facts.get("fields_set"):  # on one path, any attribute may have been set
        facts["fields_set"] = True
    if "lp" not in facts and ("lp" in a.facts) != ("lp" in b.facts):  # a path that adds log-probs linearly
        holder = a if "lp" in a.facts else b
        facts.update((k, holder.facts[k]) for k in ("lp", "lp_at", "lp_seq") if k in holder.facts)
    if "lp" in facts and facts.get("grad") != GRAPH and any(
            side.facts.get("grad") == GRAPH or side.facts.get("lp_some") for side in (a, b) if "lp" in side.facts):
        facts["lp_some"] = True  # the log-probs' path carries the graph that the joined `grad` no longer says
    if facts.get("type") == FUNCTION and "function" not in facts or \
            facts.get("type") in (MODEL, INSTANCE) and "cls" not in facts:
        options = _options(a) + tuple(o for o in _options(b) if o not in _options(a))
        identity = "function" if facts["type"] == FUNCTION else "cls"
        if all(o.facts.get(identity) is not None for o in options) and len(options) <= MAX_CANDIDATES:
            facts["candidates"] = options  # one of these functions, or instances of these classes: a call runs each
    if facts.get("type") in _NAMED_BY and _NAMED_BY[facts["type"]] not in facts and "candidates" not in facts:
        del facts["type"]  # two different functions (classes, imported names): which one is unknown
    if "type" not in facts and all(_number_or_none(side) for side in (a, b)):
        facts["optional"] = NUMBER  # a number on some paths, None on others: arithmetic runs on the number
    sources = a.sources | b.sources
    if sources:
        facts["sources"] = sources
    return Value(facts, why)


def _number_or_none(v: Value) -> bool:
    return v.facts.get("type") in (NUMBER, NONE) or v.facts.get("optional") == NUMBER


def _options(v: Value) -> Tuple[Value, ...]:
    """The functions a function value may be: its candidates, or itself."""
    return v.facts.get("candidates") or (v,)


def _empty_list(v: Value) -> bool:
    return v.facts.get("type") == "list" and v.facts.get("items") == () and "element" not in v.facts


def join_all(values: Iterable[Value]) -> Value:
    result: Optional[Value] = None
    for item in values:
        result = item if result is None else join(result, item)
    return result if result is not None else UNKNOWN


def with_sources(v: Value, sources: FrozenSet[cst.CSTNode]) -> Value:
    if not sources or sources <= v.sources:
        return v
    return v.but(sources=v.sources | sources)


def signature(v: Value) -> Tuple:
    """A hashable summary of a value, for memoising what a function returns for given arguments."""
    parts = []
    for key in sorted(v.facts):
        item = v.facts[key]
        if key == "items":
            item = tuple((k, signature(x)) for k, x in item)
        elif key == "element":
            item = signature(item)
        elif key == "sources":
            item = frozenset(id(n) for n in item)
        elif isinstance(item, cst.CSTNode):
            item = id(item)
        elif key in ("function", "cls"):
            item = id(item)
        elif key == "bound":
            item = signature(item)
        elif key == "candidates":
            item = tuple(signature(option) for option in item)
        parts.append((key, item))
    return tuple(parts)


def item_of(v: Value, key: Any) -> Optional[Value]:
    """The element of a dict, tuple or list value at a constant key or position."""
    items = v.facts.get("items")
    if items is None:
        return None
    for k, x in items:
        if k == key:
            return x
    return None


def set_item(v: Value, key: Any, item: Value) -> Value:
    """The container after `v[key] = item` (a dict store, or a position of a list)."""
    items = tuple((k, x) for k, x in (v.facts.get("items") or ()) if k != key) + ((key, item),)
    return v.but(items=items)


def _join_items(left: Tuple, right: Tuple) -> Tuple:
    """Elements of both containers: joined where both have the key, else the one path's (the key may hold it)."""
    others = dict(right)
    merged = [(k, join(x, others[k]) if k in others else x) for k, x in left]
    seen = {k for k, _ in left}
    merged.extend((k, x) for k, x in right if k not in seen)
    return tuple(merged)


def _join_fields(left: Tuple, right: Tuple) -> Tuple:
    """The fields of one object on both paths: joined where both set them; one that a path leaves at its default
    holds the default there, which only the class knows: not known."""
    others = dict(right)
    merged = [(k, join(x, others[k]) if k in others else UNKNOWN) for k, x in left]
    seen = {k for k, _ in left}
    merged.extend((k, UNKNOWN) for k, _ in right if k not in seen)
    return tuple(merged)


_ABSENT = object()
# The fact that says which one a value of these types is.
_NAMED_BY = {"ref": "qual", "function": "function", "class": "cls"}
