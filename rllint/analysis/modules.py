"""Numbers written in other modules of the linted project (`from .hparams import LR`).

Two halves. Finding the file an import names is plain path arithmetic from the
importing file (its package, the packages above it, the project root and its `src/`),
limited to the project: nothing under site-packages is ever looked at, and nothing is
imported or executed. Reading that file is astroid's: it parses, scopes names and
keeps the tree, and it is imported only when an import really names a project file,
so a run over files that import nothing from the project never loads it.

astroid's `infer()` is not used: it follows imports into installed packages (slow, and
outside the project) and cannot see an environment variable's default. Instead the
few forms a hyperparameter takes are read here from astroid's trees: literals,
arithmetic, names and their imports, class attributes (own, inherited, or set on
`self` in a method), parameter defaults, `field(default=...)`, `int/float(...)` and
`os.environ.get(NAME, default)`. Anything else, or names bound more than once, give
None: silence rather than a guess.

Parsed modules are cached per process (each worker of a run has its own cache) and
re-read when the file's size or time changes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional, Tuple

from rllint.source import SourceError, content_hash, read_source
from rllint.index import clear_lookups, file_in, find_module, search_module

_MAX_DEPTH = 24
_FIELD_CALLS = ("field", "Field", "attrib", "ib", "Option")
_ENV_GETTERS = ("getenv", "get", "setdefault")


@dataclass(frozen=True)
class Written:
    """A number and where it is written in another file (1-based lines and columns, as diagnostics)."""

    number: Any
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    names: Tuple[str, ...] = ()
    origin: str = "literal"


# ---- finding the file of an import (no astroid) ---------------------------------------


# ---- reading modules (astroid) --------------------------------------------------------


class _Module:
    def __init__(self, path: str, stamp: Tuple[int, int], data: bytes, tree: Any) -> None:
        self.path, self.stamp, self.tree = path, stamp, tree
        self.digest = content_hash(data)
        self.lines = data.decode("utf-8", "replace").splitlines()
        # name -> (its number, the modules that number was read from with their hashes)
        self.memo: Dict[str, Tuple[Optional[Written], Dict[str, str]]] = {}


_MODULES: Dict[str, Tuple[Tuple[int, int], Optional[_Module]]] = {}  # path -> (size and time, module)


def _load(path: str) -> Optional[_Module]:
    """The parsed module at `path`, from this process's cache unless the file changed; None if unparsable."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    stamp = (stat.st_size, stat.st_mtime_ns)
    cached = _MODULES.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    from astroid import MANAGER
    from astroid.builder import AstroidBuilder
    from astroid.exceptions import AstroidError

    module = None
    try:
        data = read_source(path)
        name = os.path.splitext(os.path.basename(path))[0]
        tree = AstroidBuilder(MANAGER).string_build(data.decode("utf-8"), modname=name, path=path)
        module = _Module(path, stamp, data, tree)
    except (OSError, SourceError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError,
            AstroidError):
        pass
    _MODULES[path] = (stamp, module)
    return module


@contextmanager
def _no_imports() -> Iterator[None]:
    """astroid resolves imports while it builds a tree (`from x import *`, and `x.flag = 1`, which it
    infers), and loads compiled extensions with standard-library names, which finds a linted
    repository's own `.so` when its folder is on `sys.path`. rllint never imports the code it lints,
    so while it reads modules every import astroid tries fails as a missing module would."""
    from astroid.exceptions import AstroidImportError
    from astroid.manager import AstroidManager

    def refuse(manager, modname, *args, **kwargs):
        raise AstroidImportError("rllint does not import {modname}", modname=modname)

    resolve = AstroidManager.ast_from_module_name  # astroid asks a new AstroidManager() for each import
    AstroidManager.ast_from_module_name = refuse
    try:
        yield
    finally:
        AstroidManager.ast_from_module_name = resolve


def _digest(path: str) -> Optional[str]:
    module = _load(path)
    return module.digest if module is not None else None


class Resolver:
    """Resolves names of other project modules for one linted file; `dependencies` records what it read.

    `dependencies` maps each module file whose content a result depends on to its content hash,
    so that a cached result is dropped when one of them changes.
    """

    def __init__(self, importer: str, dependencies: Optional[Dict[str, str]] = None) -> None:
        self.importer = importer
        self.dependencies: Dict[str, str] = {} if dependencies is None else dependencies

    def resolve(self, module: str, level: int, names: Tuple[str, ...]) -> Optional[Written]:
        """The number `names` (a name of the module, then attributes) stands for in the module that
        `importer` imports as `module` with `level` dots; None when it cannot be shown."""
        path, absent = search_module(self.importer, module, level)
        # `from . import config` / `import pkg.config` where the package has no __init__.py naming it.
        submodule, absent_submodule = (search_module(self.importer, f"{module}.{names[0]}", level)
                                       if len(names) > 1 else (None, ()))
        self.dependencies.update((candidate, "") for candidate in absent + absent_submodule)
        if path is None and submodule is None:
            return None
        from astroid.exceptions import AstroidError

        reading = _Reading()
        try:
            with _no_imports():
                found = reading.member(path, names, 0, frozenset()) if path is not None else None
                if found is None and submodule is not None:
                    found = reading.member(submodule, names[1:], 0, frozenset())
            return found
        except (AstroidError, RecursionError, AttributeError, TypeError, ValueError, KeyError, IndexError):
            return None  # a tree astroid or this reader did not expect: silence, never a failed lint
        finally:
            self.dependencies.update(reading.read)


class _Reading:
    """One resolution: walks astroid trees across modules, with a depth limit and a guard against cycles."""

    def __init__(self) -> None:
        self.read: Dict[str, str] = {}  # the module files read, with their content hashes

    def module(self, path: str) -> Optional[_Module]:
        module = _load(path)
        if module is not None:
            self.read[path] = module.digest
        return module

    # What a dotted name is: ("number", Written), ("module", path), ("class", path, ClassDef) or None.

    def member(self, path: str, names: Tuple[str, ...], depth: int, seen: frozenset) -> Optional[Written]:
        """The number `names[0].names[1]...` holds in the module at `path`."""
        module = self.module(path)
        if module is None or not names:
            return None
        if len(names) > 1 or seen:
            return self._from_target(self.module_name(path, names[0], depth, seen), names[1:], depth, seen)
        memo = module.memo.get(names[0])
        if memo is not None and all(_digest(p) == d for p, d in memo[1].items()):
            self.read.update(memo[1])
            return memo[0]
        fresh = _Reading()
        found = fresh._from_target(fresh.module_name(path, names[0], depth, seen), (), depth, seen)
        module.memo[names[0]] = (found, fresh.read)
        self.read.update(fresh.read)
        return found

    def _from_target(self, target, rest: Tuple[str, ...], depth: int, seen: frozenset) -> Optional[Written]:
        for index, name in enumerate(rest):
            if target is None:
                return None
            if target[0] == "module":
                target = self.module_name(target[1], name, depth + 1, seen)
            elif target[0] == "class":
                target = self.class_attribute(target[1], target[2], name, depth + 1, seen)
                if target is not None and target[0] == "number" and index < len(rest) - 1:
                    return None
            else:
                return None
        if target is None or target[0] != "number":
            return None
        return target[1]

    def module_name(self, path: str, name: str, depth: int, seen: frozenset):
        """What a module-level `name` of the module at `path` is."""
        key = (path, "", name)
        if depth > _MAX_DEPTH or key in seen:
            return None
        module = self.module(path)
        if module is None:
            return None
        bindings = module.tree.locals.get(name, [])
        if len(bindings) != 1:
            return self._submodule(path, name) if not bindings else None
        return self.binding(path, bindings[0], name, depth + 1, seen | {key})

    def _submodule(self, path: str, name: str):
        """`pkg.config` where `pkg/__init__.py` does not import `config`: the submodule itself."""
        if os.path.basename(path) != "__init__.py":
            return None
        found = file_in(os.path.dirname(path), (name,))
        return ("module", found) if found else None

    def binding(self, path: str, node, name: str, depth: int, seen: frozenset):
        """What a name bound by `node` (an AssignName, an import, a class...) is."""
        from astroid import nodes

        if isinstance(node, nodes.ClassDef):
            return ("class", path, node)
        if isinstance(node, nodes.ImportFrom):
            original = next((n for n, alias in node.names if (alias or n) == name), None)
            if original is None or original == "*":
                return None
            target = find_module(path, node.modname or "", node.level or 0)
            if target is None:
                return None
            found = self.module_name(target, original, depth + 1, seen)
            if found is None and node.modname:
                found = self._submodule(target, original)
            if found is None and not node.modname:  # `from . import config`
                module = file_in(os.path.dirname(target), (original,))
                found = ("module", module) if module else None
            return found
        if isinstance(node, nodes.Import):
            for dotted, alias in node.names:
                if alias == name:
                    target = find_module(path, dotted, 0)
                    return ("module", target) if target else None
                if alias is None and dotted.split(".")[0] == name:
                    target = find_module(path, name, 0)
                    return ("module", target) if target else None
            return None
        if not isinstance(node, nodes.AssignName):
            return None
        parent = node.parent
        if isinstance(parent, nodes.Arguments):
            return self._parameter(path, parent, node, depth, seen)
        if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is not None:
            if isinstance(parent, nodes.Assign) and parent.targets != [node]:
                return None  # `a = b = 1` is fine, but tuple targets are not: keep to the plain case
            value = _field_default(parent.value) if isinstance(parent.scope(), nodes.ClassDef) else parent.value
            if value is None:
                return None
            owner = parent.scope()
            origin = (f"default of {owner.name}.{name}" if isinstance(owner, nodes.ClassDef)
                      else f"constant {name}" if isinstance(owner, nodes.Module) else f"value assigned to {name}")
            return self._number(path, value, depth + 1, seen, name, origin)
        return None

    def _parameter(self, path: str, arguments, node, depth: int, seen: frozenset):
        """A parameter: its default's number, or the class its annotation names (`cfg: TrainConfig`)."""
        from astroid.exceptions import NoDefault

        try:
            default = arguments.default_value(node.name)
        except NoDefault:
            default = None
        if default is not None:
            function = arguments.parent
            origin = f"default of parameter `{node.name}` of {getattr(function, 'name', '?')}()"
            return self._number(path, _field_default(default), depth + 1, seen, node.name, origin)
        all_args = list(arguments.posonlyargs) + list(arguments.args) + list(arguments.kwonlyargs)
        annotations = (list(arguments.posonlyargs_annotations) + list(arguments.annotations)
                       + list(arguments.kwonlyargs_annotations))
        for arg, annotation in zip(all_args, annotations):
            if arg is node and annotation is not None:
                target = self.expression(path, annotation, depth + 1, seen)
                return target if target is not None and target[0] == "class" else None
        return None

    def _number(self, path: str, value, depth: int, seen: frozenset, name: str, origin: str):
        found = self.expression(path, value, depth, seen)
        if found is None or found[0] != "number":
            return None
        written = found[1]
        if written.origin == "literal":
            written = Written(written.number, written.path, written.line, written.column, written.end_line,
                              written.end_column, written.names, origin)
        return ("number", Written(written.number, written.path, written.line, written.column, written.end_line,
                                  written.end_column, (name,) + written.names, written.origin))

    def class_attribute(self, path: str, cls, name: str, depth: int, seen: frozenset):
        """A class's attribute: its own field, a base's (in any project module), or what a method assigns
        to `self.<name>` (when exactly one method statement does)."""
        from astroid import nodes

        key = (path, cls.name, name)
        if depth > _MAX_DEPTH or key in seen:
            return None
        seen = seen | {key}
        own = cls.locals.get(name, [])
        if own:  # one plain assignment; a method, a nested class or several bindings say nothing
            return self.binding(path, own[0], name, depth + 1, seen) if len(own) == 1 else None
        assigned = cls.instance_attrs.get(name, [])
        if len(assigned) == 1 and isinstance(assigned[0].parent, nodes.Assign):
            value = assigned[0].parent.value
            return self._number(path, value, depth + 1, seen, name, f"value assigned to self.{name} in {cls.name}")
        if assigned:
            return None
        for base in cls.bases:
            target = self.expression(path, base, depth + 1, seen)
            if target is not None and target[0] == "class":
                found = self.class_attribute(target[1], target[2], name, depth + 1, seen)
                if found is not None:
                    return found
        return None

    def expression(self, path: str, node, depth: int, seen: frozenset):
        """What an expression of the module at `path` is: a number (and where it is written), a module or a class."""
        from astroid import nodes

        if depth > _MAX_DEPTH:
            return None
        depth += 1
        if isinstance(node, nodes.Const):
            if isinstance(node.value, (int, float)) and not isinstance(node.value, complex):
                return ("number", self._written(path, node, node.value))
            return None
        if isinstance(node, nodes.UnaryOp) and node.op in ("-", "+"):
            inner = self.expression(path, node.operand, depth, seen)
            if inner is None or inner[0] != "number":
                return None
            number = -inner[1].number if node.op == "-" else inner[1].number
            if isinstance(node.operand, nodes.Const):
                return ("number", self._written(path, node, number))
            return ("number", _with_number(inner[1], number))
        if isinstance(node, nodes.BinOp):
            return self._arithmetic(path, node, depth, seen)
        if isinstance(node, nodes.Name):
            scope, bindings = node.lookup(node.name)
            if len(bindings) != 1:
                return None
            if isinstance(scope, nodes.Module):
                return self.module_name(path, node.name, depth, seen)
            return self.binding(path, bindings[0], node.name, depth, seen)
        if isinstance(node, nodes.Attribute):
            owner = self.expression(path, node.expr, depth, seen)
            if owner is None:
                return None
            if owner[0] == "module":
                return self.module_name(owner[1], node.attrname, depth, seen)
            if owner[0] == "class":
                return self.class_attribute(owner[1], owner[2], node.attrname, depth, seen)
            return None
        if isinstance(node, nodes.Call):
            return self._call(path, node, depth, seen)
        return None

    def _arithmetic(self, path: str, node, depth: int, seen: frozenset):
        from astroid import nodes

        left = self.expression(path, node.left, depth, seen)
        right = self.expression(path, node.right, depth, seen)
        if left is None or right is None or left[0] != "number" or right[0] != "number":
            return None
        a, b = left[1].number, right[1].number
        if isinstance(a, bool) or isinstance(b, bool):
            return None
        try:
            number = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
                      "//": lambda: a // b, "**": lambda: float(a) ** b if abs(b) <= 64 else None}[node.op]()
        except (KeyError, ZeroDivisionError, OverflowError):
            return None
        if number is None or isinstance(number, complex):
            return None
        named = left[1] if not isinstance(node.left, nodes.Const) else right[1]
        written = self._written(path, node, number)
        return ("number", Written(number, path, written.line, written.column, written.end_line, written.end_column,
                                  named.names, named.origin))

    def _call(self, path: str, node, depth: int, seen: frozenset):
        """`float(x)`, `int(x)`, `os.environ.get(NAME, default)`, `os.getenv(NAME, default)`."""
        from astroid import nodes

        func = node.func
        callee = func.name if isinstance(func, nodes.Name) else func.attrname if isinstance(func, nodes.Attribute) else ""
        positional = list(node.args)
        keywords = {k.arg: k.value for k in node.keywords or [] if k.arg}
        if callee in ("float", "int") and isinstance(func, nodes.Name) and len(positional) == 1 and not keywords:
            inner = self._string_number(path, positional[0]) or self.expression(path, positional[0], depth, seen)
            if inner is None or inner[0] != "number":
                return None
            try:
                number = float(inner[1].number) if callee == "float" else int(inner[1].number)
            except (OverflowError, ValueError):
                return None
            return ("number", _with_number(inner[1], number))
        if callee in _ENV_GETTERS and isinstance(func, nodes.Attribute) and _is_environ(func):
            default = positional[1] if len(positional) > 1 else keywords.get("default")
            if default is None:
                return None
            inner = self._string_number(path, default) or self.expression(path, default, depth, seen)
            if inner is None or inner[0] != "number":
                return None
            key = positional[0] if positional else None
            variable = key.value if isinstance(key, nodes.Const) and isinstance(key.value, str) else "?"
            written = inner[1]
            return ("number", Written(written.number, written.path, written.line, written.column, written.end_line,
                                      written.end_column, written.names, f"default of environment variable {variable}"))
        return None

    def _string_number(self, path: str, node):
        from astroid import nodes

        if not isinstance(node, nodes.Const) or not isinstance(node.value, str):
            return None
        try:
            number = float(node.value.strip())
        except ValueError:
            return None
        if number != number or number in (float("inf"), float("-inf")):
            return None
        return ("number", self._written(path, node, number))

    def _written(self, path: str, node, number) -> Written:
        """Where `node` stands, in 1-based character columns (astroid's offsets count UTF-8 bytes)."""
        module = self.module(path)
        lines = module.lines if module is not None else []

        def column(line: Optional[int], offset: Optional[int]) -> int:
            if not line or offset is None or line > len(lines):
                return (offset or 0) + 1
            return len(lines[line - 1].encode("utf-8")[:offset].decode("utf-8", "replace")) + 1

        line = node.lineno or 1
        end_line = node.end_lineno or line
        return Written(number, path, line, column(line, node.col_offset), end_line,
                       column(end_line, node.end_col_offset))


def _with_number(written: Written, number) -> Written:
    return Written(number, written.path, written.line, written.column, written.end_line, written.end_column,
                   written.names, written.origin)


def _is_environ(func) -> bool:
    """`os.environ.get`, `environ.get`, `os.getenv`, `os.environ.setdefault`."""
    from astroid import nodes

    owner = func.expr
    if func.attrname == "getenv":
        return isinstance(owner, nodes.Name) and owner.name == "os"
    return ((isinstance(owner, nodes.Attribute) and owner.attrname == "environ")
            or (isinstance(owner, nodes.Name) and owner.name == "environ"))


def _field_default(value):
    """The default of `x: float = field(default=2e-5)` / `Field(2e-5)`; the value itself otherwise."""
    from astroid import nodes

    if isinstance(value, nodes.Call):
        func = value.func
        name = func.attrname if isinstance(func, nodes.Attribute) else func.name if isinstance(func, nodes.Name) else ""
        if name in _FIELD_CALLS:
            for keyword in value.keywords or []:
                if keyword.arg == "default":
                    return keyword.value
            if name in ("Field", "Option") and value.args:
                return value.args[0]
            return None
    return value


def clear_cache() -> None:
    """Forget parsed modules and file lookups (tests that rewrite files within one second use it)."""
    _MODULES.clear()
    clear_lookups()
