"""What number an expression holds, and where that number is written.

Real scripts rarely write a hyperparameter where it is used: it comes from a module
constant, a parameter default, an `argparse` default, a dataclass field (maybe
inherited from a base config), or an environment variable's default. A threshold
rule must report where the value is written, so `Values.of(expr)` returns the number
together with the node that holds it.

This module resolves values within one file, from one walk over its statements. Names
imported from other modules of the linted project (`from .hparams import LR`,
`config.LR`, a dataclass whose base lives in another module) are resolved by
`rllint.analysis.modules` (astroid, loaded only then) unless the option
`cross-module-values` is off. Such a value comes back as the same `Value`, whose `node`
is then a `RemoteNode` (the path and span where the number is written): rules report
it like any node, and the runner places the finding in that file.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple, Union

import libcst as cst

from rllint.analysis import summaries
from rllint.analysis.imports import Imports
from rllint.analysis.nodes import AstNodes
from rllint.analysis.positions import Lines
from rllint.analysis.syntax import bound_names, children, dotted, keyword
from rllint.options import CROSS_MODULE_VALUES


Number = Union[int, float]
_MAX_DEPTH = 24
_ENV_GETTERS = ("os.environ.get", "os.getenv", "os.environ.setdefault")
_FIELD_CALLS = ("field", "Field", "attrib", "ib", "Option")  # dataclasses, pydantic, attrs, typer
_ARITHMETIC = {
    cst.Add: lambda a, b: a + b,
    cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b,
    cst.Divide: lambda a, b: a / b,
    cst.FloorDivide: lambda a, b: a // b,
    cst.Power: lambda a, b: float(a) ** b if abs(b) <= 64 else None,
}


class RemoteNode:
    """Where a number is written in another file: 1-based lines and columns, as a Diagnostic's.

    Stands in for a libcst node in `Value.node`; one instance per place and linted file, so rules
    may key on `id(value.node)`. `CSTRule.report` accepts it and reports in that file.
    """

    __slots__ = ("path", "line", "column", "end_line", "end_column")

    def __init__(self, path: str, line: int, column: int, end_line: int, end_column: int) -> None:
        self.path, self.line, self.column, self.end_line, self.end_column = path, line, column, end_line, end_column

    def __repr__(self) -> str:
        return f"RemoteNode({self.path}:{self.line}:{self.column})"


def written_at(file, node: cst.CSTNode) -> Optional[Union[cst.CSTNode, RemoteNode]]:
    """Where the engine's `node` is written, for a finding: the node itself when it is of `file`'s tree, else
    its place in the project module read for it (`summaries.place_of`), which may be another parse of this
    same file (a class of this file seen through a module that imports it); None when it is nowhere known."""
    if file.fact(Lines).holds(node):
        return node
    where = summaries.place_of(node)
    return RemoteNode(*where) if where is not None else None


@dataclass(frozen=True)
class Value:
    """A resolved number.

    `node` is where it is written (the literal, the arithmetic, the default expression), a
    `RemoteNode` when that is in another module (then `path` is that file's path);
    `names` are the names it was reached through, outermost first (`lr`, then
    `critic_lr`), so a rule can tell a critic's learning rate from the policy's;
    `origin` says how it was declared, for messages (`default of --learning_rate`).
    """

    number: Number
    node: Union[cst.CSTNode, RemoteNode]
    names: Tuple[str, ...] = ()
    origin: str = "literal"

    @property
    def path(self) -> Optional[str]:
        """The file the number is written in when that is another module; None for the linted file."""
        return self.node.path if isinstance(self.node, RemoteNode) else None

    def through(self, name: str) -> "Value":
        return Value(self.number, self.node, (name,) + self.names, self.origin)


def format_number(number: Number) -> str:
    """A number as a message shows it: `2e-05`, `10000.0`, `3e-05` (not `3.0000000000000004e-05`)."""
    text = repr(number)
    return text if len(text) <= 10 else f"{number:.6g}"


@dataclass(frozen=True)
class Declaration:
    """A named value the file declares.

    `kind` is "argparse" (a command-line option: the dest of argparse's `add_argument`, a
    click option, an absl flag), "field" (a class or dataclass field; `owner` is the class),
    "constant" (module level) or "parameter" (a function parameter with a default; `owner`
    is the function). `node` is the declaring statement, call or parameter; `default` the
    expression that holds its value.
    """

    name: str
    kind: str
    node: cst.CSTNode
    default: Optional[cst.BaseExpression]
    owner: Optional[str] = None

    @property
    def origin(self) -> str:
        if self.kind == "argparse":
            return f"default of --{self.name}"
        if self.kind == "field":
            return f"default of {self.owner}.{self.name}"
        if self.kind == "parameter":
            return f"default of parameter `{self.name}` of {self.owner}()"
        return f"constant {self.name}"


@dataclass
class _Binding:
    """What a name means inside a function or class body."""

    kind: str  # "parameter" | "local" | "self" | "field"
    name: str
    expr: Optional[cst.BaseExpression] = None  # the one expression assigned, if exactly one
    cls: Optional[str] = None  # the file's class the name is an instance of, if known
    declaration: Optional[Declaration] = None
    imported: Optional[str] = None  # else an imported name it is annotated with or built by (maybe a class)


class _Scope:
    """A function or class body and the names it binds.

    Which Name nodes lie inside it is found only when a name it binds is asked about:
    walking every expression of every file costs as much as the rules' own traversal.
    """

    def __init__(self, node: Union[cst.FunctionDef, cst.ClassDef], depth: int) -> None:
        self.node = node
        self.depth = depth
        self.bindings: Dict[str, _Binding] = {}
        self._names: Optional[Dict[str, Set[int]]] = None

    def holds(self, name: cst.Name) -> bool:
        if self._names is None:
            self._names = _names_under(self.node)
        return id(name) in self._names.get(name.value, ())


def _names_under(root: cst.CSTNode) -> Dict[str, Set[int]]:
    """The Name nodes of a scope, by name (a class body does not enclose its methods).

    A plain loop over the nodes' syntactic children: several times faster than a libcst visitor.
    """
    names: Dict[str, Set[int]] = {}
    stack: List[object] = [root]
    skip_functions = isinstance(root, cst.ClassDef)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Name:
            names.setdefault(node.value, set()).add(id(node))
            continue
        if skip_functions and kind is cst.FunctionDef:
            continue
        stack.extend(children(node))
    return names


class _Class:
    def __init__(self, node: cst.ClassDef) -> None:
        self.name = node.name.value
        self.bases = [b.value.value if isinstance(b.value, cst.Name) else
                      b.value.attr.value if isinstance(b.value, cst.Attribute) else ""
                      for b in node.bases if b.keyword is None]
        self.fields: Dict[str, Declaration] = {}
        self.instance_attrs: Dict[str, List[Optional[cst.BaseExpression]]] = {}


class Values:
    """The values and declarations of one file, from one walk over its statements (not its expressions)."""

    def __init__(self, file) -> None:
        self._file = file
        self._imports: Imports = file.fact(Imports)
        self._scopes: Dict[str, List[_Scope]] = {}  # name -> the scopes that bind it, deepest first
        self._classes: Dict[str, _Class] = {}
        self._declarations: List[Declaration] = []
        self._constants: Dict[str, List[Declaration]] = {}
        # Names bound at module level by imports that may name a project module: name -> (module, level, name in it).
        self._project = _imports_by_name(file.tree)
        self._resolver = None
        self._remote_nodes: Dict[Tuple[str, int, int, int, int], RemoteNode] = {}
        # Class names first, so that a function above a class can still be typed by it.
        self._class_names = {n.name for n in file.fact(AstNodes).of(ast.ClassDef)}
        self._walk(file.module.body, [])
        module_names: Dict[str, List[Optional[cst.BaseExpression]]] = {}
        _collect_locals(file.module, module_names)
        self._module_names = set(module_names) | set(self._imports.aliases)
        for scopes in self._scopes.values():
            scopes.sort(key=lambda scope: -scope.depth)

    # ---- queries -----------------------------------------------------------------

    def of(self, expr: cst.CSTNode) -> Optional[Value]:
        """The number `expr` holds and where it is written; None when the source does not show it."""
        return self._of(expr, 0)

    def declarations(self, name: Optional[str] = None) -> List[Declaration]:
        """Declarations in source order, all of them or those named `name`."""
        return [d for d in self._declarations if name is None or d.name == name]

    def value_of(self, declaration: Declaration) -> Optional[Value]:
        """The number a declaration holds by default, and where it is written."""
        value = self._declared(declaration, 1)
        return value and value.through(declaration.name)

    def assigned(self, name: cst.Name) -> Optional[cst.BaseExpression]:
        """The one expression a function-local name is assigned where it stands; None for parameters,
        names assigned more than once, and names of other kinds."""
        binding = self._binding(name)
        return binding.expr if binding is not None and binding.kind == "local" else None

    def held(self, name: cst.Name) -> Optional[cst.BaseExpression]:
        """The one expression a name holds where it stands: a function-local name or a module-level
        name assigned once (`REWARD_FUNCS = [...]` read in `main()`); None otherwise."""
        local = self.assigned(name)
        if local is not None or self._binding(name) is not None:
            return local
        constants = self._constants.get(name.value, [])
        return constants[0].default if len(constants) == 1 else None

    def parameter_of(self, name: cst.Name) -> Optional[cst.FunctionDef]:
        """The function whose parameter `name` is where it stands (not reassigned in its body), else None."""
        for scope in self._scopes.get(name.value, ()):
            if scope.holds(name):
                binding = scope.bindings[name.value]
                return scope.node if binding.kind == "parameter" else None
        return None

    def instance_of(self, name: cst.Name) -> Optional[str]:
        """The file's class a function-local name holds an instance of (`policy = PolicyNet()`), else None."""
        binding = self._binding(name)
        return binding.cls if binding is not None and binding.kind == "local" else None

    def subclasses(self, name: str) -> List[str]:
        """Classes of the file that inherit from `name`, directly or not."""
        found, frontier = [], [name]
        while frontier:
            base = frontier.pop()
            for cls in self._classes.values():
                if base in cls.bases and cls.name not in found and cls.name != name:
                    found.append(cls.name)
                    frontier.append(cls.name)
        return found

    def field(self, cls: str, name: str) -> Optional[Declaration]:
        """The declaration a class's field `name` takes its default from: its own, or a base's."""
        seen = set()
        stack = [cls]
        while stack:
            current = stack.pop(0)
            if current in seen or current not in self._classes:
                continue
            seen.add(current)
            info = self._classes[current]
            if name in info.fields:
                return info.fields[name]
            stack = info.bases + stack
        return None

    def line(self, node: cst.CSTNode) -> int:
        """The 1-based line of a node (of its own file, for a RemoteNode). Costs a position pass over the
        file: call it only to word a finding."""
        if isinstance(node, RemoteNode):
            return node.line
        return self._file.fact(Lines).line(node)

    # ---- the walk ----------------------------------------------------------------

    def _walk(self, statements: Iterable[cst.CSTNode], chain: List[_Scope]) -> None:
        for statement in statements:
            if isinstance(statement, cst.FunctionDef):
                scope = self._function(statement, chain)
                self._walk(_statements(statement.body), chain + [scope])
            elif isinstance(statement, cst.ClassDef):
                scope = self._class(statement, chain)
                self._walk(_statements(statement.body), chain + [scope])
            elif isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in statement.body:
                    self._small(small, chain)
            else:
                self._walk(_compound_children(statement), chain)

    def _bind(self, scope: _Scope, binding: _Binding) -> None:
        if binding.name not in scope.bindings:
            self._scopes.setdefault(binding.name, []).append(scope)
        scope.bindings[binding.name] = binding

    def _class(self, node: cst.ClassDef, chain: List[_Scope]) -> _Scope:
        info = _Class(node)
        self._classes.setdefault(info.name, info)
        scope = _Scope(node, len(chain))
        for line in _statements(node.body):
            for statement in line.body if isinstance(line, cst.SimpleStatementLine) else ():
                for target, value in _targets(statement):
                    if isinstance(target, cst.Name):
                        declaration = Declaration(target.value, "field", statement, _field_default(value), info.name)
                        info.fields[target.value] = declaration
                        self._declarations.append(declaration)
                        self._bind(scope, _Binding("field", target.value, declaration=declaration))
        return scope

    def _function(self, node: cst.FunctionDef, chain: List[_Scope]) -> _Scope:
        scope = _Scope(node, len(chain))
        owner = node.name.value
        for decorator in node.decorators:  # click: @click.option("--lr", default=3e-5)
            if isinstance(decorator.decorator, cst.Call):
                self._command_line(decorator.decorator)
        in_class = bool(chain) and isinstance(chain[-1].node, cst.ClassDef)
        params = list(node.params.posonly_params) + list(node.params.params) + list(node.params.kwonly_params)
        for index, param in enumerate(params):
            name = param.name.value
            if index == 0 and in_class and name in ("self", "cls") and not _is_staticmethod(node):
                self._bind(scope, _Binding("self", name, cls=chain[-1].node.name.value))
                continue
            declaration = None
            if param.default is not None:  # typer: `lr: float = typer.Option(3e-5, "--lr")`
                declaration = Declaration(name, "parameter", param, _field_default(param.default), owner)
                self._declarations.append(declaration)
            cls = _annotated_class(param.annotation, self._class_names)
            imported = None if cls else _annotated_class(param.annotation, self._project)
            self._bind(scope, _Binding("parameter", name, cls=cls, declaration=declaration, imported=imported))
        for extra in (node.params.star_arg, node.params.star_kwarg):
            if isinstance(extra, cst.Param):
                self._bind(scope, _Binding("parameter", extra.name.value))
        locals_: Dict[str, List[Optional[cst.BaseExpression]]] = {}
        _collect_locals(node.body, locals_)
        for name, exprs in locals_.items():
            if name in scope.bindings:  # a reassigned parameter: its default is not what is used
                scope.bindings[name] = _Binding("local", name)
                continue
            expr = exprs[0] if len(exprs) == 1 else None
            cls = _constructed_class(expr, self._class_names)
            imported = None if cls else _constructed_class(expr, self._project)
            self._bind(scope, _Binding("local", name, expr=None if cls else expr, cls=cls, imported=imported))
        return scope

    def _command_line(self, call: cst.Call) -> None:
        """Command-line declarations: argparse `add_argument`, click `@option`, absl `flags.DEFINE_float`."""
        func = call.func
        tail = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if tail == "add_argument" or (tail == "option" and _long_flag(call)):
            dest = _argparse_dest(call)
            if dest:
                self._declarations.append(Declaration(dest, "argparse", call, _keyword(call, "default")))
        elif tail.startswith("DEFINE_"):
            positional = [a.value for a in call.args if a.keyword is None]
            name = positional[0] if positional else _keyword(call, "name")
            default = positional[1] if len(positional) > 1 else _keyword(call, "default")
            if isinstance(name, cst.SimpleString) and isinstance(name.evaluated_value, str):
                self._declarations.append(Declaration(name.evaluated_value, "argparse", call, default))

    def _small(self, statement: cst.BaseSmallStatement, chain: List[_Scope]) -> None:
        call = statement.value if isinstance(statement, (cst.Expr, cst.Assign)) else None
        if isinstance(call, cst.Call):
            self._command_line(call)
        if not chain:
            for target, value in _targets(statement):
                for name in bound_names(target):
                    plain = isinstance(target, cst.Name) and value is not None
                    declaration = Declaration(name, "constant", statement, value if plain else None)
                    self._constants.setdefault(name, []).append(declaration)
                    if plain:
                        self._declarations.append(declaration)
        elif isinstance(chain[-1].node, cst.FunctionDef):
            # `self.eps = eps` in a method: the value of `self.eps` elsewhere in the class.
            bindings = chain[-1].bindings
            for target, value in _targets(statement):
                if (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                        and target.value.value in bindings and bindings[target.value.value].kind == "self"):
                    cls = self._classes.get(bindings[target.value.value].cls or "")
                    if cls is not None:
                        cls.instance_attrs.setdefault(target.attr.value, []).append(value)

    # ---- resolution --------------------------------------------------------------

    def _of(self, expr: cst.CSTNode, depth: int) -> Optional[Value]:
        if depth > _MAX_DEPTH:
            return None
        depth += 1
        if isinstance(expr, (cst.Integer, cst.Float)):
            try:
                return Value(ast.literal_eval(expr.value), expr)
            except (ValueError, SyntaxError):
                return None
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
            inner = self._of(expr.expression, depth)
            if inner is None:
                return None
            number = -inner.number if isinstance(expr.operator, cst.Minus) else inner.number
            node = expr if inner.node is expr.expression else inner.node
            return Value(number, node, inner.names, inner.origin)
        if isinstance(expr, cst.BinaryOperation):
            return self._arithmetic(expr, depth)
        if isinstance(expr, cst.Name):
            return self._name(expr, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, depth)
        if isinstance(expr, cst.Call):
            return self._call(expr, depth)
        return None

    def _arithmetic(self, expr: cst.BinaryOperation, depth: int) -> Optional[Value]:
        operation = _ARITHMETIC.get(type(expr.operator))
        if operation is None:
            return None
        left, right = self._of(expr.left, depth), self._of(expr.right, depth)
        if left is None or right is None or isinstance(left.number, bool) or isinstance(right.number, bool):
            return None
        try:
            number = operation(left.number, right.number)
        except (ZeroDivisionError, OverflowError):
            return None
        if number is None or isinstance(number, complex):
            return None
        # Written here, whether both parts are literals or one comes from a name.
        named = left if left.node is not expr.left else right
        return Value(number, expr, named.names, named.origin)

    def _binding(self, name: cst.Name) -> Optional[_Binding]:
        """What `name` means where it stands: the deepest function or class body that binds it and holds it."""
        scopes = self._scopes.get(name.value, ())
        if len(scopes) == 1 and name.value not in self._module_names:
            # Bound in one body only and nowhere at module level: a use elsewhere could not run.
            return scopes[0].bindings[name.value]
        for scope in scopes:
            if scope.holds(name):
                return scope.bindings[name.value]
        return None

    def _name(self, expr: cst.Name, depth: int) -> Optional[Value]:
        if expr.value in ("True", "False"):
            return Value(expr.value == "True", expr)
        binding = self._binding(expr)
        if binding is not None:
            if binding.declaration is not None:
                value = self._declared(binding.declaration, depth)
            elif binding.expr is not None:
                value = self._of(binding.expr, depth)
                if value is not None and value.origin == "literal":
                    value = Value(value.number, value.node, value.names, f"value assigned to {expr.value}")
            else:
                return None
            return value and value.through(expr.value)
        constants = self._constants.get(expr.value, [])
        if not constants and expr.value in self._project:
            return self._remote(expr.value, ())
        if len(constants) != 1:
            return None
        value = self._declared(constants[0], depth)
        return value and value.through(expr.value)

    def _declared(self, declaration: Declaration, depth: int) -> Optional[Value]:
        if declaration.default is None:
            return None
        value = self._of(declaration.default, depth)
        if value is None:
            return None
        origin = declaration.origin if value.origin == "literal" else value.origin
        return Value(value.number, value.node, value.names, origin)

    def _attribute(self, expr: cst.Attribute, depth: int) -> Optional[Value]:
        name = expr.attr.value
        owner = expr.value
        spelled = dotted(expr)
        parts = spelled.split(".") if spelled is not None else None
        if parts is not None and self._is_imported(parts[0]) and self._binding(_head(expr)) is None:
            value = self._remote(parts[0], tuple(parts[1:]))  # `config.LR`, `hp.TrainConfig.lr`
            if value is not None:
                return value
        if isinstance(owner, cst.Name):
            if owner.value in ("self", "cls"):
                # Which class's method this is would need the enclosing def: ask every class, and
                # answer only when they agree.
                return self._agreed([self._member(c, name, depth) for c in self._classes
                                     if self.field(c, name) or self._assigned_in(c, name)
                                     or self._inherited_remote(c, name) is not None], name)
            binding = self._binding(owner)
            if binding is not None and binding.imported and self._is_imported(binding.imported):
                value = self._remote(binding.imported, (name,))  # `cfg: TrainConfig`, `cfg = TrainConfig()`
                if value is not None:
                    return value.through(name)
            cls = binding.cls if binding is not None else (owner.value if owner.value in self._class_names else None)
            if cls is not None:
                value = self._member(cls, name, depth)
                return value and value.through(name)
        candidates = {}
        for declaration in [d for d in self._declarations if d.name == name and d.kind == "argparse"] + [
                self.field(c, name) for c in self._classes]:
            if declaration is not None and id(declaration.node) not in candidates:
                candidates[id(declaration.node)] = self._declared(declaration, depth)
        return self._agreed(list(candidates.values()), name)

    @staticmethod
    def _agreed(values: List[Optional[Value]], name: str) -> Optional[Value]:
        """The value when every candidate resolves to the same number; None otherwise."""
        if not values or any(v is None for v in values) or any(v.number != values[0].number for v in values):
            return None
        return values[0].through(name)

    def _member(self, cls: str, name: str, depth: int) -> Optional[Value]:
        declaration = self.field(cls, name)
        if declaration is not None:
            return self._declared(declaration, depth)
        assigned = self._assigned_in(cls, name)
        if not assigned:
            return self._inherited_remote(cls, name)
        if len(assigned) != 1 or assigned[0] is None:
            return None
        return self._of(assigned[0], depth)

    # ---- other modules -----------------------------------------------------------

    def _is_imported(self, name: str) -> bool:
        """A module-level import of `name` that no module-level assignment rebinds."""
        return name in self._project and name not in self._constants

    def _inherited_remote(self, cls: str, name: str) -> Optional[Value]:
        """A field `cls` inherits from a base class imported from another project module."""
        for owner in [cls] + self._bases_of(cls):
            for base in self._classes[owner].bases:
                if base not in self._classes and self._is_imported(base):
                    value = self._remote(base, (name,))
                    if value is not None:
                        return value
        return None

    def _remote(self, local: str, attributes: Tuple[str, ...]) -> Optional[Value]:
        """The number that the imported `local` (then `attributes`) stands for in another project module."""
        if not self._file.settings.option(CROSS_MODULE_VALUES):
            return None
        module, level, imported = self._project[local]
        names = ((imported,) if imported else ()) + attributes
        if not names:
            return None
        if self._resolver is None:
            from rllint.analysis.modules import Resolver

            self._resolver = Resolver(self._file.path, self._file.dependencies)
        written = self._resolver.resolve(module, level, names)
        if written is None or written.path == os.path.abspath(self._file.path):
            return None  # a cycle back into this file: its own walk already knows that value
        key = (written.path, written.line, written.column, written.end_line, written.end_column)
        node = self._remote_nodes.get(key)
        if node is None:
            node = self._remote_nodes[key] = RemoteNode(*key)
        names = (local,) + attributes[:-1]
        if written.names and written.names[0] == names[-1]:
            names = names[:-1]
        return Value(written.number, node, names + written.names, written.origin)

    def _assigned_in(self, cls: str, name: str) -> List[Optional[cst.BaseExpression]]:
        """What the methods of `cls` and its bases assign to `self.<name>`."""
        if cls not in self._classes:
            return []
        return [expr for c in [cls] + self._bases_of(cls) for expr in self._classes[c].instance_attrs.get(name, [])]

    def _bases_of(self, cls: str) -> List[str]:
        bases, stack = [], list(self._classes[cls].bases)
        while stack:
            base = stack.pop(0)
            if base in self._classes and base not in bases:
                bases.append(base)
                stack.extend(self._classes[base].bases)
        return bases

    def _call(self, expr: cst.Call, depth: int) -> Optional[Value]:
        callee = self._imports.qualified(expr.func)
        positional = [a.value for a in expr.args if a.keyword is None and not a.star]
        if callee in ("float", "int") and len(positional) == 1 and len(expr.args) == 1:
            inner = positional[0]
            value = _number_in_string(inner) if isinstance(inner, cst.SimpleString) else self._of(inner, depth)
            if value is None:
                return None
            try:
                number = float(value.number) if callee == "float" else int(value.number)
            except (OverflowError, ValueError):
                return None
            return Value(number, value.node, value.names, value.origin)
        if callee in _ENV_GETTERS or (callee or "").endswith("environ.get"):
            default = positional[1] if len(positional) > 1 else _keyword(expr, "default")
            key = positional[0] if positional else None
            if default is None:
                return None
            value = _number_in_string(default) if isinstance(default, cst.SimpleString) else self._of(default, depth)
            if value is None:
                return None
            variable = key.evaluated_value if isinstance(key, cst.SimpleString) else "?"
            return Value(value.number, value.node, value.names, f"default of environment variable {variable}")
        return None


def _imports_by_name(tree: ast.Module) -> Dict[str, Tuple[str, int, Optional[str]]]:
    """Module-level import statements: bound name -> (module, level, imported name or None for a module).

    Only the import statements are read here; whether a module belongs to the project is found
    (on disk) when a value is asked for.
    """
    found: Dict[str, Tuple[str, int, Optional[str]]] = {}
    statements = list(tree.body)
    while statements:
        statement = statements.pop(0)
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    found[alias.asname] = (alias.name, 0, None)
                else:
                    top = alias.name.split(".")[0]
                    found.setdefault(top, (top, 0, None))
        elif isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if alias.name != "*":
                    found[alias.asname or alias.name] = (statement.module or "", statement.level or 0, alias.name)
        elif isinstance(statement, (ast.If, ast.Try)):  # `try: from .hparams import LR`
            statements.extend(statement.body)
            statements.extend(getattr(statement, "orelse", []))
    return found


def _head(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    """The value given as `name=` to a call, if any."""
    arg = keyword(call, name)
    return None if arg is None else arg.value


def _number_in_string(node: cst.SimpleString) -> Optional[Value]:
    try:
        text = node.evaluated_value
        number = float(text.strip()) if isinstance(text, str) else None
    except (ValueError, TypeError):
        return None
    if number is None or number != number or number in (float("inf"), float("-inf")):
        return None
    return Value(number, node)


def _long_flag(call: cst.Call) -> bool:
    return any(isinstance(a.value, cst.SimpleString) and str(a.value.evaluated_value).startswith("--")
               for a in call.args if a.keyword is None)


def _argparse_dest(call: cst.Call) -> Optional[str]:
    dest = _keyword(call, "dest")
    if isinstance(dest, cst.SimpleString):
        return dest.evaluated_value
    flags = [a.value.evaluated_value for a in call.args
             if a.keyword is None and isinstance(a.value, cst.SimpleString) and isinstance(a.value.evaluated_value, str)]
    long = [f for f in flags if f.startswith("--")]
    chosen = long[0][2:] if long else (flags[0].lstrip("-") if flags else None)
    return chosen.replace("-", "_") if chosen else None


def _field_default(value: Optional[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
    """The default of `x: float = 2e-5` or `x: float = field(default=2e-5)`."""
    if isinstance(value, cst.Call):
        func = value.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in _FIELD_CALLS:
            default = _keyword(value, "default")
            if default is None and name in ("Field", "Option") and value.args and value.args[0].keyword is None:
                default = value.args[0].value
            return default
    return value


def _targets(statement: cst.BaseSmallStatement) -> Iterable[Tuple[cst.BaseExpression, Optional[cst.BaseExpression]]]:
    """(target, value) pairs assigned by a small statement; value None when not a plain assignment."""
    if isinstance(statement, cst.Assign):
        for target in statement.targets:
            yield target.target, statement.value
    elif isinstance(statement, cst.AnnAssign):
        yield statement.target, statement.value
    elif isinstance(statement, cst.AugAssign):
        yield statement.target, None


def _statements(body: cst.BaseSuite) -> List[cst.BaseStatement]:
    return list(body.body) if isinstance(body, cst.IndentedBlock) else [body] if isinstance(body, cst.SimpleStatementSuite) else []


def _collect_locals(body: cst.CSTNode, found: Dict[str, List[Optional[cst.BaseExpression]]]) -> None:
    """Names a function body binds, with the expression of each plain assignment (None for others)."""
    if isinstance(body, (cst.FunctionDef, cst.ClassDef)):
        found.setdefault(body.name.value, []).append(None)
        return
    if isinstance(body, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        for statement in body.body:
            for target, value in _targets(statement):
                plain = isinstance(target, cst.Name)
                for name in bound_names(target):
                    found.setdefault(name, []).append(value if plain else None)
            if isinstance(statement, (cst.Import, cst.ImportFrom)) and not isinstance(statement.names, cst.ImportStar):
                for alias in statement.names:
                    bound = alias.asname.name if alias.asname else alias.name
                    for name in bound_names(bound) if isinstance(bound, cst.Name) else ():
                        found.setdefault(name, []).append(None)
        return
    if isinstance(body, cst.For):
        for name in bound_names(body.target):
            found.setdefault(name, []).append(None)
    elif isinstance(body, cst.With):
        for item in body.items:
            if item.asname is not None:
                for name in bound_names(item.asname.name):
                    found.setdefault(name, []).append(None)
    elif isinstance(body, cst.ExceptHandler) and body.name is not None:
        for name in bound_names(body.name.name):
            found.setdefault(name, []).append(None)
    for child in _compound_children(body):
        _collect_locals(child, found)


def _compound_children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The statements and suites directly inside a compound statement or suite."""
    children: List[cst.CSTNode] = []
    for attribute in ("body", "orelse", "handlers", "finalbody"):
        child = getattr(node, attribute, None)
        if child is None:
            continue
        if isinstance(child, (list, tuple)):
            children.extend(child)
        elif isinstance(child, cst.IndentedBlock):
            children.extend(child.body)
        elif isinstance(child, (cst.CSTNode,)):
            children.append(child)
    return [c for c in children if isinstance(c, cst.CSTNode)]


def _annotated_class(annotation: Optional[cst.Annotation], classes) -> Optional[str]:
    if annotation is not None:
        node = annotation.annotation
        if isinstance(node, cst.SimpleString):
            text = node.evaluated_value
            return text if text in classes else None
        if isinstance(node, cst.Name) and node.value in classes:
            return node.value
    return None


def _constructed_class(expr: Optional[cst.BaseExpression], classes) -> Optional[str]:
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in classes:
        return expr.func.value
    return None


def _is_staticmethod(node: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators)
