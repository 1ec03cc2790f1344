"""The text domain: completion text, prompts, and what string operations keep of them.

Text is a completion because it was decoded from sampled ids (`decode` / `batch_decode` of what
`generate` returned) or because a framework hands it to a scoring function as the completions
(`rllint.analysis.flow` binds those parameters); pieces of it (`split`, `strip`, slices) are still
completion text. A slice of completion text remembers itself in `sources`, so that a rule can tell
where the sliced text goes (a reward, a judge, training data, or only a log line).

Token ids a tokenizer makes from text remember the call that made them in `sources`: wherever they go
(a DataLoader's batches, a helper of another module, `generate`), a rule can tell which encoding (its
padding, its truncation) they come from.
"""
from __future__ import annotations

from rllint.analysis.domains.base import Domain
from rllint.analysis.facts import COMPLETION, LIST, TEXT, TEXTS, TOKENIZER, UNKNOWN, Value, value, with_sources

# String methods whose result is the same text, transformed.
_SAME_TEXT = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "replace", "casefold", "removeprefix",
                        "removesuffix", "title", "capitalize", "expandtabs"})
_PIECES = frozenset({"split", "rsplit", "splitlines", "partition", "rpartition"})
# Tokenizer methods that turn text (or a conversation) into ids.
_ENCODES = frozenset({"encode", "encode_plus", "batch_encode_plus", "apply_chat_template", "__call__"})


def texts(kind: str, text_kind: str, why) -> Value:
    return Value({"type": kind, "text": text_kind}, {"text": tuple(why)})


class Text(Domain):
    def method(self, frame, receiver, name, node, args, kwargs):
        kind = receiver.facts.get("type")
        if name in ("decode", "batch_decode") and args and (kind in (TOKENIZER, None)):
            ids = args[0]
            result_kind = TEXTS if name == "batch_decode" else TEXT
            if ids.facts.get("sampled"):
                return texts(result_kind, COMPLETION, ids.reason("sampled") + (node,))
            return value(type=result_kind)
        if kind == TOKENIZER and name in _ENCODES:
            tokenize = kwargs.get("tokenize")
            if name == "apply_chat_template" and tokenize is not None and tokenize.facts.get("number") != 1.0:
                return None  # `tokenize=False` renders text (ids are transformers' default)
            return _encoded(frame, node, args, kwargs)
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
        return _encoded(frame, node, args, kwargs)


def _encoded(frame, node, args, kwargs) -> Value:
    """The encoding a tokenizer call makes (ids, attention mask): known by the call (an `encode` event says it
    is one), what its text came from kept."""
    frame.emit("encode", node, UNKNOWN, "encode")
    given = frozenset().union(*(v.sources for v in list(args) + list(kwargs.values())))
    return with_sources(Value(), given | {node})


TEXT_DOMAIN = Text()
