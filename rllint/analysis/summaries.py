"""Function summaries across modules: a helper imported from another module of the project is interpreted
with the caller's arguments, as a helper of the same file is (issue 22, item 3).

`from .utils import token_logps` (or `import pkg.utils as utils` ... `utils.token_logps(...)`) names a file
of the project (`rllint.index.find_module`: path arithmetic inside the project, never site-packages); that
file is read, parsed once per content per process, and given a `Flow` of its own (`flow.resolve_import`
finds the function there), whose `summary` answers for the call. Nothing of it is imported or executed. Every module read this way is recorded in the linted
file's dependencies with its content hash, so a cached result is stale when the helper changes.

Bounds: files larger than `MAX_BYTES` or with more than `MAX_NODES` syntax nodes are not read (their
functions stay unknown), at most `MAX_MODULES` modules are kept per process, and re-exports are followed
`MAX_HOPS` deep.
"""
from __future__ import annotations

import ast
import functools
import os
from collections import OrderedDict
from typing import Dict, Optional, Tuple

import libcst as cst

from rllint.source import SourceError, content_hash, decode_source, read_source

MAX_BYTES = 512 * 1024
MAX_NODES = 40_000
MAX_MODULES = 64
MAX_HOPS = 3


class ModuleFile:
    """A project module read for its functions (not linted): what `Flow` needs of a file."""

    def __init__(self, path: str, text: str, module: cst.Module, settings) -> None:
        self.path = path
        self.text = text
        self.module = module
        self.settings = settings
        self.dependencies: Dict[str, str] = {}
        self._facts: Dict[type, object] = {}
        self._positions = None  # libcst positions, computed when a finding is placed here (`place_of`)
        self.for_callers = False  # a copy read to find the callers of another module's functions (`load`)

    @functools.cached_property
    def tree(self) -> ast.Module:
        """Python's own tree of the same text, parsed again when a question needs it: few do, and keeping the tree
        of every module read (parsed for the size bound) held 63 of the 278 MiB of a run on transformers' trainer.py."""
        return ast.parse(self.text)

    def fact(self, analysis: type):
        if analysis not in self._facts:
            self._facts[analysis] = analysis(self)
        return self._facts[analysis]

    def function_tree(self, qualname: str) -> Optional[ast.AST]:
        """Python's tree of the function `qualname` ("f", "Class.method", "outer.inner"), for the questions
        that read a helper's statements whole; None when the module defines no such function."""
        scope: ast.AST = self.tree
        for part in qualname.split("."):
            scope = next((node for node in ast.iter_child_nodes(scope) if isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == part), None)
            if scope is None:
                return None
        return None if isinstance(scope, ast.ClassDef) else scope


_LOADED: "OrderedDict[Tuple[str, bool], Tuple[Tuple[int, int], str, Optional[ModuleFile]]]" = OrderedDict()


def load(path: str, settings, for_callers: bool = False) -> Tuple[str, Optional[ModuleFile]]:
    """A project file's content hash ("" when unreadable) and its parsed module (None when it cannot be
    read within the bounds); cached per process, read again when the file changes. A module read to find
    the callers of another's functions (`for_callers`) is a copy of its own: its analysis does not look for
    callers in turn, and the helper copy must not inherit that limit (the facts would depend on the order
    in which rules ask)."""
    try:
        stat = os.stat(path)
    except OSError:
        return "", None
    stamp = (stat.st_size, stat.st_mtime_ns)
    key = (path, for_callers)
    known = _LOADED.get(key)
    if known is not None and known[0] == stamp:
        _LOADED.move_to_end(key)
        return known[1], known[2]
    other = _LOADED.get((path, not for_callers))
    if other is not None and other[0] == stamp:  # the other copy's parse: the copies differ in their facts only
        digest, read = other[1], other[2]
        module = ModuleFile(path, read.text, read.module, settings) if read is not None else None
    else:
        digest, module = _parse(path, settings)
    if module is not None:
        module.for_callers = for_callers
    _LOADED[key] = (stamp, digest, module)
    while len(_LOADED) > MAX_MODULES:
        _LOADED.popitem(last=False)
    return digest, module


def _parse(path: str, settings) -> Tuple[str, Optional[ModuleFile]]:
    """`load`'s reading of a file it has not read yet."""
    digest = ""
    try:
        data = read_source(path, MAX_BYTES)
        digest = content_hash(data)
        text = decode_source(data)
        if sum(1 for _ in ast.walk(ast.parse(text))) <= MAX_NODES:
            return digest, ModuleFile(path, text, cst.parse_module(text), settings)
    except (OSError, SourceError, SyntaxError, ValueError, RecursionError, MemoryError, cst.ParserSyntaxError):
        pass
    return digest, None


def place_of(node: cst.CSTNode) -> Optional[Tuple[str, int, int, int, int]]:
    """Where a node of a module read here is written: (path, line, column, end line, end column), 1-based
    columns as a Diagnostic's; None for a node of no such module."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    for (path, _), (_, _, module) in list(_LOADED.items()):
        if module is None:
            continue
        positions = module._positions
        if positions is None:
            positions = module._positions = MetadataWrapper(module.module, unsafe_skip_copy=True).resolve(
                PositionProvider)
        where = positions.get(node)
        if where is not None:
            return path, where.start.line, where.start.column + 1, where.end.line, where.end.column + 1
    return None


def clear_cache() -> None:
    _LOADED.clear()
