"""The backward slice of the loss: the statements whose values reach a backward sink.

Sinks: `loss.backward()`, `loss.sum().backward()`, `scaler.scale(loss).backward()`,
`accelerator.backward(loss)`, `engine.backward(loss)` / `model.backward(loss)` (DeepSpeed),
`torch.autograd.backward(loss)`, and the values returned by `compute_loss` / `*_loss` /
`*_loss_fn` functions and methods (TRL trainers return the loss to a caller that calls
backward). From each sink the slice follows, within the function, every assignment,
augmented assignment, loop target, `with ... as` and container mutation (`xs.append(v)`)
that defines a name it uses, and into the return statements of local helper functions
whose results it uses. Each statement remembers how it was reached, for messages.

A backward is a policy-gradient step when its slice multiplies a value that carries the
policy's gradient by a weight without gradient that is an advantage, reward or return
(`logps * advantages`, `ratio * batch["adv"]`), or by a value-model advantage; SFT
cross-entropy, DPO margins and critic losses are not. `training_loops()` finds the loops
that take such a step on every pass: a hand-written RL training loop.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.context import tokens
from rllint.analysis.grad import (ADVANTAGE, GRAD, INPLACE_METHODS, MUTATING_CONTAINER, STOPPED, GradFlow, Tag,
                                  carries)
from rllint.analysis.roles import POLICY, REWARD, VALUE, ModelRoles, body_of, calls_in, statements
from rllint.analysis.syntax import children, dotted, walk

_MUTATORS = MUTATING_CONTAINER | INPLACE_METHODS
# Words of the weights a policy-gradient loss multiplies log-probs or ratios by.
_WEIGHT_WORDS = frozenset({"advantage", "advantages", "adv", "advs", "reward", "rewards", "return", "returns",
                           "gae", "score", "scores"})
_LOOPS = (cst.For, cst.While)


@dataclass
class Sink:
    """Where the loss leaves the code: a backward call, or the return of a loss function."""

    node: cst.CSTNode  # the backward call, or the return statement
    roots: Tuple[cst.BaseExpression, ...]  # the loss expressions
    function: Optional[cst.FunctionDef]
    backward: bool  # a backward call (a training step), not a returned loss


@dataclass
class Step:
    """How a statement entered the slice: through `name`, from the statement `parent` (None: the sink)."""

    name: str
    parent: Optional[cst.CSTNode]
    sink: Sink
    parts: Tuple[cst.CSTNode, ...] = ()  # the expressions of the statement that reach the loss (empty: all)


class LossSlice:
    def __init__(self, file) -> None:
        self.grad: GradFlow = file.fact(GradFlow)
        self.roles: ModelRoles = file.fact(ModelRoles)
        self.module = file.module
        self.sinks: List[Sink] = []
        self.slice: Dict[cst.CSTNode, Step] = {}  # statement -> how it was reached
        self._defs: Dict[Optional[cst.CSTNode], Dict[str, List[Tuple[cst.CSTNode, List[cst.CSTNode]]]]] = {}
        self._returns: Dict[cst.FunctionDef, List[cst.Return]] = {}
        self._trained: Optional[Set[str]] = None
        self._find_sinks()
        for sink in self.sinks:
            self._follow(sink)

    # ---- sinks ----

    def _find_sinks(self) -> None:
        for scope, stmts in self.roles.calls.items():
            function = scope if isinstance(scope, cst.FunctionDef) else None
            defs: Dict[str, List[Tuple[cst.CSTNode, List[cst.CSTNode], Optional[int]]]] = {}
            self._defs[function] = defs
            returns: List[cst.Return] = []
            is_loss = function is not None and self.grad.is_loss_function(function)
            for stmt, calls in stmts:
                self._record_defs(stmt, defs)
                if isinstance(stmt, cst.Return) and stmt.value is not None:
                    returns.append(stmt)
                    if is_loss:
                        self.sinks.append(Sink(stmt, tuple(_loss_parts(stmt.value)), function, False))
                for call in calls:
                    roots = self._backward_roots(call)
                    if roots:
                        self.sinks.append(Sink(call, roots, function, True))
            if function is not None:
                self._returns[function] = returns

    @staticmethod
    def _backward_roots(call: cst.Call) -> Tuple[cst.BaseExpression, ...]:
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward"):
            return ()
        positional = tuple(a.value for a in call.args if a.keyword is None and not a.star)
        if positional:
            return positional[:1]  # accelerator.backward(loss), torch.autograd.backward(loss)
        return (call.func.value,)  # loss.backward(), scaler.scale(loss).backward()

    @staticmethod
    def _record_defs(stmt, defs) -> None:
        def add(target, values, slot=None) -> None:
            if isinstance(target, (cst.Tuple, cst.List)):
                starred = any(isinstance(e, cst.StarredElement) for e in target.elements)
                for position, element in enumerate(target.elements):
                    add(element.value, values, None if starred or slot is not None else position)
                return
            if isinstance(target, cst.StarredElement):
                add(target.value, values)
                return
            if isinstance(target, cst.Subscript):
                target = target.value
            key = dotted(target)
            if key is not None:
                defs.setdefault(key, []).append((stmt, values, slot))

        if isinstance(stmt, cst.Assign):
            for target in stmt.targets:
                add(target.target, [stmt.value])
        elif isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
            add(stmt.target, [stmt.value])
        elif isinstance(stmt, cst.AugAssign):
            add(stmt.target, [stmt.value, stmt.target])
        elif isinstance(stmt, cst.For):
            add(stmt.target, [stmt.iter])
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                if item.asname is not None:
                    add(item.asname.name, [item.item])
        elif isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
            call = stmt.value
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in _MUTATORS:
                add(call.func.value, [a.value for a in call.args])

    # ---- the slice ----

    def _follow(self, sink: Sink) -> None:
        work: List[tuple] = [(None, list(sink.roots), sink.function, None)]
        while work:
            parent, expressions, function, index = work.pop()
            defs = self._defs.get(function, {})
            for expression in expressions:
                for key in _uses(expression):
                    for stmt, values, slot in defs.get(key, ()):
                        if stmt not in self.slice:
                            parts = [_project(v, slot) for v in values]
                            self.slice[stmt] = Step(key, parent if parent is not None else sink.node, sink,
                                                    tuple(parts) if slot is not None else ())
                            work.append((stmt, parts, function, slot))
                for call in calls_in(expression):
                    helper = self.grad.helper_of(call)
                    if helper is None:
                        continue
                    slot = index if call is expression else None
                    for ret in self._returns.get(helper, ()):
                        if ret not in self.slice:
                            part = _project(ret.value, slot)
                            self.slice[ret] = Step(f"{helper.name.value}()", parent or sink.node, sink,
                                                   (part,) if part is not ret.value else ())
                            work.append((ret, [part], helper, None))

    def path(self, stmt: cst.CSTNode) -> List[str]:
        """The names from the sink down to `stmt`: [`loss`, `pg_loss`, `ratio`]."""
        names = []
        seen: Set[cst.CSTNode] = set()
        while stmt in self.slice and stmt not in seen:
            seen.add(stmt)
            step = self.slice[stmt]
            names.append(step.name)
            stmt = step.parent
        return names[::-1]

    def describe(self, stmt: cst.CSTNode, line) -> str:
        """`loss` (line 57) -> `pg_loss` -> `ratio`, or the return of `pg_loss` (line 10) -> `clipped`.

        `line` maps a node to its line number (positions are resolved only to word findings).
        """
        names = self.path(stmt)
        step = self.slice.get(stmt)
        sink = step.sink if step is not None else next(s for s in self.sinks if s.node is stmt)
        if sink.backward:
            root = " ".join(self.module.code_for_node(sink.roots[0]).split())
            head = f"`{root}` (line {line(sink.node)})"
            names = names[1:] if names[:1] == [root] else names
        else:
            head = f"the return of `{sink.function.name.value}` (line {line(sink.node)})"
        return " -> ".join([head] + [f"`{name}`" for name in names])

    def trains(self, model: str) -> bool:
        """Whether this file trains the reward model `model`: its parameters reach an optimizer, or its output
        feeds a backward that is not a policy-gradient step (a reward model fitted to preferences)."""
        if self._trained is None:
            self._trained = set()
            for forward in self.grad.forwards:
                step = self.slice.get(forward.statement) if forward.role == REWARD else None
                if step is not None and step.sink.backward and not self.policy_gradient(step.sink):
                    self._trained.add(forward.model)
        return model in self._trained or self.roles.is_trained(model)

    def contains(self, stmt: cst.CSTNode, node: Optional[cst.CSTNode] = None) -> bool:
        """Whether `stmt` is in the slice; with `node`, whether `node` is in the part of it that reaches the loss
        (`return loss, pg_loss.item()` returns the loss first and a metric after it)."""
        step = self.slice.get(stmt)
        if step is not None:
            return node is None or not step.parts or any(_inside(node, part) for part in step.parts)
        return any(s.node is stmt and (node is None or any(_inside(node, root) for root in s.roots))
                   for s in self.sinks if not s.backward)

    # ---- what rules ask ----

    def policy_gradient(self, sink: Sink) -> bool:
        """Whether the loss at `sink` weights the policy's log-probs or ratios by an advantage, reward or
        return (see the module docstring)."""
        statements_of = [stmt for stmt, step in self.slice.items() if step.sink is sink] + [sink.node]
        for stmt in statements_of:
            for node in walk(stmt, into_functions=True):
                for factor, weight in _factors(node):
                    if self._carries_policy(factor) and self._is_weight(weight):
                        return True
        return False

    def training_loops(self) -> List[cst.CSTNode]:
        """The outermost `for` / `while` loops that take a policy-gradient backward step on every pass, in
        their body or through the local functions they call (to any depth). A loop inside a function that
        such a loop calls is part of that loop, not another one."""
        steps = {sink.node: sink.function for sink in self.sinks if sink.backward and self.policy_gradient(sink)}
        if not steps:
            return []
        training = {function for function in steps.values() if function is not None}
        changed = True
        while changed:  # functions that call a training function train too
            changed = False
            for scope, stmts in self.roles.calls.items():
                if isinstance(scope, cst.FunctionDef) and scope not in training and any(
                        self.grad.helper_of(call) in training for _, calls in stmts for call in calls):
                    training.add(scope)
                    changed = True
        loops: List[Tuple[Optional[cst.CSTNode], cst.CSTNode]] = []
        reached: Set[cst.FunctionDef] = set()
        for scope in self.roles.calls:
            for stmt in statements(body_of(scope)):
                if not isinstance(stmt, _LOOPS) or any(loop is not stmt and _inside(stmt, loop) for _, loop in loops):
                    continue
                called = {self.grad.helper_of(call) for call in calls_in(stmt)} - {None}
                if any(node in steps for node in walk(stmt)) or called & training:
                    loops.append((scope, stmt))
                    reached |= self._reachable(called & training)
        return [loop for scope, loop in loops if scope not in reached]

    def _reachable(self, functions: Set[cst.FunctionDef]) -> Set[cst.FunctionDef]:
        """`functions` and the local functions they call, to any depth."""
        seen: Set[cst.FunctionDef] = set()
        work = list(functions)
        while work:
            function = work.pop()
            if function in seen:
                continue
            seen.add(function)
            work.extend(h for _, calls in self.roles.calls.get(function, ()) for call in calls
                        for h in [self.grad.helper_of(call)] if h is not None)
        return seen

    def _carries_policy(self, expr: cst.CSTNode) -> bool:
        return any(tag.kind == GRAD for node in _name_nodes(expr) for tag in self.grad.name_flows.get(node, ()))

    def _is_weight(self, expr: cst.CSTNode) -> bool:
        """An advantage, reward or return without gradient: by a name or a string key, or a value-model advantage."""
        flow = [tag for node in _name_nodes(expr) for tag in self.grad.name_flows.get(node, ())]
        if any(tag.kind == GRAD for tag in flow):
            return False
        if any(tag.kind == ADVANTAGE for tag in flow) or any(node in self.grad.advantages for node in walk(expr)):
            return True
        for node in walk(expr):
            word = (node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name)
                    else node.evaluated_value if isinstance(node, cst.SimpleString) else None)
            if isinstance(word, str) and _WEIGHT_WORDS.intersection(tokens(word)):
                return True
        return False

    def gradless_losses(self) -> Iterator[Tuple[Sink, List[Tag]]]:
        """Losses (at a backward call, or returned by a loss function) that carry no gradient because
        policy outputs were cut (no_grad / detach).

        Silent when the loss carries any gradient, or when it passes through code this file does
        not show (that code may run the policy with gradient).
        """
        for sink in self.sinks:
            flow = frozenset()
            for root in sink.roots:
                for node in _name_nodes(root):
                    flow = flow | self.grad.name_flows.get(node, frozenset())
            stopped = [t for t in flow if t.kind == STOPPED]
            if not stopped or carries(flow) or self._opaque(sink):
                continue
            yield sink, stopped

    def _opaque(self, sink: Sink) -> bool:
        """Whether the loss passes through code this file does not show: a call of a module or function
        that is neither torch / numpy / a builtin nor a local helper (`head(features)`, `criterion(...)`,
        `self.loss_fn(...)`), or a call handed a model. Such code may hold the parameters that train."""
        for stmt, step in self.slice.items():
            if step.sink is not sink or stmt in self.grad.no_grad_statements:
                continue
            for call in calls_in(stmt):
                if self.grad.helper_of(call) is not None or self.grad.remote_helper(call) is not None:
                    continue
                if any(self.roles.role(arg.value, sink.function) in (POLICY, VALUE) for arg in call.args):
                    return True
                if not self._known(call):
                    return True
        return False

    def _known(self, call: cst.Call) -> bool:
        """Forwards of models with a role, torch / numpy / math functions, builtins, and methods of local
        values (tensor methods)."""
        func = call.func
        model = self.roles.is_forward(call)
        if model is not None and (self.roles.role(model) is not None or self.grad.follows(call)):
            return True  # a forward of a model with a role, or of a helper's model parameter: in the flows already
        key = dotted(func)
        if key is None:
            return isinstance(func, cst.Attribute)  # `(a - b).exp()`: a method of a computed value
        root = key.split(".")[0]
        qualified = self.grad.imports.qualified(func) or key
        if qualified.startswith(("torch.", "numpy.", "math.")):
            return True
        if "." not in key:
            return key in _BUILTINS
        return root != "self" and root not in self.grad.imports.aliases


_BUILTINS = {"sum", "len", "float", "int", "min", "max", "abs", "list", "tuple", "zip", "range", "enumerate",
             "sorted", "reversed", "round", "pow"}


def _project(expr: cst.CSTNode, slot: Optional[int]) -> cst.CSTNode:
    """The part of `expr` that lands in position `slot` of a tuple unpacking (all of it when unknown)."""
    if slot is not None and isinstance(expr, (cst.Tuple, cst.List)) and slot < len(expr.elements) \
            and not any(isinstance(e, cst.StarredElement) for e in expr.elements):
        return expr.elements[slot].value
    return expr


def _loss_parts(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The loss in a returned value: `loss`, the first of `(loss, outputs)`, both arms of `a if c else b`."""
    if isinstance(expr, cst.IfExp):
        yield from _loss_parts(expr.body)
        yield from _loss_parts(expr.orelse)
    elif isinstance(expr, (cst.Tuple, cst.List)) and expr.elements:
        yield expr.elements[0].value
    else:
        yield expr


def _uses(expression: cst.CSTNode) -> Set[str]:
    """Dotted names an expression reads (`self.x.y` gives `self.x.y`, `self.x` and `self`)."""
    keys: Set[str] = set()
    stack = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Name, cst.Attribute)):
            key = dotted(node)
            if key is not None:
                parts = key.split(".")
                keys.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                continue
            if isinstance(node, cst.Attribute):
                stack.append(node.value)
                continue
        if isinstance(node, cst.Arg):
            stack.append(node.value)
            continue
        stack.extend(children(node))
    return keys


def _factors(node: cst.CSTNode) -> Iterator[Tuple[cst.CSTNode, cst.CSTNode]]:
    """Both orders of the two factors of a product: `a * b`, `a.mul(b)`, `torch.mul(a, b)`."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        pair = (node.left, node.right)
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in (
            "mul", "multiply"):
        args = [a.value for a in node.args if a.keyword is None]
        if len(args) == 2:
            pair = (args[0], args[1])
        elif len(args) == 1:
            pair = (node.func.value, args[0])
        else:
            return
    else:
        return
    yield pair
    yield pair[::-1]


def _inside(node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return any(inner is node for inner in walk(container))


def _name_nodes(expression: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Name, cst.Attribute)) and dotted(node) is not None:
            yield node
            if isinstance(node, cst.Name):
                continue
        stack.extend(children(node))
