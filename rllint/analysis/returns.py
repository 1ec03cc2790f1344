"""Backward recursions over the time axis: GAE and discounted returns written as loops.

A recursion is a `for t in reversed(range(N))` (or `range(N - 1, -1, -1)`) loop whose body
carries a value from step t + 1 to step t: an accumulator that is read and reassigned
(`lastgaelam = delta + gamma * lam * lastgaelam`, `running = r[:, t] + gamma * running`) or an
output row that reads its own next row (`ret[:, t] = r[:, t] + gamma * ret[:, t + 1]`). For each
one this module records the loop bound, the tensors read at `[:, t]` (a batch of padded rows, as
opposed to one episode's list `r[t]`), and whether a mask or a done flag takes part in the body
(the `dones`-masked form, or verl's `response_mask[:, t]` carry). `full_width` says whether a
bound is the whole row (`x.size(-1)`, `x.shape[1]`) rather than a length of one response.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Set

import libcst as cst

from rllint.analysis.syntax import walk
from rllint.analysis.tensors import int_value

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
    """N of `reversed(range(N))` and of `range(N - 1, -1, -1)`."""
    if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Name):
        return None
    if iterable.func.value == "reversed" and len(iterable.args) == 1:
        inner = iterable.args[0].value
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "range" \
                and len(inner.args) == 1:
            return inner.args[0].value
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
    """`x[:, t]`: position t of every row of a batch."""
    if len(node.slice) != 2:
        return False
    first, second = node.slice[0].slice, node.slice[1].slice
    return isinstance(first, cst.Slice) and first.lower is None and first.upper is None and \
        isinstance(second, cst.Index) and isinstance(second.value, cst.Name) and second.value.value == time


def _next_row(node: cst.Subscript, time: str) -> bool:
    """`x[:, t + 1]`."""
    if len(node.slice) != 2 or not isinstance(node.slice[1].slice, cst.Index):
        return False
    value = node.slice[1].slice.value
    return isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and \
        isinstance(value.left, cst.Name) and value.left.value == time and int_value(value.right) == 1
