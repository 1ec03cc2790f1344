"""Which optimizer or trainer a learning rate reaches (RULES.md, "Evidence, not spelling").

A value written as a learning rate is the RL policy's rate only when it reaches the policy's
optimizer or an RL trainer's config. Its uses in the file say which:

- `POLICY`: the `lr` of an Adam-family optimizer (`AdamW`, `Adam8bit`, tinker's
  `AdamParams`) over a model's parameters, or the `learning_rate` of an RL trainer or config
  (`GRPOConfig`, `PPOConfig`, `DPOTrainer`...);
- `ELSEWHERE`: the optimizer of a critic, value head or reward model (its parameters say so),
  of a few bare tensors (an entropy temperature `log_alpha`, one scalar), or an optimizer of
  another family (SGD, RMSprop, Adagrad), whose rates are on another scale.

A value with no such use says nothing here. Dicts that record a run rather than configure it
(metrics, logged or saved trainer state: `{"step": 10, "loss": ..., "learning_rate": 3e-5}`, or
a dict handed to a logging call) are `records`: their learning rates reach no optimizer.
"""
from __future__ import annotations

import re
from typing import Dict, Optional, Set

import libcst as cst

from rllint.analysis.context import tokens
from rllint.analysis.hparams import NOT_THE_POLICY, is_learning_rate
from rllint.analysis.logged import LOG_CALLS
from rllint.analysis.purpose import is_rl_class
from rllint.analysis.syntax import children, walk
from rllint.analysis.values import Value, Values

POLICY = "policy"
ELSEWHERE = "elsewhere"

# Optimizers whose learning rates are on another scale than Adam's (the RL601 limit is an Adam limit).
_OTHER_OPTIMIZERS = frozenset({"SGD", "ASGD", "RMSprop", "Rprop", "Adagrad", "Adadelta", "Adafactor", "LBFGS"})
# Keys that say a dict records what happened (a step's metrics, a trainer's saved state), not a setting.
_RECORD_KEYS = frozenset({"loss", "step", "global_step", "epoch", "log_history", "reward", "rewards", "kl",
                          "grad_norm", "iteration", "iter", "time", "elapsed", "accuracy", "best_metric"})
# Calls that write what they are given somewhere a person or a tracker reads it.
_RECORDERS = LOG_CALLS | {"dump", "dumps", "append"}
_RECORD_NAMES = frozenset({"metrics", "metric", "stats", "log", "logs", "history", "state", "record", "records",
                           "summary", "info", "result", "results"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOADS_WEIGHTS = re.compile(r"from_pretrained|load_state_dict|torch\.load|load_checkpoint")


def optimizer_name(call: cst.Call) -> Optional[str]:
    """The class name of an optimizer being built (`AdamW` of `torch.optim.AdamW(...)`), else None."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    if name[:1].isupper() and ("Adam" in name or "Lion" in name or name in _OTHER_OPTIMIZERS):
        return name
    return None


class RateSinks:
    """`roles(value)`: what the learning-rate uses of a value reach; `is_record(dict)`: a dict that records."""

    def __init__(self, file) -> None:
        self._file = file
        self._values: Values = file.fact(Values)
        self._roles: Dict[int, Set[str]] = {}
        self._records: Set[int] = set()
        self._loads_weights: Optional[bool] = None
        self._modules: Optional[Set[str]] = None
        stack = [file.module]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Call):
                self._call(node)
            elif isinstance(node, cst.Assign) and isinstance(node.value, cst.Dict) and self._named_record(node):
                self._record(node.value)
            elif isinstance(node, cst.Dict) and _records_keys(node):
                self._record(node)
            stack.extend(children(node))

    def roles(self, value: Value) -> Set[str]:
        return self._roles.get(id(value.node), set())

    def reaches_policy(self, value: Value) -> bool:
        """A learning rate whose uses reach only critics, SGD-family optimizers, bare tensors or networks trained
        from scratch is not the policy's; a parameter's default is a placeholder (whoever calls sets the rate)
        unless it reaches the policy here."""
        roles = self.roles(value)
        if POLICY in roles:
            return True
        return not roles and not value.origin.startswith("default of parameter")

    def is_record(self, node: cst.Dict) -> bool:
        return id(node) in self._records

    # ---- uses ------------------------------------------------------------------------

    def _call(self, call: cst.Call) -> None:
        func = call.func
        callee = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if callee in _RECORDERS:
            for arg in call.args:
                if isinstance(arg.value, cst.Dict):
                    self._record(arg.value)
        optimizer = optimizer_name(call)
        if optimizer is not None:
            self._optimizer(call, optimizer)
        elif is_rl_class(callee) and not set(tokens(callee)) & NOT_THE_POLICY:
            for arg in call.args:
                if arg.keyword is not None and is_learning_rate(arg.keyword.value):
                    self._reaches(arg.value, POLICY)

    def _optimizer(self, call: cst.Call, name: str) -> None:
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        params = positional[0] if positional else next(
            (a.value for a in call.args if a.keyword is not None and a.keyword.value == "params"), None)
        other = name in _OTHER_OPTIMIZERS
        role = self._params_role(params, other)
        rate = next((a.value for a in call.args if a.keyword is not None and a.keyword.value in ("lr", "learning_rate")),
                    positional[1] if len(positional) >= 2 else None)
        if rate is not None:
            self._reaches(rate, role)
        if isinstance(params, (cst.List, cst.Tuple)):  # parameter groups: `[{"params": ..., "lr": ...}, ...]`
            for element in params.elements:
                if isinstance(element.value, cst.Dict):
                    group = {_key(e): e.value for e in element.value.elements if isinstance(e, cst.DictElement)}
                    if "lr" in group:
                        self._reaches(group["lr"], self._params_role(group.get("params"), other))

    def _params_role(self, params: Optional[cst.BaseExpression], other: bool) -> str:
        if other or params is None:
            return ELSEWHERE if other else POLICY
        code = self._file.module.code_for_node(params)
        if {w for word in _WORD.findall(code) for w in tokens(word)} & NOT_THE_POLICY:
            return ELSEWHERE
        if isinstance(params, (cst.List, cst.Tuple)) and params.elements and all(
                isinstance(e.value, (cst.Name, cst.Attribute)) for e in params.elements):
            return ELSEWHERE  # a few bare tensors (a temperature, a scalar, a toy check), not a model
        if self._from_scratch(params):
            return ELSEWHERE  # a network trained from scratch: the limit is for fine-tuning pretrained weights
        return POLICY

    def _from_scratch(self, params: cst.BaseExpression) -> bool:
        """`policy.parameters()` where `policy = PolicyNet()`, a module class of this file, and the file loads
        no pretrained weights (`from_pretrained`, `load_state_dict`, `torch.load`)."""
        if not (isinstance(params, cst.Call) and isinstance(params.func, cst.Attribute)
                and params.func.attr.value == "parameters" and isinstance(params.func.value, cst.Name)):
            return False
        if self._loads_weights is None:
            self._loads_weights = bool(_LOADS_WEIGHTS.search(self._file.text))
        if self._loads_weights:
            return False
        name = params.func.value
        built = self._values.assigned(name)
        while isinstance(built, cst.Call) and isinstance(built.func, cst.Attribute) and \
                built.func.attr.value in ("to", "cuda", "cpu", "train", "float", "half", "bfloat16"):
            built = built.func.value  # `PolicyNet().to(device)`
        if isinstance(built, cst.Call) and isinstance(built.func, cst.Name):
            return built.func.value in self._module_classes()
        return self._values.instance_of(name) in self._module_classes()

    def _module_classes(self) -> Set[str]:
        """Classes of this file that subclass a torch module (`nn.Module`, `torch.nn.Module`)."""
        if self._modules is None:
            code = self._file.module.code_for_node
            self._modules = {node.name.value for node in self._file.module.body if isinstance(node, cst.ClassDef)
                             and any(code(b.value).endswith("Module") for b in node.bases)}
        return self._modules

    def _reaches(self, expr: cst.BaseExpression, role: str) -> None:
        value = self._values.of(expr)
        if value is not None:
            self._roles.setdefault(id(value.node), set()).add(role)

    # ---- records ---------------------------------------------------------------------

    def _named_record(self, assign: cst.Assign) -> bool:
        code = self._file.module.code_for_node
        return any(set(tokens(w)) & _RECORD_NAMES for t in assign.targets for w in _WORD.findall(code(t.target)))

    def _record(self, node: cst.Dict) -> None:
        self._records.update(id(inner) for inner in walk(node, into_functions=True) if isinstance(inner, cst.Dict))


def _key(element: cst.DictElement) -> str:
    key = element.key
    if isinstance(key, cst.SimpleString):
        value = key.evaluated_value
        return value if isinstance(value, str) else ""
    return ""


def _records_keys(node: cst.Dict) -> bool:
    keys = {_key(e) for e in node.elements if isinstance(e, cst.DictElement)}
    return any(is_learning_rate(k) for k in keys) and bool(keys & _RECORD_KEYS)

