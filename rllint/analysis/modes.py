"""Train / eval mode of models at a point of the code, and whether their dropout is active (RL317).

A model is in train mode after `m.train()` and in eval mode after `m.eval()` / `m.train(False)`;
`from_pretrained` models start in eval mode, so only a mode the source sets counts. Modes flow along
the statements of a function: branches join, a loop body runs again after its end (a `train()` late
in a loop reaches the `generate` at its top on the next iteration), and a call of a local helper
leaves what the helper sets (`self.update()` ending in `self.policy.train()`). A call that hands the
model to code this file does not have may set either mode: after it the mode is unknown. Where a
function sets nothing before a point, the modes at the calls of that function count, a few levels up.

Dropout acts only in train mode and only where a model has some: LoRA adapters with
`lora_dropout > 0`, a dropout probability above 0 set where a model is built or configured
(`nn.Dropout(0.1)`, `attention_dropout=0.1`), or a model family whose config has dropout, loaded by
its hub id (GPT-2, OPT). Zero settings and `disable_dropout` make it inactive; where the file says nothing
(Qwen, Llama and most recent models have none), it is unknown.
"""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, List, NamedTuple, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.domains.models import OPTIMIZERS
from rllint.analysis.flow import Flow
from rllint.analysis.roles import ModelRoles, body_of, call_name, calls_in, child_blocks, header
from rllint.analysis.syntax import dotted, keyword, positional, walk
from rllint.analysis.text import Scopes, TextSources, argument, number
from rllint.analysis.values import Values

TRAIN, EVAL, ENTRY, UNKNOWN = "train", "eval", "entry", "unknown"


class Setting(NamedTuple):
    mode: str  # TRAIN, EVAL, ENTRY (whatever it was when the function was called) or UNKNOWN
    node: Optional[cst.Call]  # the call that set it


State = FrozenSet[Setting]
_AT_ENTRY: State = frozenset({Setting(ENTRY, None)})
_UNKNOWN: State = frozenset({Setting(UNKNOWN, None)})
# Calls that take a model and leave its mode alone.
_NEUTRAL = {"unwrap_model", "unwrap_model_for_generation", "prepare", "backward", "watch", "len", "print",
            "isinstance", "getattr", "hasattr", "id", "type", "next", "iter", "get_peft_model", "clip_grad_norm_",
            "deepcopy", "to", "cuda", "cpu"}
_CALLER_DEPTH = 3


def mode_set(call: cst.Call) -> Optional[str]:
    """`m.train()` -> TRAIN; `m.eval()` / `m.train(False)` / `m.train(mode=False)` -> EVAL; None otherwise."""
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in ("train", "eval"):
        return None
    if call.func.attr.value == "eval":
        return EVAL if not call.args else None
    flag = keyword(call, "mode")
    value = flag.value if flag is not None else positional(call, 0)
    on = 1.0 if value is None else number(value)
    return None if on is None else TRAIN if on == 1.0 else EVAL


class ModelModes:
    """`at(call, model, function)`: the settings of `model` that may be in force when `call` runs."""

    def __init__(self, file) -> None:
        self.file = file
        self.roles: ModelRoles = file.fact(ModelRoles)
        self.sources: TextSources = file.fact(TextSources)
        self._effects: Dict[Tuple[int, str], State] = {}

    def at(self, call: cst.Call, model: str, function: Optional[cst.FunctionDef], depth: int = 0) -> State:
        scope = function or self.file.module
        model = self._same_model(model, scope)
        statement = next((s for s, calls in self.roles.calls.get(scope, ()) if any(c is call for c in calls)), None)
        if statement is None:
            return _UNKNOWN
        found: Set[Setting] = set()
        self._run(body_of(scope), _AT_ENTRY, model, statement, found)
        if Setting(ENTRY, None) not in found:
            return frozenset(found)
        found.discard(Setting(ENTRY, None))
        sites = self.sources.callers(function) if function is not None and depth < _CALLER_DEPTH else []
        for site, caller in sites:
            key = self._caller_key(site, function, model)
            outer = caller if isinstance(caller, cst.FunctionDef) else None
            found |= self.at(site, key, outer, depth + 1) if key else _UNKNOWN
        return frozenset(found) if sites else frozenset(found | _AT_ENTRY)

    def _same_model(self, model: str, scope) -> str:
        """The model a name bound once to a wrapper of it stands for: `m = accelerator.unwrap_model(policy)`,
        `with unwrap_model_for_generation(policy, acc) as m:` -> `policy`."""
        sources = [value for stmt, _ in self.roles.calls.get(scope, ()) for value in _bound_to(stmt, model)]
        if len(sources) != 1:
            return model
        inner = dotted(self.roles.unwrap(sources[0]))
        return inner if inner is not None and inner != model else model

    def _caller_key(self, site: cst.Call, function: cst.FunctionDef, model: str) -> Optional[str]:
        """What the caller calls the model `function` calls `model`: the argument given to that parameter, the
        same `self.x` for a method called on `self`, the same global name."""
        given = argument(site, function, model)
        if given is not None:
            return dotted(self.roles.unwrap(given))
        if model.startswith("self.") and isinstance(site.func, cst.Attribute) and dotted(site.func.value) == "self":
            return model
        return model if "." not in model and model not in self.sources.scopes.of(function).assigned else None

    # ---- the walk ----

    def _run(self, block: List[cst.CSTNode], state: State, model: str, target, found: Set[Setting]) -> State:
        for stmt in block:
            if isinstance(stmt, cst.SimpleStatementLine):
                state = self._run(list(stmt.body), state, model, target, found)
                continue
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            if stmt is target:
                found.update(state)
            for part in header(stmt):
                for call in calls_in(part):
                    state = self._apply(call, state, model)
            blocks = list(child_blocks(stmt))
            if isinstance(stmt, (cst.For, cst.While)):
                once = self._run(blocks[0], state, model, target, found)
                again = self._run(blocks[0], state | once, model, target, found)
                state = state | again
                for rest in blocks[1:]:
                    state = self._run(rest, state, model, target, found)
            elif isinstance(stmt, cst.If):
                ends = [self._run(b, state, model, target, found) for b in blocks]
                state = frozenset().union(*ends) | (state if stmt.orelse is None else frozenset())
            elif isinstance(stmt, (cst.Try, cst.TryStar)):
                body = self._run(blocks[0], state, model, target, found)
                ends = [body] + [self._run(b, state | body, model, target, found) for b in blocks[1:]]
                state = frozenset().union(*ends)
            elif isinstance(stmt, cst.Match):
                ends = [self._run(b, state, model, target, found) for b in blocks]
                state = frozenset().union(state, *ends)
            else:
                for inner in blocks:
                    state = self._run(inner, state, model, target, found)
        return state

    def _apply(self, call: cst.Call, state: State, model: str) -> State:
        mode = mode_set(call)
        if mode is not None:
            return frozenset({Setting(mode, call)}) if dotted(self.roles.unwrap(call.func.value)) == model else state
        for helper in self.sources.helpers(call):
            inner = self._helper_key(call, helper, model)
            if inner is not None:
                effect = self._effect(helper, inner)
                kept = state if Setting(ENTRY, None) in effect else frozenset()
                return (effect - _AT_ENTRY) | kept
            return state
        if call_name(call) not in _NEUTRAL and any(
                dotted(self.roles.unwrap(a.value)) == model for a in call.args):
            return _UNKNOWN  # the model goes to code this file does not have
        return state

    def _helper_key(self, call: cst.Call, helper: cst.FunctionDef, model: str) -> Optional[str]:
        params = helper.params
        for param in list(params.posonly_params) + list(params.params) + list(params.kwonly_params):
            given = argument(call, helper, param.name.value)
            if given is not None and dotted(self.roles.unwrap(given)) == model:
                return param.name.value
        if model.startswith("self.") and isinstance(call.func, cst.Attribute) and dotted(call.func.value) == "self":
            return model
        return model if "." not in model else None

    def _effect(self, helper: cst.FunctionDef, model: str) -> State:
        """The settings `helper` leaves `model` in; ENTRY among them when some path sets nothing."""
        key = (id(helper), model)
        if key not in self._effects:
            self._effects[key] = _AT_ENTRY  # while it is worked out: a recursive call changes nothing
            self._effects[key] = self._run(body_of(helper), _AT_ENTRY, model, None, set())
        return self._effects[key]


def _bound_to(stmt: cst.CSTNode, name: str) -> List[cst.BaseExpression]:
    """The values `stmt` binds to `name`: its assignment's value, its `with ... as name` item."""
    if isinstance(stmt, cst.Assign) and any(dotted(t.target) == name for t in stmt.targets):
        return [stmt.value]
    if isinstance(stmt, cst.With):
        return [item.item for item in stmt.items if item.asname is not None and dotted(item.asname.name) == name]
    return []


# ---- dropout ----

_DROPOUT_KEY = re.compile(r"(^|_)(dropout|pdrop)(_prob|_rate|_p)?$|^dropout")
_DISABLES = re.compile(r"disable_dropout")
_MODEL_ID = re.compile(r"^[\w.\-/~:]+$")
# Families whose released configs sample dropout in train mode (GPT-2: 0.1 everywhere; OPT: 0.1), and families
# whose configs have none (Qwen, Llama, Mistral, Gemma, DeepSeek, Pythia, SmolLM, Phi-3).
_DROPOUT_FAMILY = re.compile(r"(^|/)(distil)?gpt-?2|(^|/)opt-\d", re.I)
_NO_DROPOUT_FAMILY = re.compile(r"qwen|qwq|llama|mistral|mixtral|gemma|deepseek|pythia|smollm|phi-3", re.I)


class Dropout:
    """Whether the file's models sample dropout in train mode: `active` True (with `why`), False, or None."""

    def __init__(self, file) -> None:
        values: Values = file.fact(Values)
        scopes: Scopes = file.fact(Scopes)
        lora: Set[Optional[bool]] = set()
        base: Set[Optional[bool]] = set()
        self.why = ""
        disabled = False
        for node in walk(file.module, into_functions=True):
            if isinstance(node, cst.Call):
                disabled = disabled or bool(_DISABLES.search(call_name(node)))
                if call_name(node) == "from_pretrained":
                    self._family(base, scopes.string(positional(node, 0)) or "")
                if call_name(node) == "Dropout":
                    p = keyword(node, "p")
                    self._note(base, values, p.value if p is not None else positional(node, 0), "nn.Dropout")
                for arg in node.args:
                    key = arg.keyword.value if arg.keyword is not None else ""
                    if key == "lora_dropout":
                        self._note(lora, values, arg.value, "lora_dropout")
                    elif key.startswith("disable_dropout"):
                        disabled = disabled or number(arg.value) == 1.0
                    elif _DROPOUT_KEY.search(key):
                        self._note(base, values, arg.value, key)
            elif isinstance(node, cst.Assign):
                for target in node.targets:
                    if isinstance(target.target, cst.Attribute) and _DROPOUT_KEY.search(target.target.attr.value):
                        self._note(base, values, node.value, target.target.attr.value)
        for event in file.fact(Flow).dropouts:  # adapters built here or by the file's calls of other modules
            self._adapted(lora, event.extra["p"])
        active = lora == {True} or base == {True}
        self.active: Optional[bool] = False if disabled else (True if active else None)

    def _adapted(self, seen: Set[Optional[bool]], p) -> None:
        """A LoRA dropout the fact engine followed to where it is written (a settings file the run reads)."""
        number = p.facts.get("number")
        if number is None:
            seen.add(None)
            return
        seen.add(number > 0)
        origin = p.facts.get("origin")
        if number > 0 and not self.why:
            self.why = f"lora_dropout={number:g}" + (f", {origin}" if origin and origin != "literal" else "")

    def _family(self, seen: Set[Optional[bool]], name: str) -> None:
        """The dropout of a model loaded by its hub id (a literal or a module constant)."""
        if _MODEL_ID.match(name) and _DROPOUT_FAMILY.search(name):
            seen.add(True)
            self.why = self.why or f"{name} has dropout 0.1"
        elif _MODEL_ID.match(name) and _NO_DROPOUT_FAMILY.search(name):
            seen.add(False)

    def _note(self, seen: Set[Optional[bool]], values: Values, expr: Optional[cst.BaseExpression], what: str) -> None:
        value = values.of(expr) if expr is not None else None
        if value is None or not isinstance(value.number, (int, float)):
            seen.add(None)  # a probability the file computes: nothing known
            return
        seen.add(value.number > 0)
        if value.number > 0 and not self.why:
            self.why = f"{what}={value.number:g}"


class PolicyPasses:
    """Rollouts and old-log-prob passes of the policy that the fact engine follows into the methods of a wrapper
    class of another module (`llm.generate(...)` sampling with `self.model`, `llm.logps(ids)` under no_grad
    running its forward), a class that never sets a mode itself: `at(call)` gives the policy's name at that call
    of this file (`llm.model`) and what the pass does. The policy is a model whose parameters an optimizer of the
    file is built with."""

    def __init__(self, file) -> None:
        flow: Flow = file.fact(Flow)
        flow.analyze_all()
        trained = _optimized(flow)
        self._passes: Dict[int, Tuple[str, str]] = {}
        events = [(e, "samples rollouts") for e in flow.generations] + [
            (e, "computes old log-probs") for e in flow.forwards if e.grad_mode is False]
        for event, what in events:
            if event.local or _sets_modes(event.function):
                continue  # a pass of this file is the roles' and the modes' own; one whose class sets modes, unknown
            name = _model_name(flow, event)
            call = event.via if event.via is not None else event.node
            if name in trained and id(call) not in self._passes:
                self._passes[id(call)] = (name, what)

    def at(self, call: cst.Call) -> Optional[Tuple[str, str]]:
        return self._passes.get(id(call))


def _sets_modes(function) -> bool:
    """Whether the class of a method of another module (or its module, for a function) sets a train / eval mode
    anywhere: then the mode its pass runs in is not the one its caller left."""
    scope = function.cls.node if function.cls is not None else function.module.module
    return any(isinstance(node, cst.Call) and mode_set(node) is not None for node in walk(scope, into_functions=True))


def _optimized(flow: Flow) -> Set[str]:
    """The names of the models whose parameters an optimizer of the file is built with (`AdamW(m.parameters())`)."""
    found = set()
    for function in flow.ir.all_functions():
        for site in function.calls:
            if call_name(site.node) in OPTIMIZERS:
                for node in walk(site.node):
                    if isinstance(node, cst.Call) and call_name(node) in ("parameters", "named_parameters") and \
                            isinstance(node.func, cst.Attribute) and dotted(node.func.value):
                        found.add(dotted(node.func.value))
    return found


def _model_name(flow: Flow, event) -> Optional[str]:
    """The name in this file of the model an event's call runs: `m` of `m.generate(...)` / `m.forward(...)` /
    `m(...)`; in a method that this file's call runs on a receiver (`llm.generate(...)` running
    `self.model.generate(...)`), the receiver's attribute (`llm.model`)."""
    func = event.node.func
    model = func.value if isinstance(func, cst.Attribute) and func.attr.value in ("generate", "forward") else func
    name = dotted(model)
    if name is None or event.via is None:
        return name if event.local else None
    function, via = event.function, event.via
    if flow.value(via.func).facts.get("function") is not function or not isinstance(via.func, cst.Attribute) or \
            function.cls is None or not function.params:
        return None  # the pass runs deeper than the method this call runs
    receiver, owner = dotted(via.func.value), function.params[0].name
    head, _, rest = name.partition(".")
    return f"{receiver}.{rest}" if receiver and head == owner and rest else None
