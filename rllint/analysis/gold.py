"""Gold answers: text that comes from a dataset's reference field, not from the model.

Answer extractors parse two kinds of text: the model's completion, where a missing marker is
a format failure, and the dataset's reference (`row["answer"]`, `example.pop("solution")`),
where the marker is the dataset's own format. The source shows which by where the text comes
from: a field read by its key, a name bound to one, an element of a column, or the parameter
of a helper that every call in the file gives such a field.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from rllint.analysis.syntax import positional, walk
from rllint.analysis.text import Scope, Scopes, argument, call_tail, literal_text

# Keys under which datasets keep the reference answer.
GOLD_KEYS = frozenset({"answer", "answers", "solution", "solutions", "ground_truth", "gold", "label", "target",
                       "reference"})
# Calls that keep what their receiver is: string methods and regex matches on it.
_KEEPS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "replace", "group", "groups", "split", "rsplit",
                    "partition", "rpartition"})
_MATCHES = frozenset({"search", "match", "fullmatch"})
_DEPTH = 8


class GoldAnswers:
    """`is_gold(expr, scope)`: the expression holds a dataset's reference answer."""

    def __init__(self, file) -> None:
        self.file = file
        self.scopes: Scopes = file.fact(Scopes)
        self._calls: Optional[List[Tuple[cst.Call, Scope]]] = None

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
            return self._parameter(scope.node, name, depth)
        return False

    def _element(self, iterable: cst.BaseExpression, path: Tuple[int, ...], scope: Scope, depth: int) -> bool:
        """An element of iterating `iterable` (at `path` of the unpacked target) is gold."""
        if isinstance(iterable, cst.Call) and path and call_tail(iterable) in ("zip", "enumerate"):
            index = path[0] if call_tail(iterable) == "zip" else (0 if path[0] == 1 else None)
            arg = None if index is None else positional(iterable, index)
            return arg is not None and self._element(arg, path[1:], scope, depth + 1)
        return not path and self.is_gold(iterable, scope, depth + 1)

    def _parameter(self, function: cst.FunctionDef, name: str, depth: int) -> bool:
        """Every call of `function` in the file passes gold text as `name` (and there is at least one)."""
        found = False
        for call, scope in self._calls_of(function.name.value):
            value = argument(call, function, name)
            if value is None or not self.is_gold(value, scope, depth + 1):
                return False
            found = True
        return found

    def _calls_of(self, function: str) -> List[Tuple[cst.Call, Scope]]:
        if self._calls is None:
            self._calls = [(call, self.scopes.module) for call in self.scopes.module.calls]
            for node in walk(self.file.module, into_functions=True):
                if isinstance(node, cst.FunctionDef):
                    scope = self.scopes.of(node)
                    self._calls.extend((call, scope) for call in scope.calls)
        return [(call, scope) for call, scope in self._calls if call_tail(call) == function]


def _gold_key(node: Optional[cst.CSTNode]) -> bool:
    return (literal_text(node) or "").lower() in GOLD_KEYS
