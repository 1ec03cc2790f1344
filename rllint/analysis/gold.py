"""Gold answers: text that comes from a dataset's reference field, not from the model.

Answer extractors parse two kinds of text: the model's completion, where a missing marker is
a format failure, and the dataset's reference (`row["answer"]`, `example.pop("solution")`),
where the marker is the dataset's own format. The source shows which by where the text comes
from: a field read by its key, a name bound to one, an element of a column, a reward function's
column parameter named for the reference (`ground_truth`, `solution` beside `completions`), or
the parameter of a helper that every call in the file gives such a field.

`AnswerMatches` then tells whether a reward compares the model's answer with the gold by
containment (`gold in completion`, `completion.find(gold) >= 0`) rather than by equality.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

import libcst as cst

from rllint.analysis.rewards import RewardFunctions, param_names
from rllint.analysis.syntax import positional, walk
from rllint.analysis.text import (TEXT, TEXTS, Scope, Scopes, TextRoles, TextSources, argument, call_tail,
                                  element_source, literal_text, number, unwrap, words)

# Keys under which datasets keep the reference answer.
GOLD_KEYS = frozenset({"answer", "answers", "solution", "solutions", "ground_truth", "gold", "label", "target",
                       "reference"})
# Calls that keep what their receiver is: string methods and regex matches on it.
_KEEPS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "replace", "group", "groups", "split", "rsplit",
                    "partition", "rpartition"})
_MATCHES = frozenset({"search", "match", "fullmatch"})
_DEPTH = 8
# Words of a reward function's parameter that name the dataset's reference answer, and words that make such a
# name something else (`target_length`, `answer_format`).
_GOLD_WORDS = frozenset({"answer", "answers", "solution", "solutions", "gold", "golds", "truth", "truths", "gt", "gts",
                         "reference", "references", "target", "targets", "label", "labels"})
_NOT_GOLD_WORDS = frozenset({"length", "len", "ids", "id", "tokens", "token", "mask", "format", "type", "idx", "index",
                             "num", "count", "score", "scores", "reward", "rewards", "str", "strs", "text", "texts"})


class GoldAnswers:
    """`is_gold(expr, scope)`: the expression holds a dataset's reference answer."""

    def __init__(self, file) -> None:
        self.file = file
        self.scopes: Scopes = file.fact(Scopes)

    def is_gold(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        if depth > _DEPTH:
            return False
        if isinstance(expr, cst.Subscript):
            key = expr.slice[0].slice if len(expr.slice) == 1 else None
            if isinstance(key, cst.Index) and _gold_key(key.value):
                return True
            return self.is_gold(expr.value, scope, depth + 1)  # `dataset["answer"][i]`
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            tail = call_tail(expr)
            if tail in ("get", "pop") and _gold_key(positional(expr, 0)):
                return True
            if tail in _KEEPS:
                return self.is_gold(expr.func.value, scope, depth + 1)
            if tail in _MATCHES and isinstance(expr.func.value, cst.Name) and expr.func.value.value in ("re", "regex"):
                text = positional(expr, 1)
                return text is not None and self.is_gold(text, scope, depth + 1)
            return False
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in GOLD_KEYS and isinstance(expr.value, cst.Name) and expr.value.value != "self"
        if isinstance(expr, cst.Name):
            return self._name(expr.value, scope, depth)
        return False

    def _name(self, name: str, scope: Scope, depth: int) -> bool:
        sources = [(value, None) for value in scope.assigned.get(name, ())]
        sources += [(iterable, path) for iterable, path in scope.iterated.get(name, ())]
        # `x = x.split("####")[1]` keeps what `x` was: only the other bindings say where it comes from
        sources = [(v, p) for v, p in sources if not any(isinstance(n, cst.Name) and n.value == name for n in walk(v))]
        if sources:
            return all(self._element(value, path, scope, depth + 1) if path is not None
                       else self.is_gold(value, scope, depth + 1) for value, path in sources)
        if name in scope.params and isinstance(scope.node, cst.FunctionDef):
            return self.column(scope.node, name) or self.parameter(scope.node, name, depth, self.is_gold)
        return False

    def column(self, function: cst.FunctionDef, name: str) -> bool:
        """`name` is a reward function's parameter named for the reference answer (`ground_truth`, `solutions`,
        `gold_answer`), and not the completion it scores (verl's `solution_str`; a lone `solution` parameter)."""
        parts = set(words(name))
        if not parts & _GOLD_WORDS or parts & _NOT_GOLD_WORDS:
            return False
        if not self.file.fact(RewardFunctions).is_reward(function):
            return False
        scope, roles = self.scopes.of(function), self.file.fact(TextRoles)
        texts = [p for p in param_names(function) if roles.role(cst.Name(p), scope) in (TEXT, TEXTS)]
        return texts != [name]

    def _element(self, iterable: cst.BaseExpression, path: Tuple[int, ...], scope: Scope, depth: int) -> bool:
        """An element of iterating `iterable` (at `path` of the unpacked target) is gold."""
        if isinstance(iterable, cst.Call) and path and call_tail(iterable) in ("zip", "enumerate"):
            index = path[0] if call_tail(iterable) == "zip" else (0 if path[0] == 1 else None)
            arg = None if index is None else positional(iterable, index)
            return arg is not None and self._element(arg, path[1:], scope, depth + 1)
        return not path and self.is_gold(iterable, scope, depth + 1)

    def parameter(self, function: cst.FunctionDef, name: str, depth: int,
                   holds: Callable[[cst.BaseExpression, Scope, int], bool]) -> bool:
        """Every call of `function` in the file passes `name` a value that `holds` (and there is at least one)."""
        found = False
        for call, scope in self.scopes.calls_named(function.name.value):
            value = argument(call, function, name)
            if value is None or not holds(value, scope, depth + 1):
                return False
            found = True
        return found


def _gold_key(node: Optional[cst.CSTNode]) -> bool:
    return (literal_text(node) or "").lower() in GOLD_KEYS


# Calls whose value is still text of their receiver, or a piece or match of it.
_PIECES = _KEEPS | {"casefold", "removeprefix", "removesuffix", "findall", "splitlines"}
_STRINGS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "casefold", "replace", "removeprefix",
                      "removesuffix", "str", "format"})
# `text.find(gold) >= 0`, `text.count(gold) > 0`: a lookup that says whether one string holds another.
_LOOKUPS = frozenset({"find", "rfind", "count"})
_MODEL_DEPTH = 16  # the model's text goes through more steps than the gold: helpers, matches, pieces, callers


def contains(node: cst.Comparison) -> Optional[Tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(needle, haystack) of a test whether one value occurs in another: `a in b`, `b.find(a) >= 0`,
    `b.count(a) > 0`; None for other comparisons. Syntax only, checked before any fact is built."""
    if len(node.comparisons) != 1:
        return None
    target = node.comparisons[0]
    if isinstance(target.operator, (cst.In, cst.NotIn)):
        return node.left, target.comparator
    left = node.left
    if isinstance(left, cst.Call) and call_tail(left) in _LOOKUPS and isinstance(left.func, cst.Attribute) \
            and len(left.args) == 1 and number(target.comparator) in (-1.0, 0.0, 1.0):
        return left.args[0].value, left.func.value
    return None


class Containment:
    """`gold in text` and relatives: `node` (the comparison), the gold and the text expressions, and `inside`:
    True when the gold is looked for in the model's text, False when the model's text is looked for in the gold."""

    def __init__(self, node: cst.Comparison, gold: cst.BaseExpression, text: cst.BaseExpression, inside: bool) -> None:
        self.node, self.gold, self.text, self.inside = node, gold, text, inside


class AnswerMatches:
    """`containment(comparison, scope)`: the comparison gives credit when the gold answer occurs in the model's
    text (or the model's text in the gold) rather than when they are equal.

    The model's text is a completion (`TextRoles`), or a piece of one: a slice, a stripped copy, a split, a regex
    match or group, the last of `re.findall`, a name bound only to such pieces (and to literal defaults), or the
    parameter of a helper that every call in the file gives one. Text given to a function of another module
    (`parse(completion)`, which may return a list of candidates) is not followed.
    """

    def __init__(self, file) -> None:
        self.file = file
        self.gold: GoldAnswers = file.fact(GoldAnswers)
        self.roles: TextRoles = file.fact(TextRoles)
        self._model: Dict[Tuple[int, int], bool] = {}

    def containment(self, node: cst.Comparison, scope: Scope) -> Optional[Containment]:
        sides = contains(node)
        if sides is None:
            return None
        needle, haystack = sides
        if self.is_gold(needle, scope) and self.from_model(haystack, scope):
            return Containment(node, needle, haystack, True)
        if self.from_model(needle, scope) and self.is_gold(haystack, scope) and self._string(haystack, scope, 0):
            return Containment(node, haystack, needle, False)
        return None

    def is_gold(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        return self.gold.is_gold(unwrap(expr), scope)

    def from_model(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        """`expr` holds the model's text or a piece of it, and not the gold."""
        key = (id(expr), id(scope))
        if key not in self._model:
            self._model[key] = False  # while it is worked out: a name defined through itself adds nothing
            self._model[key] = depth <= _MODEL_DEPTH and self._from_model(unwrap(expr), scope, depth)
        return self._model[key]

    def _from_model(self, expr: cst.BaseExpression, scope: Scope, depth: int) -> bool:
        if self.gold.is_gold(expr, scope):
            return False
        if self.roles.role(expr, scope) == TEXT:
            return True
        if isinstance(expr, cst.Subscript):
            return self.from_model(expr.value, scope, depth + 1)
        if isinstance(expr, cst.IfExp):  # `m.group(1) if m else ""`
            branches = [b for b in (expr.body, expr.orelse) if not _default(b)]
            return bool(branches) and all(self.from_model(b, scope, depth + 1) for b in branches)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self.from_model(expr.elt, scope, depth + 1)
        if isinstance(expr, cst.Call) and self.file.fact(TextSources).helpers(expr):  # `extract_answer(completion)`
            helper = self.file.fact(TextSources).helpers(expr)[0]
            inner = self.gold.scopes.of(helper)
            returned = [r.value for r in inner.returns if r.value is not None and not _default(r.value)]
            return bool(returned) and all(self.from_model(v, inner, depth + 1) for v in returned)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            tail = call_tail(expr)
            receiver = expr.func.value
            if tail in _MATCHES or tail == "findall":
                module = isinstance(receiver, cst.Name) and receiver.value in ("re", "regex")
                text = positional(expr, 1 if module else 0)
                return text is not None and self.from_model(text, scope, depth + 1)
            return tail in _PIECES and self.from_model(receiver, scope, depth + 1)
        if isinstance(expr, cst.Name):
            return self._name(expr.value, scope, depth)
        return False

    def _name(self, name: str, scope: Scope, depth: int) -> bool:
        if name in scope.unpacked:
            return False
        elements = [element_source(iterable, path) for iterable, path in scope.iterated.get(name, ())]
        if None in elements:
            return False
        sources = [v for v in scope.assigned.get(name, ()) if not _default(v)] + elements
        sources = [v for v in sources if not any(isinstance(n, cst.Name) and n.value == name for n in walk(v))]
        if sources:
            return all(self.from_model(v, scope, depth + 1) for v in sources)
        if name in scope.params and isinstance(scope.node, cst.FunctionDef) and \
                not self.file.fact(RewardFunctions).is_reward(scope.node):
            return self.gold.parameter(scope.node, name, depth, self.from_model)
        return False

    def _string(self, expr: cst.BaseExpression, scope: Scope, depth: int) -> bool:
        """The gold is a string, not a list of accepted answers: `str(gold)`, `gold.strip()`, a name bound to one."""
        if depth > _DEPTH:
            return False
        if isinstance(expr, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            return True
        if isinstance(expr, cst.Call):
            return call_tail(expr) in _STRINGS
        if isinstance(expr, cst.Name):
            values = scope.assigned.get(expr.value, ())
            return bool(values) and all(self._string(v, scope, depth + 1) for v in values)
        return False


def _default(expr: cst.BaseExpression) -> bool:
    """`""`, `None`: what a name holds before the answer is found."""
    return literal_text(expr) is not None or (isinstance(expr, cst.Name) and expr.value == "None")
