"""Reward functions of a file: which functions they are, whether they score a batch or one
completion, and which values they can produce.

A reward function is known by its signature (TRL's `completions` with `**kwargs`, verl's
`compute_score(data_source, solution_str, ground_truth, ...)`), by how it is registered
(`reward_funcs=[...]`, a reward dict, a registering decorator) or by its name
(`*reward*`, `*_score`, `compute_score`).
"""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set

import libcst as cst

from rllint.analysis.nodes import AstNodes
from rllint.analysis.syntax import updates_in_place, walk
from rllint.analysis.text import TEXT, TEXTS, Scope, Scopes, TextSources, call_tail, number, vocab_role, words

_REGISTER_KEYWORDS = {"reward_funcs", "reward_fns", "reward_fn", "reward_func", "reward_function",
                      "reward_functions", "reward_fn_list", "score_fn", "scoring_fn"}
# keywords that take a list of reward functions, each scored and summed by the trainer
REWARD_LIST_KEYWORDS = frozenset({"reward_funcs", "reward_fns", "reward_functions", "reward_fn_list"})
# words that make a `*reward*` name a thing around rewards rather than a reward function
_NOT_REWARD_WORDS = {"model", "models", "tokenizer", "manager", "config", "cfg", "dataset", "worker", "trainer",
                     "loader", "server", "client", "registry", "register", "type", "types", "stats", "metrics",
                     "log", "logs", "print", "init", "spec", "specs", "class", "cls", "name", "names", "weights",
                     "weight", "normalizer", "scaler", "whiten", "head", "buffer", "shaping", "std", "mean",
                     "advantages", "advantage", "kl", "processor", "actor", "critic", "group", "groups", "hook",
                     "fns", "funcs", "functions", "key", "keys", "device", "dataloader"}
_BATCH_PARAMS = {"completions", "responses", "solution_strs", "samples", "batch", "texts", "outputs", "generations",
                 "completion_texts", "response_texts", "predictions", "completion_contents", "data"}
_SINGLE_PARAMS = {"completion", "response", "solution_str", "text", "output", "generation", "prediction",
                  "completion_text", "response_text", "answer_str", "predict_str", "sample", "model_output"}


def _decorator_names(decorator: ast.expr) -> List[str]:
    """`register_reward`, `rewards.register` -> their dotted parts, without unparsing."""
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    if isinstance(decorator, ast.Call):
        parts.extend(a.value for a in decorator.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return parts


def _registered_names(nodes: AstNodes) -> Set[str]:
    """Function names passed as `reward_funcs=`, put in a reward dict or list, or decorated
    by a reward registry."""
    names: Set[str] = set()
    lists: Dict[str, List[ast.expr]] = {}
    roots: List[ast.expr] = []
    for node in nodes.of(ast.Assign, ast.keyword, ast.Call, ast.FunctionDef, ast.AsyncFunctionDef):
        if isinstance(node, ast.Assign):
            if isinstance(node.value, (ast.List, ast.Tuple, ast.Dict)):
                elements = node.value.values if isinstance(node.value, ast.Dict) else node.value.elts
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        lists.setdefault(target.id, []).extend(elements)
            if any(isinstance(t, ast.Name) and "reward" in t.id.lower() for t in node.targets):
                roots.append(node.value)
        elif isinstance(node, ast.keyword) and node.arg in _REGISTER_KEYWORDS:
            roots.append(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "append", "extend") and isinstance(node.func.value, ast.Name) and "reward" in node.func.value.id.lower():
            roots.extend(node.args)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
            spelled = " ".join(p for d in node.decorator_list for p in _decorator_names(d)).lower()
            if "reward" in spelled or "score" in spelled:
                names.add(node.name)
    while roots:
        value = roots.pop()
        if isinstance(value, ast.Name):
            names.add(value.id)
            roots.extend(lists.pop(value.id, []))
        elif isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            roots.extend(value.elts)
        elif isinstance(value, ast.Dict):
            roots.extend(value.values)
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "partial":
            roots.extend(value.args[:1])
    return names


# Calls that answer yes or no: string tests and the boolean builtins.
_STR_PREDICATES = {"startswith", "endswith", "isdigit", "isnumeric", "isdecimal", "isalpha", "isalnum", "isspace",
                   "islower", "isupper", "istitle", "isidentifier", "isascii"}
_BOOL_BUILTINS = {"bool", "isinstance", "callable", "any", "all"}


def _predicate(call: cst.Call) -> bool:
    """`text.isdigit()`, `s.startswith(x)`, `bool(x)`, `any(...)`: a call whose value is True or False."""
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value in _STR_PREDICATES
    return isinstance(call.func, cst.Name) and call.func.value in _BOOL_BUILTINS and len(call.args) >= 1


def param_names(fn: cst.FunctionDef) -> List[str]:
    p = fn.params
    return [param.name.value for param in list(p.posonly_params) + list(p.params) + list(p.kwonly_params)]


class RewardFunctions:
    """`is_reward(fn)`, `takes_batch(fn)` and `values(fn)` for the functions of a file."""

    def __init__(self, file) -> None:
        self.file = file
        self.scopes: Scopes = file.fact(Scopes)
        text = file.text
        self.registered = _registered_names(file.fact(AstNodes)) if "reward" in text or "score" in text else set()
        self._defines_any: Optional[bool] = None
        self._scores: Dict[int, bool] = {}

    def is_reward(self, fn: cst.FunctionDef) -> bool:
        return self._is_reward(fn.name.value, param_names(fn), fn.params.star_kwarg is not None)

    def _is_reward(self, name: str, params: List[str], star_kwargs: bool) -> bool:
        params = set(params) - {"self", "cls"}
        if name in self.registered:
            return True
        if "completions" in params and star_kwargs:
            return True  # TRL's reward-function signature
        if {"solution_str", "ground_truth"} <= params:
            return True  # verl's compute_score
        parts = set(words(name))
        if parts & _NOT_REWARD_WORDS or name.startswith("__"):
            return False
        if "reward" in parts or "rewards" in parts or name.lower().endswith("_reward"):
            return bool(params)
        return (name == "compute_score" or name.endswith("_score")) and bool(params & (_BATCH_PARAMS | _SINGLE_PARAMS))

    def named(self, name: str) -> bool:
        """`name` is registered as a reward function or names one the file defines."""
        return name in self.registered or any(
            node.name == name and self._ast_is_reward(node)
            for node in self.file.fact(AstNodes).of(ast.FunctionDef, ast.AsyncFunctionDef))

    def _ast_is_reward(self, node: ast.AST) -> bool:
        args = node.args
        return self._is_reward(node.name, [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs],
                               args.kwarg is not None)

    def takes_completions(self, fn: cst.FunctionDef) -> bool:
        """A reward function by its signature and use, not only by its name: registered as one, TRL's or
        verl's signature, or a parameter that holds completions (`compute_rewards(scores, kl)` is not one)."""
        if not self.is_reward(fn):
            return False
        params = set(param_names(fn)) - {"self", "cls"}
        if fn.name.value in self.registered or {"solution_str", "ground_truth"} <= params:
            return True
        return any(p in _BATCH_PARAMS or p in _SINGLE_PARAMS or vocab_role(p) in (TEXT, TEXTS) for p in params)

    def summed(self, fn: cst.FunctionDef) -> bool:
        """Its score is added to another value (`format_reward + equation_reward`, directly or through the
        names its calls are assigned to): the reward the trainer sees is the sum, not this function's."""
        name = fn.name.value
        nodes = self.file.fact(AstNodes)

        def calls_it(node: ast.AST) -> bool:
            return isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Name) and node.func.id == name)
                or (isinstance(node.func, ast.Attribute) and node.func.attr == name))

        results = {target.id for node in nodes.of(ast.Assign) if calls_it(node.value)
                   for target in node.targets if isinstance(target, ast.Name)}

        def is_result(node: ast.AST) -> bool:
            return calls_it(node) or (isinstance(node, ast.Name) and node.id in results)

        for node in nodes.of(ast.BinOp):
            if isinstance(node.op, ast.Add) and any(
                    is_result(side) and not isinstance(other, ast.Constant)
                    for side, other in ((node.left, node.right), (node.right, node.left))):
                return True
        return False

    def scores(self, function: cst.FunctionDef) -> bool:
        """`function` is a reward function or is called by one (through the file's functions): a check in an
        evaluation harness rewards no policy."""
        if not self.defines_any:
            return False
        cached = self._scores.get(id(function))
        if cached is None:
            sources = self.file.fact(TextSources)
            work, seen, cached = [function], set(), False
            while work and len(seen) < 16 and not cached:
                current = work.pop()
                if id(current) in seen:
                    continue
                seen.add(id(current))
                cached = self.is_reward(current)
                work.extend(owner for _, owner in sources.callers(current) if isinstance(owner, cst.FunctionDef))
            self._scores[id(function)] = cached
        return cached

    def reward_term(self, function: cst.FunctionDef) -> bool:
        """Its result is part of a reward by use: a reward function of this file, or of a project file that
        imports it (`Flow.callers`), adds it into its score, appends it or returns it
        (`total = format_check(c) + feedback(c)`). A check whose result only decides a branch is not one."""
        from rllint.analysis.flow import Flow  # the interpreter reads this module's facts

        flow = self.file.fact(Flow)
        ir = next((f for f in flow.ir.all_functions() if f.node is function), None)
        if ir is None:
            return False
        for site in flow.callers(ir):
            caller = site.function
            other = caller.module.flow.file if caller.module.flow is not None else None
            if isinstance(caller.node, cst.FunctionDef) and other is not None and \
                    other.fact(RewardFunctions).is_reward(caller.node) and _scored(site.node, caller.node):
                return True
        return False

    @property
    def defines_any(self) -> bool:
        """The file defines at least one reward function."""
        if self._defines_any is None:
            self._defines_any = any(
                self._ast_is_reward(node) for node in self.file.fact(AstNodes).of(ast.FunctionDef, ast.AsyncFunctionDef))
        return self._defines_any

    def takes_batch(self, fn: cst.FunctionDef) -> bool:
        """It receives every completion of a step (a list), not one completion."""
        params = param_names(fn)
        for param in list(fn.params.params) + list(fn.params.posonly_params) + list(fn.params.kwonly_params):
            annotation = param.annotation.annotation if param.annotation else None
            if isinstance(annotation, cst.Name) and annotation.value == "str":
                if param.name.value in _BATCH_PARAMS:
                    return False
        return any(p in _BATCH_PARAMS for p in params)

    def values(self, fn: cst.FunctionDef) -> Optional[Set[float]]:
        """The scores this function can give one completion, when each is a literal (or a
        bool); None when any of them is computed."""
        scope = self.scopes.of(fn)
        found: Set[float] = set()
        returns = [r.value for r in scope.returns if r.value is not None
                   and not (isinstance(r.value, cst.Name) and r.value.value == "None")]
        if not returns:
            return None
        for value in returns:
            leaves = self._leaves(value, scope, 0, set())
            if leaves is None:
                return None
            found |= leaves
        return found

    def _leaves(self, expr: cst.BaseExpression, scope: Scope, depth: int, seen: Set[str]) -> Optional[Set[float]]:
        if depth > 8:
            return None
        value = number(expr)
        if value is not None:
            return {value}
        if isinstance(expr, cst.IfExp):
            body = self._leaves(expr.body, scope, depth + 1, seen)
            orelse = self._leaves(expr.orelse, scope, depth + 1, seen)
            return None if body is None or orelse is None else body | orelse
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self._leaves(expr.elt, scope, depth + 1, seen)
        if isinstance(expr, (cst.List, cst.Tuple)):
            found: Set[float] = set()
            for element in expr.elements:
                leaves = self._leaves(element.value, scope, depth + 1, seen)
                if leaves is None:
                    return None
                found |= leaves
            return found
        if isinstance(expr, (cst.Comparison, cst.UnaryOperation)) and (
                isinstance(expr, cst.Comparison) or isinstance(expr.operator, cst.Not)):
            return {0.0, 1.0}
        if isinstance(expr, cst.BooleanOperation):  # `a and b` is one of its operands
            left = self._leaves(expr.left, scope, depth + 1, seen)
            right = self._leaves(expr.right, scope, depth + 1, seen)
            return None if left is None or right is None else left | right
        if isinstance(expr, cst.Call) and _predicate(expr):
            return {0.0, 1.0}
        if isinstance(expr, cst.Call) and call_tail(expr) in ("float", "int") and isinstance(
                expr.func, cst.Name) and len(expr.args) == 1:
            return self._leaves(expr.args[0].value, scope, depth + 1, seen)
        if isinstance(expr, cst.Name) and expr.value not in seen:
            return self._name_leaves(expr.value, scope, depth, seen | {expr.value})
        return None

    def _name_leaves(self, name: str, scope: Scope, depth: int, seen: Set[str]) -> Optional[Set[float]]:
        if name in scope.params or name in scope.iterated or name in scope.unpacked or name not in scope.assigned:
            return None
        found: Set[float] = set()
        for value in scope.assigned[name]:
            leaves = self._leaves(value, scope, depth + 1, seen)
            if leaves is None:
                return None
            found |= leaves
        for call in scope.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == name:
                if func.attr.value == "append" and len(call.args) == 1:
                    leaves = self._leaves(call.args[0].value, scope, depth + 1, seen)
                elif func.attr.value in ("extend", "insert", "__setitem__"):
                    leaves = None
                else:
                    continue
                if leaves is None:
                    return None
                found |= leaves
        for node in walk(scope.node.body if isinstance(scope.node, cst.FunctionDef) else scope.node):
            if updates_in_place(node, name):
                return None
        return found


def _scored(call: cst.Call, function: cst.FunctionDef) -> bool:
    """The value of `call`, directly or through the names it is assigned to, is added to or subtracted from
    another (`+`, `+=`), appended, or returned by `function`."""
    names = {target.target.value for node in walk(function) if isinstance(node, cst.Assign) and node.value is call
             for target in node.targets if isinstance(target.target, cst.Name)}

    def holds(expr: Optional[cst.BaseExpression]) -> bool:
        return expr is call or isinstance(expr, cst.Name) and expr.value in names

    for node in walk(function):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)) and (
                holds(node.left) or holds(node.right)):
            return True
        if isinstance(node, cst.AugAssign) and isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)) \
                and holds(node.value):
            return True
        if isinstance(node, cst.Return) and holds(node.value):
            return True
        if isinstance(node, cst.Call) and call_tail(node) == "append" and len(node.args) == 1 and \
                holds(node.args[0].value):
            return True
    return False
