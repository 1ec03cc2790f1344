"""What the names of a module refer to, from its import statements: `F` -> `torch.nn.functional`.

libcst's QualifiedNameProvider resolves every name of every file, which costs more
than the whole rest of a run (DESIGN.md); rules need only the dotted names of calls
such as `F.log_softmax` or `no_grad`, so this reads the import statements once.
"""
from __future__ import annotations

import ast
from typing import Dict, Optional, Set

import libcst as cst

from rllint.analysis.nodes import AstNodes


class Imports:
    """Local name -> the dotted name it was imported as, for every import in the file."""

    def __init__(self, file) -> None:
        self.aliases: Dict[str, str] = {}
        self.modules: Set[str] = set()
        for node in file.fact(AstNodes).in_source_order(ast.Import, ast.ImportFrom):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.modules.add(alias.name)
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases.setdefault(top, top)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                self.modules.add(node.module)
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def qualified(self, expression: cst.BaseExpression) -> Optional[str]:
        """The dotted name an expression stands for: `F.softmax` -> `torch.nn.functional.softmax`.

        Names that were not imported keep their own spelling (`model.generate`), so a
        rule can still match attribute tails; None for anything that is not a dotted name.
        """
        parts = []
        node = expression
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return None
        head = self.aliases.get(node.value, node.value)
        return ".".join([head] + parts[::-1])

    def imports_from(self, *prefixes: str) -> bool:
        """Whether any imported module is one of `prefixes` or inside it."""
        return any(module == p or module.startswith(p + ".") for module in self.modules for p in prefixes)
