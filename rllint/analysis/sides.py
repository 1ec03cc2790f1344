"""The padding and truncation sides a module sets on any tokenizer, from its `ast` tree: a leaf the models domain
asks (whether "none set" can be the checkpoint's default) without importing the tokenizer facts, which import
the engine."""
from __future__ import annotations

import ast
from typing import Dict, Optional, Set

from rllint.analysis.facts import PADDING_SIDE as PADDING, TRUNCATION_SIDE as TRUNCATION
from rllint.analysis.nodes import AstNodes


def sides_set(file) -> Dict[str, Set[Optional[str]]]:
    """Side -> the values the module sets it to (None: one it computes): `x.padding_side = ...`, and the keyword of a
    call that builds or configures a tokenizer (a truncation side given beside `truncation=` is one call's)."""
    found: Dict[str, Set[Optional[str]]] = {PADDING: set(), TRUNCATION: set()}
    nodes = file.fact(AstNodes)
    for node in nodes.of(ast.Assign, ast.Call):
        if isinstance(node, ast.Assign):
            written = [(t.attr, node.value) for t in node.targets if isinstance(t, ast.Attribute) and t.attr in found]
        else:
            cut = any(k.arg == "truncation" for k in node.keywords)
            written = [(k.arg, k.value) for k in node.keywords if k.arg == PADDING or k.arg == TRUNCATION and not cut]
        for side, given in written:
            literal = isinstance(given, ast.Constant) and isinstance(given.value, str)
            found[side].add(given.value if literal else None)
    return found
