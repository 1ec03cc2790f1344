"""Which of the metrics a run is watched by (KL, entropy, clip fraction) a file reports.

A metric counts as reported when its name reaches a place a person or a tracker reads:
a key of a dict display or a string subscript (`stats["kl"] = ...`, the stats dicts that
trainers return and log), the text or the values of an f-string or a `%` / `.format`
string, or an argument or keyword of a logging call (`wandb.log`, `writer.add_scalar`,
`accelerator.log`, `logger.info`, `print`, `pbar.set_postfix(kl=...)`). Names are split
into words: `approx_kl`, `policy/entropy`, `pg_clipfrac` count; `kl_coef` does not.

A logging call handed metrics this file does not show (`wandb.log(stats)` with `stats` from
another module, `**metrics`) makes the file `opaque`: whatever it logs is unknown, and a
rule that wants "logs none" stays silent.
"""
from __future__ import annotations

import ast
import re
from typing import FrozenSet, Iterator, Optional, Set

import libcst as cst

from rllint.analysis.context import tokens
from rllint.analysis.flow import IR
from rllint.analysis.nodes import AstNodes
from rllint.analysis.positions import Lines
from rllint.analysis.syntax import walk

WATCHED = ("kl", "entropy", "clip_fraction")
# Methods and functions that write metrics somewhere a person or a tracker reads them.
LOG_CALLS = frozenset({"log", "log_dict", "log_metrics", "log_metric", "add_scalar", "add_scalars", "track",
                        "log_stats", "info", "debug", "warning", "print", "set_postfix", "set_description",
                        "write", "report_scalar", "record", "log_scalar", "log_scalars"})
# Of those, the ones that take a dict of metrics, where an unseen dict hides what is logged.
_STRUCTURED = frozenset({"log", "log_dict", "log_metrics", "add_scalars", "track", "log_stats", "record",
                         "log_scalars", "set_postfix"})
# Names of values that hold many metrics.
_CONTAINER_WORDS = frozenset({"stats", "metrics", "metric", "info", "infos", "logs", "summary", "results",
                              "status", "scalars", "diagnostics", "record", "records", "log_dict"})
_NOT_A_VALUE = frozenset({"coef", "coeff", "ctl", "ctrl", "beta", "target", "weight", "type", "estimator",
                          "horizon", "clamp", "threshold", "range"})
_DICT_CALLS = frozenset({"dict", "defaultdict", "OrderedDict", "Counter"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_/.\-]*")


def watched_metric(name: str) -> Optional[str]:
    """The watched metric a logged name stands for (`train/approx_kl` -> kl), or None (`kl_coef`)."""
    words = set(tokens(name.replace("/", ".")))
    if words & _NOT_A_VALUE:
        return None
    if "kl" in words or "approxkl" in words or "kld" in words:
        return "kl"
    if words & {"entropy", "entropies"}:
        return "entropy"
    if words & {"clipfrac", "clipfracs", "clipfraction"} or ("clip" in words or "clipped" in words) and words & {
            "frac", "fraction", "ratio", "rate", "pct"}:
        return "clip_fraction"
    return None


class LoggedMetrics:
    """`reported`: the watched metrics the file reports; `opaque`: it logs metrics it does not show."""

    def __init__(self, file) -> None:
        nodes = file.fact(AstNodes)
        self._dicts = _dict_names(nodes)
        words: Set[str] = set()
        self.opaque = False
        for node in nodes.of(ast.Dict):
            words.update(key.value for key in node.keys if isinstance(key, ast.Constant) and isinstance(key.value, str))
            if any(key is None and not self._visible(value) for key, value in zip(node.keys, node.values)):
                self.opaque = self.opaque or self._in_log_call(node, nodes)
        for node in nodes.of(ast.Subscript):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                words.add(node.slice.value)
        for node in nodes.of(ast.JoinedStr):
            words.update(_words(node))
        for node in nodes.of(ast.BinOp):
            if isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                words.update(_words(node))
        for node in nodes.of(ast.Call):
            name = _call_name(node)
            if name == "format" and isinstance(node.func, ast.Attribute):
                words.update(_words(node))
            elif name in LOG_CALLS:
                words.update(_words(node))
                words.update(keyword.arg for keyword in node.keywords if keyword.arg)
                self.opaque = self.opaque or self._hides_metrics(node, name)
        self.reported: FrozenSet[str] = frozenset(
            metric for metric in map(watched_metric, words) if metric is not None)

    def _hides_metrics(self, call: ast.Call, name: str) -> bool:
        """A logging call given metrics whose names this file does not show."""
        if any(keyword.arg is None and not self._visible(keyword.value) for keyword in call.keywords):
            return True
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                return True
            if name in _STRUCTURED and not self._visible(arg):
                return True
            if isinstance(arg, (ast.Name, ast.Attribute)) and not self._visible(arg) and _CONTAINER_WORDS & set(
                    tokens(_last_name(arg))):
                return True
        return False

    def _visible(self, value: ast.AST) -> bool:
        """A dict display, a constant, a call of a local function, or a name bound to a dict display here."""
        if isinstance(value, (ast.Dict, ast.Constant, ast.JoinedStr, ast.DictComp)):
            return True
        if isinstance(value, (ast.Name, ast.Attribute)):
            return _last_name(value) in self._dicts
        if isinstance(value, ast.Call):
            return _call_name(value) in self._dicts or _call_name(value) in _DICT_CALLS
        return False

    @staticmethod
    def _in_log_call(node: ast.AST, nodes: AstNodes) -> bool:
        return any(_call_name(call) in _STRUCTURED and any(arg is node for arg in call.args)
                   for call in nodes.of(ast.Call))


def _dict_names(nodes: AstNodes) -> Set[str]:
    """Names and attributes bound to dict displays or dict calls, and local functions (whose returned dicts'
    keys are read where they are written)."""
    names = {node.name for node in nodes.of(ast.FunctionDef, ast.AsyncFunctionDef)}
    for node in nodes.of(ast.Assign, ast.AnnAssign):
        value = node.value
        if isinstance(value, (ast.Dict, ast.DictComp)) or (isinstance(value, ast.Call) and _call_name(value) in _DICT_CALLS):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(_last_name(target) for target in targets if isinstance(target, (ast.Name, ast.Attribute)))
    return names


def _words(node: ast.AST) -> Iterator[str]:
    """Identifiers and string words inside `node`."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            yield inner.id
        elif isinstance(inner, ast.Attribute):
            yield inner.attr
        elif isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            yield from _WORD.findall(inner.value)


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _last_name(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


# Expressions through which a value is still only on its way to a log call: displays, formatting, arithmetic,
# conversions and attribute reads (`x.mean().item()`).
_ON_THE_WAY = (cst.Arg, cst.Element, cst.StarredElement, cst.DictElement, cst.StarredDictElement, cst.List, cst.Tuple,
               cst.Set, cst.Dict, cst.FormattedString, cst.FormattedStringExpression, cst.BinaryOperation,
               cst.UnaryOperation, cst.Attribute, cst.Comparison, cst.ComparisonTarget, cst.ConcatenatedString,
               cst.IfExp)
_NUMERIC_MODULES = ("torch", "numpy", "math", "np", "F")


class LoggedOnly:
    """Where a value goes: `only_logged(expr)` is True when every use of the value of `expr` is an argument of a
    logging call (`print`, `logger.info`, `wandb.log`, `accelerator.log`, `writer.add_scalar`...), directly or
    through a display, formatting, arithmetic, a method of it, or names bound to it in the same function and
    read only so. A call of the math libraries (`torch.log`) is no log."""

    def __init__(self, file) -> None:
        self._file = file
        self._parent = file.fact(IR).module.parent  # the module IR's parents: no walk of its own

    def only_logged(self, expr: cst.CSTNode, depth: int = 0) -> bool:
        node, parent = expr, self._parent(expr)
        while parent is not None:
            if isinstance(parent, cst.Call):
                if node is parent.func:  # `x.tolist()`, `x.mean()`: a method of the value
                    node, parent = parent, self._parent(parent)
                    continue
                return self._log_call(parent)
            if isinstance(parent, cst.Assign) and node is parent.value and depth < 3:
                targets = [t.target for t in parent.targets]
                return all(isinstance(t, cst.Name) for t in targets) and all(
                    self._reads_only_logged(t.value, parent, depth) for t in targets)
            if not isinstance(parent, _ON_THE_WAY):
                return False
            node, parent = parent, self._parent(parent)
        return False

    def _log_call(self, call: cst.Call) -> bool:
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name not in LOG_CALLS:
            return False
        root = func
        while isinstance(root, cst.Attribute):
            root = root.value
        return not (isinstance(root, cst.Name) and root.value in _NUMERIC_MODULES)

    def _reads_only_logged(self, name: str, assign: cst.Assign, depth: int) -> bool:
        """Every read of `name` after `assign`, in the function that binds it, reaches only logging calls."""
        scope = self._parent(assign)
        while scope is not None and not isinstance(scope, (cst.FunctionDef, cst.Module)):
            scope = self._parent(scope)
        if scope is None:
            return False
        reads = [n for n in walk(scope) if isinstance(n, cst.Name) and n.value == name and
                 not self._bound_at(n) and self._after(n, assign)]
        return bool(reads) and all(self.only_logged(n, depth + 1) for n in reads)

    def _bound_at(self, name: cst.Name) -> bool:
        parent = self._parent(name)
        return isinstance(parent, (cst.AssignTarget, cst.Param)) or \
            isinstance(parent, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)) and parent.target is name

    def _after(self, node: cst.CSTNode, assign: cst.Assign) -> bool:
        lines = self._file.fact(Lines)
        return lines.line(node) > lines.line(assign)
