"""The text domain: completion text, prompts, and what string operations keep of them.

Text is a completion because it was decoded from sampled ids (`decode` / `batch_decode` of what
`generate` returned) or because a framework hands it to a scoring function as the completions
(`rllint.analysis.flow` binds those parameters); pieces of it (`split`, `strip`, slices) are still
completion text. A slice of completion text remembers itself in `sources`, so that a rule can tell
where the sliced text goes (a reward, a judge, training data, or only a log line).

Text a chat template renders with `add_generation_prompt=True` is a generation prompt (`rendered`): the same
text wherever it goes (names, attributes, returns, list elements, `[prompt] * n`), not text made from it. An
`encode` event at each tokenizer call holds the text it encodes.

Token ids a tokenizer makes from text remember the call that made them in `sources`: wherever they go
(a DataLoader's batches, a helper of another module, `generate`), a rule can tell which encoding (its
padding, its truncation) they come from.

Text that lost the sampled EOS is known by the node that made it, in `sources`, and by a `detokenize`
event there (its target: the ids it was decoded from): a `decode` with `skip_special_tokens=True`, and the
`.text` of a vLLM completion, which leaves out the EOS it stopped at unless its sampling parameters keep
it (`include_stop_str_in_output=True` with `skip_special_tokens=False`). `Flow.detokenized` keeps those of
sampled ids; wherever the text goes (a return, an attribute, a list, a chat message, another method), its
sources still name them.
"""
from __future__ import annotations

from rllint.analysis.domains.base import Domain
from rllint.analysis.facts import (COMPLETION, DICT, GENERATION_PROMPT, IDS, LIST, TEXT, TEXTS, TOKENIZER, TUPLE,
                                   UNKNOWN, Value, value, with_sources)

# String methods whose result is the same text, transformed.
_SAME_TEXT = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "replace", "casefold", "removeprefix",
                        "removesuffix", "title", "capitalize", "expandtabs"})
_PIECES = frozenset({"split", "rsplit", "splitlines", "partition", "rpartition"})
# Tokenizer methods that turn text (or a conversation) into ids.
_ENCODES = frozenset({"encode", "encode_plus", "batch_encode_plus", "apply_chat_template", "__call__"})
# vLLM: the engine, its sampling parameters, and what its `generate` / `chat` return: a request output per
# prompt, whose `outputs` are its sampled completions.
_VLLM_ENGINES = frozenset({"vllm.LLM", "vllm.entrypoints.llm.LLM"})
# verl's worker group, whose `generate_sequences` samples the rollouts of the prompt ids it is given.
_VERL_WORKER_GROUPS = frozenset({"verl.single_controller.ray.RayWorkerGroup",
                                 "verl.single_controller.ray.base.RayWorkerGroup"})
_VLLM_PARAMS = frozenset({"vllm.SamplingParams", "vllm.sampling_params.SamplingParams"})
# SAMPLER: an engine that samples from the prompts (or prompt ids) its methods are given.
SAMPLER, SAMPLING, REQUEST, SAMPLE = "sampler", "sampling_params", "request_output", "completion_output"


def texts(kind: str, text_kind: str, why) -> Value:
    return Value({"type": kind, "text": text_kind}, {"text": tuple(why)})


class Text(Domain):
    def call(self, frame, qual, node, args, kwargs):
        if qual in _VLLM_ENGINES or qual in _VERL_WORKER_GROUPS:
            return value((node,), type=SAMPLER)
        if qual in _VLLM_PARAMS:
            return Value({"type": SAMPLING, **({"drops_eos": True} if _drops_eos(kwargs) else {})})
        return None

    def method(self, frame, receiver, name, node, args, kwargs):
        kind = receiver.facts.get("type")
        if kind == SAMPLER and name in ("generate", "chat"):
            return _requests(node, args, kwargs)
        if name in ("decode", "batch_decode") and args and (kind in (TOKENIZER, None)):
            ids = args[0]
            result_kind = TEXTS if name == "batch_decode" else TEXT
            skip = kwargs.get("skip_special_tokens")
            stripped = frozenset()
            if skip is not None and skip.facts.get("number") == 1.0:
                frame.emit("detokenize", node, ids, name)
                stripped = frozenset({node})
            if ids.facts.get("sampled"):
                return with_sources(texts(result_kind, COMPLETION, ids.reason("sampled") + (node,)), stripped)
            return with_sources(value(type=result_kind), stripped)
        if name == "apply_chat_template" and kind in (TOKENIZER, None):
            rendered = _rendered(node, args, kwargs)
            tokenize = kwargs.get("tokenize")
            if tokenize is not None and tokenize.facts.get("number") != 1.0:
                # `tokenize=False` renders text (ids are transformers' default); a setting not known: either
                return rendered if tokenize.facts.get("number") == 0.0 else None
            return _encoded(frame, node, rendered) if kind == TOKENIZER else None
        if kind == TOKENIZER and name in _ENCODES:
            return _encoded(frame, node, _given_text(args, kwargs))
        if kind != TEXT:
            return None
        text = receiver.facts.get("text")
        if name in _SAME_TEXT:
            facts = {"type": TEXT, **({"text": text} if text else {})}
            return with_sources(Value(facts, {"text": receiver.reason("text")} if text else {}), receiver.sources)
        if name in _PIECES:
            piece = Value({"type": TEXT, **({"text": text} if text else {})},
                          {"text": receiver.reason("text")} if text else {})
            return with_sources(Value({"type": LIST, "element": piece}), receiver.sources)
        return None

    def attribute(self, frame, base, attr, node):
        kind = base.facts.get("type")
        if kind == REQUEST and attr == "outputs":
            sample = Value({"type": SAMPLE, **({"drops_eos": True} if base.facts.get("drops_eos") else {})},
                           {"type": base.reason("type")})
            return with_sources(Value({"type": LIST, "element": sample}), base.sources)
        if kind != SAMPLE or attr != "text":
            return None
        completion = texts(TEXT, COMPLETION, base.reason("type") + (node,))
        if not base.facts.get("drops_eos"):
            return with_sources(completion, base.sources)
        drawn = Value({"content": IDS, "sampled": True}, {"sampled": base.reason("type")})
        frame.emit("detokenize", node, drawn, "text")
        return with_sources(completion, base.sources | {node})

    def subscript(self, frame, base, node):
        kind = base.facts.get("type")
        if kind != TEXT:
            return None
        text = base.facts.get("text")
        facts = {"type": TEXT, **({"text": text} if text else {})}
        result = Value(facts, {"text": base.reason("text")} if text else {})
        if frame.is_slice(node):
            return with_sources(result.but(sliced=node), base.sources | {node})
        return with_sources(result, base.sources)

    def arith(self, frame, operator, left, right, node):
        if TEXT not in (left.facts.get("type"), right.facts.get("type")):
            return None
        return with_sources(value(type=TEXT), left.sources | right.sources)


    def call_value(self, frame, callee, node, args, kwargs):
        if callee.facts.get("type") != TOKENIZER:
            return None
        return _encoded(frame, node, _given_text(args, kwargs))


def _drops_eos(settings) -> bool:
    """Whether vLLM's completions left out the EOS they stopped at, by these sampling settings: it keeps it only
    with `include_stop_str_in_output=True` and `skip_special_tokens=False` (True by default)."""
    include, skip = settings.get("include_stop_str_in_output"), settings.get("skip_special_tokens")
    return include is None or include.facts.get("number") == 0.0 or (
        skip is not None and skip.facts.get("number") == 1.0)


def _requests(node, args, kwargs) -> Value:
    """What a vLLM engine's `generate(prompts, sampling_params)` returns: one request output per prompt, whose
    completions lost their EOS when the parameters are known to drop it (none given: vLLM's defaults)."""
    params = kwargs.get("sampling_params") or (args[1] if len(args) > 1 else None)
    if params is None:
        drops = not any(arg.star for arg in node.args)  # a `**mapping` may hand it parameters
    else:
        drops = params.facts.get("type") == SAMPLING and bool(params.facts.get("drops_eos"))
    request = Value({"type": REQUEST, **({"drops_eos": True} if drops else {})}, {"type": (node,)})
    return Value({"type": LIST, "element": request})


def _encoded(frame, node, text: Value) -> Value:
    """The encoding a tokenizer call makes (ids, attention mask) of `text`: known by the call (an `encode` event,
    whose target is that text, says it is one); what its arguments came from is kept by the interpreter."""
    frame.emit("encode", node, text, "encode")
    return with_sources(Value(), frozenset({node}))


def _given_text(args, kwargs) -> Value:
    """The text (or texts) a tokenizer call encodes: its first argument or `text=`."""
    return args[0] if args else kwargs.get("text", UNKNOWN)


def _rendered(node, args, kwargs) -> Value:
    """The text `apply_chat_template` renders of a conversation (a list of messages) or of a batch of them (a list
    of texts): a generation prompt when `add_generation_prompt=True`. Whether one or several, when the conversation's
    shape is not known: only the fact, on a value of no known type."""
    generation = kwargs.get("add_generation_prompt")
    facts = {"rendered": GENERATION_PROMPT} if generation is not None and generation.facts.get("number") == 1.0 \
        else {}
    why = {"rendered": (node,)} if facts else {}
    chat = args[0] if args else kwargs.get("conversation", UNKNOWN)
    message = chat.facts.get("element") if chat.facts.get("type") in (LIST, TUPLE) else None
    shape = message.facts.get("type") if message is not None else None
    if shape == DICT:
        return Value({"type": TEXT, **facts}, {"type": (node,), **why})
    if shape in (LIST, TUPLE):
        return Value({"type": LIST, "element": Value({"type": TEXT, **facts}, {"type": (node,), **why})})
    return Value(facts, why)


TEXT_DOMAIN = Text()
