"""Text roles: what a name or expression holds (a completion, a list of completions, generated ids,
a prompt), for the rules on reward parsing and decoding.

It builds on `text` (scopes, sources) and on `rewards` (which functions are reward functions, whose
text parameters are the completions they score); it is its own module so that `text`, which
`rewards` builds on, imports neither.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import libcst as cst

from rllint.analysis.rewards import RewardFunctions
from rllint.analysis.syntax import positional, walk
from rllint.analysis.text import (GEN_IDS, IDS, PROMPT, PROMPTS, STR_METHODS, TEXT, TEXTS, Scope, Scopes, TextSources,
                                  argument, call_tail, literal_text, unwrap, vocab_role)

# Parameters of a reward function that hold the completion(s) it scores, whatever their name says elsewhere.
_REWARD_TEXT_PARAMS = {**{n: TEXT for n in ("response", "resp", "text", "output", "generation", "prediction", "pred",
                                            "sample", "answer_text", "model_output", "solution", "completion_str")},
                       **{n: TEXTS for n in ("resps", "texts", "outputs", "samples", "predictions", "preds",
                                             "solution_strs", "generations")}}
_GENERATE = {"generate", "generate_sequences", "sample"}


class TextRoles:
    """What a name or expression holds (TEXT, TEXTS, GEN_IDS, IDS, PROMPT, PROMPTS or None).

    Decode calls of generated ids (a decoded dataset row, label span or encoded prompt is no
    completion), generation outputs and reward-function parameters decide first; loops and
    comprehensions carry a list's role to its elements; names that the source binds to
    something else keep no role; unbound names (parameters, globals) fall back to vocabulary.
    """

    def __init__(self, file) -> None:
        self.file = file
        self.scopes: Scopes = file.fact(Scopes)
        self._names: Dict[Tuple[str, int], Optional[str]] = {}  # (name, scope) -> role, each worked out once
        self._helpers: Dict[int, Optional[str]] = {}  # function -> the parameter whose text it returns

    def role(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> Optional[str]:
        if depth > 12:
            return None
        if isinstance(expr, cst.Name):
            return self._name_role(expr.value, scope, depth)
        if isinstance(expr, cst.Call):
            return self._call_role(expr, scope, depth)
        if isinstance(expr, cst.Subscript):
            return self._subscript_role(expr, scope, depth)
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in ("sequences", "completion_ids", "response_ids", "output_ids"):
                return GEN_IDS
            if expr.attr.value in ("text", "content") and isinstance(expr.value, (cst.Name, cst.Subscript, cst.Attribute)):
                base = self.role(expr.value, scope, depth + 1)
                return TEXT if base in (TEXT, GEN_IDS) else None
            return vocab_role(expr.attr.value)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            element = self.role(expr.elt, scope, depth + 1)
            return {TEXT: TEXTS, PROMPT: PROMPTS}.get(element or "")
        return None

    def element(self, iterable: cst.BaseExpression, path: Tuple[int, ...], scope: Scope, depth: int) -> Optional[str]:
        """The role of one element (at `path` in the unpacked target) of iterating `iterable`."""
        if isinstance(iterable, cst.Call):
            tail = call_tail(iterable)
            if tail == "zip" and path:
                arg = positional(iterable, path[0])
                return None if arg is None else self.element(arg, path[1:], scope, depth + 1)
            if tail == "enumerate" and path:
                arg = positional(iterable, 0)
                if path[0] == 1 and arg is not None:
                    return self.element(arg, path[1:], scope, depth + 1)
                return None
            if tail in ("tolist", "cpu", "numpy", "detach") and isinstance(iterable.func, cst.Attribute):
                return self.element(iterable.func.value, path, scope, depth + 1)
        if path:
            return None
        role = self.role(iterable, scope, depth + 1)
        return {TEXTS: TEXT, PROMPTS: PROMPT, PROMPT: PROMPT, GEN_IDS: GEN_IDS, IDS: IDS}.get(role or "")

    def _name_role(self, name: str, scope: Scope, depth: int) -> Optional[str]:
        key = (name, id(scope))
        if key not in self._names:
            self._names[key] = None  # while it is worked out: a name defined through itself adds no role
            self._names[key] = self._bound_role(name, scope, depth)
        return self._names[key]

    def _bound_role(self, name: str, scope: Scope, depth: int) -> Optional[str]:
        if name in scope.assigned:
            roles = {self.role(v, scope, depth + 1) for v in scope.assigned[name]}
            if name in scope.iterated:
                roles |= {self.element(i, p, scope, depth) for i, p in scope.iterated[name]}
            if name in scope.params:  # `solution_str = solution_str[-300:]` keeps what the parameter is
                roles.add(self._parameter(name, scope))
            known = roles - {None}
            return known.pop() if len(known) == 1 else None
        if name in scope.iterated:
            roles = {self.element(i, p, scope, depth) for i, p in scope.iterated[name]} - {None}
            if len(roles) == 1:
                return roles.pop()
            return None if roles else self._unbound(name)
        if name in scope.unpacked:
            return None
        if name in scope.params:
            return self._parameter(name, scope)
        if scope.node is not self.file.module:
            return self._unbound(name)
        return None

    def _unbound(self, name: str) -> Optional[str]:
        return vocab_role(name)

    def _parameter(self, name: str, scope: Scope) -> Optional[str]:
        """A reward function's `response`, `text` or `output` parameter is the completion it scores."""
        if isinstance(scope.node, cst.FunctionDef) and name.lower() in _REWARD_TEXT_PARAMS \
                and self.file.fact(RewardFunctions).is_reward(scope.node):
            return _REWARD_TEXT_PARAMS[name.lower()]
        return vocab_role(name)

    def _call_role(self, call: cst.Call, scope: Scope, depth: int) -> Optional[str]:
        tail = call_tail(call)
        for helper in self.file.fact(TextSources).helpers(call):  # `body = strip_reasoning(completion)`
            param = self._passes_text(helper)
            arg = argument(call, helper, param) if param is not None else None
            if arg is not None and self.role(arg, scope, depth + 1) == TEXT:
                return TEXT
        if tail in ("decode", "batch_decode"):  # a completion is decoded from generated ids
            ids = call.args[0].value if call.args else None
            if ids is None or self.role(ids, scope, depth + 1) != GEN_IDS:
                return None
            return TEXT if tail == "decode" else TEXTS
        if tail in _GENERATE and isinstance(call.func, cst.Attribute):
            return GEN_IDS
        if tail in STR_METHODS and isinstance(call.func, cst.Attribute):
            return TEXT if self.role(call.func.value, scope, depth + 1) == TEXT else None
        if tail in ("list", "tuple") and call.args:
            return self.role(call.args[0].value, scope, depth + 1)
        if tail in ("to", "cpu", "tolist", "detach", "contiguous", "long") and isinstance(call.func, cst.Attribute):
            role = self.role(call.func.value, scope, depth + 1)
            return role if role in (GEN_IDS, IDS) else None
        return None

    def _passes_text(self, helper: cst.FunctionDef) -> Optional[str]:
        """The parameter whose text every return of `helper` gives back, or a piece of it (a split, a slice,
        a regex group, a stripped copy); returns of None or a literal do not count."""
        key = id(helper)
        if key not in self._helpers:
            self._helpers[key] = None
            inner = self.scopes.of(helper)
            found = {_carried_parameter(r.value, inner, 0) for r in inner.returns
                     if r.value is not None and not _constant_return(r.value)}
            self._helpers[key] = found.pop() if len(found) == 1 else None
        return self._helpers[key]

    def _subscript_role(self, sub: cst.Subscript, scope: Scope, depth: int) -> Optional[str]:
        if isinstance(sub.value, cst.Call) and call_tail(sub.value) in _PIECES and isinstance(sub.value.func, cst.Attribute):
            # `completion.split("</think>")[-1]`: a piece of the completion
            return TEXT if self.role(sub.value.func.value, scope, depth + 1) == TEXT else None
        base = self.role(sub.value, scope, depth + 1)
        keys = [e.slice for e in sub.slice]
        if len(keys) == 1 and isinstance(keys[0], cst.Index):
            key = literal_text(keys[0].value)
            if key == "content":  # conversational completions: completion[0]["content"]
                return TEXT if base in (TEXT, TEXTS) or self._is_completion_chain(sub.value, scope, depth) else None
            if key is not None:
                return None
            return {TEXTS: TEXT, PROMPTS: PROMPT, GEN_IDS: GEN_IDS, TEXT: None}.get(base or "")
        if base in (GEN_IDS, IDS, TEXT, TEXTS, PROMPTS):
            return base  # slices keep what the value is
        return None

    def _is_completion_chain(self, expr: cst.BaseExpression, scope: Scope, depth: int) -> bool:
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        return self.role(expr, scope, depth + 1) in (TEXT, TEXTS)


_PIECES = {"split", "rsplit", "partition", "rpartition"}


def _carried_parameter(expr: cst.BaseExpression, scope: Scope, depth: int) -> Optional[str]:
    """The parameter of `scope` whose text `expr` is, or a piece of (see `TextRoles._passes_text`)."""
    if depth > 8:
        return None
    expr = unwrap(expr)
    if isinstance(expr, cst.Subscript):
        return _carried_parameter(expr.value, scope, depth + 1)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        tail = call_tail(expr)
        if tail in _PIECES or tail == "group":
            return _carried_parameter(expr.func.value, scope, depth + 1)
        if tail in ("search", "match", "fullmatch"):
            text = positional(expr, 1 if isinstance(expr.func.value, cst.Name) and expr.func.value.value in (
                "re", "regex") else 0)
            return None if text is None else _carried_parameter(text, scope, depth + 1)
        return None
    if not isinstance(expr, cst.Name):
        return None
    name = expr.value
    if name in scope.iterated or name in scope.unpacked:
        return None
    # `text = text.strip()` keeps what `text` was: only the other bindings say where it comes from
    values = [v for v in scope.assigned.get(name, ()) if not any(
        isinstance(n, cst.Name) and n.value == name for n in walk(v))]
    found = {_carried_parameter(v, scope, depth + 1) for v in values}
    if name in scope.params:
        found.add(name)
    return found.pop() if len(found) == 1 else None


def _constant_return(expr: cst.BaseExpression) -> bool:
    """`return None`, `return ""`, `return "[invalid]"`: the answer when none is found."""
    return (isinstance(expr, cst.Name) and expr.value == "None") or literal_text(expr) is not None
