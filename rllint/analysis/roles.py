"""Which names and attributes hold the policy, the reference, the old policy, the reward model and the value model.

Roles come from names (built-in vocabularies, extended by the `reference-model-names`
and `policy-model-names` options), from what is assigned (`x = create_reference_model(m)`,
`ref = policy` makes `ref` hold the policy too), from trainer keyword arguments
(`PPOTrainer(ref_model=base)` makes `base` the reference), and from `self.*` attributes
set in one method and used in others. Where no name gives a model a role, what the code does with
it may: a model whose parameters an optimizer trains and whose output a regression loss fits is the
value model (a learned baseline), and the one other such model is the policy (`Adam(net.parameters())`).
The gradient rules ask these facts; a model whose role the source does not show has no role, and the
rules stay silent about it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Set, Tuple, Union

import libcst as cst

from rllint.analysis.imports import Imports
from rllint.analysis.names import (  # noqa: F401
    OLD_POLICY,
    POLICY,
    POLICY_NAMES,
    REFERENCE,
    REFERENCE_NAMES,
    REWARD,
    VALUE,
)
from rllint.analysis.names import vocabulary as _vocabulary
from rllint.analysis.purpose import Purpose
from rllint.analysis.syntax import children, dotted

# Keyword arguments of trainers and loss helpers that give the argument a role.
KEYWORD_ROLES = {
    "ref_model": REFERENCE, "ref_policy": REFERENCE, "reference_model": REFERENCE, "initial_model": REFERENCE,
    "reward_model": REWARD, "value_model": VALUE, "critic": VALUE, "critic_model": VALUE,
}

# Keyword arguments that hand a trainer or loss the model it trains.
_POLICY_KEYWORDS = {"model", "policy", "policy_model", "actor", "actor_model"}

# Methods only models have (`nn.Module`, `PreTrainedModel`): an object they are called on is a model.
_MODEL_METHODS = {"parameters", "named_parameters", "eval", "train", "generate", "requires_grad_", "state_dict",
                  "load_state_dict", "zero_grad", "gradient_checkpointing_enable", "disable_adapter", "modules",
                  "named_modules", "buffers", "resize_token_embeddings", "get_input_embeddings"}
# Methods and helpers that return the model they are given (a moved or wrapped copy of the same weights).
_SAME_MODEL_METHODS = {"eval", "train", "to", "cuda", "cpu", "half", "float", "bfloat16", "requires_grad_", "module"}
_SAME_MODEL_CALLS = {"unwrap_model", "unwrap_model_for_generation"}
_FREEZING_CALLS = ("create_reference_model",)
_PEFT_WORDS = re.compile(r"peft|lora|adapter", re.IGNORECASE)
# Names of functions that make or fetch a model, not models: `create_reference_model`, `get_ref_model`.
_VERB = re.compile(r"^_*(create|get|build|load|make|init|prepare|setup|compute|wrap|unwrap|save|to|is|has|use)_")

Scope = Union[cst.Module, cst.FunctionDef]


@dataclass
class Build:
    """A reference model made from weights (`deepcopy`, `from_pretrained`), and whether it is frozen."""

    node: cst.CSTNode  # the assignment
    key: str  # `ref_model` or `self.ref_model`
    how: str  # "copy.deepcopy(...)"
    frozen: bool


@dataclass
class ScopeRoles:
    names: Dict[str, str] = field(default_factory=dict)  # name -> role from assignments / keywords
    frozen: Set[str] = field(default_factory=set)  # keys frozen (or handed to code that may freeze them)
    builds: List[Build] = field(default_factory=list)


def body_of(node: cst.CSTNode) -> List[cst.CSTNode]:
    body = getattr(node, "body", ())
    return list(getattr(body, "body", body))


def statements(block: List[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Every statement in `block` and its nested blocks (if/for/while/with/try), not in nested defs or classes."""
    for stmt in block:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
            continue
        yield stmt
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        for child in child_blocks(stmt):
            yield from statements(child)


def child_blocks(stmt: cst.CSTNode) -> Iterator[List[cst.CSTNode]]:
    if isinstance(stmt, (cst.If, cst.For, cst.While, cst.With, cst.Try, cst.TryStar, cst.Else, cst.Finally,
                         cst.ExceptHandler, cst.ExceptStarHandler)):
        yield body_of(stmt)
    orelse = getattr(stmt, "orelse", None)
    if orelse is not None:
        if isinstance(orelse, cst.If):
            yield [orelse]
        else:
            yield body_of(orelse)
    for handler in getattr(stmt, "handlers", ()):
        yield body_of(handler)
    final = getattr(stmt, "finalbody", None)
    if final is not None:
        yield body_of(final)
    if isinstance(stmt, cst.Match):
        for case in stmt.cases:
            yield body_of(case)


def header(stmt: cst.CSTNode) -> List[cst.CSTNode]:
    """The expressions a statement evaluates itself, without its nested blocks."""
    if isinstance(stmt, (cst.If, cst.While)):
        return [stmt.test]
    if isinstance(stmt, cst.For):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, cst.With):
        return list(stmt.items)
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef, cst.Try, cst.TryStar, cst.Else, cst.Finally)):
        return []
    if isinstance(stmt, (cst.ExceptHandler, cst.ExceptStarHandler, cst.Match)):
        return []
    return [stmt]


def call_name(call: cst.Call) -> str:
    """The last name of the called expression: `torch.optim.AdamW` -> `AdamW`."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


class ModelRoles:
    """Roles of model-holding names and attributes in one file."""

    def __init__(self, file) -> None:
        self._file = file
        self._rl_code: Optional[bool] = None
        self.imports: Imports = file.fact(Imports)
        settings = file.settings
        extra = {REFERENCE: tuple(settings.option(REFERENCE_NAMES)), POLICY: tuple(settings.option(POLICY_NAMES))}
        self._vocabulary = _vocabulary(extra[REFERENCE], extra[POLICY])
        self._vocab_cache: Dict[str, Optional[str]] = {}
        self.scopes: Dict[cst.CSTNode, ScopeRoles] = {}
        self.class_attrs: Dict[cst.ClassDef, ScopeRoles] = {}
        self.class_of: Dict[cst.FunctionDef, cst.ClassDef] = {}
        self.functions: Dict[str, cst.FunctionDef] = {}  # local functions and methods by name
        # scope (module or function) -> its statements, in order, each with the calls it makes itself
        self.calls: Dict[cst.CSTNode, List[Tuple[cst.CSTNode, List[cst.Call]]]] = {}
        self.runs_roles = False  # whether any call runs a model with a role (directly or through a helper)
        self.runs_model: Dict[str, Tuple[str, ...]] = {}  # function name -> parameters it calls as a model
        self.aliases: List[Tuple[cst.CSTNode, str, str]] = []  # (assignment, target, source): reference := policy
        self.optimized: List[Tuple[cst.Call, str]] = []  # (`ref.parameters()` call, `ref`) given to an optimizer
        self.trained: Set[str] = set()  # models whose parameters some optimizer receives
        self.models: Set[str] = set()  # keys built as a model (`from_pretrained`, `deepcopy`) or used as one
        self.regressed: Set[str] = set()  # models whose output a regression loss fits (`mse_loss(v(x), returns)`)
        self.evidence: Dict[str, str] = {}  # roles from what the code does with a model that no name gives a role
        self._collect(file.module)

    # ---- vocabulary ----

    def vocabulary_role(self, name: str) -> Optional[str]:
        """The role the name alone implies (`ref_model` -> reference), or None."""
        if name not in self._vocab_cache:
            bare = name.lstrip("_")
            self._vocab_cache[name] = None if _VERB.match(bare) else next(
                (role for role, pattern in self._vocabulary if pattern.match(bare)), None)
        return self._vocab_cache[name]

    # ---- queries ----

    def role(self, expr: cst.BaseExpression, function: Optional[cst.FunctionDef] = None) -> Optional[str]:
        """The role of the model `expr` refers to inside `function` (None: module level)."""
        expr = self.unwrap(expr)
        key = dotted(expr)
        if key is None:
            return None
        if key in self.functions or (key.split(".")[0] in self.imports.aliases and key.split(".")[0] != "self"):
            return None  # a function named `reward_model`, an imported `create_reference_model`: not models
        if key.count(".") == 1 and key.split(".")[0] in ("self", "cls") and key.split(".")[1] in self.functions:
            return None  # `self.query_reward_model(url, texts)`: a method of this file, not a model
        if "." not in key:
            for scope in (function, None):
                roles = self.scopes.get(scope) if scope is not None else self._module_roles
                if roles is not None and key in roles.names:
                    return roles.names[key]
        elif key.startswith("self.") and key.count(".") == 1 and function is not None:
            cls = self.class_of.get(function)
            if cls is not None and key in self.class_attrs[cls].names:
                return self.class_attrs[cls].names[key]
        role = self.vocabulary_role(key.rsplit(".", 1)[-1]) or self.evidence.get(key)
        return role if role is None or self.rl_code else None

    @property
    def rl_code(self) -> bool:
        """Names give roles only in RL post-training code: a DETR's `self.model` is no policy, an `accelerate`
        weakref called `reference` no reference model."""
        if self._rl_code is None:
            self._rl_code = self._file.fact(Purpose).rl_code
        return self._rl_code

    def unwrap(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """`accelerator.unwrap_model(m).eval().module` -> `m`: calls that return the same weights."""
        while True:
            if isinstance(expr, cst.Call):
                name = call_name(expr)
                if isinstance(expr.func, cst.Attribute) and name in _SAME_MODEL_METHODS:
                    expr = expr.func.value
                    continue
                if name in _SAME_MODEL_CALLS and expr.args:
                    expr = expr.args[0].value
                    continue
            if isinstance(expr, cst.Attribute) and expr.attr.value == "module":
                expr = expr.value
                continue
            return expr

    def is_forward(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """The model a call runs directly (`m(...)`, `m.forward(...)`), or None."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        if isinstance(func, (cst.Name, cst.Attribute)) and dotted(self.unwrap(func)) is not None:
            return func
        return None

    def is_model(self, model: str) -> bool:
        """Whether this file builds `model` as a model or calls a method on it that only models have."""
        return model in self.models

    def is_trained(self, model: str) -> bool:
        """Whether the file gives this model's parameters to an optimizer (a reward model being trained)."""
        return model in self.trained

    def builds(self) -> Iterator[Build]:
        """Every reference built from weights, with whether its scope freezes it."""
        for scope in list(self.scopes.values()) + list(self.class_attrs.values()):
            yield from scope.builds

    # ---- collection ----

    def _collect(self, module: cst.Module) -> None:
        self._module_roles = ScopeRoles()
        self.scopes[module] = self._module_roles
        functions: List[Tuple[cst.FunctionDef, Optional[cst.ClassDef]]] = []
        self._find_functions(module.body, None, functions)
        for function, _ in functions:
            self.functions.setdefault(function.name.value, function)
        self._peft_guarded: Set[cst.CSTNode] = set()
        _guarded(body_of(module), False, self._peft_guarded)
        for scope in [module] + [function for function, _ in functions]:
            self.calls[scope] = [(stmt, list(_calls_in(header(stmt)))) for stmt in statements(body_of(scope))]
        for function in self.functions.values():
            params = [p.name.value for p in _params(function)]
            called = {dotted(self.is_forward(c) or cst.Name("_")) for _, calls in self.calls[function] for c in calls}
            self.runs_model[function.name.value] = tuple(p for p in params if p in called)
        self._find_trained()
        self._scan(module, body_of(module), self._module_roles, None)
        for function, cls in functions:
            self.scopes[function] = ScopeRoles()
        for function, cls in functions:
            attrs = self.class_attrs.get(cls) if cls is not None else None
            self._scan(function, body_of(function), self.scopes[function], attrs)
        for scope in list(self.scopes.values()) + list(self.class_attrs.values()):
            for build in scope.builds:
                build.frozen = build.frozen or build.key in scope.frozen

    def _find_functions(self, block, cls, out) -> None:
        for stmt in statements(block):
            if isinstance(stmt, cst.FunctionDef):
                out.append((stmt, cls))
                if cls is not None:
                    self.class_of[stmt] = cls
                self._find_functions(body_of(stmt), None, out)
            elif isinstance(stmt, cst.ClassDef):
                self.class_attrs[stmt] = ScopeRoles()
                self._find_functions(body_of(stmt), stmt, out)

    def _scan(self, scope: Scope, block, roles: ScopeRoles, attrs: Optional[ScopeRoles]) -> None:
        function = scope if isinstance(scope, cst.FunctionDef) else None
        for stmt, calls in self.calls[scope]:
            if isinstance(stmt, (cst.Assign, cst.AnnAssign)) and stmt.value is not None:
                targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
                for target in targets:
                    self._assignment(stmt, target, stmt.value, function, roles, attrs)
            elif isinstance(stmt, cst.For):
                self._freeze_loop(stmt, roles, attrs)
            for call in calls:
                self._call(call, stmt, function, roles, attrs)

    def _store(self, key: str, roles: ScopeRoles, attrs: Optional[ScopeRoles]) -> Optional[ScopeRoles]:
        if key.startswith("self.") and key.count(".") == 1:
            return attrs
        return roles if "." not in key else None

    def _assignment(self, stmt, target, value, function, roles, attrs) -> None:
        key = dotted(target)
        if key is None:
            return
        if self._built_from_weights(value) is not None or (
                isinstance(value, cst.Call) and call_name(value) in _FREEZING_CALLS):
            self.models.add(key)
        store = self._store(key, roles, attrs)
        own = self.vocabulary_role(key.rsplit(".", 1)[-1])
        source = self._value_role(value, function)
        if store is not None and own is None and source is not None:
            store.names[key] = source
        target_role = own or (store.names.get(key) if store is not None else None)
        if target_role != REFERENCE:
            return
        bare = self.unwrap(value)
        if source == POLICY and dotted(bare) is not None and not self._under_peft_choice(stmt, value):
            self.aliases.append((stmt, key, dotted(bare)))
        how = self._built_from_weights(value)
        if how is not None and store is not None:
            store.builds.append(Build(stmt, key, how, _chain_freezes(value)))

    def _value_role(self, value, function) -> Optional[str]:
        if isinstance(value, cst.Call) and call_name(value) in _FREEZING_CALLS:
            return REFERENCE
        if isinstance(value, (cst.Name, cst.Attribute, cst.Call)):
            bare = self.unwrap(value)
            if isinstance(bare, (cst.Name, cst.Attribute)):
                return self.role(bare, function)
        return None

    def _built_from_weights(self, value) -> Optional[str]:
        """`copy.deepcopy(...)` or `X.from_pretrained(...)` under any `.eval()`/`.to()` chain."""
        expr = value
        while isinstance(expr, cst.Call):
            name = call_name(expr)
            if name == "deepcopy" or name == "from_pretrained":
                return f"{name}(...)"
            if isinstance(expr.func, cst.Attribute) and name in _SAME_MODEL_METHODS:
                expr = expr.func.value
                continue
            return None
        return None

    def _under_peft_choice(self, stmt, value) -> bool:
        """`ref = model if use_peft else ...`, or under `if is_peft_model(model):`: with an adapter, the policy
        with the adapter disabled is the reference."""
        if isinstance(value, cst.IfExp) and _mentions_peft(value.test):
            return True
        return stmt in self._peft_guarded

    def _call(self, call: cst.Call, stmt, function, roles: ScopeRoles, attrs) -> None:
        name = call_name(call)
        policy_as_reference = self._keyword_aliases(call, stmt, function)
        if name in _MODEL_METHODS and isinstance(call.func, cst.Attribute):
            self.models.add(dotted(self.unwrap(call.func.value)) or "")
        # freezing: `ref.requires_grad_(False)`, or handing the model to code that may freeze it
        if name == "requires_grad_" and isinstance(call.func, cst.Attribute) and _is_false_arg(call):
            self._mark_frozen(self.unwrap(call.func.value), roles, attrs)
        helper = self.functions.get(name)
        if not self.runs_roles:
            model = self.is_forward(call)
            self.runs_roles = model is not None and self.role(model, function) is not None
        for index, arg in enumerate(call.args):
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword in KEYWORD_ROLES and arg not in policy_as_reference:
                key = dotted(arg.value)
                store = self._store(key, roles, attrs) if key else None
                if store is not None and self.vocabulary_role(key.rsplit(".", 1)[-1]) is None:
                    store.names.setdefault(key, KEYWORD_ROLES[keyword])
            if name in _SAME_MODEL_METHODS or name in _SAME_MODEL_CALLS:
                continue
            if helper is not None and bound_parameter(call, index, helper) in self.runs_model[name]:
                self.runs_roles = self.runs_roles or self.role(arg.value, function) is not None
                continue
            self._mark_frozen(self.unwrap(arg.value), roles, attrs)
        if _is_optimizer(call, self.imports):
            for inner in calls_in(call):
                if call_name(inner) in ("parameters", "named_parameters") and isinstance(inner.func, cst.Attribute):
                    owner = inner.func.value
                    if self.role(owner, function) == REFERENCE:
                        self.optimized.append((inner, dotted(self.unwrap(owner)) or "the reference"))

    def _find_trained(self) -> None:
        """Which models an optimizer trains and which of them a regression loss fits, before any role is read:
        a model no name gives a role is the value model when its output is regressed (a learned baseline fitted
        to returns), and the policy when it is the one other model trained (`opt = Adam(net.parameters())`)."""
        for stmts in self.calls.values():
            for _, calls in stmts:
                for call in calls:
                    if _is_optimizer(call, self.imports):
                        self.trained.update(dotted(self.unwrap(inner.func.value)) or "" for inner in calls_in(call)
                                            if call_name(inner) in ("parameters", "named_parameters")
                                            and isinstance(inner.func, cst.Attribute))
        unnamed = {key for key in self.trained if key and self.vocabulary_role(key.rsplit(".", 1)[-1]) is None
                   and key.split(".")[0] not in self.imports.aliases}
        if not unnamed:
            return
        for stmts in self.calls.values():
            outputs: Dict[str, str] = {}  # names bound to a model's output -> the model
            for stmt, calls in stmts:
                if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
                    target, model = dotted(stmt.targets[0].target), self._output_of(stmt.value)
                    if target is not None:
                        outputs.pop(target, None)
                        if model is not None:
                            outputs[target] = model
                operations = [node for part in header(stmt) for node in _binary_operations(part)]
                for node in calls + operations:
                    for operand in _regressed(node):
                        model = self._output_of(operand) or outputs.get(dotted(operand) or "")
                        if model is not None:
                            self.regressed.add(model)
        named = {self.vocabulary_role(key.rsplit(".", 1)[-1]) for key in self.trained} - {None}
        for key in unnamed & self.regressed:
            self.evidence[key] = VALUE
        policies = unnamed - self.regressed
        if len(policies) == 1 and named <= {VALUE}:  # beside a named policy or reward model, it is something else
            self.evidence[policies.pop()] = POLICY

    def _output_of(self, expr: cst.BaseExpression) -> Optional[str]:
        """The model whose forward `expr` is, under subscripts, fields and tensor methods: `v(x).squeeze(-1)`."""
        while True:
            if isinstance(expr, (cst.Subscript, cst.Attribute)):
                expr = expr.value
            elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
                    expr.func.attr.value in _TENSOR_RESHAPES:
                expr = expr.func.value
            else:
                break
        model = self.is_forward(expr) if isinstance(expr, cst.Call) else None
        key = dotted(self.unwrap(model)) if model is not None else None
        return key if key is not None and key not in self.functions else None

    def _keyword_aliases(self, call: cst.Call, stmt, function) -> List[cst.Arg]:
        """`Trainer(model=p, ref_model=p)`, `Trainer(ref_model=policy)`: the reference argument is the policy,
        passed as the model of the same call or holding the policy's role. Returns those arguments."""
        found = []
        for arg in call.args:
            if arg.keyword is None or KEYWORD_ROLES.get(arg.keyword.value) != REFERENCE:
                continue
            key = dotted(self.unwrap(arg.value))
            if key is None or key in ("None", "True", "False") or self._under_peft_choice(stmt, arg.value):
                continue
            models = {dotted(self.unwrap(other.value)) for other in call.args
                      if other.keyword is not None and other.keyword.value in _POLICY_KEYWORDS}
            if key in models or self.role(arg.value, function) == POLICY:
                self.aliases.append((arg, arg.keyword.value, key))
                found.append(arg)
        return found

    def _freeze_loop(self, loop: cst.For, roles, attrs) -> None:
        """`for p in ref.parameters(): p.requires_grad = False` (or `p.requires_grad_(False)`, or
        `ref.get_parameter(name).requires_grad = False` over names): every model the loop mentions is frozen."""
        for stmt in statements(body_of(loop)):
            freezes = (isinstance(stmt, cst.Assign) and isinstance(stmt.targets[0].target, cst.Attribute)
                       and stmt.targets[0].target.attr.value == "requires_grad"
                       and isinstance(stmt.value, cst.Name) and stmt.value.value == "False")
            if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
                freezes = freezes or (call_name(stmt.value) == "requires_grad_" and _is_false_arg(stmt.value))
            if freezes:
                for part in [loop.iter] + list(statements(body_of(loop))):
                    for key in _dotted_names(part):
                        self._mark_frozen_key(key, roles, attrs)
                return

    def _mark_frozen(self, expr, roles, attrs) -> None:
        key = dotted(expr)
        if key is not None:
            self._mark_frozen_key(key, roles, attrs)

    def _mark_frozen_key(self, key: str, roles, attrs) -> None:
        store = self._store(key, roles, attrs)
        if store is not None:
            store.frozen.add(key)
        if store is roles and key not in roles.names:
            self._module_roles.frozen.add(key)


_OPTIMIZERS = {"Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adafactor", "Lion", "AdamW8bit", "PagedAdamW",
               "PagedAdamW8bit", "FusedAdam", "DeepSpeedCPUAdam", "Muon"}


def _qualified_optimizer(name: Optional[str]) -> bool:
    return bool(name) and (".optim." in name or name.startswith("optim.")) and name[-1:].isalpha()


def _is_optimizer(call: cst.Call, imports: Imports) -> bool:
    """An optimizer built, or a parameter group added to one: the parameters inside it train."""
    name = call_name(call)
    return name in _OPTIMIZERS or name == "add_param_group" or _qualified_optimizer(imports.qualified(call.func))


# Regression losses: the model whose output they fit predicts a number (a value, a return), not an action.
_REGRESSIONS = {"mse_loss", "smooth_l1_loss", "huber_loss", "l1_loss"}
_TENSOR_RESHAPES = {"squeeze", "view", "reshape", "flatten", "float", "view_as", "contiguous"}


def _binary_operations(node: cst.CSTNode) -> Iterator[cst.BinaryOperation]:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.BinaryOperation):
            yield current
        if type(current) not in _NO_CALLS_INSIDE:
            stack.extend(children(current))


def _regressed(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """The operands a regression fits: both arguments of `mse_loss(a, b)`, both sides of `(a - b) ** 2`,
    `(a - b).pow(2)`, `(a - b).square()`."""
    if isinstance(node, cst.Call):
        if call_name(node) in _REGRESSIONS:
            yield from (arg.value for arg in node.args[:2])
            return
        if isinstance(node.func, cst.Attribute) and (call_name(node) == "square" or (
                call_name(node) == "pow" and node.args and _is_two(node.args[0].value))):
            difference = node.func.value
        else:
            return
    elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power) and _is_two(node.right):
        difference = node.left
    else:
        return
    if isinstance(difference, cst.BinaryOperation) and isinstance(difference.operator, cst.Subtract):
        yield difference.left
        yield difference.right


def _is_two(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and expr.value == "2"


def bound_parameter(call: cst.Call, index: int, function: cst.FunctionDef) -> Optional[str]:
    """The parameter of local `function` that argument `index` of `call` binds (None for `*args`/`**kw`)."""
    arg = call.args[index]
    if arg.star:
        return None
    if arg.keyword is not None:
        return arg.keyword.value
    positional = list(function.params.posonly_params) + list(function.params.params)
    if positional and positional[0].name.value in ("self", "cls") and isinstance(call.func, cst.Attribute):
        positional = positional[1:]  # `self.helper(x)` / `obj.helper(x)` binds after `self`
    if any(a.keyword is not None or a.star for a in call.args[:index]):
        return None
    return positional[index].name.value if index < len(positional) else None


def _mentions_peft(expr: cst.CSTNode) -> bool:
    return any(_PEFT_WORDS.search(key) for key in _dotted_names(expr)) or any(
        isinstance(c, cst.Call) and _PEFT_WORDS.search(call_name(c)) for c in calls_in(expr))


def _guarded(block, inside: bool, out: Set[cst.CSTNode]) -> None:
    """Collect the statements under an `if` whose test mentions PEFT / LoRA / adapters."""
    for stmt in block:
        if isinstance(stmt, cst.SimpleStatementLine):
            if inside:
                out.update(stmt.body)
            continue
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            _guarded(body_of(stmt), False, out)
            continue
        if inside:
            out.add(stmt)
        here = inside or (isinstance(stmt, cst.If) and _mentions_peft(stmt.test))
        for child in child_blocks(stmt):
            _guarded(child, here, out)


def _dotted_names(node: cst.CSTNode) -> Iterator[str]:
    """The dotted names (`ref_model`, `self.ref`) read anywhere inside `node`."""
    stack = [node]
    while stack:
        current = stack.pop()
        key = dotted(current) if isinstance(current, (cst.Name, cst.Attribute)) else None
        if key is not None:
            parts = key.split(".")
            yield from (".".join(parts[:i]) for i in range(1, len(parts) + 1))
            continue
        stack.extend(children(current))


def _is_false_arg(call: cst.Call) -> bool:
    for arg in call.args:
        if isinstance(arg.value, cst.Name) and arg.value.value == "False":
            return True
    return False


def _chain_freezes(value) -> bool:
    expr = value
    while isinstance(expr, cst.Call):
        if call_name(expr) == "requires_grad_" and _is_false_arg(expr):
            return True
        if not isinstance(expr.func, cst.Attribute):
            return False
        expr = expr.func.value
    return False


def _params(function: cst.FunctionDef) -> List[cst.Param]:
    p = function.params
    return list(p.posonly_params) + list(p.params) + list(p.kwonly_params)


def _calls_in(block) -> Iterator[cst.Call]:
    for stmt in block:
        yield from calls_in(stmt)


def calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    """Every call inside `node`, not descending into nested function or class bodies or lambdas."""
    stack = [node]
    while stack:
        current = stack.pop()
        kind = type(current)
        if kind is cst.Call:
            yield current
        elif kind in _NO_CALLS_INSIDE:
            continue
        stack.extend(children(current))


# Nodes whose insides hold no call a gradient rule cares about (or are analysed on their own).
_NO_CALLS_INSIDE = {cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Name, cst.Integer, cst.Float, cst.Imaginary,
                    cst.SimpleString, cst.FormattedString, cst.ConcatenatedString, cst.Annotation, cst.Import,
                    cst.ImportFrom, cst.Comment, cst.Decorator}
