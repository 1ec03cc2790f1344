"""Gradient flow in one file: where gradient is disabled, and which values carry gradient.

- Grad regions: statements under `with torch.no_grad()` / `torch.inference_mode()` /
  `torch.set_grad_enabled(False)` (context manager or call), in functions decorated with
  them (any import spelling, resolved with `Imports.qualified`), and in local functions
  that are only ever called from such places.
- Taint: a value carries gradient when it comes from a forward of the policy or the value
  model (`ModelRoles`) outside those regions, or from a parameter whose name says it holds
  current log-probs / logits / ratios; it flows through assignments, unpacking, arithmetic,
  torch functions, tensor methods, subscripts, list appends and `self.*` attributes, and
  through local helper functions, each summarised once in terms of its parameters, whatever they
  are called: a parameter the helper runs as a model gives what the caller's argument gives
  (`get_logps(self.model, ...)` carries gradient, `get_logps(self.ref_model, ...)` under no_grad
  does not, nor a helper that runs its model under no_grad itself). It stops at `.detach()`,
  `.item()`, `.tolist()`, `.numpy()`, `float()`, `torch.tensor()`, numpy calls, `.data`,
  comparisons and data-named values (`input_ids`, `*_mask`, `labels`...).

The walk records the events the gradient rules report (model forwards, in-place ops,
gradient stoppers, value-model advantages), each with the flow it saw, so rules only filter.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, NamedTuple, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.imports import Imports
from rllint.analysis.purpose import Purpose
from rllint.analysis.roles import (POLICY, VALUE, ModelRoles, body_of, bound_parameter, call_name,
                                   child_blocks, header)
from rllint.analysis.syntax import dotted
from rllint.index import Function, ProjectIndex

GRAD = "grad"  # carries gradient of the policy
VALUE_GRAD = "value"  # carries gradient of the value model
ADVANTAGE = "advantage"  # a difference with a value prediction that carries gradient (node: the subtraction)
STOPPED = "stopped"  # a policy output whose gradient was cut: forward under no_grad, or `.detach()`
PARAM = "param"  # depends on a parameter (text: its name); for function summaries
RUN = "run"  # the output of running a parameter as a model (text: its name); for function summaries


class Tag(NamedTuple):
    kind: str
    node: Optional[cst.CSTNode]  # where it started
    text: str  # how, for messages


Flow = FrozenSet[Tag]
EMPTY: Flow = frozenset()
_CARRIES = (GRAD, VALUE_GRAD)

NO_GRAD_CONTEXTS = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode"}
ENABLE_GRAD_CONTEXTS = {"torch.enable_grad", "torch.autograd.enable_grad"}
SET_GRAD = "torch.set_grad_enabled"

# Names that hold data, never gradient: ids, masks, labels, token positions.
DATA_NAME = re.compile(r"(^|_)(ids|mask|masks|labels|label|tokens|targets|actions|index|indices|idx|lengths?|"
                       r"positions?|batch|inputs|encodings?|dataloader|loader)$")
# Names that hold log-probs kept on purpose without gradient: old, reference, behaviour, rollout...
FIXED_NAME = re.compile(r"(^|_)(old|ref|reference|prev|previous|behav\w*|rollout|sampl\w*|init|initial|base|"
                        r"teacher|target|fixed|frozen|cached|baseline|vllm|inference|infer|gen|generation)(_|$)|^old")
# Functions whose return value is a loss that a caller backpropagates (TRL's `compute_loss`, `*_loss`), and
# loss modules whose `forward` returns it (OpenRLHF's `PolicyLoss`).
LOSS_FUNCTION = re.compile(r"^(compute_loss|loss|loss_fn|.*_loss|.*_loss_fn)$")
LOSS_CLASS = re.compile(r"(Loss|Objective|Criterion)$")
# Value predictions by name, when they come straight out of a forward of an actor-critic policy.
VALUE_NAME = re.compile(r"^(values?|vpreds?|value_preds?|value_predictions|state_values?|v_preds?)$")
# Parameters of loss functions that hold current-policy log-probs, logits or ratios (given to loss helpers).
GRAD_PARAM = re.compile(r"^(per_token_|token_|new_|cur_|current_|policy_|pi_|seq_|sequence_|action_)*"
                        r"(logps|logp|log_probs?|logprobs?|logits|log_ratio|logratio|ratio|ratios)$")

# Tensor methods and attributes whose result carries no gradient.
_NON_DIFFERENTIABLE = {"argmax", "argmin", "size", "dim", "numel", "long", "int", "bool", "ne", "eq", "gt", "lt",
                       "ge", "le", "nonzero", "any", "all", "isnan", "isinf", "isfinite", "sign", "floor", "ceil",
                       "round", "get_device", "is_contiguous", "shape", "device", "dtype", "ndim", "data",
                       "requires_grad", "grad_fn", "is_leaf", "argsort", "new_zeros", "new_ones", "new_full",
                       "new_empty", "new_tensor", "zero_", "logical_not", "logical_and", "logical_or", "count_nonzero"}
_TORCH_NON_DIFFERENTIABLE = {"argmax", "argmin", "zeros_like", "ones_like", "full_like", "empty_like", "rand_like",
                             "randn_like", "randint_like", "arange", "zeros", "ones", "full", "empty", "rand", "randn",
                             "randint", "tensor", "as_tensor", "from_numpy", "eye", "linspace", "isnan", "isinf",
                             "isfinite", "argsort", "multinomial", "bernoulli", "logical_not", "logical_and",
                             "logical_or", "count_nonzero", "no_grad", "inference_mode", "manual_seed", "randperm",
                             "sign", "floor", "ceil", "round"}
_STOP_METHODS = {"item", "tolist", "numpy"}
_STOP_BUILTINS = {"float", "int", "bool"}
_NEUTRAL_BUILTINS = {"len", "isinstance", "range", "print", "str", "repr", "type", "hasattr", "getattr", "id",
                     "enumerate", "callable", "format"}
INPLACE_METHODS = {"masked_fill_", "mul_", "add_", "sub_", "div_", "zero_", "clamp_", "clamp_min_", "clamp_max_",
                   "clip_", "copy_", "fill_", "index_fill_", "index_add_", "index_copy_", "scatter_", "scatter_add_",
                   "masked_scatter_", "neg_", "exp_", "log_", "pow_", "sqrt_", "abs_", "sigmoid_", "tanh_",
                   "relu_", "nan_to_num_", "addcmul_", "addcdiv_", "lerp_", "squeeze_", "unsqueeze_", "t_",
                   "transpose_", "floor_", "ceil_", "round_", "normal_", "uniform_"}
MUTATING_CONTAINER = {"append", "extend", "insert", "add", "update"}
_CONTAINERS = (cst.Dict, cst.List, cst.DictComp, cst.ListComp, cst.Set, cst.SetComp)
# Containers and preallocated buffers: writing gradient values into them by index is how they are filled.
_CONTAINER_CALLS = {"dict", "list", "defaultdict", "OrderedDict", "set", "zeros", "empty", "full", "ones",
                    "zeros_like", "empty_like", "full_like", "ones_like", "new_zeros", "new_empty", "new_full",
                    "new_ones"}
_ADAPTER_OFF = {"disable_adapter", "disable_adapters", "null_ref_context"}
# What makes a call a model's forward, whatever the callee is named: token tensors in, logits or hidden states out.
_TOKEN_KEYWORDS = {"input_ids", "attention_mask", "inputs_embeds", "position_ids", "decoder_input_ids", "labels",
                   "token_type_ids", "pixel_values", "past_key_values", "use_cache", "output_hidden_states",
                   "return_dict", "logits_to_keep", "num_logits_to_keep"}
_TOKEN_NAME = re.compile(r"(^|_)(ids|tokens|seqs?|sequences?|mask)$")
_OUTPUT_FIELDS = {"logits", "last_hidden_state", "hidden_states", "past_key_values"}


@dataclass
class Forward:
    """A forward pass of a model with a role, direct (`ref(x)`) or through a local helper (`get_logps(ref, x)`)."""

    node: cst.Call
    role: str
    model: str  # the model expression, as written
    no_grad: bool
    detached: bool  # `.detach()` applied right away (through `.logits`, subscripts, casts)
    adapter_off: bool  # inside `with model.disable_adapter()`: the reference of a PEFT policy
    function: Optional[cst.FunctionDef]
    parameter: Optional[str] = None  # the model is this parameter of `function` (a helper's own forward)
    on_tokens: bool = False  # the call itself is a model's: token tensors in, `.logits` / hidden states out
    statement: Optional[cst.CSTNode] = None  # the small statement it runs in


@dataclass
class InPlace:
    """An in-place operation (`x[m] = 0`, `x[m] *= 0`, `x.masked_fill_(...)`) on a value that carries gradient."""

    node: cst.CSTNode
    target: str
    origin: Tag


@dataclass
class Stopper:
    """`.item()`, `.tolist()`, `.numpy()`, `float()`, `int()` or a numpy call on a value that carries gradient."""

    node: cst.CSTNode
    origin: Optional[Tag]  # where the operand's gradient comes from; None: only through `parameters`
    statement: cst.CSTNode  # the small statement (or return) it occurs in
    function: Optional[cst.FunctionDef]
    parameters: FrozenSet[str] = frozenset()  # parameters of `function` the operand depends on


@dataclass
class Summary:
    """What a local function returns, in terms of its parameters: PARAM / RUN tags and inner gradient."""

    returns: Flow = EMPTY
    no_grad: bool = False
    runs: Dict[str, "Forward"] = field(default_factory=dict)  # parameter -> its forward with gradient enabled

    def runs_with_grad(self, parameter: str) -> bool:
        """Whether the function runs the model given as `parameter` with gradient enabled."""
        return not self.no_grad and parameter in self.runs


@dataclass
class _Frame:
    function: Optional[cst.FunctionDef]
    cls: Optional[cst.ClassDef]
    env: Dict[str, Flow]
    no_grad: bool
    adapter_off: bool = False
    statement: Optional[cst.CSTNode] = None
    returns: Flow = EMPTY
    containers: Set[str] = field(default_factory=set)  # names bound to dicts, lists, new buffers (metrics)
    runs: Dict[str, Forward] = field(default_factory=dict)  # parameter -> its forward with gradient enabled
    outputs: Dict[str, Forward] = field(default_factory=dict)  # names bound to a forward's output
    fresh: Set[str] = field(default_factory=set)  # names bound to a new tensor nothing has used (see `_fresh`)
    peeking: int = 0  # inside the receiver of `.size()`, `.shape`...: a read that saves nothing for backward
    detaching: int = 0  # inside the receiver of a `.detach()`: forwards there are detached in the same expression


def is_fixed_name(name: str) -> bool:
    """`old_logps`, `ref_per_token_logps`, `rollout_log_probs`: values meant to carry no gradient."""
    return bool(FIXED_NAME.search(name.rsplit(".", 1)[-1].lower()))


def is_data_name(name: str) -> bool:
    return bool(DATA_NAME.search(name.rsplit(".", 1)[-1].lower()))


def origin(flow: Flow, *kinds: str) -> Optional[Tag]:
    """One tag of the given kinds (default: gradient carriers), chosen the same way on every run, for messages."""
    tags = sorted((t for t in flow if t.kind in (kinds or _CARRIES)), key=lambda t: (t.kind, t.text))
    return tags[0] if tags else None


def carries(flow: Flow) -> bool:
    return any(t.kind in _CARRIES for t in flow)


class GradFlow:
    """Grad regions, gradient taint, helper summaries and the events the gradient rules report."""

    def __init__(self, file) -> None:
        self.imports: Imports = file.fact(Imports)
        self.roles: ModelRoles = file.fact(ModelRoles)
        self._file = file
        self.module = file.module
        self.forwards: List[Forward] = []
        self.inplace: List[InPlace] = []
        self.stoppers: List[Stopper] = []
        self.advantages: Dict[cst.CSTNode, Tag] = {}  # value-grad subtraction -> policy-grad value it meets
        self.no_grad_statements: Set[cst.CSTNode] = set()
        self.name_flows: Dict[cst.CSTNode, Flow] = {}  # every evaluated name / `self.x` node -> its flow
        self.summaries: Dict[cst.FunctionDef, Summary] = {}
        self.attr_flows: Dict[cst.ClassDef, Dict[str, Flow]] = {}
        self.no_grad_functions: Set[cst.FunctionDef] = set()
        self.helpers_called: Set[cst.FunctionDef] = set()  # helpers whose call sites run a model argument
        self.call_arguments: Dict[cst.FunctionDef, List[Dict[str, Flow]]] = {}  # helper -> flows per call site
        self._forward_calls: Dict[cst.Call, Forward] = {}
        self._inner_reported: Set[tuple] = set()  # (a helper's forward, role) recorded for its caller's argument
        self._output_reads: Set[cst.Call] = set()  # calls whose output is read as logits or hidden states
        self._in_progress: Set[cst.FunctionDef] = set()
        self._find_no_grad_functions()
        if not self.roles.runs_roles and not any(self.is_loss_function(f) for f in self._all_functions) \
                and not self._runs_remote():
            return  # no model with a role runs here and no loss helper takes log-probs: nothing carries gradient
        if file.fact(Purpose).array_library in ("mlx", "jax"):
            return  # gradients are taken of named parameters only: no tape, no no_grad, nothing to report
        self._analyze_module()
        for function in self._all_functions:
            self.summary(function)

    def is_loss_function(self, function: cst.FunctionDef) -> bool:
        """`compute_loss`, `*_loss`, `*_loss_fn`, or `forward` / `__call__` of a `*Loss` class: returns the loss."""
        if LOSS_FUNCTION.match(function.name.value):
            return True
        cls = self.roles.class_of.get(function)
        return function.name.value in ("forward", "__call__") and cls is not None and bool(
            LOSS_CLASS.search(cls.name.value))

    def follows(self, call: cst.Call) -> bool:
        """Whether the walk took `call` for a model's forward: what it gives is in the flows."""
        return call in self._forward_calls

    def reported_forwards(self) -> List[Forward]:
        """Forwards, without a helper's own forward of its model parameter when its call sites are known
        (in this file, or in another module of the project, whose finding is at its call)."""
        return [f for f in self.forwards if f.parameter is None or (
            f.function not in self.helpers_called
            and not self._file.fact(ProjectIndex).called_elsewhere(f.function.name.value))]

    # ---- grad regions ----

    def grad_switch(self, expr: cst.BaseExpression) -> Optional[bool]:
        """False for a context / decorator that disables gradient, True for one that enables it, else None."""
        target = expr.func if isinstance(expr, cst.Call) else expr
        name = self.imports.qualified(target)
        if name in NO_GRAD_CONTEXTS:
            return False
        if name in ENABLE_GRAD_CONTEXTS:
            return True
        if name == SET_GRAD and isinstance(expr, cst.Call) and expr.args:
            value = expr.args[0].value
            if isinstance(value, cst.Name) and value.value in ("True", "False"):
                return value.value == "True"
        return None

    def _decorated_no_grad(self, function: cst.FunctionDef) -> bool:
        return any(self.grad_switch(d.decorator) is False for d in function.decorators)

    def _find_no_grad_functions(self) -> None:
        """Decorated functions, then, to a fixed point, private or nested functions called only from no-grad code.

        Public functions and methods may also be called from other modules or by a framework
        (a trainer calls `compute_loss`), so their call sites in this file do not decide.
        """
        self._all_functions: List[cst.FunctionDef] = []
        lexical: Set[cst.CSTNode] = set()  # statements under a no-grad `with` or after `set_grad_enabled(False)`
        local: Set[cst.FunctionDef] = set()  # private or nested: every call site is in this file

        def walk(block, no_grad, nested=False) -> None:
            for stmt in block:
                if isinstance(stmt, cst.FunctionDef):
                    self._all_functions.append(stmt)
                    name = stmt.name.value
                    if nested or (name.startswith("_") and not name.endswith("__")):
                        local.add(stmt)
                    if self._decorated_no_grad(stmt):
                        self.no_grad_functions.add(stmt)
                    walk(body_of(stmt), False, True)
                elif isinstance(stmt, cst.ClassDef):
                    walk(body_of(stmt), no_grad, nested)
                elif isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        if no_grad:
                            lexical.add(small)
                        switch = _set_grad_call(small, self)
                        if switch is not None:
                            no_grad = not switch
                else:
                    if no_grad:
                        lexical.add(stmt)
                    inner = no_grad
                    if isinstance(stmt, cst.With):
                        for item in stmt.items:
                            switch = self.grad_switch(item.item)
                            inner = inner if switch is None else not switch
                    for child in child_blocks(stmt):
                        walk(child, inner, nested)

        walk(body_of(self.module), False)
        sites: Dict[str, List[tuple]] = {}  # function name -> [(caller function, lexically no-grad)]
        for scope, statements in self.roles.calls.items():
            caller = scope if isinstance(scope, cst.FunctionDef) else None
            for stmt, calls in statements:
                for call in calls:
                    name = call_name(call)
                    if name in self.roles.functions:
                        sites.setdefault(name, []).append((caller, stmt in lexical))
        self._close(self.no_grad_functions, local, sites)
        # Public functions every call site of this file runs under no_grad: others may call them with gradient,
        # but nothing here shows it, so their forwards are not reported (`ref_forward(self, x)` wrappers).
        self.shielded = set(self.no_grad_functions)
        self._close(self.shielded, {f for f in self._all_functions if not self._framework_entry(f)}, sites)

    def _close(self, no_grad: Set[cst.FunctionDef], candidates, sites) -> None:
        """Add the `candidates` whose every call site is lexically no-grad or inside a function of `no_grad`."""
        changed = True
        while changed:
            changed = False
            for function in self._all_functions:
                if function in no_grad or function not in candidates:
                    continue
                calls = sites.get(function.name.value)
                if calls and all(ng or caller in no_grad for caller, ng in calls):
                    no_grad.add(function)
                    changed = True

    def _framework_entry(self, function: cst.FunctionDef) -> bool:
        """A method a framework calls with gradient (`compute_loss`, `training_step`, `forward`), whatever the
        file's own call sites do (an evaluation step calls `compute_loss` under no_grad)."""
        name = function.name.value
        return self.is_loss_function(function) or name in ("training_step", "forward") or (
            name.startswith("__") and name.endswith("__"))

    # ---- the walk ----

    def _analyze_module(self) -> None:
        frame = _Frame(None, None, {}, False)
        self._block(body_of(self.module), frame)

    def summary(self, function: cst.FunctionDef) -> Summary:
        """Analyse `function` once (recording its events) and return what it returns."""
        if function in self.summaries:
            return self.summaries[function]
        if function in self._in_progress:
            return Summary()
        self._in_progress.add(function)
        no_grad = function in self.no_grad_functions
        cls = self.roles.class_of.get(function)
        env: Dict[str, Flow] = {}
        loss = self.is_loss_function(function)
        params = function.params
        for param in list(params.posonly_params) + list(params.params) + list(params.kwonly_params):
            name = param.name.value
            flow = {Tag(PARAM, param, name)} if name not in ("self", "cls") else set()
            if not no_grad and loss and GRAD_PARAM.match(name) and not is_fixed_name(name):
                flow.add(Tag(GRAD, param, f"parameter `{name}`"))
            env[name] = frozenset(flow)
        frame = _Frame(function, cls, env, no_grad)
        self._block(body_of(function), frame)
        self._in_progress.discard(function)
        result = Summary(frame.returns, no_grad, frame.runs)
        self.summaries[function] = result
        return result

    def _block(self, block, frame: _Frame) -> None:
        saved = frame.no_grad
        for stmt in block:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self._small(small, frame)
                    switch = _set_grad_call(small, self)
                    if switch is not None:
                        frame.no_grad = not switch
            elif isinstance(stmt, cst.FunctionDef):
                continue  # analysed on its own
            elif isinstance(stmt, cst.ClassDef):
                self._block(body_of(stmt), _Frame(None, stmt, {}, frame.no_grad))
            elif isinstance(stmt, cst.With):
                self._with(stmt, frame)
            elif isinstance(stmt, cst.For):
                self._statement(stmt, frame)
                self._bind(stmt.target, self._eval(stmt.iter, frame), frame)
                self._block(body_of(stmt), frame)
                if stmt.orelse is not None:
                    self._block(body_of(stmt.orelse), frame)
            else:
                self._statement(stmt, frame)
                for part in header(stmt):
                    self._eval(part, frame)
                for child in child_blocks(stmt):
                    self._block(child, frame)
        frame.no_grad = saved

    def _statement(self, stmt, frame: _Frame) -> None:
        frame.statement = stmt
        if frame.no_grad:
            self.no_grad_statements.add(stmt)

    def _with(self, stmt: cst.With, frame: _Frame) -> None:
        saved = frame.no_grad, frame.adapter_off
        self._statement(stmt, frame)
        for item in stmt.items:
            switch = self.grad_switch(item.item)
            if switch is not None:
                frame.no_grad = not switch
                continue
            if isinstance(item.item, cst.Call) and call_name(item.item) in _ADAPTER_OFF:
                frame.adapter_off = True
            flow = self._eval(item.item, frame)
            if item.asname is not None:
                self._bind(item.asname.name, flow, frame)
        self._block(body_of(stmt), frame)
        frame.no_grad, frame.adapter_off = saved

    def _small(self, small, frame: _Frame) -> None:
        self._statement(small, frame)
        if isinstance(small, cst.Assign):
            flow = self._eval(small.value, frame)
            for target in small.targets:
                self._assign(target.target, small.value, flow, frame, small)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            self._assign(small.target, small.value, self._eval(small.value, frame), frame, small)
        elif isinstance(small, cst.AugAssign):
            flow = self._eval(small.value, frame)
            target = small.target
            if isinstance(target, cst.Subscript):
                self._inplace(target.value, small, frame, target)
            key = dotted(target.value if isinstance(target, cst.Subscript) else target)
            if key is not None:
                self._store(key, self._lookup(key, frame) | flow, frame)
        elif isinstance(small, cst.Expr):
            self._eval(small.value, frame)
        elif isinstance(small, cst.Return) and small.value is not None:
            frame.returns = frame.returns | self._eval(small.value, frame)

    def _assign(self, target, value, flow: Flow, frame: _Frame, stmt) -> None:
        if isinstance(target, cst.Subscript):
            self._inplace(target.value, stmt, frame, target)
            key = dotted(target.value)
            if key is not None:
                self._store(key, self._lookup(key, frame) | flow, frame)
            return
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
                and len(value.elements) == len(target.elements) \
                and not any(isinstance(e, cst.StarredElement) for e in value.elements):
            for element, part in zip(target.elements, value.elements):
                # element by element; the whole value was evaluated (and its events recorded) already
                self._assign(element.value, part.value, self._eval(part.value, frame, record=False), frame, stmt)
            return
        key = dotted(target)
        if key is not None:
            frame.outputs.pop(key, None)
            if value in self._forward_calls:
                frame.outputs[key] = self._forward_calls[value]
            if isinstance(value, _CONTAINERS) or (isinstance(value, cst.Call) and call_name(value) in _CONTAINER_CALLS):
                frame.containers.add(key)
            else:
                frame.containers.discard(key)
        if self._policy_forward(value):
            heads = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
            for head in heads:
                self._bind(head, flow | self._value_head(head, flow), frame)
        else:
            self._bind(target, flow, frame)
        if key is not None and self._fresh(value, frame):
            frame.fresh.add(key)

    def _policy_forward(self, value) -> bool:
        """`model(x)`, `model(x).value`, `model(x)[2].squeeze(-1)`: the output of a forward of the policy itself."""
        while True:
            if isinstance(value, (cst.Attribute, cst.Subscript)):
                value = value.value
            elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                    and value.func.attr.value in ("squeeze", "float", "to", "contiguous"):
                value = value.func.value
            else:
                break
        model = self.roles.is_forward(value) if isinstance(value, cst.Call) else None
        return model is not None and self.roles.role(model) == POLICY

    def _value_head(self, target, flow: Flow) -> Flow:
        """Value predictions of an actor-critic model (`logits, _, values = model(x)`): they train the critic."""
        if not VALUE_NAME.match((dotted(target) or "").rsplit(".", 1)[-1]):
            return EMPTY
        return frozenset(Tag(VALUE_GRAD, t.node, t.text) for t in flow if t.kind == GRAD)

    def _bind(self, target, flow: Flow, frame: _Frame) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, flow, frame)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, flow, frame)
        else:
            key = dotted(target)
            if key is not None:
                self._store(key, flow, frame)

    def _store(self, key: str, flow: Flow, frame: _Frame) -> None:
        last = key.rsplit(".", 1)[-1]
        if is_data_name(last):
            flow = frozenset(t for t in flow if t.kind not in _CARRIES and t.kind != RUN)
        if is_fixed_name(last):
            flow = frozenset(t for t in flow if t.kind != STOPPED)
        frame.fresh.discard(key)
        if key.startswith("self.") and key.count(".") == 1 and frame.cls is not None:
            attrs = self.attr_flows.setdefault(frame.cls, {})
            attrs[key] = attrs.get(key, EMPTY) | flow
        frame.env[key] = flow

    def _lookup(self, key: str, frame: _Frame) -> Flow:
        if key in frame.env:
            return frame.env[key]
        if key.startswith("self.") and frame.cls is not None:
            return self.attr_flows.get(frame.cls, {}).get(key, EMPTY)
        return EMPTY

    def _inplace(self, target, node, frame: _Frame, index: Optional[cst.Subscript] = None) -> None:
        key = dotted(target)
        if key is None or frame.no_grad or is_data_name(key) or key in frame.containers:
            return
        if index is not None and any(isinstance(e.slice, cst.Index) and isinstance(
                e.slice.value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)) for e in index.slice):
            return  # `outputs["logits"] = ...` stores into a mapping
        tag = origin(self._lookup(key, frame))
        if tag is not None:
            self.inplace.append(InPlace(node, key, tag))

    # ---- expressions ----

    def _eval(self, expr, frame: _Frame, record: bool = True) -> Flow:
        if isinstance(expr, (cst.Name, cst.Attribute)):
            key = dotted(expr)
            if key is not None and (key in frame.env or key in self.attr_flows.get(frame.cls, {})):
                flow = self._lookup(key, frame)
                if record:
                    self.name_flows[expr] = flow
                    if not frame.peeking:
                        frame.fresh.discard(key)
                return flow
            if isinstance(expr, cst.Attribute):
                if expr.attr.value in _OUTPUT_FIELDS:
                    self._read_output(expr.value, frame)
                if expr.attr.value in _NON_DIFFERENTIABLE:
                    self._peek(expr.value, frame, record)
                    return EMPTY
                return self._eval(expr.value, frame, record=record)
            return EMPTY
        if isinstance(expr, cst.Call):
            return self._call(expr, frame, record)
        if isinstance(expr, cst.Subscript):
            for element in expr.slice:
                if isinstance(element.slice, cst.Index):
                    self._eval(element.slice.value, frame, record=record)
            return self._eval(expr.value, frame, record=record)
        if isinstance(expr, cst.BinaryOperation):
            left = self._eval(expr.left, frame, record=record)
            right = self._eval(expr.right, frame, record=record)
            flow = left | right
            if isinstance(expr.operator, cst.Subtract) and any(t.kind == VALUE_GRAD for t in flow):
                flow = flow | {Tag(ADVANTAGE, expr, "")}
            if isinstance(expr.operator, (cst.Multiply, cst.Divide, cst.MatrixMultiply)) and record:
                self._meet(left, right)
            return flow
        if isinstance(expr, cst.UnaryOperation):
            flow = self._eval(expr.expression, frame, record=record)
            return EMPTY if isinstance(expr.operator, cst.Not) else flow
        if isinstance(expr, cst.Comparison):
            self._eval(expr.left, frame, record=record)
            for target in expr.comparisons:
                self._eval(target.comparator, frame, record=record)
            return EMPTY
        if isinstance(expr, cst.BooleanOperation):
            return self._eval(expr.left, frame, record=record) | self._eval(expr.right, frame, record=record)
        if isinstance(expr, cst.IfExp):
            self._eval(expr.test, frame, record=record)
            return self._eval(expr.body, frame, record=record) | self._eval(expr.orelse, frame, record=record)
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            flow = EMPTY
            for element in expr.elements:
                flow = flow | self._eval(element.value, frame, record=record)
            return flow
        if isinstance(expr, cst.Dict):
            flow = EMPTY
            for element in expr.elements:
                flow = flow | self._eval(element.value, frame, record=record)
            return flow
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._comprehension(expr, frame, record)
        if isinstance(expr, (cst.Await, cst.StarredElement)):
            return self._eval(expr.expression if isinstance(expr, cst.Await) else expr.value, frame, record=record)
        if isinstance(expr, cst.NamedExpr):
            flow = self._eval(expr.value, frame, record=record)
            self._bind(expr.target, flow, frame)
            return flow
        return EMPTY

    def _comprehension(self, expr, frame: _Frame, record: bool) -> Flow:
        inner = _Frame(frame.function, frame.cls, dict(frame.env), frame.no_grad, frame.adapter_off, frame.statement,
                       detaching=frame.detaching)
        clause = expr.for_in
        while clause is not None:
            self._bind(clause.target, self._eval(clause.iter, inner, record=record), inner)
            for condition in clause.ifs:
                self._eval(condition.test, inner, record=record)
            clause = clause.inner_for_in
        if isinstance(expr, cst.DictComp):
            return self._eval(expr.value, inner, record=record)
        return self._eval(expr.elt, inner, record=record)

    def _meet(self, left: Flow, right: Flow) -> None:
        """A product of a value-model advantage with a policy-gradient value: the policy loss term."""
        for one, other in ((left, right), (right, left)):
            policy = origin(other, GRAD)
            if policy is None:
                continue
            for tag in one:
                if tag.kind == ADVANTAGE:
                    self.advantages.setdefault(tag.node, policy)

    def _peek(self, expr, frame: _Frame, record: bool) -> None:
        """Evaluate `expr` for its events only: `x.size()`, `x.shape` save nothing for backward."""
        frame.peeking += 1
        self._eval(expr, frame, record=record)
        frame.peeking -= 1

    def _fresh(self, value, frame: _Frame) -> bool:
        """A new tensor whose own backward does not need it: a model's output (`model(x).logits`, its lm head's
        output) or a reduction (`kl.sum(-1)`, `-(p * logp).sum(-1)`). Overwriting it in place before anything
        else uses it is safe (`logits.div_(temperature)`); autograd would raise if it were not."""
        inner = value
        while isinstance(inner, cst.Subscript) or (
                isinstance(inner, cst.Attribute) and inner.attr.value in _OUTPUT_FIELDS):
            inner = inner.value
        if inner in self._forward_calls or (inner is not value and (dotted(inner) or "") in frame.outputs):
            return True
        if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
            value = value.expression
        return isinstance(value, cst.Call) and call_name(value) in ("sum", "mean")

    def _read_output(self, expr, frame: _Frame) -> None:
        """`model(x).logits`, `out.logits` with `out = model(x)`: the forward was a model's."""
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        if isinstance(expr, cst.Call):
            self._output_reads.add(expr)
            forward = self._forward_calls.get(expr)
        else:
            forward = frame.outputs.get(dotted(expr) or "")
        if forward is not None:
            forward.on_tokens = True

    @staticmethod
    def _on_tokens(call: cst.Call) -> bool:
        """`m.forward(...)`, `m(input_ids=...)`, `m(seq, prompt_mask=mask)`, `m(x).logits`: a model's forward.
        `monitor(scores)`, `client(url, texts)`, `weakref()` are not."""
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "forward":
            return True
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in _TOKEN_KEYWORDS:
                return True
            value = arg.value
            while isinstance(value, cst.Subscript):
                key = _string_key(value)
                if key is not None and (key in _TOKEN_KEYWORDS or _TOKEN_NAME.search(key)):
                    return True
                value = value.value
            key = dotted(value)
            if key is not None and _TOKEN_NAME.search(key.rsplit(".", 1)[-1].lower()):
                return True
        return False

    def only_without_grad(self, model: str) -> bool:
        """Whether this file runs `model` and every run is under no_grad or detached: no gradient can reach it."""
        runs = [f for f in self.forwards if f.model == model]
        return bool(runs) and all(f.no_grad or f.detached or f.adapter_off for f in runs)

    def model_evidence(self, forward: Forward) -> bool:
        """Whether the model run is one by what the code does: the call is a model's forward (`on_tokens`,
        or its output read as logits), or the model is built or used as one in this file."""
        return forward.on_tokens or forward.node in self._output_reads or self.roles.is_model(forward.model)

    def _args(self, call: cst.Call, frame: _Frame, record: bool) -> List[Flow]:
        return [self._eval(arg.value, frame, record=record) for arg in call.args]

    def _call(self, call: cst.Call, frame: _Frame, record: bool) -> Flow:
        func = call.func
        name = call_name(call)
        method = isinstance(func, cst.Attribute)
        if method:
            receiver = func.value
            if name in ("detach", "detach_"):
                frame.detaching += 1
                flow = self._eval(receiver, frame, record=record)
                frame.detaching -= 1
                return _stop(flow, call, "`.detach()`")
            if name in _STOP_METHODS:
                flow = self._eval(receiver, frame, record=record)
                self._stopper(call, flow, frame, record)
                return EMPTY
            if name in ("float", "half", "bfloat16", "to", "contiguous", "clone", "squeeze", "unsqueeze", "view",
                        "reshape", "type", "cuda", "cpu"):
                flow = self._eval(receiver, frame, record=record)
                self._args(call, frame, record)
                return flow
            if name in INPLACE_METHODS:
                fresh = dotted(receiver) in frame.fresh
                flow = self._eval(receiver, frame, record=record)
                args = self._args(call, frame, record)
                if record and not fresh:
                    self._inplace(receiver, call, frame)
                key = dotted(receiver)
                if key is not None:
                    self._store(key, flow.union(*args), frame)
                return flow
            if name in MUTATING_CONTAINER:
                args = self._args(call, frame, record)
                key = dotted(receiver)
                if key is not None:
                    self._store(key, self._lookup(key, frame).union(*args), frame)
                return EMPTY
        helper = self.helper_of(call)
        if helper is not None:
            return self._helper_call(call, helper, frame, record)
        remote = self.remote_helper(call)
        if remote is not None:
            return self._remote_call(call, remote, frame, record)
        model = self.roles.is_forward(call)
        role = self.roles.role(model, frame.function) if model is not None else None
        # a parameter the function runs as a model, whatever its name: its role is its callers' argument's
        parameter = self._run_parameter(call, frame) if model is not None else None
        if role is not None or parameter is not None:
            args = self._args(call, frame, record)
            if record:
                forward = Forward(call, role or "", _code(self.module, model),
                                  frame.no_grad or frame.function in self.shielded, frame.detaching > 0,
                                  frame.adapter_off, frame.function, parameter, self._on_tokens(call), frame.statement)
                if role is not None:
                    self.forwards.append(forward)
                self._forward_calls[call] = forward
                if parameter is not None and not frame.no_grad:
                    frame.runs.setdefault(parameter, forward)
            return self._forward_output(role, call, frame, _code(self.module, call))
        args = self._args(call, frame, record)
        flow = EMPTY.union(*args)
        if method:
            if name in _NON_DIFFERENTIABLE:
                self._peek(func.value, frame, record)
                return EMPTY
            flow = flow | self._eval(func.value, frame, record=record)
            if name in ("mul", "multiply", "div", "divide", "matmul") and record and args:
                self._meet(self._eval(func.value, frame, record=False), args[0])
        elif isinstance(func, cst.Name):
            if func.value in _STOP_BUILTINS and len(call.args) == 1:
                self._stopper(call, flow, frame, record)
                return EMPTY
            if func.value in _NEUTRAL_BUILTINS:
                return EMPTY
        else:
            return flow
        return self._library_call(call, func, name, flow, frame, record)

    def _library_call(self, call: cst.Call, func: cst.BaseExpression, name: str, flow, frame, record: bool):
        """numpy leaves the graph (a stopper when it touches gradient); torch's integer-valued functions
        carry none; anything else passes its inputs' flow on."""
        qualified = self.imports.qualified(func) or ""
        if qualified.startswith("numpy."):
            self._stopper(call, flow, frame, record)
            return EMPTY
        if qualified == "torch.tensor":
            self._stopper(call, flow, frame, record)  # a copy of the values: a new leaf, whatever `requires_grad`
            return EMPTY
        if qualified.startswith("torch.") and name in _TORCH_NON_DIFFERENTIABLE:
            return EMPTY
        if qualified == "torch.autograd.grad" and not any(
                a.keyword is not None and a.keyword.value == "create_graph" for a in call.args):
            return EMPTY  # gradients as plain tensors: no graph unless `create_graph=True`
        return flow

    def helper_of(self, call: cst.Call) -> Optional[cst.FunctionDef]:
        """The local function a call runs: `helper(...)` or `self.helper(...)`."""
        func = call.func
        if isinstance(func, cst.Name) or (isinstance(func, cst.Attribute) and dotted(func.value) in ("self", "cls")):
            return self.roles.functions.get(call_name(call))
        return None

    def _runs_remote(self) -> bool:
        """Whether a call hands a model with a role to a helper of another module that runs it."""
        return any(any(self.roles.role(arg.value, scope if isinstance(scope, cst.FunctionDef) else None)
                       for arg in call.args) and self.remote_helper(call) is not None
                   for scope, statements in self.roles.calls.items() for _, calls in statements for call in calls)

    def remote_helper(self, call: cst.Call) -> Optional[Tuple[str, Function]]:
        """The function of another project module a call runs, when it runs a model it is given
        (`get_logps(policy, ids)` with `get_logps` imported from the project): the index's summary of it."""
        key = dotted(call.func)
        if key is None or key.split(".")[0] in ("self", "cls") or key in self.roles.functions:
            return None
        found = self._file.fact(ProjectIndex).function(key)
        return found if found is not None and found[1].runs else None

    def _remote_call(self, call: cst.Call, remote: Tuple[str, Function], frame: _Frame, record: bool) -> Flow:
        """A helper of another module that runs a model argument: its output carries the policy's gradient
        unless the helper (or the caller) runs it under no_grad; a reference model it runs with gradient on
        is a forward of this file (RL502)."""
        path, function = remote
        result: Set[Tag] = set()
        where = f"`{_short(_code(self.module, call))}` (in {os.path.basename(path)})"
        no_grad = frame.no_grad or function.no_grad
        for index, arg in enumerate(call.args):
            flow = self._eval(arg.value, frame, record=record)
            result |= flow
            parameter = arg.keyword.value if arg.keyword is not None else (
                function.params[index] if not arg.star and index < len(function.params)
                and not any(a.keyword is not None or a.star for a in call.args[:index]) else None)
            role = self.roles.role(arg.value, frame.function) if parameter in function.runs else None
            if role == POLICY:
                result.add(Tag(STOPPED, call, f"policy forward in {where} under no_grad") if no_grad
                           else Tag(GRAD, call, f"policy forward in {where}"))
            elif role is not None and record:
                self.forwards.append(Forward(call, role, _code(self.module, arg.value),
                                             no_grad or frame.function in self.shielded, frame.detaching > 0,
                                             frame.adapter_off, frame.function, on_tokens=function.on_tokens,
                                             statement=frame.statement))
        return frozenset(result)

    def _helper_call(self, call, helper, frame: _Frame, record: bool) -> Flow:
        summary = self.summary(helper)
        no_grad = frame.no_grad or summary.no_grad
        bound: Dict[str, cst.BaseExpression] = {}
        flows: Dict[str, Flow] = {}
        for index, arg in enumerate(call.args):
            flow = self._eval(arg.value, frame, record=record)
            parameter = bound_parameter(call, index, helper)
            if parameter is not None:
                bound[parameter] = arg.value
                flows[parameter] = flow
        if record:
            self.call_arguments.setdefault(helper, []).append(flows)
        if record:
            self._helper_forwards(call, helper, summary, bound, frame, no_grad)
        result: Set[Tag] = set()
        text = _code(self.module, call)
        run_nodes = {t.node for t in summary.returns if t.kind == RUN}
        for tag in summary.returns:
            if tag.node in run_nodes and tag.kind != RUN:
                continue  # the helper's own guess from its parameter's name; the argument's role decides
            if tag.kind == PARAM:
                result |= flows.get(tag.text, EMPTY)
            elif tag.kind == RUN:
                model = bound.get(tag.text)
                role = self.roles.role(model, frame.function) if model is not None else None
                if role is not None:
                    result |= self._forward_output(role, call, frame, text, no_grad or not summary.runs_with_grad(
                        tag.text))
            elif tag.kind == GRAD and tag.text.startswith("parameter "):
                continue  # gradient assumed for a parameter name; the argument's own flow says more
            elif tag.kind == GRAD and no_grad:
                result.add(Tag(STOPPED, call, f"policy forward in `{_short(text)}` under no_grad"))
            elif tag.kind == VALUE_GRAD and no_grad:
                continue
            else:
                result.add(tag)
        return frozenset(result)

    def _helper_forwards(self, call, helper, summary: Summary, bound, frame: _Frame, no_grad: bool) -> None:
        """The forwards a helper runs for this call, each with its argument's role: at the call site, where
        wrapping the call in no_grad fixes it; at the helper's own forward when the helper also runs the
        policy with gradient (`pair_loss(batch, policy, ref)`: no_grad around the call would cut the policy)."""
        runs = {}
        for parameter in self.roles.runs_model.get(helper.name.value, ()):
            role = self.roles.role(bound[parameter], frame.function) if parameter in bound else None
            if role is not None:
                self.helpers_called.add(helper)
                if parameter in summary.runs:
                    runs[parameter] = role  # otherwise the helper runs it under no_grad itself
        inside = POLICY in runs.values() and len(set(runs.values())) > 1
        no_grad = no_grad or frame.function in self.shielded
        for parameter, role in runs.items():
            inner = summary.runs[parameter]
            on_tokens = inner.on_tokens or inner.node in self._output_reads
            if not inside or role == POLICY:
                self.forwards.append(Forward(call, role, _code(self.module, bound[parameter]), no_grad,
                                             frame.detaching > 0, frame.adapter_off, frame.function,
                                             on_tokens=on_tokens, statement=frame.statement))
            elif not no_grad and (inner.node, role) not in self._inner_reported:
                self._inner_reported.add((inner.node, role))
                self.forwards.append(Forward(inner.node, role, inner.model, False, inner.detached, inner.adapter_off,
                                             inner.function, on_tokens=on_tokens, statement=inner.statement))

    def _forward_output(self, role, call, frame: _Frame, text: str, no_grad: Optional[bool] = None) -> Flow:
        no_grad = frame.no_grad if no_grad is None else no_grad
        parameter = self._run_parameter(call, frame) if frame.function is not None else None
        run = frozenset({Tag(RUN, call, parameter)}) if parameter is not None else EMPTY
        if role == POLICY:
            if no_grad:
                return run | {Tag(STOPPED, call, f"policy forward `{_short(text)}` under no_grad")}
            if frame.adapter_off:
                return run
            return run | {Tag(GRAD, call, f"policy forward `{_short(text)}`")}
        if role == VALUE and not no_grad:
            return run | {Tag(VALUE_GRAD, call, f"value-model forward `{_short(text)}`")}
        return run

    def _run_parameter(self, call, frame: _Frame) -> Optional[str]:
        """The parameter name when a function runs a model it was given (`model(...)` with `model` a parameter)."""
        model = self.roles.is_forward(call)
        key = dotted(self.roles.unwrap(model)) if model is not None else None
        if key is None or "." in key or frame.function is None:
            return None
        return key if key in self.roles.runs_model.get(frame.function.name.value, ()) and any(
            t.kind == PARAM and t.text == key for t in frame.env.get(key, EMPTY)) else None

    def _stopper(self, call, flow: Flow, frame: _Frame, record: bool) -> None:
        tag = origin(flow)
        parameters = frozenset(t.text for t in flow if t.kind == PARAM)
        if record and (tag is not None or parameters) and frame.statement is not None:
            self.stoppers.append(Stopper(call, tag, frame.statement, frame.function, parameters))

    def gradient_of(self, stopper: Stopper) -> Optional[Tag]:
        """Where a stopped operand's gradient comes from: its own flow, or an argument some call site passes."""
        if stopper.origin is not None:
            return stopper.origin
        for flows in self.call_arguments.get(stopper.function, ()):
            for parameter in stopper.parameters:
                tag = origin(flows.get(parameter, EMPTY))
                if tag is not None:
                    return tag
        return None


def _stop(flow: Flow, call: cst.Call, how: str) -> Flow:
    """`.detach()`: no gradient any more; a policy output remembers where it was cut."""
    result = {t for t in flow if t.kind not in _CARRIES and t.kind not in (ADVANTAGE, RUN)}
    if any(t.kind == GRAD and not t.text.startswith("parameter ") for t in flow):
        result.add(Tag(STOPPED, call, f"{how} on a policy output"))
    return frozenset(result)


def _set_grad_call(small, flow: GradFlow) -> Optional[bool]:
    """`torch.set_grad_enabled(False)` as a statement: the switch it sets for what follows."""
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        target = flow.imports.qualified(small.value.func)
        if target == SET_GRAD:
            return flow.grad_switch(small.value)
    return None


def _string_key(subscript: cst.Subscript) -> Optional[str]:
    """`batch["input_ids"]` -> `input_ids`."""
    if len(subscript.slice) == 1 and isinstance(subscript.slice[0].slice, cst.Index):
        value = subscript.slice[0].slice.value
        if isinstance(value, cst.SimpleString):
            return value.evaluated_value if isinstance(value.evaluated_value, str) else None
    return None


def _code(module: cst.Module, node: cst.CSTNode) -> str:
    return module.code_for_node(node).strip()


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
