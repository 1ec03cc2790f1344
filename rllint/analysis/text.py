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
from typing import Dict, List, Optional, Set, Tuple, Union

import libcst as cst

from rllint.analysis.imports import Imports
from rllint.analysis.syntax import keyword, positional, walk

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
        elif isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.DivideAssign) \
                and isinstance(node.target, cst.Name):
            self.augmented_divisions.add(node.target.value)
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

    def of(self, node: FunctionOrModule) -> Scope:
        key = id(node)
        if key not in self._scopes:
            self._scopes[key] = Scope(node)
        return self._scopes[key]

    @property
    def module(self) -> Scope:
        return self.of(self.file.module)

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


# ---------------------------------------------------------------- roles

# Parameters of a reward function that hold the completion(s) it scores, whatever their name says elsewhere.
_REWARD_TEXT_PARAMS = {**{n: TEXT for n in ("response", "resp", "text", "output", "generation", "prediction", "pred",
                                            "sample", "answer_text", "model_output", "solution", "completion_str")},
                       **{n: TEXTS for n in ("resps", "texts", "outputs", "samples", "predictions", "preds",
                                             "solution_strs", "generations")}}
_STR_METHODS = {"strip", "lstrip", "rstrip", "lower", "upper", "replace", "removeprefix", "removesuffix",
                "casefold", "title", "expandtabs"}
_GENERATE = {"generate", "generate_sequences", "sample"}


class TextRoles:
    """What a name or expression holds (TEXT, TEXTS, GEN_IDS, IDS, PROMPT, PROMPTS or None).

    Decode calls, generation outputs and reward-function parameters decide first; loops and
    comprehensions carry a list's role to its elements; names that the source binds to
    something else keep no role; unbound names (parameters, globals) fall back to vocabulary.
    """

    def __init__(self, file) -> None:
        self.file = file
        self.scopes: Scopes = file.fact(Scopes)
        self._names: Dict[Tuple[str, int], Optional[str]] = {}  # (name, scope) -> role, each worked out once

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
        from rllint.analysis.rewards import RewardFunctions  # rewards builds on this module

        if isinstance(scope.node, cst.FunctionDef) and name.lower() in _REWARD_TEXT_PARAMS \
                and self.file.fact(RewardFunctions).is_reward(scope.node):
            return _REWARD_TEXT_PARAMS[name.lower()]
        return vocab_role(name)

    def _call_role(self, call: cst.Call, scope: Scope, depth: int) -> Optional[str]:
        tail = call_tail(call)
        if tail == "decode":
            return TEXT
        if tail == "batch_decode":
            return TEXTS
        if tail in _GENERATE and isinstance(call.func, cst.Attribute):
            return GEN_IDS
        if tail in _STR_METHODS and isinstance(call.func, cst.Attribute):
            return TEXT if self.role(call.func.value, scope, depth + 1) == TEXT else None
        if tail in ("list", "tuple") and call.args:
            return self.role(call.args[0].value, scope, depth + 1)
        if tail in ("to", "cpu", "tolist", "detach", "contiguous", "long") and isinstance(call.func, cst.Attribute):
            role = self.role(call.func.value, scope, depth + 1)
            return role if role in (GEN_IDS, IDS) else None
        return None

    def _subscript_role(self, sub: cst.Subscript, scope: Scope, depth: int) -> Optional[str]:
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


# ---------------------------------------------------------------- markers checked by a function

class MarkerChecks:
    """Which marker strings a function tests for presence: `"<think>" in text`, `text.count(m)`,
    `startswith`/`endswith`/`find` of the marker, or the separator of a `partition` on it."""

    def __init__(self, file) -> None:
        self.scopes: Scopes = file.fact(Scopes)
        self._cache: Dict[int, Set[str]] = {}

    def checked(self, scope: Scope) -> Set[str]:
        key = id(scope.node)
        if key not in self._cache:
            self._cache[key] = self._checked(scope)
        return self._cache[key]

    def _checked(self, scope: Scope) -> Set[str]:
        found: Set[str] = set()
        for comparison in scope.comparisons:
            for target in comparison.comparisons:
                if isinstance(target.operator, (cst.In, cst.NotIn)):
                    text = self.scopes.string(comparison.left, scope)
                    if text is not None:
                        found.add(text)
        for call in scope.calls:
            if call_tail(call) in ("count", "startswith", "endswith", "find", "rfind", "index", "rindex") \
                    and isinstance(call.func, cst.Attribute):
                text = self.scopes.string(positional(call, 0), scope)
                if text is not None:
                    found.add(text)
        tested = {n.value for test in scope.ifs for n in walk(test) if isinstance(n, cst.Name)}
        for name in tested:
            for value, path in scope.unpacked.get(name, ()):
                if path == (1,) and isinstance(value, cst.Call) and call_tail(value) in ("partition", "rpartition"):
                    text = self.scopes.string(positional(value, 0), scope)
                    if text is not None:
                        found.add(text)
        return found

    def checks_reasoning_open(self, scope: Scope) -> bool:
        return any(is_reasoning_open(text) for text in self.checked(scope))

    def checks(self, scope: Scope, marker: str) -> bool:
        return any(marker.strip() in text or text.strip() in marker for text in self.checked(scope)
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


# ---------------------------------------------------------------- marker extraction

class Extraction:
    """`text.split(marker)[-1]` and relatives: the text after a marker, taken without looking
    whether the marker is there. `kind` is split / rsplit / partition / rpartition / find."""

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
    return isinstance(key, cst.Slice) and key.lower is not None and key.upper is None and not isinstance(
        key.lower, (cst.Integer, cst.UnaryOperation, cst.Name))


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
    if isinstance(key, cst.Slice) and key.lower is not None and key.upper is None:
        for inner in walk(key.lower):
            if isinstance(inner, cst.Call) and call_tail(inner) in ("find", "index", "rfind", "rindex") \
                    and isinstance(inner.func, cst.Attribute):
                marker = scopes.string(positional(inner, 0), scope)
                if marker is not None:
                    return Extraction(node, "find", marker, None)
    return None
