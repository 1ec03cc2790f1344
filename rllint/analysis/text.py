"""Text facts of a file: which names hold completion text, token ids or prompts, and which
strings are reasoning or answer markers.

Reward parsing and decoding bugs are about *what a value is* (a completion string, a list
of completions, generated ids, a prompt), which the source shows through decode calls,
generation outputs, reward-function parameters, loops over them and, as a fallback,
names. Facts are computed per function (a `Scope`), lazily, when a rule asks about a node
inside that function; nothing here walks the whole file.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple, Union

import libcst as cst

from rllint.analysis.imports import Imports
from rllint.analysis.syntax import children, keyword, positional, walk

FunctionOrModule = Union[cst.FunctionDef, cst.Module]

# Roles a value can have.
TEXT = "text"  # one completion string
TEXTS = "texts"  # a list of completion strings (or of conversational completions)
GEN_IDS = "gen_ids"  # token ids produced by generation
IDS = "ids"  # other token ids, tensors, masks
PROMPT = "prompt"  # prompt text or prompt ids
PROMPTS = "prompts"


# ---------------------------------------------------------------- small libcst helpers

def literal_text(node: Optional[cst.CSTNode]) -> Optional[str]:
    """The text of a string literal; f-string placeholders become `{}`. None for anything else."""
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # malformed escapes that CPython accepted: keep the raw spelling
            return node.raw_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = literal_text(node.left), literal_text(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, cst.FormattedString):
        return "".join(p.value if isinstance(p, cst.FormattedStringText) else "{}" for p in node.parts)
    return None


def number(node: Optional[cst.CSTNode]) -> Optional[float]:
    """The value of a numeric or boolean literal, with unary minus."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = number(node.expression)
        return None if inner is None else -inner
    if isinstance(node, (cst.Integer, cst.Float)):
        return float(node.evaluated_value)
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return 1.0 if node.value == "True" else 0.0
    return None


def attr_tail(node: cst.CSTNode) -> Optional[str]:
    """`tokenizer.batch_decode` -> `batch_decode`, `zip` -> `zip`."""
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return None


def call_tail(node: cst.CSTNode) -> Optional[str]:
    return attr_tail(node.func) if isinstance(node, cst.Call) else None


def words(name: str) -> List[str]:
    """`completionIds` / `completion_ids` -> ['completion', 'ids']."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w for w in spaced.lower().split("_") if w]


# ---------------------------------------------------------------- name vocabularies

_COMPLETION_WORDS = {"completion", "completions", "response", "responses", "generation", "generations",
                     "generated", "gen", "output", "outputs", "rollout", "rollouts", "sampled", "sample", "samples"}
_ID_WORDS = {"ids", "id", "tokens", "token", "seq", "seqs", "sequence", "sequences", "logits", "logprobs", "logps",
             "labels", "tensor", "tensors", "mask", "masks", "lens", "lengths", "length", "len", "idx", "index",
             "indices", "positions", "values", "embeds", "embeddings", "hidden", "states", "scores", "rewards",
             "num", "count", "n", "size", "bytes", "array"}
_PROMPT_WORDS = {"prompt", "prompts", "query", "queries", "question", "questions", "instruction", "instructions"}
# singular completion-text names, whatever function they appear in
_TEXT_NAMES = {"completion", "completion_text", "completion_str", "solution_str", "response_str", "response_text",
               "generated_text", "generation", "model_output", "output_text", "output_str", "predict_str",
               "pred_str", "completion_content", "response_content", "decoded_completion", "decoded_response"}
_TEXTS_NAMES = {"completions", "responses", "generations", "completion_texts", "response_texts", "generated_texts",
                "completion_strs", "solution_strs", "response_strs", "decoded_completions", "decoded_responses",
                "completion_contents", "output_texts", "model_outputs"}


def vocab_role(name: str) -> Optional[str]:
    """The role a name announces by itself; used only where the source does not bind it."""
    lowered = name.lower()
    if lowered in _TEXT_NAMES:
        return TEXT
    if lowered in _TEXTS_NAMES:
        return TEXTS
    parts = set(words(name))
    if parts & _ID_WORDS:
        if parts & _PROMPT_WORDS or "input" in parts:
            return PROMPT if "prompt" in parts or "query" in parts else IDS
        if parts & _COMPLETION_WORDS and parts & {"ids", "tokens", "token", "seq", "seqs", "sequences"}:
            return GEN_IDS
        return IDS
    if lowered in ("generated", "sequences", "outputs_ids", "gen_out"):
        return GEN_IDS
    if parts & {"prompt", "prompts", "query", "queries"}:
        return PROMPTS if lowered.endswith("s") else PROMPT
    return None


def per_completion_name(name: str) -> bool:
    """`completions`, `ground_truths`, `reward_funcs`, `prompts_P`: lists indexed by completion (or, for reward
    functions and their weights, by function). A reward function's processing class is its tokenizer, one per
    function, built from the functions themselves: not a list whose length can drift."""
    parts = words(name)
    if not parts:
        return False
    if "reward" in parts or "rewards" in parts:
        return not (set(parts) & {"model", "models", "tokenizer", "tokenizers", "processing", "processor",
                                  "processors", "config", "manager", "type", "stats"})
    plural = {"completions", "prompts", "responses", "answers", "solutions", "golds", "generations",
              "truths", "texts"}
    return bool(set(parts) & plural) and not (set(parts) & _ID_WORDS)


# ---------------------------------------------------------------- markers

# Reasoning markers: the model's private reasoning, between an opening and a closing tag.
_REASONING = r"(?:think|thinking|thought|thoughts|reasoning|reason|reflection|scratchpad)"
REASONING_MARKER = re.compile(
    r"<\\?/?" + _REASONING + r">|<\\?\|\\?(?:begin|end)_of_thought\\?\|\\?>", re.IGNORECASE)
REASONING_OPEN = re.compile(r"<\\?" + _REASONING + r">|<\\?\|\\?begin_of_thought\\?\|\\?>", re.IGNORECASE)
REASONING_CLOSE = re.compile(r"<\\?/" + _REASONING + r">|<\\?\|\\?end_of_thought\\?\|\\?>", re.IGNORECASE)
# Answer markers: where the final answer starts.
ANSWER_MARKER = re.compile(r"####|<answer>|<solution>|\\boxed|answer\s*(?:is)?\s*:|final answer", re.IGNORECASE)


def is_reasoning_open(text: str) -> bool:
    return bool(REASONING_OPEN.search(text))


def is_reasoning_close(text: str) -> bool:
    return bool(REASONING_CLOSE.fullmatch(text.strip()))


def is_answer_marker(text: str) -> bool:
    return bool(ANSWER_MARKER.search(text)) and not REASONING_MARKER.search(text)


# ---------------------------------------------------------------- scopes

class Scope:
    """The bindings of one function (or of the module's top level): what a rule needs to know
    where a name comes from. Comprehension variables are bindings of the enclosing function."""

    def __init__(self, node: FunctionOrModule) -> None:
        self.node = node
        self.params: Dict[str, cst.Param] = {}
        self.star_kwargs = False
        self.assigned: Dict[str, List[cst.BaseExpression]] = defaultdict(list)
        self.iterated: Dict[str, List[Tuple[cst.BaseExpression, Tuple[int, ...]]]] = defaultdict(list)
        self.unpacked: Dict[str, List[Tuple[cst.BaseExpression, Tuple[int, ...]]]] = defaultdict(list)
        self.calls: List[cst.Call] = []
        self.comparisons: List[cst.Comparison] = []
        self.returns: List[cst.Return] = []
        self.ifs: List[cst.BaseExpression] = []  # tests of if statements, ternaries, comprehension filters
        self.augmented_divisions: Set[str] = set()  # names divided in place: `logits /= temperature`
        self.augmented: Dict[str, List[cst.BaseExpression]] = defaultdict(list)  # `prompt += suffix`: the suffixes
        if isinstance(node, cst.FunctionDef):
            p = node.params
            for param in list(p.posonly_params) + list(p.params) + list(p.kwonly_params):
                self.params[param.name.value] = param
            if isinstance(p.star_arg, cst.Param):
                self.params[p.star_arg.name.value] = p.star_arg
            if p.star_kwarg is not None:
                self.star_kwargs = True
                self.params[p.star_kwarg.name.value] = p.star_kwarg
            body: cst.CSTNode = node.body
        else:
            body = node
        for child in walk(body):
            self._collect(child)

    def _collect(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Call):
            self.calls.append(node)
        elif isinstance(node, cst.Assign):
            for target in node.targets:
                self._bind(target.target, node.value, ())
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            self._bind(node.target, node.value, ())
        elif isinstance(node, (cst.For, cst.CompFor)):
            self._bind_iter(node.target, node.iter, ())
        elif isinstance(node, cst.Comparison):
            self.comparisons.append(node)
        elif isinstance(node, cst.Return):
            self.returns.append(node)
        elif isinstance(node, (cst.If, cst.While, cst.IfExp)):
            self.ifs.append(node.test)
        elif isinstance(node, cst.CompIf):
            self.ifs.append(node.test)
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            if isinstance(node.operator, cst.DivideAssign):
                self.augmented_divisions.add(node.target.value)
            elif isinstance(node.operator, cst.AddAssign):
                self.augmented[node.target.value].append(node.value)
        elif isinstance(node, cst.NamedExpr) and isinstance(node.target, cst.Name):
            self.assigned[node.target.value].append(node.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression, path: Tuple[int, ...]) -> None:
        if isinstance(target, cst.Name):
            if path:
                self.unpacked[target.value].append((value, path))
            else:
                self.assigned[target.value].append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for i, element in enumerate(target.elements):
                self._bind(element.value, value, path + (i,))

    def _bind_iter(self, target: cst.BaseExpression, iterable: cst.BaseExpression, path: Tuple[int, ...]) -> None:
        if isinstance(target, cst.Name):
            self.iterated[target.value].append((iterable, path))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for i, element in enumerate(target.elements):
                self._bind_iter(element.value, iterable, path + (i,))

    def string_constants(self) -> Dict[str, str]:
        """Names bound once, to a string literal, in this scope: `THINK_END = "</think>"`."""
        found = {}
        for name, values in self.assigned.items():
            if len(values) == 1:
                text = literal_text(values[0])
                if text is not None:
                    found[name] = text
        return found


class Scopes:
    """Scopes of a file, built on request and cached: `file.fact(Scopes).of(function_or_module)`."""

    def __init__(self, file) -> None:
        self.file = file
        self._scopes: Dict[int, Scope] = {}
        self._module_strings: Optional[Dict[str, str]] = None
        self._comparisons: List[cst.Comparison] = []
        self._functions: Dict[str, List[cst.FunctionDef]] = defaultdict(list)
        self._calls: Optional[Dict[str, List[Tuple[cst.Call, FunctionOrModule]]]] = None

    def of(self, node: FunctionOrModule) -> Scope:
        key = id(node)
        if key not in self._scopes:
            self._scopes[key] = Scope(node)
        return self._scopes[key]

    @property
    def module(self) -> Scope:
        return self.of(self.file.module)

    def comparisons(self) -> List[cst.Comparison]:
        """Every comparison of the file, in functions and classes too."""
        self._index()
        return self._comparisons

    def functions_named(self, name: str) -> List[cst.FunctionDef]:
        """The file's functions and methods (at any depth) called `name`."""
        self._index()
        return self._functions.get(name, [])

    def calls_named(self, name: str) -> List[Tuple[cst.Call, Scope]]:
        """Every call in a scope of the file whose callee's last name is `name` (`f(...)`, `obj.f(...)`), with
        that scope. Calls in a class body outside its methods, and in decorators and defaults, belong to no
        scope and are left out, as `Scope.calls` leaves them out."""
        return [(call, self.of(owner)) for call, owner in self.call_sites(name)]

    def call_sites(self, name: str) -> List[Tuple[cst.Call, FunctionOrModule]]:
        """As `calls_named`, with the function (or module) each call is in rather than its scope, which
        costs a walk of that function to build."""
        self._index()
        return self._calls.get(name, [])

    def _index(self) -> None:
        """One walk of the whole file for the questions above: a file's rules ask them many times."""
        if self._calls is not None:
            return
        self._calls = defaultdict(list)
        module = self.file.module
        stack: List[Tuple[cst.CSTNode, Optional[FunctionOrModule]]] = [(module, module)]
        while stack:
            node, owner = stack.pop()
            if isinstance(node, cst.Call):
                tail = call_tail(node)
                if tail is not None and owner is not None:
                    self._calls[tail].append((node, owner))
            elif isinstance(node, cst.Comparison):
                self._comparisons.append(node)
            elif isinstance(node, cst.FunctionDef):
                self._functions[node.name.value].append(node)
                stack.extend((child, node if child is node.body else None) for child in reversed(children(node)))
                continue
            elif isinstance(node, cst.ClassDef):
                owner = None
            stack.extend((child, owner) for child in reversed(children(node)))

    def module_strings(self) -> Dict[str, str]:
        if self._module_strings is None:
            self._module_strings = self.module.string_constants()
        return self._module_strings

    def string(self, node: Optional[cst.CSTNode], scope: Optional[Scope] = None) -> Optional[str]:
        """A string literal, or a name bound to one in `scope` or at module level."""
        text = literal_text(node)
        if text is not None or not isinstance(node, cst.Name):
            return text
        if scope is not None and scope.node is not self.file.module:
            local = scope.assigned.get(node.value)
            if local:
                return literal_text(local[0]) if len(local) == 1 else None
        return self.module_strings().get(node.value)


STR_METHODS = {"strip", "lstrip", "rstrip", "lower", "upper", "replace", "removeprefix", "removesuffix",
                "casefold", "title", "expandtabs"}


# ---------------------------------------------------------------- where text comes from

Accept = Callable[[cst.Call, Scope], bool]
# Calls whose result is text built from their receiver (string methods) or from their arguments.
_FROM_RECEIVER = STR_METHODS | {"format"}
_FROM_ARGUMENTS = {"join", "format", "list", "tuple", "sorted", "reversed", "str"}
_ADDS = {"append": None, "extend": None, "insert": 1}  # container methods and which argument they store


class TextSources:
    """Where a value comes from: `find(expr, scope, accept)` is the first call `accept` takes among
    the sources of `expr`.

    Text keeps what it is through names (assignments, `+=`, loop and comprehension variables,
    elements of `zip`/`enumerate`), containers (list and dict literals, `xs.append(x)`,
    comprehensions), concatenation, f-strings, `format`/`join`, string methods, subscripts, the
    return statements of the file's own functions, and the parameters of a function that every
    call in the file gives such a value.
    """

    _DEPTH = 24

    def __init__(self, file) -> None:
        self.file = file
        self.scopes: Scopes = file.fact(Scopes)

    def find(self, expr: cst.BaseExpression, scope: Scope, accept: Accept,
             cut: Optional[Callable[[cst.BaseExpression, Scope], bool]] = None) -> Optional[cst.Call]:
        """`cut(value)`: the value no longer carries what is looked for (the BOS a strip removed); a name that is
        once bound to such a value (`text = text.removeprefix(bos)`) is not followed either."""
        seen: Set[Tuple[int, int]] = set()
        work = [(expr, scope, 0)]
        while work:
            current, where, depth = work.pop()
            key = (id(current), id(where))
            if key in seen or depth > self._DEPTH:
                continue
            seen.add(key)
            if cut is not None and (cut(current, where) or isinstance(current, cst.Name) and any(
                    cut(v, where) for v in where.assigned.get(current.value, ()))):
                continue
            if isinstance(current, cst.Call) and accept(current, where):
                return current
            work.extend((e, s, depth + 1) for e, s in reversed(list(self._sources(current, where))))
        return None

    def _sources(self, expr: cst.BaseExpression, scope: Scope) -> Iterator[Tuple[cst.BaseExpression, Scope]]:
        if isinstance(expr, cst.Name):
            yield from self._name_sources(expr.value, scope)
        elif isinstance(expr, cst.Call):
            tail = call_tail(expr)
            if tail in _FROM_RECEIVER and isinstance(expr.func, cst.Attribute):
                yield expr.func.value, scope
            if tail in _FROM_ARGUMENTS:
                yield from ((a.value, scope) for a in expr.args)
            for helper in self.helpers(expr):
                inner = self.scopes.of(helper)
                yield from ((r.value, inner) for r in inner.returns if r.value is not None)
        elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Modulo)):
            yield expr.left, scope
            yield expr.right, scope
        elif isinstance(expr, cst.FormattedString):
            yield from ((p.expression, scope) for p in expr.parts if isinstance(p, cst.FormattedStringExpression))
        elif isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            yield expr.elt, scope
        elif isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            yield from ((e.value, scope) for e in expr.elements)
        elif isinstance(expr, cst.Dict):
            yield from ((e.value, scope) for e in expr.elements if isinstance(e, (cst.DictElement, cst.StarredDictElement)))
        elif isinstance(expr, cst.IfExp):
            yield expr.body, scope
            yield expr.orelse, scope
        elif isinstance(expr, (cst.Subscript, cst.Await)):
            yield (expr.value if isinstance(expr, cst.Subscript) else expr.expression), scope

    def _name_sources(self, name: str, scope: Scope) -> Iterator[Tuple[cst.BaseExpression, Scope]]:
        bound = False
        for value in list(scope.assigned.get(name, ())) + list(scope.augmented.get(name, ())):
            bound = True
            yield value, scope
        for iterable, path in scope.iterated.get(name, ()):
            bound = True
            element = element_source(iterable, path)
            if element is not None:
                yield element, scope
        for call in scope.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == name \
                    and func.attr.value in _ADDS:
                at = _ADDS[func.attr.value]
                args = [a.value for a in call.args if a.keyword is None]
                yield from ((a, scope) for a in (args if at is None else args[at:at + 1]))
        if bound or name in scope.unpacked:
            return
        if name in scope.params and isinstance(scope.node, cst.FunctionDef):
            yield from self._argument_sources(scope.node, name)
        elif scope.node is not self.file.module:
            yield from ((v, self.scopes.module) for v in self.scopes.module.assigned.get(name, ()))

    def _argument_sources(self, function: cst.FunctionDef, name: str) -> Iterator[Tuple[cst.BaseExpression, Scope]]:
        """What the callers give `name`: only when every call of `function` in the file gives something."""
        given = []
        for call, scope in self.calls_of(function):
            value = argument(call, function, name)
            if value is None:
                return
            given.append((value, scope))
        if len(given) == 1:
            yield given[0]

    # ---- the file's functions and their calls ----

    def helpers(self, call: cst.Call) -> List[cst.FunctionDef]:
        """The file's function (or method, called on `self`/`cls`) that `call` runs, when its name is unique."""
        func = call.func
        if isinstance(func, cst.Name):
            name = func.value
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            name = func.attr.value
        else:
            return []
        found = self.scopes.functions_named(name)
        return found if len(found) == 1 else []

    def calls_of(self, function: cst.FunctionDef) -> List[Tuple[cst.Call, Scope]]:
        """Every call in the file that runs `function`, with the scope it is in."""
        return [(call, self.scopes.of(owner)) for call, owner in self.callers(function)]

    def callers(self, function: cst.FunctionDef) -> List[Tuple[cst.Call, FunctionOrModule]]:
        """Every call in the file that runs `function`, with the function (or module) it is in."""
        return [(call, owner) for call, owner in self.scopes.call_sites(function.name.value)
                if self.helpers(call) == [function]]


def argument(call: cst.Call, function: cst.FunctionDef, name: str) -> Optional[cst.BaseExpression]:
    """The expression `call` gives `function`'s parameter `name` (by keyword or position), if any."""
    arg = keyword(call, name)
    if arg is not None:
        return arg.value
    names = [p.name.value for p in list(function.params.posonly_params) + list(function.params.params)]
    if name not in names:
        return None
    index = names.index(name)
    if isinstance(call.func, cst.Attribute) and names[:1] in (["self"], ["cls"]):
        index -= 1
    return positional(call, index) if index >= 0 else None


def element_source(iterable: cst.BaseExpression, path: Tuple[int, ...]) -> Optional[cst.BaseExpression]:
    """The iterable whose elements a loop variable (at `path` of the unpacked target) holds."""
    while path and isinstance(iterable, cst.Call) and call_tail(iterable) in ("zip", "enumerate"):
        if call_tail(iterable) == "zip":
            iterable, path = positional(iterable, path[0]), path[1:]
        elif path[0] == 1:
            iterable, path = positional(iterable, 0), path[1:]
        else:
            return None
        if iterable is None:
            return None
    return None if path else iterable


# ---------------------------------------------------------------- markers checked by a function

class MarkerChecks:
    """Which marker strings a function tests for presence: `"<think>" in text`, `text.count(m)`,
    `startswith`/`endswith` of the marker, or the separator of a `partition` on it; and which it looks
    up by position (`find`/`index`), which only tells where the marker is when it is there."""

    def __init__(self, file) -> None:
        self.scopes: Scopes = file.fact(Scopes)
        self._cache: Dict[int, Tuple[Set[str], Set[str]]] = {}

    def checked(self, scope: Scope, positions: bool = True) -> Set[str]:
        key = id(scope.node)
        if key not in self._cache:
            self._cache[key] = self._checked(scope)
        tested, located = self._cache[key]
        return tested | located if positions else tested

    def _checked(self, scope: Scope) -> Tuple[Set[str], Set[str]]:
        tested: Set[str] = set()
        located: Set[str] = set()
        for comparison in scope.comparisons:
            for target in comparison.comparisons:
                if isinstance(target.operator, (cst.In, cst.NotIn)):
                    text = self.scopes.string(comparison.left, scope)
                    if text is not None:
                        tested.add(text)
        for call in scope.calls:
            tail = call_tail(call)
            if tail in ("count", "startswith", "endswith", "find", "rfind", "index", "rindex") \
                    and isinstance(call.func, cst.Attribute):
                text = self.scopes.string(positional(call, 0), scope)
                if text is not None:
                    (tested if tail in ("count", "startswith", "endswith") else located).add(text)
        names = {n.value for test in scope.ifs for n in walk(test) if isinstance(n, cst.Name)}
        for name in names:
            for value, path in scope.unpacked.get(name, ()):
                if path == (1,) and isinstance(value, cst.Call) and call_tail(value) in ("partition", "rpartition"):
                    text = self.scopes.string(positional(value, 0), scope)
                    if text is not None:
                        tested.add(text)
        return tested, located

    def checks_reasoning_open(self, scope: Scope) -> bool:
        return any(is_reasoning_open(text) for text in self.checked(scope))

    def checks(self, scope: Scope, marker: str, positions: bool = True) -> bool:
        """Whether the function tests for `marker` (or a string that contains it, or that it contains);
        `positions=False` leaves out `find`/`index` lookups."""
        return any(marker.strip() in text or text.strip() in marker for text in self.checked(scope, positions)
                   if len(text.strip()) >= 3)


# ---------------------------------------------------------------- regular expressions

# Pattern and flags positions of the `re` functions.
RE_FUNCTIONS = {"compile": (0, 1), "search": (0, 2), "match": (0, 2), "fullmatch": (0, 2), "findall": (0, 2),
                 "finditer": (0, 2), "split": (0, 3), "sub": (0, 4), "subn": (0, 4)}
_INLINE_DOTALL = re.compile(r"\(\?[aiLmsux]*s[aiLmsux]*[:)]")


class Regex:
    """A regular expression as a call uses it: its pattern text and whether DOTALL is on
    (True, False, or None when the flags are computed)."""

    def __init__(self, call: cst.Call, pattern: str, dotall: Optional[bool]) -> None:
        self.call, self.pattern, self.dotall = call, pattern, dotall

    def wildcard(self) -> bool:
        """An unescaped `.` under a repetition, outside a character class: stops at newlines."""
        escaped = in_class = False
        text = self.pattern
        for i, char in enumerate(text):
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif in_class:
                in_class = char != "]"
            elif char == "[":
                in_class = True
            elif char == "." and i + 1 < len(text) and text[i + 1] in "*+{":
                return True
        return False


def regex_of(call: cst.Call, imports: Imports, scopes: Scopes, scope: Scope, depth: int = 0) -> Optional[Regex]:
    """The regex a `re.*` call (or a method of a compiled pattern) applies, when its pattern is
    a literal or a constant."""
    qualified = imports.qualified(call.func) or ""
    module, _, function = qualified.rpartition(".")
    if module in ("re", "regex") and function in RE_FUNCTIONS:
        pattern_at, flags_at = RE_FUNCTIONS[function]
        pattern_arg = keyword(call, "pattern")
        pattern = scopes.string(pattern_arg.value if pattern_arg else positional(call, pattern_at), scope)
        if pattern is None:
            return None
        flags_arg = keyword(call, "flags")
        flags = flags_arg.value if flags_arg else positional(call, flags_at)
        return Regex(call, pattern, _dotall(pattern, flags))
    if depth == 0 and function in RE_FUNCTIONS and isinstance(call.func, cst.Attribute) \
            and isinstance(call.func.value, cst.Name):
        name = call.func.value.value
        bound = scope.assigned.get(name) or scopes.module.assigned.get(name) or []
        if len(bound) == 1 and isinstance(bound[0], cst.Call):
            return regex_of(bound[0], imports, scopes, scopes.module, depth + 1)
    return None


def _dotall(pattern: str, flags: Optional[cst.BaseExpression]) -> Optional[bool]:
    if _INLINE_DOTALL.search(pattern):
        return True
    if flags is None:
        return False
    names = [n for n in walk(flags) if isinstance(n, (cst.Name, cst.Attribute))]
    spelled = {n.attr.value if isinstance(n, cst.Attribute) else n.value for n in names}
    if spelled & {"DOTALL", "S"}:
        return True
    known = {"re", "regex", "IGNORECASE", "I", "MULTILINE", "M", "VERBOSE", "X", "ASCII", "A", "UNICODE", "U"}
    if isinstance(flags, cst.Integer) or (spelled and spelled <= known):
        return False
    return None


# ---------------------------------------------------------------- where a function looks for the answer

_NUMBER = re.compile(r"\\d|\[-?0-9")  # a pattern that matches digits: `\d+`, `[0-9.]+`
_POSITIONS = ("find", "rfind", "index", "rindex")


class AnswerLookups:
    r"""How each function looks for the answer in a text, by the name of the text:

    - `searched(scope)`: given to a regex for an answer marker (`re.search(r"<answer>(.*)", text)`);
    - `located(scope)`: an answer marker looked up by position (`text.rfind("####")`);
    - `attempted(scope)`: any of those, a `split`/`partition` on an answer marker, or `marker in text`;
    - `last_number(expr, scope)`: the text whose last number `expr` holds
      (`re.findall(r"-?\d+", text)[-1]`, through a name bound to the matches).
    """

    def __init__(self, file) -> None:
        self.scopes: Scopes = file.fact(Scopes)
        self.imports: Imports = file.fact(Imports)
        self._cache: Dict[int, Tuple[Dict[str, List[str]], Dict[str, List[str]], Set[str]]] = {}

    def searched(self, scope: Scope) -> Dict[str, List[str]]:
        return self._lookups(scope)[0]

    def located(self, scope: Scope) -> Dict[str, List[str]]:
        return self._lookups(scope)[1]

    def attempted(self, scope: Scope) -> Set[str]:
        return self._lookups(scope)[2]

    def last_number(self, expr: cst.BaseExpression, scope: Scope) -> Optional[str]:
        expr = unwrap(expr)
        if not (isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)
                and number(expr.slice[0].slice.value) == -1.0):
            return None
        matches = expr.value
        if isinstance(matches, cst.Name):
            bound = scope.assigned.get(matches.value, ())
            matches = bound[0] if len(bound) == 1 else None
        if not isinstance(matches, cst.Call) or call_tail(matches) != "findall":
            return None
        regex = regex_of(matches, self.imports, self.scopes, scope)
        text = self._text_of(matches)
        if regex is None or not _NUMBER.search(regex.pattern) or is_answer_marker(regex.pattern):
            return None
        return text.value if isinstance(text, cst.Name) else None

    def _text_of(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        compiled = not (self.imports.qualified(call.func) or "").startswith(("re.", "regex."))
        return positional(call, 0 if compiled else 1)

    def _lookups(self, scope: Scope) -> Tuple[Dict[str, List[str]], Dict[str, List[str]], Set[str]]:
        key = id(scope.node)
        if key in self._cache:
            return self._cache[key]
        searched: Dict[str, List[str]] = {}
        located: Dict[str, List[str]] = {}
        attempted: Set[str] = set()
        for call in scope.calls:
            tail = call_tail(call)
            if tail in ("search", "match", "fullmatch", "findall", "finditer"):
                found = regex_of(call, self.imports, self.scopes, scope)
                text = self._text_of(call)
                if found is not None and is_answer_marker(found.pattern) and isinstance(text, cst.Name):
                    searched.setdefault(text.value, []).append(found.pattern)
            elif tail in _POSITIONS + ("split", "rsplit", "partition", "rpartition") and \
                    isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name):
                marker = self.scopes.string(positional(call, 0), scope)
                if marker is not None and is_answer_marker(marker):
                    attempted.add(call.func.value.value)
                    if tail in _POSITIONS:
                        located.setdefault(call.func.value.value, []).append(marker)
        for comparison in scope.comparisons:
            marker = self.scopes.string(comparison.left, scope)
            if marker is not None and is_answer_marker(marker):
                attempted.update(c.comparator.value for c in comparison.comparisons
                                 if isinstance(c.operator, (cst.In, cst.NotIn)) and isinstance(c.comparator, cst.Name))
        attempted.update(searched)
        self._cache[key] = searched, located, attempted
        return self._cache[key]


def unwrap(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`float(x.strip())` -> `x`: conversions and string methods keep what a value holds."""
    while isinstance(expr, cst.Call):
        if call_tail(expr) in STR_METHODS and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        elif call_tail(expr) in ("float", "int", "str") and isinstance(expr.func, cst.Name) and len(expr.args) == 1:
            expr = expr.args[0].value
        else:
            break
    return expr


# ---------------------------------------------------------------- marker extraction

class Extraction:
    """`text.split(marker)[-1]` and relatives: the text after a marker, taken without looking
    whether the marker is there. `kind` is split / rsplit / partition / rpartition, or the position
    method (find / rfind / index / rindex) whose result starts a slice of the text."""

    def __init__(self, node: cst.Subscript, kind: str, marker: str, index: Optional[int]) -> None:
        self.node, self.kind, self.marker, self.index = node, kind, marker, index


def may_extract(node: cst.Subscript) -> bool:
    """The shape of an extraction, checked before any scope is built."""
    if len(node.slice) != 1:
        return False
    key = node.slice[0].slice
    if isinstance(key, cst.Index):
        return isinstance(node.value, cst.Call) and call_tail(node.value) in ("split", "rsplit", "partition",
                                                                              "rpartition")
    return isinstance(key, cst.Slice) and key.lower is not None and not isinstance(
        key.lower, (cst.Integer, cst.UnaryOperation))


def extraction(node: cst.Subscript, scopes: Scopes, scope: Scope) -> Optional[Extraction]:
    if len(node.slice) != 1:
        return None
    key = node.slice[0].slice
    if isinstance(key, cst.Index):
        index = number(key.value)
        call = node.value
        if index is None or not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            return None
        kind = call.func.attr.value
        if kind not in ("split", "rsplit", "partition", "rpartition"):
            return None
        sep = keyword(call, "sep")
        marker = scopes.string(sep.value if sep else positional(call, 0), scope)
        if marker is None:
            return None
        if kind in ("split", "rsplit") and index in (1.0, -1.0):
            return Extraction(node, kind, marker, int(index))
        if kind in ("partition", "rpartition") and index in (2.0, -1.0):
            return Extraction(node, kind, marker, 2)
        return None
    if isinstance(key, cst.Slice) and key.lower is not None:
        found = _position_of(key.lower, scope)
        if found is None:
            return None
        call, held = found
        marker = scopes.string(positional(call, 0), scope)
        if marker is None or _position_checked(scope, marker, held, scopes):
            return None
        return Extraction(node, call_tail(call), marker, None)
    return None


def _is_position(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and call_tail(node) in _POSITIONS and isinstance(node.func, cst.Attribute)


def _position_of(lower: cst.BaseExpression, scope: Scope) -> Optional[Tuple[cst.Call, Optional[str]]]:
    """The `find`/`index` call a slice starts at (`text.find(m) + 3`), directly or through a name bound
    once to it (`start = text.find(m) + len(m)`), with that name."""
    for inner in walk(lower):
        if _is_position(inner):
            return inner, None
        if isinstance(inner, cst.Name) and len(scope.assigned.get(inner.value, ())) == 1:
            call = next((n for n in walk(scope.assigned[inner.value][0]) if _is_position(n)), None)
            if call is not None:
                return call, inner.value
    return None


def _position_checked(scope: Scope, marker: str, held: Optional[str], scopes: Scopes) -> bool:
    """The function compares the position (`start == -1`, `text.find(m) >= 0`, `start < len(m)`): it knows
    whether the marker was found."""
    for comparison in scope.comparisons:
        for side in [comparison.left] + [c.comparator for c in comparison.comparisons]:
            side = side.left if isinstance(side, cst.BinaryOperation) else side
            if isinstance(side, cst.Name) and side.value == held or \
                    _is_position(side) and scopes.string(positional(side, 0), scope) == marker:
                return True
    return False
