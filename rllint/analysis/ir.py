"""The intermediate representation of one module: its functions, their statements in order, each
statement's context, and the module's call sites (the fact engine's first layer, DESIGN.md).

One walk over the statements of the libcst tree (expressions are visited only for the calls they
hold) builds, per function (the module's top level is a function too):
- its parameters with their defaults and annotations, its decorators (qualified through the
  module's imports) and its class;
- its statements in source order, each with a `Context`: under `no_grad` / `inference_mode` /
  `set_grad_enabled(False)` (lexically: callers are the interpreter's business), inside a loop,
  an `if __name__ == "__main__":` block, `autocast`, a `try` body, and the branches it sits in;
- its call sites, and the names it mentions without calling them (a function passed as a value
  escapes: code this module does not show may call it).

The abstract interpreter (`rllint.analysis.flow`) walks the same statements with these contexts;
rules ask the interpreter, never this walk.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from rllint.analysis.syntax import children, dotted, walk

NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                              "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode"})
ENABLE_GRAD_CONTEXTS = frozenset({"torch.enable_grad", "torch.autograd.enable_grad"})
SET_GRAD = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})
AUTOCAST = frozenset({"torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast", "torch.cpu.amp.autocast"})

MODULE_SCOPE = "<module>"
_OUTPUT_FIELDS = frozenset({"logits", "last_hidden_state"})


@dataclass(frozen=True)
class Context:
    """Where a statement runs. `grad` is the lexical gradient mode: False under `no_grad` and its
    relatives, True under `enable_grad`, None where the function's callers decide."""

    grad: Optional[bool] = None
    loops: int = 0
    main: bool = False  # inside `if __name__ == "__main__":`
    autocast: bool = False
    guarded: bool = False  # inside a `try` body
    branches: Tuple[Tuple[int, int], ...] = ()  # (id of the `if`, arm) of every enclosing branch
    loop: Optional[cst.CSTNode] = None  # the outermost loop of the function around the statement


@dataclass
class Param:
    name: str
    index: int  # position among the positional parameters; -1 for keyword-only and starred ones
    default: Optional[cst.BaseExpression]
    annotation: Optional[cst.BaseExpression]
    star: str = ""  # "*" or "**"
    node: Optional[cst.Param] = None


@dataclass(eq=False)
class CallSite:
    node: cst.Call
    function: "FunctionIR"  # the function the call is written in
    statement: cst.CSTNode  # the small statement (or compound header) it belongs to
    context: Context


@dataclass(eq=False)
class FunctionIR:
    """A function, a method, a nested function, or the module's top level (`MODULE_SCOPE`)."""

    node: cst.CSTNode  # cst.FunctionDef, or cst.Module for the top level
    name: str
    qualname: str  # "f", "Class.method", "outer.inner"
    module: "ModuleIR"
    cls: Optional["ClassIR"] = None
    parent: Optional["FunctionIR"] = None
    params: List[Param] = field(default_factory=list)
    decorators: Tuple[str, ...] = ()
    statements: List[cst.CSTNode] = field(default_factory=list)  # small statements and compound headers
    calls: List[CallSite] = field(default_factory=list)
    returns: List[cst.Return] = field(default_factory=list)
    nested: Dict[str, "FunctionIR"] = field(default_factory=dict)
    yields: bool = False

    @property
    def is_module(self) -> bool:
        return isinstance(self.node, cst.Module)

    @property
    def body(self) -> Sequence[cst.CSTNode]:
        if isinstance(self.node, cst.Module):
            return self.node.body
        if isinstance(self.node, cst.Lambda):
            return [self.node]  # its one statement: the expression it returns
        return _block(self.node.body)

    def param(self, name: str) -> Optional[Param]:
        return next((p for p in self.params if p.name == name), None)

    def bind(self, call: cst.Call, method: bool = False) -> Dict[str, cst.BaseExpression]:
        """The argument expression each parameter receives at `call` (`self` skipped for a method
        called through an instance); parameters a starred argument may fill are left out."""
        params = [p for p in self.params if not p.star]
        if method and params and params[0].index == 0:
            params = params[1:]
        positional = [p for p in params if p.index >= 0]
        bound: Dict[str, cst.BaseExpression] = {}
        index: Optional[int] = 0  # None after `*args`: the positions of what follows are unknown
        for arg in call.args:
            if arg.star == "*":
                index = None
            elif arg.keyword is not None:
                bound[arg.keyword.value] = arg.value
            elif arg.star == "" and index is not None:
                if index < len(positional):
                    bound[positional[index].name] = arg.value
                index += 1
        return bound


@dataclass(eq=False)
class ClassIR:
    node: cst.ClassDef
    name: str
    bases: Tuple[str, ...]  # qualified dotted names of the bases (`transformers.Trainer`, `Base`)
    module: "ModuleIR"
    methods: Dict[str, FunctionIR] = field(default_factory=dict)
    attributes: Dict[str, cst.BaseExpression] = field(default_factory=dict)  # class-level assignments
    fields: Dict[str, Tuple[Optional[cst.BaseExpression], Optional[cst.BaseExpression]]] = field(
        default_factory=dict)  # annotated class attributes: name -> (annotation, default)


class ModuleIR:
    """The functions, classes, imports and call sites of one module."""

    def __init__(self, module: cst.Module, path: str = "") -> None:
        self.module = module
        self.path = path
        self.imports: Dict[str, str] = {}  # local name -> dotted name it was imported as
        self.relative_imports: Dict[str, Tuple[int, str, str]] = {}  # local name -> (level, module, name)
        self.star_imports: List[Tuple[int, str]] = []  # (level, module) of each `from module import *`
        self.functions: Dict[str, FunctionIR] = {}  # by qualname, every depth
        self.classes: Dict[str, ClassIR] = {}  # by name, top level and nested
        self.context: Dict[cst.CSTNode, Context] = {}  # statement -> its context
        self.owner: Dict[cst.CSTNode, FunctionIR] = {}  # statement -> the function it is in
        self.calls_named: Dict[str, List[CallSite]] = {}  # last name of the callee -> its call sites
        self.mentions: Dict[str, List[cst.Name]] = {}  # names read other than as a call's callee
        self.quiet: Set[int] = set()  # ids of mentions that hand nothing on: an assignment's target, `x is None`
        # id of a mention -> the function it is written in (None: an attribute's name, `obj.name`)
        self.mentioned_in: Dict[int, Optional[FunctionIR]] = {}
        self.lambdas: Dict[cst.Lambda, FunctionIR] = {}  # a lambda bound to a local name: a function of its own
        # Calls whose result's `.logits` / `.last_hidden_state` is read: used as a transformers model's forward.
        self.output_read: set = set()
        self.top = FunctionIR(module, MODULE_SCOPE, MODULE_SCOPE, self)
        self.flow = None  # the interpreter of this module (`rllint.analysis.flow.Flow`), once built
        self._tables: Optional[FrozenSet[str]] = None  # the names `table` accepts, found on its first question
        self._walked: Optional[_ModuleWalk] = None  # parents, names and bound targets, on the first question
        _Builder(self).run()

    # ---- questions ----

    def qualified(self, expr: cst.CSTNode) -> Optional[str]:
        """The dotted name an expression stands for through the imports: `F.softmax` ->
        `torch.nn.functional.softmax`; names that were not imported keep their spelling."""
        name = dotted(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        head = self.imports.get(head, head)
        return f"{head}.{rest}" if rest else head

    def function_at(self, node: cst.CSTNode) -> FunctionIR:
        """The function a statement belongs to."""
        return self.owner.get(node, self.top)

    def all_functions(self) -> Iterator[FunctionIR]:
        yield self.top
        yield from self.functions.values()

    def table(self, name: str) -> bool:
        """Whether the module-level name `name` is a lookup table: bound here once, at the top level, to a dict
        written with literal keys (or imported), and only ever read in this module (`name[k]`, `name.get(k)`,
        `k in name`, `list(name)`): every key it can hold is written where it is built."""
        if self._tables is None:
            parents, names, targets = self._walk()
            self._tables = frozenset(name for name, nodes in names.items()
                                     if _read_only_table(self.module, nodes, parents, targets))
        return name in self._tables

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The node of this module's tree that holds `node` (None for the module, or a node not in it)."""
        return self._walk()[0].get(id(node))

    def _walk(self) -> "_ModuleWalk":
        """One walk of the module for the questions that need every node: `table` and `parent`."""
        if self._walked is None:
            self._walked = _walk_module(self.module)
        return self._walked

    def escapes(self, function: FunctionIR) -> bool:
        """Whether the function is mentioned as a value (passed, stored, returned): callers this module
        does not show may run it. Binding its name or testing it against None hands nothing on, and a nested
        function's name means it only inside the function it is defined in (elsewhere it is another variable)."""
        scope = function.parent
        for name in self.mentions.get(function.name, ()):
            if id(name) in self.quiet:
                continue
            if scope is None or _inside(self.mentioned_in.get(id(name), scope), scope):
                return True
        return False


_TABLE_READS = frozenset({"get", "keys", "items", "values", "copy", "__getitem__", "__contains__"})
_READ_BY = frozenset({"len", "list", "sorted", "tuple", "set", "iter", "print", "str", "repr", "any", "all",
                      "enumerate", "isinstance", "bool"})


# Every node's parent (by id), the Name nodes of each name, and the ids of the targets statements bind.
_ModuleWalk = Tuple[Dict[int, cst.CSTNode], Dict[str, List[cst.Name]], Set[int]]


def _walk_module(module: cst.Module) -> _ModuleWalk:
    parents: Dict[int, cst.CSTNode] = {}
    targets = set()  # what statements bind, store into or delete
    names: Dict[str, List[cst.Name]] = {}
    stack: List[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        for child in children(node):
            parents[id(child)] = node
            stack.append(child)
        if isinstance(node, cst.Name):
            names.setdefault(node.value, []).append(node)
        elif isinstance(node, cst.AssignTarget) or isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            targets.add(id(node.target))
        elif isinstance(node, (cst.For, cst.CompFor)):
            targets.add(id(node.target))
        elif isinstance(node, cst.Del):
            targets.add(id(node.target))
    return parents, names, targets


def _read_only_table(module: cst.Module, nodes: List[cst.Name], parents: Dict[int, cst.CSTNode], targets: set) -> bool:
    """Whether the name of `nodes` (every place it is written) is a table (see `ModuleIR.table`)."""
    bindings: List[cst.CSTNode] = []
    for node in nodes:
        parent = parents.get(id(node))
        if id(node) in targets or isinstance(parent, cst.ImportAlias):
            bindings.append(node)
        elif isinstance(parent, cst.Attribute) and parent.attr is node:
            continue  # `x.name`: another object's attribute
        elif not _read(node, parent, parents, targets):
            return False
    if len(bindings) != 1:
        return False
    binding = parents.get(id(bindings[0]))
    if isinstance(binding, cst.ImportAlias):
        return True
    statement = parents.get(id(binding))
    return isinstance(binding, cst.AssignTarget) and isinstance(statement, cst.Assign) and \
        len(statement.targets) == 1 and parents.get(id(parents.get(id(statement)))) is module and \
        isinstance(statement.value, cst.Dict) and all(
            isinstance(e, cst.DictElement) and isinstance(e.key, (cst.SimpleString, cst.Integer))
            for e in statement.value.elements)


def _read(node: cst.Name, parent: Optional[cst.CSTNode], parents: Dict[int, cst.CSTNode], targets: set) -> bool:
    """A use of a table that reads it: indexed (not stored into), a reading method, `in`, a reading builtin."""
    if isinstance(parent, cst.Subscript) and parent.value is node:
        return id(parent) not in targets
    if isinstance(parent, cst.Attribute) and parent.value is node:
        return parent.attr.value in _TABLE_READS
    if isinstance(parent, cst.ComparisonTarget) or isinstance(parent, cst.For) and parent.iter is node:
        return True
    call = parents.get(id(parent)) if isinstance(parent, cst.Arg) else None
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in _READ_BY


def _block(body: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    return body.body


def _import_statements(module: cst.Module) -> Iterator[Tuple[cst.CSTNode, bool]]:
    """Each `import` / `from ... import` of the module in source order, and whether it runs at the module's own
    level (not inside a function or a class)."""
    stack: List[Tuple[cst.CSTNode, bool]] = [(stmt, True) for stmt in reversed(module.body)]
    while stack:
        node, top = stack.pop()
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            yield node, top
            continue
        if isinstance(node, cst.BaseExpression):
            continue
        inside = top and not isinstance(node, (cst.FunctionDef, cst.ClassDef))
        stack.extend((child, inside) for child in reversed(children(node)))


def _bindings(small: cst.CSTNode) -> Iterator[Tuple[str, Union[str, Tuple[int, str, str]]]]:
    """The local names an import statement binds, each to its dotted name, or to (level, module, name) when
    the import is relative."""
    if isinstance(small, cst.Import):
        for alias in small.names:
            name = _name_of(alias.name)
            if alias.asname is not None:
                yield alias.asname.name.value, name
            else:
                top = name.split(".")[0]
                yield top, top
    elif not isinstance(small.names, cst.ImportStar):
        source = _name_of(small.module) if small.module is not None else ""
        level = len(small.relative)
        for alias in small.names:
            local = alias.asname.name.value if alias.asname is not None else _name_of(alias.name)
            imported = _name_of(alias.name)
            if level:
                yield local, (level, source, imported)
            else:
                yield local, f"{source}.{imported}" if source else imported


class _Builder:
    def __init__(self, ir: ModuleIR) -> None:
        self.ir = ir

    def run(self) -> None:
        module = self.ir.module
        self._imports(module)  # imports first: decorators and bases are qualified through them
        self._suite(module.body, self.ir.top, Context(), None)

    def _imports(self, module: cst.Module) -> None:
        """Every import of the module, wherever it is written: at the top, in a `try`/`if` block, or inside a
        function (`def step(): import torch`, a lazy import). The module's own statements bind first, in order;
        an import inside a function or class adds a name the module does not bind, and a name that such imports
        bind to different objects is left unknown."""
        nested: Dict[str, object] = {}
        for small, top in _import_statements(module):
            if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                self.ir.star_imports.append((len(small.relative), _name_of(small.module) if small.module else ""))
            for local, bound in _bindings(small):
                if top:
                    table = self.ir.relative_imports if isinstance(bound, tuple) else self.ir.imports
                    if isinstance(bound, str) and local == bound:
                        table.setdefault(local, bound)  # `import a.b` binds `a`; an earlier `import a as a` stays
                    else:
                        table[local] = bound
                elif nested.setdefault(local, bound) != bound:
                    nested[local] = None
        for local, bound in nested.items():
            if bound is not None and local not in self.ir.imports and local not in self.ir.relative_imports:
                (self.ir.relative_imports if isinstance(bound, tuple) else self.ir.imports)[local] = bound

    # ---- statements ----

    def _suite(self, body: Sequence[cst.CSTNode], function: FunctionIR, context: Context,
               cls: Optional[ClassIR]) -> Context:
        """Walk a block; returns the context after it (a `set_grad_enabled(False)` statement changes the
        gradient mode of what follows in its block)."""
        for stmt in body:
            context = self._statement(stmt, function, context, cls)
        return context

    def _statement(self, stmt: cst.CSTNode, function: FunctionIR, context: Context,
                   cls: Optional[ClassIR]) -> Context:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self._record(small, function, context, in_class=cls is not None)
                self._class_attribute(small, cls)
                switched = self._set_grad(small)
                if switched is not None:
                    context = _replace(context, grad=switched)
            return context
        if isinstance(stmt, cst.FunctionDef):
            self._function(stmt, function, context, cls)
            return context
        if isinstance(stmt, cst.ClassDef):
            self._class(stmt, function, context)
            return context
        self._record(stmt, function, context, in_class=cls is not None)
        if isinstance(stmt, cst.If):
            main = _is_main_guard(stmt.test)
            arm = (id(stmt), 0)
            self._suite(_block(stmt.body), function,
                        _replace(context, main=context.main or main, branches=context.branches + (arm,)), cls)
            if stmt.orelse is not None:
                other = _replace(context, branches=context.branches + ((id(stmt), 1),))
                if isinstance(stmt.orelse, cst.If):
                    self._statement(stmt.orelse, function, other, cls)
                else:
                    self._suite(_block(stmt.orelse.body), function, other, cls)
        elif isinstance(stmt, (cst.For, cst.While)):
            inner = _replace(context, loops=context.loops + 1, loop=context.loop or stmt)
            self._suite(_block(stmt.body), function, inner, cls)
            if stmt.orelse is not None:
                self._suite(_block(stmt.orelse.body), function, context, cls)
        elif isinstance(stmt, cst.With):
            inner = context
            for item in stmt.items:
                inner = self._with_item(item.item, inner)
            self._suite(_block(stmt.body), function, inner, cls)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            self._suite(_block(stmt.body), function, _replace(context, guarded=True), cls)
            for handler in stmt.handlers:
                self._record(handler, function, context)
                self._suite(_block(handler.body), function, context, cls)
            for extra in (stmt.orelse, stmt.finalbody):
                if extra is not None:
                    self._suite(_block(extra.body), function, context, cls)
        elif isinstance(stmt, cst.Match):
            for case in stmt.cases:
                self._suite(_block(case.body), function, context, cls)
        return context

    def _with_item(self, item: cst.BaseExpression, context: Context) -> Context:
        call = item.func if isinstance(item, cst.Call) else item
        name = self.ir.qualified(call)
        if name in NO_GRAD_CONTEXTS:
            return _replace(context, grad=False)
        if name in ENABLE_GRAD_CONTEXTS:
            return _replace(context, grad=True)
        if name in SET_GRAD and isinstance(item, cst.Call) and item.args:
            flag = _bool(item.args[0].value)
            return _replace(context, grad=flag) if flag is not None else context
        if name in AUTOCAST:
            return _replace(context, autocast=True)
        return context

    def _set_grad(self, small: cst.CSTNode) -> Optional[bool]:
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and small.value.args:
            if self.ir.qualified(small.value.func) in SET_GRAD:
                return _bool(small.value.args[0].value)
        return None

    def _record(self, stmt: cst.CSTNode, function: FunctionIR, context: Context, in_class: bool = False) -> None:
        """A statement of `function`: its context, and the calls and mentions of its own expressions."""
        ir = self.ir
        ir.context[stmt] = context
        ir.owner[stmt] = function
        if not in_class:
            function.statements.append(stmt)
        if isinstance(stmt, cst.Return):
            function.returns.append(stmt)
        for expr in _header(stmt):
            self._expressions(expr, function, stmt, context)

    def _expressions(self, root: cst.CSTNode, function: FunctionIR, stmt: cst.CSTNode, context: Context) -> None:
        ir = self.ir
        stack = [root]
        callees = set()  # ids of the callee expressions of calls: naming a function there is not a mention
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Lambda) and self._bound_lambda(node, function, stmt, context):
                continue
            if isinstance(node, cst.Lambda):
                # a lambda handed on runs wherever it is called: what it names, it hands on (mentions, not calls)
                for name in walk(node.body, into_functions=True):
                    if isinstance(name, cst.Name):
                        ir.mentions.setdefault(name.value, []).append(name)
                        ir.mentioned_in[id(name)] = function
                continue
            if isinstance(node, cst.Yield):
                function.yields = True
            if isinstance(node, cst.Call):
                site = CallSite(node, function, stmt, context)
                function.calls.append(site)
                tail = _tail(node.func)
                if tail:
                    ir.calls_named.setdefault(tail, []).append(site)
                callees.add(id(node.func))
            if isinstance(node, cst.Attribute):
                if node.attr.value in _OUTPUT_FIELDS and isinstance(node.value, cst.Call):
                    ir.output_read.add(node.value)
                if id(node) not in callees:
                    ir.mentions.setdefault(node.attr.value, []).append(node.attr)
                    ir.mentioned_in[id(node.attr)] = None  # an attribute: never a local function's own name
                stack.append(node.value)  # not the attribute's own Name, which is no variable
                continue
            if isinstance(node, cst.Name) and id(node) not in callees:
                ir.mentions.setdefault(node.value, []).append(node)
                ir.mentioned_in[id(node)] = function
            if isinstance(node, cst.Assign):
                ir.quiet.update(id(t.target) for t in node.targets if isinstance(t.target, cst.Name))
            elif isinstance(node, cst.Comparison) and isinstance(node.left, cst.Name) and len(node.comparisons) == 1 \
                    and isinstance(node.comparisons[0].operator, (cst.Is, cst.IsNot)) and \
                    _is_none(node.comparisons[0].comparator):
                ir.quiet.add(id(node.left))
            stack.extend(reversed(children(node)))

    def _bound_lambda(self, node: cst.Lambda, parent: FunctionIR, stmt: cst.CSTNode, context: Context) -> bool:
        """`name = lambda ...` in a function: a function `name` nested in it (as `def name`), whose one statement is
        the lambda itself. False (a value handed on) anywhere else, or where the name already names a function."""
        if parent.is_module or not (isinstance(stmt, cst.Assign) and stmt.value is node and len(stmt.targets) == 1
                                    and isinstance(stmt.targets[0].target, cst.Name)):
            return False
        name = stmt.targets[0].target.value
        qualname = f"{parent.qualname}.{name}"
        if name in parent.nested or qualname in self.ir.functions:
            return False
        function = FunctionIR(node, name, qualname, self.ir, parent=parent, params=_params(node.params))
        self.ir.functions[qualname] = parent.nested[name] = self.ir.lambdas[node] = function
        for param in node.params.params + node.params.kwonly_params + node.params.posonly_params:
            if param.default is not None:
                self._expressions(param.default, parent, stmt, context)
        inner = Context(grad=None, main=False)  # the mode of wherever it is called
        self.ir.context[node] = inner
        self.ir.owner[node] = function
        function.statements.append(node)
        self._expressions(node.body, function, node, inner)
        return True

    def _class_attribute(self, small: cst.CSTNode, cls: Optional[ClassIR]) -> None:
        if cls is None:
            return
        if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
            cls.fields[small.target.value] = (small.annotation.annotation, small.value)
            if small.value is not None:
                cls.attributes[small.target.value] = small.value
        elif isinstance(small, cst.Assign):
            for target in small.targets:
                if isinstance(target.target, cst.Name):
                    cls.attributes[target.target.value] = small.value

    # ---- definitions ----

    def _function(self, node: cst.FunctionDef, parent: FunctionIR, context: Context,
                  cls: Optional[ClassIR]) -> None:
        ir = self.ir
        name = node.name.value
        if cls is not None:
            qualname = f"{cls.name}.{name}"
        elif parent.is_module:
            qualname = name
        else:
            qualname = f"{parent.qualname}.{name}"
        decorators = tuple(self.ir.qualified(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
                           or "" for d in node.decorators)
        function = FunctionIR(node, name, qualname, ir, cls=cls, parent=None if parent.is_module else parent,
                              params=_params(node.params), decorators=decorators)
        ir.functions[qualname] = function
        if cls is not None:
            cls.methods[name] = function
        elif not parent.is_module:
            parent.nested[name] = function
        for decorator in node.decorators:
            self._expressions(decorator.decorator, parent, node, context)
        for param in node.params.params + node.params.kwonly_params + node.params.posonly_params:
            if param.default is not None:
                self._expressions(param.default, parent, node, context)
        grad = context.grad if cls is None and not parent.is_module else None
        if any(d in NO_GRAD_CONTEXTS for d in decorators):
            grad = False
        elif any(d in ENABLE_GRAD_CONTEXTS for d in decorators):
            grad = True
        inner = Context(grad=grad, main=False)
        self._suite(_block(node.body), function, inner, None)

    def _class(self, node: cst.ClassDef, parent: FunctionIR, context: Context) -> None:
        bases = tuple(self.ir.qualified(b.value) or "" for b in node.bases if b.keyword is None)
        cls = ClassIR(node, node.name.value, bases, self.ir)
        self.ir.classes.setdefault(cls.name, cls)
        for base in node.bases:
            self._expressions(base.value, parent, node, context)
        self._suite(_block(node.body), parent, context, cls)


def _params(params: cst.Parameters) -> List[Param]:
    found: List[Param] = []
    index = 0
    for param in list(params.posonly_params) + list(params.params):
        found.append(Param(param.name.value, index, param.default,
                           param.annotation.annotation if param.annotation else None, node=param))
        index += 1
    if isinstance(params.star_arg, cst.Param):
        found.append(Param(params.star_arg.name.value, -1, None, None, "*", params.star_arg))
    for param in params.kwonly_params:
        found.append(Param(param.name.value, -1, param.default,
                           param.annotation.annotation if param.annotation else None, node=param))
    if params.star_kwarg is not None:
        found.append(Param(params.star_kwarg.name.value, -1, None, None, "**", params.star_kwarg))
    return found


def _header(stmt: cst.CSTNode) -> List[cst.CSTNode]:
    """The expressions a statement evaluates itself, without its nested blocks."""
    if isinstance(stmt, cst.If) or isinstance(stmt, cst.While):
        return [stmt.test]
    if isinstance(stmt, cst.For):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, cst.With):
        return [part for item in stmt.items for part in ((item.item, item.asname.name) if item.asname else
                                                         (item.item,))]
    if isinstance(stmt, cst.ExceptHandler):
        return [stmt.type] if stmt.type is not None else []
    if isinstance(stmt, (cst.Try, cst.TryStar)):
        return []
    if isinstance(stmt, cst.Match):
        return [stmt.subject]
    return [stmt]


def _name_of(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_name_of(node.value)}.{node.attr.value}"
    return ""


def _tail(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


def _inside(function: Optional[FunctionIR], outer: FunctionIR) -> bool:
    """Whether `function` is `outer` or nested in it (None: an attribute's name, in no scope)."""
    while function is not None:
        if function is outer:
            return True
        function = function.parent
    return False


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _bool(expr: cst.BaseExpression) -> Optional[bool]:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def _is_main_guard(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left, right = test.left, test.comparisons[0].comparator
    names = {n.value for n in (left, right) if isinstance(n, cst.Name)}
    strings = {s.evaluated_value for s in (left, right) if isinstance(s, cst.SimpleString)}
    return names == {"__name__"} and strings == {"__main__"}


def _replace(context: Context, **changes) -> Context:
    values = {name: getattr(context, name) for name in Context.__dataclass_fields__}
    values.update(changes)
    return Context(**values)
