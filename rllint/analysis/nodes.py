"""The nodes of a file's `ast` tree by type: one walk shared by every analysis that scans the whole file.

Several analyses look for one kind of node anywhere in the file (imports, class
definitions, reward registrations, tokenizer set-up, identifiers); each walking the
tree on its own cost more than the rules that asked them.
"""
from __future__ import annotations

import ast
from typing import Dict, List


class AstNodes:
    def __init__(self, file) -> None:
        self._by_type = _by_type(file.tree)

    @classmethod
    def walked(cls, tree: ast.AST) -> "AstNodes":
        """The nodes of a tree that is not a linted file's (another module of the project)."""
        return cls.indexed(_by_type(tree))

    @classmethod
    def indexed(cls, by_type: Dict[type, List[ast.AST]]) -> "AstNodes":
        """The nodes as a walk that already went over the whole tree (the runner's size check) found them,
        each type's in `ast.walk` order."""
        nodes = cls.__new__(cls)
        nodes._by_type = by_type
        return nodes

    def of(self, *types: type) -> List[ast.AST]:
        """The nodes of these exact types, type by type."""
        if len(types) == 1:
            return self._by_type.get(types[0], [])
        return [node for kind in types for node in self._by_type.get(kind, [])]

    def in_source_order(self, *types: type) -> List[ast.AST]:
        """The nodes of these exact types, as they stand in the source."""
        return sorted(self.of(*types), key=lambda node: (node.lineno, node.col_offset))


def _by_type(tree: ast.AST) -> Dict[type, List[ast.AST]]:
    found: Dict[type, List[ast.AST]] = {}
    for node in ast.walk(tree):
        found.setdefault(type(node), []).append(node)
    return found
