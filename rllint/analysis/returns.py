"""Backward recursions over the time axis: GAE and discounted returns written as loops.

A recursion is a `for t in reversed(range(N))` (or `range(N - 1, -1, -1)`) loop whose body
carries a value from step t + 1 to step t: an accumulator that is read and reassigned
(`lastgaelam = delta + gamma * lam * lastgaelam`, `running = r[:, t] + gamma * running`) or an
output row that reads its own next row (`ret[:, t] = r[:, t] + gamma * ret[:, t + 1]`). For each
one this module records the loop bound, the tensors read at `[:, t]` (a batch of padded rows, as
opposed to one episode's list `r[t]`), and whether a mask or a done flag takes part in the body
(the `dones`-masked form, or verl's `response_mask[:, t]` carry). `full_width` says whether a
bound is the whole row (`x.size(-1)`, `x.shape[1]`) rather than a length of one response; a per-row loop
(`for t in reversed(range(starts[i], T))` reading `x[i, t]`) counts by its upper bound.

`PaddedRows` says whether a row such a loop reads holds values over every padded position that nothing zeroes
after the response ends, following the row back through the function's assignments, into the file's helpers
that compute it (their returns, with the arguments of that call), and up to the callers of the function when
it is a parameter.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Set

import libcst as cst

from rllint.analysis.flow import Flow
from rllint.analysis.ir import FunctionIR
from rllint.analysis.syntax import children, updates_in_place, walk
from rllint.analysis.tensors import MASK, TOKEN_IDS, Tensors, int_value, last_part, name_kind

# Names of masks and episode ends that stop a recursion at the end of a response.
_STOP_NAME = re.compile(r"(^|_)(masks?|dones?|terminals?|terminated|not_done|nonterminal|eos|ends?|valid)(_|$)",
                        re.IGNORECASE)


@dataclass
class Recursion:
    """A backward recursion over the time axis (see the module docstring)."""

    loop: cst.For
    time: str  # the loop variable
    bound: cst.BaseExpression  # N of `reversed(range(N))`
    rows: List[str]  # names of the tensors read at `[:, t]` in the body
    stopped: bool  # a mask or done flag takes part in the body


class Recursions:
    """The backward time recursions of one file, by loop."""

    def __init__(self, file) -> None:
        self.by_loop: Dict[int, Recursion] = {}
        for node in walk(file.module, into_functions=True):
            if isinstance(node, cst.For):
                found = _recursion(node)
                if found is not None:
                    self.by_loop[id(node)] = found

    def at(self, loop: cst.For) -> Optional[Recursion]:
        return self.by_loop.get(id(loop))


def full_width(bound: cst.BaseExpression) -> bool:
    """`x.size(-1)`, `x.size(1)`, `x.shape[-1]`, `x.shape[1]`, `x.size()[1]`: the padded width of a row."""
    if isinstance(bound, cst.Call) and isinstance(bound.func, cst.Attribute) and bound.func.attr.value == "size":
        return len(bound.args) == 1 and int_value(bound.args[0].value) in (-1, 1)
    if isinstance(bound, cst.Subscript) and len(bound.slice) == 1 and isinstance(bound.slice[0].slice, cst.Index):
        owner = bound.value
        shaped = (isinstance(owner, cst.Attribute) and owner.attr.value == "shape") or (
            isinstance(owner, cst.Call) and isinstance(owner.func, cst.Attribute) and owner.func.attr.value == "size"
            and not owner.args)
        return shaped and int_value(bound.slice[0].slice.value) in (-1, 1)
    return False


def _recursion(loop: cst.For) -> Optional[Recursion]:
    if not isinstance(loop.target, cst.Name):
        return None
    bound = _backward_bound(loop.iter)
    if bound is None:
        return None
    time = loop.target.value
    body = list(walk(loop.body))
    if not _carries(body, time):
        return None
    rows: List[str] = []
    for node in body:
        if isinstance(node, cst.Subscript) and _row_read(node, time) and isinstance(node.value, cst.Name):
            rows.append(node.value.value)
    stopped = any(isinstance(n, cst.Name) and _STOP_NAME.search(n.value) for n in body) or any(
        isinstance(n, cst.SimpleString) and _STOP_NAME.search(str(n.evaluated_value)) for n in body)
    return Recursion(loop, time, bound, sorted(set(rows)), stopped)


def _backward_bound(iterable: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """N of `reversed(range(N))`, `reversed(range(start, N))` and `range(N - 1, -1, -1)`."""
    if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Name):
        return None
    if iterable.func.value == "reversed" and len(iterable.args) == 1:
        inner = iterable.args[0].value
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "range" \
                and len(inner.args) in (1, 2) and not any(a.keyword or a.star for a in inner.args):
            return inner.args[-1].value
        return None
    if iterable.func.value == "range" and len(iterable.args) == 3 and int_value(iterable.args[2].value) == -1 \
            and int_value(iterable.args[1].value) == -1:
        start = iterable.args[0].value
        if isinstance(start, cst.BinaryOperation) and isinstance(start.operator, cst.Subtract) and \
                int_value(start.right) == 1:
            return start.left
    return None


def _carries(body: List[cst.CSTNode], time: str) -> bool:
    """An accumulator read and reassigned in the body, or a row written at t that reads row t + 1."""
    assigned: Set[str] = set()
    for node in body:
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                if any(isinstance(n, cst.Name) and n.value == target.value for n in walk(node.value)):
                    assigned.add(target.value)
            elif isinstance(target, cst.Subscript) and _row_read(target, time) and isinstance(target.value, cst.Name):
                name = target.value.value
                if any(isinstance(n, cst.Subscript) and isinstance(n.value, cst.Name) and n.value.value == name
                       and _next_row(n, time) for n in walk(node.value)):
                    return True
    return bool(assigned)


def _row_read(node: cst.Subscript, time: str) -> bool:
    """`x[:, t]`: position t of every row of a batch; `x[i, t]`: of row i."""
    if len(node.slice) != 2:
        return False
    first, second = node.slice[0].slice, node.slice[1].slice
    rows = isinstance(first, cst.Slice) and first.lower is None and first.upper is None or isinstance(
        first, cst.Index) and isinstance(first.value, cst.Name) and first.value.value != time
    return rows and isinstance(second, cst.Index) and isinstance(second.value, cst.Name) and \
        second.value.value == time


def _next_row(node: cst.Subscript, time: str) -> bool:
    """`x[:, t + 1]`."""
    if len(node.slice) != 2 or not isinstance(node.slice[1].slice, cst.Index):
        return False
    value = node.slice[1].slice.value
    return isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and \
        isinstance(value.left, cst.Name) and value.left.value == time and int_value(value.right) == 1


# What zeroes a row after the response ends: mask arithmetic and fills, or a row built from zeros and filled.
MASKING_CALLS = frozenset({"masked_fill", "masked_fill_", "where", "zeros", "zeros_like", "new_zeros", "full",
                           "full_like", "new_full", "empty", "empty_like", "scatter", "scatter_", "scatter_add",
                           "scatter_add_", "mul_", "masked_scatter", "masked_select", "pad"})
_DEPTH = 3  # helpers entered and callers climbed, together


class PaddedRows:
    """See the module docstring: `leaking(use)` for a row read in a backward recursion."""

    def __init__(self, file) -> None:
        self.tensors: Tensors = file.fact(Tensors)
        self.flow: Flow = file.fact(Flow)
        self._functions = {id(f.node): f for f in self.flow.ir.functions.values()}

    def leaking(self, use: cst.Name) -> bool:
        """The row was computed (a call is visible in how it was made, here, in a helper or at a caller), nothing
        zeroes it after the response ends, and a function it passes through deals in token sequences (token
        ids or a mask in sight): the fixed-length episodes of a control task have no padding."""
        trace = _Trace()
        self._history(use, None, trace, 0)
        return trace.computed and not trace.masked and any(_token_rows(self.tensors, scope) for scope in trace.scopes)

    def _history(self, expr: cst.BaseExpression, bindings: Optional[Dict[str, tuple]], trace: "_Trace",
                 depth: int) -> None:
        """Walk what `expr` was made of. `bindings`: the arguments of the call through which the helper `expr` is
        in was entered (parameter -> (argument, the caller's bindings)); None: the function's callers pass them."""
        key = (id(expr), id(bindings))
        if key in trace.seen or trace.masked:
            return
        trace.seen.add(key)
        scope = self.tensors.scope(expr)
        if scope is not None:
            trace.scopes.add(scope.node)
        stack = [expr]
        while stack and not trace.masked:
            node = stack.pop()
            if isinstance(node, cst.Call):
                trace.computed = True
                if self.tensors.call_name(node)[0] in MASKING_CALLS:
                    trace.masked = True
                    return
                helper = self._helper(node)
                if helper is not None:  # what it returns, made of this call's arguments
                    if depth < _DEPTH:
                        self._enter(helper)
                        bound = helper.bind(node, method=_method(helper) and isinstance(node.func, cst.Attribute))
                        inner = {name: (arg, bindings) for name, arg in bound.items()}
                        for returned in helper.returns:
                            if returned.value is not None:
                                self._history(returned.value, inner, trace, depth + 1)
                    continue
                stack.extend(_operands(node))
            elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply) and any(
                    (self.tensors.kind(side) or _NONE).kind == MASK for side in (node.left, node.right)):
                trace.masked = True  # `x * mask`; a mask given to a forward (`attention_mask=`) masks nothing
            elif isinstance(node, cst.Name):
                self._name(node, bindings, trace, depth)
            else:
                stack.extend(_operands(node))

    def _name(self, name: cst.Name, bindings: Optional[Dict[str, tuple]], trace: "_Trace", depth: int) -> None:
        if _masked_in_place(self.tensors, name):
            trace.masked = True
            return
        earlier = self.tensors.value_of(name)
        if earlier is not None:
            self._history(earlier, bindings, trace, depth)
            return
        scope = self.tensors.scope(name)
        function = self._functions.get(id(scope.node)) if scope is not None else None
        if function is None or function.param(name.value) is None or _method(function) and \
                function.params[0].name == name.value:
            return
        if bindings is not None:  # a helper's parameter: what this call passes
            if name.value in bindings:
                argument, outer = bindings[name.value]
                self._history(argument, outer, trace, depth)
            return
        if depth >= _DEPTH:
            return
        for site in self.flow.callers(function):  # the function's parameter: what every caller of the file passes
            if site.function.module is not self.flow.ir:
                continue
            argument = function.bind(site.node, method=_method(function)).get(name.value)
            if argument is not None:
                self._enter(site.function)
                self._history(argument, None, trace, depth + 1)

    def _enter(self, function: FunctionIR) -> None:
        """Make the assignments of `function` (and of the functions around it) known to `Tensors`."""
        nesting = []
        while function is not None and not function.is_module:
            nesting.append(function.node)
            function = function.parent
        self.tensors.enter([self.flow.ir.module, *reversed(nesting)])

    def _helper(self, call: cst.Call) -> Optional[FunctionIR]:
        """The function of this file a call runs (a function, or a method through `self`)."""
        held = self.flow.value(call.func).facts.get("function")
        return held if isinstance(held, FunctionIR) and held.module is self.flow.ir else None


class _Trace:
    def __init__(self) -> None:
        self.computed = False
        self.masked = False
        self.scopes: Set[cst.CSTNode] = set()
        self.seen: Set[tuple] = set()


class _NoKind:
    kind = ""


_NONE = _NoKind()


def _method(function: FunctionIR) -> bool:
    return function.cls is not None and not any(d.rsplit(".", 1)[-1] == "staticmethod" for d in function.decorators)


def _operands(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The parts of an expression that hold values: not an attribute's name, nor an argument's keyword."""
    if isinstance(node, cst.Attribute):
        return [node.value]
    if isinstance(node, cst.Arg):
        return [node.value]
    return list(children(node))


def _token_rows(tensors: Tensors, scope: cst.CSTNode) -> bool:
    """Whether a function deals in token sequences (token ids or a mask), whose rows are padded."""
    for node in walk(scope):
        if isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
            kind = name_kind(last_part(node))
            if kind is not None and kind.kind in (MASK, TOKEN_IDS):
                return True
    return False


def _masked_in_place(tensors: Tensors, use: cst.Name) -> bool:
    """`values *= mask`, `values[~mask] = 0`, `values.masked_fill_(...)`, `values.mul_(mask)` in the function."""
    scope = tensors.scope(use)
    if scope is None:
        return True
    name = use.value
    for node in walk(scope.node):
        if updates_in_place(node, name):
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                isinstance(node.func.value, cst.Name) and node.func.value.value == name and \
                node.func.attr.value in MASKING_CALLS:
            return True
    return False
