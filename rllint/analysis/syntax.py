"""Small facts of libcst syntax that every analysis needs: children, walks, dotted names, call arguments.

libcst's own `CSTNode.children` runs a visitor on every call, which made hand-written
walks the slowest part of a run; reading the nodes' dataclass fields directly is an
order of magnitude faster, so every analysis walks with `children` / `walk` from here.
"""
from __future__ import annotations

import ast
import operator
from typing import Any, Callable, Dict, Iterator, List, Optional

import libcst as cst

# Fields that hold only whitespace and punctuation: walks skip them.
_PUNCTUATION = frozenset({
    "lpar", "rpar", "comma", "semicolon", "colon", "equal", "leading_lines", "lines_after_decorators", "header",
    "footer", "trailing_whitespace", "operator", "dot", "asynchronous", "newline", "lbracket", "rbracket",
    "lbrace", "rbrace", "indent", "star", "whitespace",
})
_GETTERS: Dict[type, Callable[[Any], tuple]] = {}  # node type -> a getter of the fields that may hold nodes
_IS_NODE: Dict[type, bool] = {}


def children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The syntactic children of a node, in source order, without whitespace and punctuation."""
    getter = _GETTERS.get(type(node))
    if getter is None:
        getter = _GETTERS[type(node)] = _getter(node)
    found: List[cst.CSTNode] = []
    is_node = _IS_NODE
    for value in getter(node):
        kind = type(value)
        if kind is list or kind is tuple:
            for item in value:
                known = is_node.get(type(item))
                if known is None:
                    known = is_node[type(item)] = isinstance(item, cst.CSTNode)
                if known:
                    found.append(item)
        else:
            known = is_node.get(kind)
            if known is None:
                known = is_node[kind] = isinstance(value, cst.CSTNode)
            if known:
                found.append(value)
    return found


def _getter(node: cst.CSTNode) -> Callable[[Any], tuple]:
    """A getter of the fields of `node`'s type that can hold syntax nodes. Fields that hold text
    (`Name.value`, `SimpleString.value`) never hold a node in libcst, so they are left out too."""
    names = [f for f in node.__dataclass_fields__
             if f not in _PUNCTUATION and "whitespace" not in f and not isinstance(getattr(node, f), str)]
    if not names:
        return lambda n: ()
    if len(names) == 1:
        single = operator.attrgetter(names[0])
        return lambda n: (single(n),)
    return operator.attrgetter(*names)


def walk(node: cst.CSTNode, into_functions: bool = False) -> Iterator[cst.CSTNode]:
    """Every node under `node` (itself first), in source order; nested functions and classes
    are left out unless `into_functions`."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and not into_functions and isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            continue
        stack.extend(reversed(children(current)))


def updates_in_place(node: cst.CSTNode, name: str) -> bool:
    """Whether a statement changes what `name` holds without rebinding it: `name += x`, `name[i] = x`."""
    if isinstance(node, cst.AugAssign):
        return isinstance(node.target, cst.Name) and node.target.value == name
    return isinstance(node, cst.Assign) and any(
        isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name) and t.target.value.value == name
        for t in node.targets)


def dotted(expr: cst.CSTNode) -> Optional[str]:
    """`self.tokenizer.pad_token_id` for an attribute chain of names; None for anything else."""
    parts = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def same_expression(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """`rl - new` and `(rl-new)`: one expression written twice, whatever its parentheses and spacing."""
    if a is b or a.deep_equals(b):
        return True
    try:
        return ast.dump(_expression_tree(a)) == ast.dump(_expression_tree(b))
    except SyntaxError:  # not an expression of its own (a slice, a keyword)
        return False


def _expression_tree(node: cst.CSTNode) -> ast.AST:
    return ast.parse(_EMPTY_MODULE.code_for_node(node).strip(), mode="eval")


_EMPTY_MODULE = cst.Module(body=[])


def bound_names(target: cst.CSTNode) -> Iterator[str]:
    """The names an assignment target binds: `a`, `(a, b)`, `[a, *rest]`."""
    return (name.value for name in bound_nodes(target))


def bound_nodes(target: cst.CSTNode) -> Iterator[cst.Name]:
    """The Name nodes an assignment target binds, for analyses that tell one binding from another."""
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from bound_nodes(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from bound_nodes(target.value)


def keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    """The argument `name=` of a call, if given."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call, index: int) -> Optional[cst.BaseExpression]:
    """The `index`-th positional argument of a call (stars not counted), if given."""
    args = [a for a in call.args if a.keyword is None and not a.star]
    return args[index].value if index < len(args) else None
