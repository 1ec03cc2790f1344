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

import re
from typing import Callable, Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.rewards import RewardFunctions, param_names
from rllint.analysis.syntax import keyword, positional, walk
from rllint.analysis.text import (TEXT, TEXTS, Scope, Scopes, TextSources, argument, call_tail,
                                  element_source, literal_text, number, unwrap, words)
from rllint.analysis.text_roles import TextRoles

try:  # Python's own regex parser: `re._parser` since 3.11, `sre_parse` before
    from re import _constants as sre_constants, _parser as sre_parse
except ImportError:  # pragma: no cover
    import sre_constants, sre_parse  # type: ignore[no-redef]

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
            return self._name(expr.value, scope, depth, expr)
        return False

    def _name(self, name: str, scope: Scope, depth: int, use: Optional[cst.Name] = None) -> bool:
        sources = [(value, None) for value in scope.assigned.get(name, ())]
        hidden = _unseen_comprehension_iterables(scope, name, use) if use is not None else set()
        sources += [(iterable, path) for iterable, path in scope.iterated.get(name, ()) if id(iterable) not in hidden]
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


def _binding_loop(scope: Scope, use: cst.Name) -> Optional[cst.For]:
    """The innermost `for` statement whose target binds `use` and whose body holds it with no other binding of the
    name: there the name has one source whatever the rest of the function binds it to."""
    found = None
    for node in walk(scope.node):
        if isinstance(node, cst.For) and any(isinstance(t, cst.Name) and t.value == use.value for t in walk(node.target)) \
                and any(n is use for n in walk(node.body)):
            found = node  # `walk` reaches outer loops first
    if found is None:
        return None
    for node in walk(found.body):
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.With)) \
                and any(isinstance(t, cst.Name) and t.value == use.value for t in walk(_targets(node))):
            return None
    return found


def _targets(node: cst.CSTNode) -> cst.CSTNode:
    if isinstance(node, cst.Assign):
        return cst.Tuple([cst.Element(t.target) for t in node.targets])
    if isinstance(node, cst.With):
        return cst.Tuple([cst.Element(i.asname.name) for i in node.items if i.asname is not None])
    return node.target


def _unseen_comprehension_iterables(scope: Scope, name: str, use: cst.Name) -> Set[int]:
    """Iterables of the comprehensions that bind `name` and do not hold `use`: a comprehension's variable is
    not seen outside it (`any(target in a for target in gt)` leaves the parameter `target` as it was)."""
    hidden: Set[int] = set()
    for node in walk(scope.node):
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            binds = [f for f in walk(node.for_in) if isinstance(f, cst.CompFor)
                     and any(isinstance(t, cst.Name) and t.value == name for t in walk(f.target))]
            if binds and not any(n is use for n in walk(node)):
                hidden.update(id(f.iter) for f in binds)
    return hidden


def _gold_key(node: Optional[cst.CSTNode]) -> bool:
    return (literal_text(node) or "").lower() in GOLD_KEYS


# Calls whose value is still text of their receiver, or a piece or match of it.
_PIECES = _KEEPS | {"casefold", "removeprefix", "removesuffix", "findall", "splitlines"}
_STRINGS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "casefold", "replace", "removeprefix",
                      "removesuffix", "str", "format"})
# `text.find(gold) >= 0`, `text.count(gold) > 0`: a lookup that says whether one string holds another.
_LOOKUPS = frozenset({"find", "rfind", "count"})
# Builtins that gather the pieces of a text into a collection of them (the words of a completion).
_COLLECTIONS = frozenset({"set", "frozenset", "list", "tuple", "sorted"})
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
        self._sides: Dict[Tuple[int, int], Optional[Side]] = {}

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
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _COLLECTIONS \
                and len(expr.args) == 1 and not expr.args[0].star:  # `set(text.split())`: the model's words
            return self.from_model(expr.args[0].value, scope, depth + 1)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            tail = call_tail(expr)
            receiver = expr.func.value
            if tail in _MATCHES or tail == "findall":
                module = isinstance(receiver, cst.Name) and receiver.value in ("re", "regex")
                text = positional(expr, 1 if module else 0)
                return text is not None and self.from_model(text, scope, depth + 1)
            return tail in _PIECES and self.from_model(receiver, scope, depth + 1)
        if isinstance(expr, cst.Name):
            loop = _binding_loop(scope, expr)
            if loop is not None:  # inside `for answer in answers:`, the name is what the loop gives it
                given = [element_source(loop.iter, path) for iterable, path in scope.iterated.get(expr.value, ())
                         if iterable is loop.iter]
                return bool(given) and all(v is not None and self.from_model(v, scope, depth + 1) for v in given)
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

    def one_sided(self, node: cst.Comparison, scope: Scope) -> Optional[OneSided]:
        """An equality test of the gold against the model's text where one side is cleaned of a character that
        the other keeps and can hold (`pred.replace(",", "").strip() == gold.strip()`). Evidence in the file is
        needed: the gold cleaned, or both sides cleaned differently; a prediction cleaned beside a raw gold is
        how a reward reads a dataset that its preparation already cleaned, and is not reported."""
        if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
            return None
        exprs = (node.left, node.comparisons[0].comparator)
        sides = [self.side(e, scope) for e in exprs]
        if sides[0] is None or sides[1] is None or {s.kind for s in sides} != {"gold", "model"}:
            return None
        for cleaned, other in ((0, 1), (1, 0)):
            s, o = sides[cleaned], sides[other]
            chars = (s.removed - o.removed) & o.holds
            if chars and (s.kind == "gold" or o.steps):
                return OneSided(node, exprs[cleaned], exprs[other], chars, s.kind == "gold")
        return None

    def side(self, expr: cst.BaseExpression, scope: Scope, env: Optional[Dict[str, Optional[Side]]] = None,
             depth: int = 0) -> Optional[Side]:
        """What one side of an equality test holds: the gold's or the model's text, the characters its cleaning
        removed and those it can still hold; None when any step is not read. `env` gives a helper's parameters
        what its call passes."""
        if depth > _MODEL_DEPTH:
            return None
        if env:
            return self._side(expr, scope, env, depth)
        key = (id(expr), id(scope))
        if key not in self._sides:
            self._sides[key] = None  # while it is worked out: a name defined through itself adds nothing
            self._sides[key] = self._side(expr, scope, {}, depth)
        return self._sides[key]

    def _side(self, expr: cst.BaseExpression, scope: Scope, env: Dict[str, Optional[Side]],
              depth: int) -> Optional[Side]:
        deeper = depth + 1
        if isinstance(expr, cst.Call):
            if call_tail(expr) in _READ or self.file.fact(TextSources).helpers(expr):
                return self._call_side(expr, scope, env, deeper)
            return self._base(expr, scope)  # `row.get("answer")`, `tokenizer.decode(ids)`
        if isinstance(expr, cst.Subscript):
            key = expr.slice[0].slice.value if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) \
                else None
            if literal_text(key) is not None:  # a field: `row["answer"]`, `message["content"]`
                return self.side(expr.value, scope, env, deeper) or self._base(expr, scope)
            group = number(key) if key is not None else None
            match = self._match(expr.value, scope, env, deeper) if group is not None else None
            if match is not None:  # `m[1]`
                return _group_side(match, int(group))
            return self.side(expr.value, scope, env, deeper)
        if isinstance(expr, cst.IfExp):  # `m.group(1) if m else ""`
            return _merge([self.side(b, scope, env, deeper) for b in (expr.body, expr.orelse) if not _default(b)])
        if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or) and _default(expr.right):
            return self.side(expr.left, scope, env, deeper)  # `last_boxed(text) or ""`
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self.side(expr.elt, scope, env, deeper)
        if isinstance(expr, cst.Name):
            return self._side_name(expr, scope, env, deeper)
        return self._base(expr, scope)

    def _call_side(self, call: cst.Call, scope: Scope, env: Dict[str, Optional[Side]],
                   depth: int) -> Optional[Side]:
        tail, func = call_tail(call), call.func
        if isinstance(func, cst.Name) and tail == "str" and len(call.args) == 1:
            return self.side(call.args[0].value, scope, env, depth)
        if isinstance(func, cst.Name) and tail in ("float", "int") and len(call.args) == 1:
            inner = self.side(call.args[0].value, scope, env, depth)  # a number keeps its sign and nothing else
            return None if inner is None else Side(inner.kind, inner.removed, inner.holds & _SIGN, inner.steps)
        if tail == "sub" and isinstance(func, cst.Attribute):
            return self._sub(call, scope, env, depth)
        if tail in ("group", "findall") and isinstance(func, cst.Attribute):
            return self._regex_side(call, scope, env, depth)
        if isinstance(func, cst.Attribute) and tail in _SPLITS | {"partition"}:  # a piece keeps all but its separator
            sep = positional(call, 0)
            inner = self.side(func.value, scope, env, depth)
            if inner is None or (sep is not None and literal_text(sep) is None):
                return None
            cut = frozenset([literal_text(sep) if sep is not None else " "] if tail in ("split", "rsplit") else [])
            return Side(inner.kind, inner.removed, inner.holds - cut, inner.steps)
        if isinstance(func, cst.Attribute) and tail in _CLEANERS:
            args = [literal_text(a.value) for a in call.args]
            if None in args or any(a.keyword is not None or a.star for a in call.args):
                return None
            inner = self.side(func.value, scope, env, depth)
            if inner is None:
                return None
            dropped = removed_by(lambda s: getattr(s, tail)(*args))
            return None if dropped is None else inner.then(dropped)
        helpers = self.file.fact(TextSources).helpers(call)
        if helpers:
            helper = helpers[0]
            inner_scope = self.gold.scopes.of(helper)
            passed = {}
            for name in param_names(helper):
                value = argument(call, helper, name)
                if value is not None:
                    passed[name] = self.side(value, scope, env, depth)
            returned = [r.value for r in inner_scope.returns if r.value is not None and not _default(r.value)]
            return _merge([self.side(v, inner_scope, passed, depth) for v in returned])
        return None

    def _sub(self, call: cst.Call, scope: Scope, env: Dict[str, Optional[Side]], depth: int) -> Optional[Side]:
        """`re.sub(pattern, repl, text)` or `PATTERN.sub(repl, text)` with literal pattern and replacement."""
        module = isinstance(call.func.value, cst.Name) and call.func.value.value in ("re", "regex")
        pattern = literal_text(positional(call, 0)) if module else self._pattern(call.func.value, scope)
        args = call.args[1:] if module else call.args
        if pattern is None or len(args) != 2 or any(a.keyword is not None or a.star for a in args):
            return None
        repl = literal_text(args[0].value)
        inner = self.side(args[1].value, scope, env, depth)
        if repl is None or inner is None:
            return None
        dropped = removed_by(lambda s: re.sub(pattern, repl, s))
        return None if dropped is None else inner.then(dropped)

    def _regex_side(self, call: cst.Call, scope: Scope, env: Dict[str, Optional[Side]],
                    depth: int) -> Optional[Side]:
        """`m.group(n)`: what group n of the pattern can hold; `re.findall(pattern, text)`: what its matches can."""
        if call_tail(call) == "group":
            group = number(positional(call, 0)) if call.args else 0.0
            match = self._match(call.func.value, scope, env, depth)
            return None if match is None or group is None or len(call.args) > 1 else _group_side(match, int(group))
        match = self._match(call, scope, env, depth, ("findall",))
        if match is None:
            return None
        try:
            groups = re.compile(match[0]).groups
        except re.error:
            return None
        return _group_side(match, groups) if groups <= 1 else None

    def _match(self, expr: cst.BaseExpression, scope: Scope, env: Dict[str, Optional[Side]], depth: int,
               calls: Tuple[str, ...] = tuple(_MATCHES)) -> Optional[Tuple[str, Side]]:
        """(pattern, text) of a regex match (or of `findall`, among `calls`): `re.search(p, text)`,
        `PATTERN.match(text)`, a name bound to one."""
        if depth > _MODEL_DEPTH:
            return None
        if isinstance(expr, cst.Name):  # a name bound to a match, or an element of a list of matches
            values = [v for v in scope.assigned.get(expr.value, ()) if not _default(v)]
            values += [element_source(i, p) for i, p in scope.iterated.get(expr.value, ())]
            return self._match(values[0], scope, env, depth + 1, calls) if len(values) == 1 else None
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self._match(expr.elt, scope, env, depth + 1, calls)
        if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Attribute) or \
                call_tail(expr) not in calls or keyword(expr, "flags") is not None:
            return None
        module = isinstance(expr.func.value, cst.Name) and expr.func.value.value in ("re", "regex")
        pattern = literal_text(positional(expr, 0)) if module else self._pattern(expr.func.value, scope)
        text = positional(expr, 1 if module else 0)
        flags = positional(expr, 2 if module else 1)
        if pattern is None or text is None or (flags is not None and not _plain_flags(flags)):
            return None
        side = self.side(text, scope, env, depth + 1)
        return None if side is None else (pattern, side)

    def _pattern(self, expr: cst.BaseExpression, scope: Scope) -> Optional[str]:
        """The text of a compiled pattern held by a name of the function or module: `re.compile(r"...")`."""
        if not isinstance(expr, cst.Name):
            return None
        values = scope.assigned.get(expr.value) or self.gold.scopes.module.assigned.get(expr.value, ())
        if len(values) != 1 or call_tail(values[0]) != "compile":
            return None
        flags = positional(values[0], 1)
        if flags is not None and not _plain_flags(flags) or keyword(values[0], "flags") is not None:
            return None
        return literal_text(positional(values[0], 0))

    def _side_name(self, expr: cst.Name, scope: Scope, env: Dict[str, Optional[Side]],
                   depth: int) -> Optional[Side]:
        name = expr.value
        if "=" + name in env:  # the value a rebinding of `name` starts from
            return env["=" + name]
        if name in scope.unpacked:
            return None
        values = [v for v in scope.assigned.get(name, ()) if not _default(v)]
        again = [v for v in values if any(isinstance(n, cst.Name) and n.value == name for n in walk(v))]
        first = [v for v in values if v not in again]
        iterated = scope.iterated.get(name, ())
        if first or iterated:
            elements = [element_source(iterable, path) for iterable, path in iterated]
            side = None if None in elements else _merge([self.side(v, scope, env, depth) for v in first + elements])
        elif name in env:
            side = env[name]
        elif name in scope.params and isinstance(scope.node, cst.FunctionDef) and \
                not self.file.fact(RewardFunctions).is_reward(scope.node) and \
                self.file.fact(TextSources).calls_of(scope.node):  # what every call of the helper passes
            function = scope.node
            passed = [(argument(call, function, name), caller)
                      for call, caller in self.file.fact(TextSources).calls_of(function)]
            side = _merge([None if value is None else self.side(value, caller, {}, depth) for value, caller in passed])
        else:
            side = self._base(expr, scope)
        for value in again:  # `answer = answer.replace(",", "")`, in the order written
            side = side and self.side(value, scope, {**env, "=" + name: side}, depth)
        return side

    def _base(self, expr: cst.BaseExpression, scope: Scope) -> Optional[Side]:
        if self.gold.is_gold(expr, scope):
            return Side("gold")
        return Side("model") if self.roles.role(expr, scope) in (TEXT, TEXTS) else None

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


# ---------------------------------------------------------------- one-sided normalisation

# Characters that answer normalisers remove, each in the place it takes in an answer: `1,000`, `1 000`, `$5`, `50%`.
_SAMPLES = {",": "1,000", " ": "1 000", "$": "$1000", "%": "50%", "-": "-5"}
ALL_CHARS = frozenset(_SAMPLES)
_SIGN = frozenset("-")
# String methods that clean text without taking it apart.
_CLEANERS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "casefold", "replace", "removeprefix",
                       "removesuffix"})
_SPLITS = frozenset({"split", "rsplit", "rpartition", "splitlines"})
# calls a side is read through
_READ = _CLEANERS | _SPLITS | {"partition", "sub", "group", "findall", "str", "float", "int"}


class Side:
    """One side of an equality test: `kind` ("gold" or "model", where its text comes from), the characters its
    cleaning steps `removed`, those its value `holds` (can still contain) and the number of cleaning `steps`."""

    def __init__(self, kind: str, removed: FrozenSet[str] = frozenset(), holds: FrozenSet[str] = ALL_CHARS,
                 steps: int = 0) -> None:
        self.kind, self.removed, self.holds, self.steps = kind, removed, holds, steps

    def then(self, dropped: FrozenSet[str]) -> "Side":
        return Side(self.kind, self.removed | dropped, self.holds - dropped, self.steps + 1)


class OneSided:
    """An equality test whose `cleaned` side drops `chars` that its `other` side keeps; `gold_cleaned` says which."""

    def __init__(self, node: cst.Comparison, cleaned: cst.BaseExpression, other: cst.BaseExpression,
                 chars: FrozenSet[str], gold_cleaned: bool) -> None:
        self.node, self.cleaned, self.other, self.chars, self.gold_cleaned = node, cleaned, other, chars, gold_cleaned


def _merge(sides: List[Optional[Side]]) -> Optional[Side]:
    """The side that every one of `sides` agrees on (a name bound twice, a helper's returns); None when they
    differ in where they come from or what they remove."""
    if not sides or any(s is None for s in sides):
        return None
    first = sides[0]
    if any(s.kind != first.kind or s.removed != first.removed for s in sides):
        return None
    return Side(first.kind, first.removed, frozenset.intersection(*(s.holds for s in sides)),
                min(s.steps for s in sides))


def _group_side(match: Tuple[str, Side], group: int) -> Optional[Side]:
    """What a regex group holds of its text; a group that reads the digits of `-5` but not its sign removes the
    sign, as a cleaning step would (`re.findall("[0-9]+", text)` turns `-5` into `5`)."""
    chars = group_chars(match[0], group)
    text = match[1]
    if chars is None:
        return None
    side = Side(text.kind, text.removed, text.holds & chars, text.steps)
    dropped = removed_by(lambda s: _group_text(match[0], group, s)) or frozenset()
    if _SIGN <= text.holds - chars and _SIGN <= dropped:
        side = Side(side.kind, side.removed | _SIGN, side.holds, side.steps + 1)
    return side


def _group_text(pattern: str, group: int, sample: str) -> str:
    """Group `group` of the first match of `pattern` in `sample` (a sample without a match keeps everything)."""
    found = re.search(pattern, sample)
    return found.group(group) or sample if found else sample


def _plain_flags(flags: cst.BaseExpression) -> bool:
    """Regex flags that do not change what a pattern's characters mean (not `re.VERBOSE`)."""
    return not any(isinstance(n, (cst.Name, cst.Attribute)) and getattr(n, "attr", n).value in ("X", "VERBOSE")
                   for n in walk(flags))


def removed_by(step: Callable[[str], str]) -> Optional[FrozenSet[str]]:
    """The characters of `_SAMPLES` that a cleaning step drops from an answer, found by running it; None when it
    fails."""
    try:
        return frozenset(c for c, sample in _SAMPLES.items() if c not in step(sample))
    except (re.error, TypeError, IndexError, ValueError):
        return None


def group_chars(pattern: str, group: int) -> Optional[FrozenSet[str]]:
    """The characters of `_SAMPLES` that regex group `group` (0: the whole match) can hold, read from Python's own
    parse of the pattern; None when the pattern does not parse or uses constructs this does not read (lookarounds,
    backreferences, verbose mode)."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    if parsed.state.flags & re.VERBOSE:
        return None
    body = list(parsed) if group == 0 else _group(list(parsed), group)
    if body is None:
        return None
    found: Set[str] = set()
    for char in _SAMPLES:
        can = _can_match(body, char)
        if can is None:
            return None
        if can:
            found.add(char)
    return frozenset(found)


def _group(items: list, group: int) -> Optional[list]:
    for op, av in items:
        if op is sre_constants.SUBPATTERN:
            if av[0] == group:
                return list(av[-1])
            inner = _group(list(av[-1]), group)
        elif op is sre_constants.BRANCH:
            inner = next((g for g in (_group(list(b), group) for b in av[1]) if g is not None), None)
        elif op in _REPEATS:
            inner = _group(list(av[-1]), group)
        elif op is _ATOMIC_GROUP:
            inner = _group(list(av), group)
        else:
            continue
        if inner is not None:
            return inner
    return None


def _can_match(items: list, char: str) -> Optional[bool]:
    """Some atom of `items` matches `char`; None for a construct not read."""
    code = ord(char)
    hit = False
    for op, av in items:
        if op is sre_constants.LITERAL:
            hit |= av == code
        elif op is sre_constants.NOT_LITERAL:
            hit |= av != code
        elif op is sre_constants.ANY:
            hit = True
        elif op is sre_constants.IN:
            inside = _in_set(av, char)
            if inside is None:
                return None
            hit |= inside
        elif op in _REPEATS or op in _GROUPS:
            if op in _REPEATS and av[1] == 0:
                continue
            inner = _can_match(list(av if op is _ATOMIC_GROUP else av[-1]), char)  # an atomic group is its body
            if inner is None:
                return None
            hit |= inner
        elif op is sre_constants.BRANCH:
            inner = [_can_match(list(b), char) for b in av[1]]
            if None in inner:
                return None
            hit |= any(inner)
        elif op is not sre_constants.AT:
            return None
    return hit


# Possessive repeats and atomic groups (`a*+`, `(?>...)`) came with Python 3.11; earlier parsers have neither.
_REPEATS = tuple(op for op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT,
                               getattr(sre_constants, "POSSESSIVE_REPEAT", None)) if op is not None)
_ATOMIC_GROUP = getattr(sre_constants, "ATOMIC_GROUP", None)
_GROUPS = tuple(op for op in (sre_constants.SUBPATTERN, _ATOMIC_GROUP) if op is not None)
_CATEGORIES = {sre_constants.CATEGORY_DIGIT: str.isdigit, sre_constants.CATEGORY_SPACE: str.isspace,
               sre_constants.CATEGORY_WORD: lambda c: c.isalnum() or c == "_"}
_NOT_CATEGORIES = {sre_constants.CATEGORY_NOT_DIGIT: sre_constants.CATEGORY_DIGIT,
                   sre_constants.CATEGORY_NOT_SPACE: sre_constants.CATEGORY_SPACE,
                   sre_constants.CATEGORY_NOT_WORD: sre_constants.CATEGORY_WORD}


def _in_set(items: list, char: str) -> Optional[bool]:
    code, negate, hit = ord(char), False, False
    for op, av in items:
        if op is sre_constants.NEGATE:
            negate = True
        elif op is sre_constants.LITERAL:
            hit |= av == code
        elif op is sre_constants.RANGE:
            hit |= av[0] <= code <= av[1]
        elif op is sre_constants.CATEGORY and av in _CATEGORIES:
            hit |= _CATEGORIES[av](char)
        elif op is sre_constants.CATEGORY and av in _NOT_CATEGORIES:
            hit |= not _CATEGORIES[_NOT_CATEGORIES[av]](char)
        else:
            return None
    return hit != negate
