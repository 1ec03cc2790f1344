"""The padding and truncation sides a module writes on tokenizer objects, from its `ast` tree: a leaf the models
domain asks (whether "none set" can be the checkpoint's default) without importing the tokenizer facts, which import
the engine."""
from __future__ import annotations

import ast
from typing import Dict, Optional, Set

from rllint.analysis.facts import PADDING_SIDE as PADDING, TRUNCATION_SIDE as TRUNCATION
from rllint.analysis.nodes import AstNodes


def sides_set(file) -> Dict[str, Set[Optional[str]]]:
    """Side -> the values the module writes on some tokenizer under a name (`x.padding_side = ...`; None: one it
    computes): where the engine does not know which object `x` holds, it may be any tokenizer the module sees. A
    keyword of a call (`from_pretrained(..., padding_side="left")`, `tok(texts, truncation_side="left")`) is the
    side of the object that call builds, or of that call only: it changes no other tokenizer."""
    found: Dict[str, Set[Optional[str]]] = {PADDING: set(), TRUNCATION: set()}
    for node in file.fact(AstNodes).of(ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr in found:
                literal = isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                found[target.attr].add(node.value.value if literal else None)
    return found
