"""Which keys of a settings file the code reads: a key the file sets that no code path reads is a setting the run
does not use.

The configuration domain gives the dict that `yaml.safe_load` / `json.load` returns from a file the code or its
launches name a `settings` fact: (the files, the dotted key of the mapping), on the dict and on every mapping in
it. Every expression that holds such a dict is used in one of three ways:
- a read of one key: `cfg["lora"]`, `cfg.get("lora", {})` (the result, when a mapping, has uses of its own);
- no use of its keys: an alias (`x = cfg`), a membership test, a test of truth, a bare expression, a dump of the
  whole file (`json.dump(cfg, f)`, `yaml.dump`, `print`), a return to callers of this file, an argument of a
  function of this file whose parameter holds the same dict (its own uses count);
- a use of every key: anything else (iterated, spread into a call `GRPOConfig(**cfg["training"])`, handed to
  code out of sight, stored on an object, put into a container).
A key is unread when no expression reads it and no mapping above it is used whole.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.facts import DICT, FUNCTION, Value
from rllint.analysis.flow import Flow, constant_key
from rllint.analysis.syntax import children, positional

# Calls that write the whole settings out (a run's record of them), reading none of them for the run.
_WRITERS = frozenset({"json.dump", "json.dumps", "yaml.dump", "yaml.safe_dump", "pprint.pprint", "print"})
_KEY_READS = frozenset({"get", "pop", "setdefault"})


class SettingsUse:
    """Per settings file the code loads (its path): the dotted keys read and the mappings used whole (by dotted
    prefix: "" is the whole file, "lora." the mapping under `lora`)."""

    def __init__(self, file) -> None:
        self.read: Dict[str, Set[str]] = {}
        self.whole: Dict[str, Set[str]] = {}
        flow = file.fact(Flow)
        flow.analyze_all()
        held = [(node, v) for node, v in flow.values.items() if _settings(v) is not None]
        if not held:
            return
        parents = _parents(file.module)
        for node, v in held:
            files, prefix = _settings(v)
            for key in self._uses(flow, node, v, parents):
                for path in files:
                    if key.endswith(".") or key == "":
                        self.whole.setdefault(path, set()).add(key)
                    else:
                        self.read.setdefault(path, set()).add(key)
            for path in files:
                self.read.setdefault(path, set())

    def loaded(self) -> List[str]:
        """The settings files the code loads and reads some key of."""
        return [path for path, keys in self.read.items() if keys]

    def unread(self, path: str, key: str) -> bool:
        """Whether no code path reads the dotted `key` of the file at `path` (nor a mapping above it whole)."""
        if key in self.read.get(path, ()):
            return False
        parts = key.split(".")
        prefixes = {".".join(parts[:i]) + "." for i in range(1, len(parts))} | {""}
        return not prefixes & self.whole.get(path, set())

    def _uses(self, flow: Flow, node: cst.CSTNode, held: Value, parents) -> Iterable[str]:
        """The dotted keys `node` reads, its own prefix when it is used whole, nothing when it uses no key."""
        _, prefix = _settings(held)
        parent = parents.get(node)
        key, result = None, None
        if isinstance(parent, cst.Subscript) and parent.value is node:
            key, result = constant_key(parent), parent
        elif isinstance(parent, cst.Attribute) and parent.value is node:
            call = parents.get(parent)
            first = positional(call, 0) if isinstance(call, cst.Call) and call.func is parent else None
            if parent.attr.value in _KEY_READS and isinstance(first, cst.SimpleString):
                key, result = first.evaluated_value, call
        if key is not None:
            if not isinstance(key, str):
                return (prefix,)
            found = _settings(flow.values.get(result))
            if found == (_settings(held)[0], prefix + key + "."):
                return (prefix + key,)  # a mapping, whose own uses are recorded
            item = dict(held.facts.get("items") or ()).get(key)
            if item is not None and item.facts.get("type") not in (None, DICT):
                return (prefix + key,)  # a value
            return (prefix + key, prefix + key + ".")  # what it holds is not known: a mapping used whole, maybe
        if self._no_use(flow, node, held, parent, parents):
            return ()
        return (prefix,)

    @staticmethod
    def _no_use(flow: Flow, node: cst.CSTNode, held: Value, parent, parents) -> bool:
        if isinstance(parent, (cst.Expr, cst.If, cst.While)) or isinstance(parent, cst.AssignTarget) and \
                parent.target is node:
            return True
        if isinstance(parent, cst.ComparisonTarget) and isinstance(parent.operator, (cst.In, cst.NotIn)):
            return True
        if isinstance(parent, cst.Assign) and parent.value is node:
            return all(isinstance(t.target, cst.Name) for t in parent.targets)
        if isinstance(parent, cst.AnnAssign) and parent.value is node:
            return isinstance(parent.target, cst.Name)
        if isinstance(parent, cst.Return):
            function = flow.function_of(parent)
            sites = flow.callers(function) if function is not None and not function.is_module else []
            return bool(sites) and not flow.ir.escapes(function) and all(flow.owns(s.node) for s in sites)
        if isinstance(parent, cst.Arg) and not parent.star:
            call = parents.get(parent)
            return isinstance(call, cst.Call) and _hands_over(flow, call, parent, _settings(held))
        if isinstance(parent, cst.BaseExpression):  # `a if t else cfg`, `(x := cfg)`: the value flows on
            return _settings(flow.values.get(parent)) == _settings(held)
        return False


def _hands_over(flow: Flow, call: cst.Call, arg: cst.Arg, settings) -> bool:
    """An argument that reads no key here: written out whole, or given to a function of this file whose parameter
    holds the same dict wherever it is used (its uses count)."""
    callee = flow.values.get(call.func)
    if callee is None:
        return False
    if callee.facts.get("qual") in _WRITERS or isinstance(call.func, cst.Name) and call.func.value == "print":
        return True
    function = callee.facts.get("function") if callee.facts.get("type") == FUNCTION else None
    if function is None or not flow.owns(call) or function.module is not flow.ir:
        return False
    bound = [name for name, expr in function.bind(call, method=callee.facts.get("bound") is not None).items()
             if expr is arg.value]
    if len(bound) != 1:
        return False
    uses = [n for stmt in function.statements for n in _names(stmt, bound[0])]
    return all(_settings(flow.values.get(n)) == settings for n in uses)


def _names(statement: cst.CSTNode, name: str) -> Iterable[cst.Name]:
    stack = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value == name:
            yield node
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.IndentedBlock)):
            stack.extend(children(node))


def _settings(v: Optional[Value]) -> Optional[Tuple[Tuple[str, ...], str]]:
    if v is None or v.facts.get("type") != DICT:
        return None
    return v.facts.get("settings")


def _parents(module: cst.Module) -> Dict[cst.CSTNode, cst.CSTNode]:
    parents: Dict[cst.CSTNode, cst.CSTNode] = {}
    stack: List[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        for child in children(node):
            parents[child] = node
            stack.append(child)
    return parents
