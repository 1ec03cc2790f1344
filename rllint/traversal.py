"""One walk over a libcst tree that calls every rule's `visit_<Node>` / `leave_<Node>` hooks.

libcst's own `visit_batched` rebuilds each node it passes through (its visitors may also
transform) and visits every whitespace and punctuation node; a third of a run went
there. Rules only read the tree and only hook syntax nodes, so this walk follows the
nodes' syntactic fields (`rllint.analysis.syntax.children`) and dispatches by node type,
with libcst's batched semantics: every hook is called, none can skip children, and each
`leave_` comes after the node's children.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Sequence

import libcst as cst

from rllint.analysis.syntax import children

Hook = Callable[[cst.CSTNode], None]


def visit_batched(module: cst.Module, visitors: Sequence[cst.BatchableCSTVisitor]) -> None:
    enter: Dict[str, List[Hook]] = {}
    leave: Dict[str, List[Hook]] = {}
    for visitor in visitors:
        for name, hook in visitor.get_visitors().items():
            kind, _, node_type = name.partition("_")
            (enter if kind == "visit" else leave).setdefault(node_type, []).append(hook)
    stack: List[tuple] = [(module, False)]
    while stack:
        node, leaving = stack.pop()
        node_type = type(node).__name__
        if leaving:
            for hook in leave[node_type]:
                hook(node)
            continue
        for hook in enter.get(node_type, ()):
            hook(node)
        if node_type in leave:
            stack.append((node, True))
        stack.extend((child, False) for child in reversed(children(node)))
