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

from rllint.analysis.context import tokens
from rllint.analysis.nodes import AstNodes

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
