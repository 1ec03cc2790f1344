"""The fact engine's interpreter: abstract values of every expression of a file, by following the code.

Each function of the module IR (`rllint.analysis.ir`) is interpreted once in its *own context*: its
parameters hold what every call site of the file passes (joined), or nothing known when a caller is out
of sight (the function escapes: it is passed or stored as a value), or their defaults when nothing calls
it. A call of a function of the project is interpreted again with the arguments of that call (a summary,
memoised by the arguments' facts, at most `MAX_DEPTH` calls deep), so a helper's result is as precise as
what it is given: `get_logps(policy, ids)` carries gradient, `get_logps(ref, ids)` under `no_grad` does
not. A nested function reads the names of the function it is defined in: as they are where that function
calls it (or hands it to a library that does), else as that function's run leaves them. What libraries do
is the domains' business (`rllint.analysis.domains`).

The gradient mode of a statement is its lexical one (`no_grad`, `enable_grad`, decorators), else the mode
at every call site of its function, else True for the module's top level, for a function that takes a
training step itself (it calls `backward`) and for the methods a trainer framework calls with gradient
(`compute_loss` of a transformers / TRL trainer subclass), else unknown.

Rules ask `Flow`: `value(expr)`, `grad_mode(statement)`, `callers(function)`, `frozen(model)`,
`trained(model)`, and the events the interpretation saw (`inplace`, `stoppers`, `backwards`,
`forwards`, `draws`, `saved`, `reads`).
"""
from __future__ import annotations

import ast
import os
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from rllint.analysis import minibatches, summaries
from rllint.analysis.domains import domains
from rllint.analysis.domains.config import CLI_OPTIONS, CONFIG, NAMESPACE, cli_option
from rllint.analysis.domains.distributed import ROWS, counted, per_rank_parameter
from rllint.analysis.domains.models import (MODULE_METHODS, OPTIMIZERS, PRETRAINED, PRETRAINED_METHODS, configured,
                                            output_item, sides_it_sets)
from rllint.analysis.domains.torch_ops import KEPT_BY_VIEWS, STOPPERS, eos_masked, excluding_eos, negated, written
from rllint.analysis.domains.trainers import reassigned
from rllint.analysis.facts import (BATCH, BOOL, CAUSAL_LM, CLASS, DICT, FUNCTION, GENERATION_PROMPT, GRAPH, INSTANCE,
                                   LIST, MASK, MODEL, NONE, NUMBER, REF, SIDES, TENSOR, TEXT, TEXTS, TIME, TOKENIZER,
                                   TRAINER, TUPLE, UNKNOWN, Value, item_of, join, join_all, set_item, signature, value,
                                   with_sources)
from rllint.analysis.ir import NO_GRAD_CONTEXTS, CallSite, ClassIR, FunctionIR, ModuleIR, Param
from rllint.analysis.launches import written_settings_file
from rllint.analysis.syntax import children, walk
from rllint.analysis.tensors import layout_of
from rllint.index import defines, find_module
from rllint.options import CROSS_MODULE_VALUES

MAX_DEPTH = 4  # nested calls interpreted with their arguments; deeper calls return an unknown value
MAX_SUMMARIES = 2000  # interpretations of callees per file: a bound for pathological files
# Functions analysed on demand inside one another's analysis (a caller's, to learn what it passes; a method's,
# to learn what it stores on `self`): deeper, a function is analysed as if its callers were out of sight, so a
# long chain of files and methods ends in unknown facts instead of Python's recursion limit.
MAX_NESTED_ANALYSES = 24
MAX_REMOTE_IMPORTERS = 4  # project files read to find the callers of a function no caller in its file calls
MAX_UNROLLED = 64  # items of a dict of settings a loop over them is run once each for; more: the loop as any other

NN_MODULE_BASES = frozenset({"torch.nn.Module", "nn.Module", "torch.nn.modules.module.Module"})
_IN_PROGRESS = (UNKNOWN, [])  # a summary being interpreted (`Flow.summary`)
_LAYOUT_NODES = (cst.Call, cst.ListComp, cst.GeneratorExp)  # what may lay out rows (`lays_out`)
_REPEATS = frozenset({"repeat_interleave", "repeat", "tile", "RepeatSampler", "RepeatRandomSampler"})
# What a module stores on `self` that holds no parameters: numbers, flags, text, containers and plain tensors
# (a tensor attribute is not registered as a parameter).
_PLAIN = frozenset({NUMBER, BOOL, NONE, TEXT, TEXTS, DICT, LIST, TUPLE, TENSOR})
_REGISTERS = frozenset({"register_parameter", "register_module", "add_module"})
# In this thread, across the project's files: how deep `Flow._analyze` calls nest, and the computations that
# may read provisional answers (`_open`).
_ANALYSES = threading.local()
_TRAINER_PACKAGES = ("transformers.", "trl.")
_TRAINER_ENTRY_METHODS = frozenset({"compute_loss", "training_step"})
_CONVERSIONS = frozenset({"float", "int"})
_NUMERIC_BUILTINS = {"min": min, "max": max, "abs": abs}
# Builtin containers and scalars: no model, tensor or tokenizer of a library is an instance of one.
_BUILTIN_TYPES = frozenset({"dict", "list", "tuple", "set", "str", "bytes", "int", "float", "bool"})
_LIBRARY_OBJECTS = frozenset({MODEL, TENSOR, TOKENIZER})
# The objects whose attributes `getattr(obj, "name", default)` reads: configurations (as settings) and trainers.
_SETTINGS_HOLDERS = frozenset({INSTANCE, CONFIG, NAMESPACE, TRAINER})
_VERL_POLICY_LOSS = "verl.trainer.ppo.core_algos.register_policy_loss"
GRAPH_NONE = "fixed"
_VERL_LOSS_LOGPS = {"log_prob": GRAPH, "old_log_prob": GRAPH_NONE}  # verl passes them by these keywords
_TRL_GRPO_INPUT_LOGPS = ("old_per_token_logps", "ref_per_token_logps", "sampling_per_token_logps")
# Calls that take a model and neither train nor freeze it (copies are new objects; wrappers keep the same one,
# whose own parameters the file's optimizer and freeze sites name).
_LEAVES_MODELS = frozenset({"deepcopy", "print", "isinstance", "len", "type", "id", "repr", "str", "getattr",
                            "hasattr", "DistributedDataParallel", "DataParallel", "FullyShardedDataParallel",
                            "compile", "create_reference_model", "get_peft_model", "unwrap_model"})

_SETTLED = float("inf")  # the taint of a computation that read no provisional answer


def _open() -> Tuple[int, float]:
    """Start a computation that may read a provisional answer (an analysis, a summary, an attribute being
    found): its nesting level across the project's flows, and the taint of its enclosing one so far."""
    level = getattr(_ANALYSES, "level", 0) + 1
    _ANALYSES.level = level
    outer = getattr(_ANALYSES, "taint", _SETTLED)
    _ANALYSES.taint = _SETTLED
    _outers().append(outer)
    return level, outer


def _outers() -> List[float]:
    """The taint each open computation had when it opened the next one: `[level]` is that of the one at `level`."""
    if not hasattr(_ANALYSES, "outers"):
        _ANALYSES.outers = []
    return _ANALYSES.outers


def _taint_so_far(level: int) -> float:
    """The taint of the open computation at `level`, from what it read before it opened the ones under way."""
    outers = _outers()
    return outers[level] if len(outers) > level else getattr(_ANALYSES, "taint", _SETTLED)


def _provisional(level: int) -> None:
    """The current computation reads an answer that the computation at `level` is still finding."""
    _ANALYSES.taint = min(getattr(_ANALYSES, "taint", _SETTLED), level)


def _abandon(level: int, outer: float) -> None:
    """End the computation opened at `level` by an exception (the file is not analysed further)."""
    _ANALYSES.level, _ANALYSES.taint, _ANALYSES.pending = level - 1, outer, []
    del _outers()[level - 1:]


def _tainted(level: int) -> bool:
    """Whether the computation opened at `level` has read a provisional answer of a question outside it."""
    return _ANALYSES.taint < level


def _close(level: int, outer: float) -> float:
    """End the computation opened at `level`: the lowest level of a question still being found outside it whose
    provisional answer it read (`_SETTLED`: none; questions opened inside it are answered by now). The analyses
    that read provisional answers of the questions it opened are run again now that these are known (or wait for
    the outer question they also read)."""
    taint = _ANALYSES.taint
    mine = taint if taint < level else _SETTLED
    _ANALYSES.level = level - 1
    del _outers()[level - 1:]
    _ANALYSES.taint = min(outer, mine)
    pending: List[Tuple[float, "Flow", FunctionIR]] = getattr(_ANALYSES, "pending", [])
    ready = [entry for entry in pending if entry[0] >= level]
    if ready:
        _ANALYSES.pending = [entry for entry in pending if entry[0] < level]
        if mine < _SETTLED:
            for _, flow, function in ready:
                _postpone(mine, flow, function)
        else:  # all are forgotten first: a run that reads another's values runs that one again first
            for _, flow, function in ready:
                flow.forget(function)
            for _, flow, function in ready:
                flow._analyze(function)
    return mine


def _postpone(taint: float, flow: "Flow", function: FunctionIR) -> None:
    """Run `function` of `flow` again once the question at level `taint` is answered: its run read that question's
    provisional answer, and so does whatever reads its values until then (`Flow._read_run`)."""
    _ANALYSES.pending = getattr(_ANALYSES, "pending", []) + [(taint, flow, function)]
    flow._provisional_runs[function] = taint


@dataclass
class Event:
    """Something the interpretation of a function in its own context saw, for rules to filter."""

    node: cst.CSTNode
    statement: cst.CSTNode
    function: FunctionIR
    target: Value  # the value acted on: before an in-place op, a stopper's operand, the loss, the model
    detail: str = ""  # the op
    grad_mode: Optional[bool] = None
    extra: Dict[str, Any] = field(default_factory=dict)
    # The call of this file through which a helper's event happened (None: in the function's own context).
    # An event in another module's helper is reported there, at this call.
    via: Optional[cst.Call] = None
    via_statement: Optional[cst.CSTNode] = None

    @property
    def local(self) -> bool:
        """Whether the event's own node is in the file the flow is of (else only its `via` call is)."""
        return self.via is None or self.function.module is self.via_module

    via_module: Optional[ModuleIR] = None


class IR:
    """The module IR of a file, built once (`file.fact(IR).module`)."""

    def __init__(self, file) -> None:
        self.module = ModuleIR(file.module, file.path)


class Flow:
    """The abstract values of one file (`file.fact(Flow)`)."""

    def __init__(self, file) -> None:
        self.file = file
        self.ir: ModuleIR = file.fact(IR).module
        self.ir.flow = self
        self.values: Dict[cst.CSTNode, Value] = {}
        self._events: Dict[str, Dict[Tuple[cst.CSTNode, Optional[cst.Call]], Event]] = {
            "inplace": {}, "stopper": {}, "backward": {}, "forward": {}, "weighted": {}, "policy_gradient": {},
            "generate": {}, "dropout": {}, "draw": {}, "encode": {}, "detokenize": {}, "eos_masked": {}, "anchor": {},
            "centred": {}}
        self.reads: Dict[cst.CSTNode, List[Tuple[cst.CSTNode, cst.CSTNode]]] = {}  # obj -> (read, statement)
        self.saved: Dict[cst.CSTNode, List[Tuple[cst.CSTNode, str]]] = {}  # obj -> (statement, op)
        self.opaque: Set[cst.CSTNode] = set()  # calls out of sight handed a model or a graph (`Frame._opaque`)
        self.returned: Dict[FunctionIR, Value] = {}  # what each function returns in its own context
        # a call of another module's function whose result was cut from the graph there -> where (its node there)
        self.cut_inside: Dict[cst.Call, cst.CSTNode] = {}
        self.globals: Dict[str, Value] = {}
        self._state: Dict[FunctionIR, str] = {}
        self._forgotten: Set[FunctionIR] = set()  # run before and to be run again (`forget`)
        self._provisional_runs: Dict[FunctionIR, float] = {}  # runs that read provisional answers (`_postpone`)
        self._running: Dict[FunctionIR, int] = {}  # the analyses under way -> their level (`_open`)
        self._modes: Dict[FunctionIR, Optional[bool]] = {}
        self._callers: Dict[FunctionIR, Optional[List[CallSite]]] = {}
        self._unseen_callers: Set[FunctionIR] = set()
        self._loss_forwards: Optional[Set[cst.CSTNode]] = None  # `reaches_loss`  # functions called from out of sight (a receiver unknown there)
        self._summaries: Dict[Tuple, Tuple[Value, List[Tuple[str, Event]]]] = {}
        self._summary_count = 0
        self._attributes: Dict[Tuple[str, str], Optional[Value]] = {}
        self._layouts: Dict[cst.CSTNode, Optional[Tuple[str, str]]] = {}  # `lays_out`
        self._finding: Dict[Tuple[str, str], int] = {}  # attributes being found -> their level (`_open`)
        self._holding: Dict[str, Optional[bool]] = {}  # class name -> whether its instances hold parameters
        self._located: Optional[Dict[cst.CSTNode, FunctionIR]] = None
        self._freezes: Optional[List[Tuple[cst.CSTNode, FunctionIR]]] = None
        self._optimized: Optional[List[Tuple[cst.CSTNode, FunctionIR]]] = None
        self._imported: Dict[Tuple[str, int], Optional[object]] = {}
        # what a function's own run leaves in its names, for the functions defined in it (their closure)
        self._closures: Dict[FunctionIR, Dict[str, Value]] = {}
        self._mentioned: Dict[FunctionIR, FrozenSet[str]] = {}
        self._trained_places: Optional[Set[Tuple]] = None
        self._unreached: Dict[FunctionIR, bool] = {}
        self._imported_by_project: Optional[bool] = None
        # functions no code of the project runs that return a policy-gradient loss: their callers backpropagate it
        self.policy_losses: Set[FunctionIR] = set()
        self._token_places: Dict[FunctionIR, Tuple[Set[str], Set[cst.Call]]] = {}  # `used_as_model`
        self._parts: Dict[Tuple[FunctionIR, str], Optional[List[Tuple[Any, ...]]]] = {}
        # class -> attribute -> the methods (of it and its bases, in order) that store `self.attribute`, with the targets
        self._self_stores: Dict[ClassIR, Dict[str, List[Tuple[FunctionIR, List[cst.Attribute]]]]] = {}
        # class -> attribute -> the methods that write an element of it (`self.buffer[i] = v`), with the values
        self._item_stores: Dict[ClassIR, Dict[str, List[Tuple[FunctionIR, List[cst.BaseExpression]]]]] = {}
        self._assigned_attributes: Optional[FrozenSet[str]] = None
        self.depth_of_callers = 0  # 1 for a module read to find the callers of another's functions
        self.for_callers = bool(getattr(file, "for_callers", False))
        # Interpreting the top level can read another module that asks for this file's flow again (to find the
        # callers of its functions): that is this one, not a second flow that would take over `ir.flow`.
        file._facts[Flow] = self
        self._analyze(self.ir.top)

    # ---- events ----

    @property
    def inplace(self) -> List[Event]:
        return list(self._events["inplace"].values())

    @property
    def stoppers(self) -> List[Event]:
        return list(self._events["stopper"].values())

    @property
    def backwards(self) -> List[Event]:
        return list(self._events["backward"].values())

    @property
    def weighted(self) -> List[Event]:
        """Products of the policy's log-probs with a weight that carries a graph of its own (`extra["factor"]`)."""
        return list(self._events["weighted"].values())

    def events(self, kind: str) -> List[Event]:
        """The events of one kind the interpretation saw (`centred`, `policy_gradient`, ...)."""
        return list(self._events[kind].values())

    @property
    def policy_gradient_terms(self) -> Set[cst.CSTNode]:
        """Products of the policy's log-probs with a per-sample weight without gradient (`logps * advantages`):
        a loss whose sources hold one takes a policy-gradient step."""
        return {event.node for event in self._events["policy_gradient"].values()}

    def eos_excluded(self) -> Set[cst.CSTNode]:
        """The comparisons (`ids != tok.eos_token_id`) whose mask, leaving out the sampled EOS, weights per-token
        terms of the policy's log-probs in a loss that takes a policy-gradient step: that EOS is never trained."""
        losses = self.losses()  # every function interpreted: the events of the whole file
        terms = self.policy_gradient_terms
        masked = list(self._events["eos_masked"].values())
        found: Set[cst.CSTNode] = set()
        for loss in losses:
            if loss.sources & terms:
                found.update(event.target.facts["excludes_eos"] for event in masked if event.node in loss.sources)
        return found

    def training_loops(self) -> List[cst.CSTNode]:
        """The outermost loops of the file that take a policy-gradient backward step on every pass: around the
        backward (or the call that leads to it), or around a call of the function that takes it."""
        terms = self.policy_gradient_terms
        loops: List[cst.CSTNode] = []
        for event in self.backwards:
            if not event.target.sources & terms:
                continue
            statement = event.via_statement if event.via is not None else event.statement
            context = self.ir.context.get(statement)
            found = context.loop if context is not None else None
            function = self.ir.function_at(statement)
            for _ in range(MAX_DEPTH):  # a loop that calls the function holds any loop inside it
                outer = next((site for site in self.callers(function) if site.context.loop), None)
                if outer is None:
                    break
                found, function = outer.context.loop, outer.function
            if found is not None and found not in loops:
                loops.append(found)
        order = {stmt: index for index, stmt in enumerate(self.ir.context)}  # in the order the code writes them,
        return sorted(loops, key=lambda loop: order.get(loop, len(order)))  # whichever function was interpreted first

    def steps_in(self, loop: cst.CSTNode) -> bool:
        """Whether a policy-gradient loss is backpropagated on every pass of `loop`: in its body, or in a function
        a statement of its body calls (a few calls deep). A framework's loop out of sight stands as the function it
        runs on each micro-batch (`compute_loss` of a TRL trainer subclass): it backpropagates what that returns."""
        terms = self.policy_gradient_terms
        entry = next((f for f in self.ir.all_functions() if f.node is loop), None)
        if entry is not None:  # a trainer framework calls it once a micro-batch and backpropagates what it returns
            returned = self.returned.get(entry, UNKNOWN)
            loss = item_of(returned, 0) or UNKNOWN if returned.facts.get("type") == TUPLE else returned
            return self.framework_entry(entry) and bool(loss.sources & terms)
        inside = set(walk(loop))
        for event in self.backwards:
            if not event.target.sources & terms:
                continue
            if event.statement in inside or event.via_statement in inside:
                return True
            functions = [event.function]
            for _ in range(MAX_DEPTH):
                sites = [site for function in functions for site in self.callers(function)]
                if any(site.statement in inside for site in sites):
                    return True
                functions = [site.function for site in sites]
        return False

    def losses(self) -> List[Value]:
        """What the file hands to autograd as a loss: the operand of each backward, and what a function returns
        whose result a trainer framework backpropagates (`compute_loss` / `training_step` of a transformers or
        TRL trainer subclass; a verl policy loss registered with `register_policy_loss`, the first item of the
        tuple it returns) or code out of the project does (`policy_losses`)."""
        self.analyze_all()
        found = [event.target for event in self.backwards]
        for function in self.ir.all_functions():
            if self.framework_entry(function) or _VERL_POLICY_LOSS in function.decorators or \
                    function in self.policy_losses:
                returned = self.returned.get(function, UNKNOWN)
                found.append(item_of(returned, 0) or UNKNOWN if returned.facts.get("type") == TUPLE else returned)
        return found

    def reaches_loss(self, forward: Event) -> bool:
        """Whether this run of a model forward reaches a loss of the file (`losses`): its graph does, or a number
        taken from it (`.item()`) does, which the step computes with it and whose activations it keeps. A helper
        called twice is two runs: a model probed through it in one notebook cell is not the run another cell's
        step backpropagates."""
        if self._loss_forwards is None:
            cuts = {event.node: event.target for event in self.stoppers}
            losses = self.losses()
            self._loss_forwards = set().union(
                *(loss.facts.get("forwards", frozenset()) for loss in losses),
                *(cuts[source].facts.get("forwards", frozenset())
                  for loss in losses for source in loss.sources if source in cuts))
        if forward.via is None:
            return forward.node in self._loss_forwards
        return forward.via in self._loss_forwards or any(
            step.via is forward.via and forward.node in step.target.facts.get("forwards", ()) for step in self.backwards)

    def owns(self, node: cst.CSTNode) -> bool:
        """Whether an expression is written in this file (not in another module's helper)."""
        return node in self._locate()

    def handed_parts(self, function: FunctionIR, param: str) -> Optional[List[Tuple[Any, ...]]]:
        """What a function of this file hands on of its parameter `param` (`_handed_parts`), computed once."""
        key = (function, param)
        if key not in self._parts:
            self._parts[key] = _handed_parts(function, param)
        return self._parts[key]

    def function_of(self, node: cst.CSTNode) -> Optional[FunctionIR]:
        """The function (or the module's top level) a statement or expression of this file is written in."""
        return self._locate().get(node)

    @property
    def forwards(self) -> List[Event]:
        return list(self._events["forward"].values())

    @property
    def generations(self) -> List[Event]:
        """Sampling by a model's `generate`: the target is what it is given as prompt ids (`extra["model"]`: the
        model)."""
        return list(self._events["generate"].values())

    @property
    def dropouts(self) -> List[Event]:
        """Models given a dropout probability where they are built or adapted (`extra["p"]`, a Value): PEFT's
        `get_peft_model` with a `LoraConfig` (its `lora_dropout`, 0 when not given)."""
        return list(self._events["dropout"].values())

    @property
    def draws(self) -> List[Event]:
        """Tokens drawn from tempered logits by hand (`torch_ops.draw`), here or in a helper a call of this file runs:
        each event's target is the temperature (a NUMBER value, its number absent when not known)."""
        self.analyze_all()
        return list(self._events["draw"].values())

    @property
    def detokenized(self) -> Set[cst.CSTNode]:
        """The calls and attributes that made text of sampled ids with the EOS dropped (`domains.text`), in this
        file or in the helpers it runs: the ids are sampled, or hold a sampler call of this file's in their
        sources (sampled on some path: joined with ids of a sampler the engine does not know)."""
        self.analyze_all()
        drawn = {event.node for event in self.generations}
        return {event.node for event in self._events["detokenize"].values()
                if event.target.facts.get("sampled") or event.target.sources & drawn}

    @property
    def encodings(self) -> Set[cst.CSTNode]:
        """The tokenizer calls that made token ids from text, in this file or in the helpers it runs."""
        return {event.node for event in self._events["encode"].values()}

    def encodes_generation_prompt(self, call: cst.CSTNode) -> bool:
        """Whether tokenizer call `call` encodes, in some context the engine ran it in (its own, or a call of the
        function it is in), a rendered generation prompt or a list of them (`domains.text`)."""
        self.analyze_all()
        for event in self._events["encode"].values():
            text = event.target
            element = text.facts.get("element") if text.facts.get("type") in (LIST, TEXTS) else None
            if event.node is call and GENERATION_PROMPT in (
                    text.facts.get("rendered"), element.facts.get("rendered") if element is not None else None):
                return True
        return False

    def anchors(self) -> List[Tuple[cst.CSTNode, Value, Value]]:
        """The models a KL anchors the policy to, each as (where the code pairs them, the policy, the reference): a
        trainer given both as `model=` and `ref_model=` (`domains.trainers`), and a difference of log-probs written in
        this file (`logp - ref_logp`: `lp_at`) whose side with the gradient comes from forwards of one model that an
        optimizer of the file trains, and whose fixed side from a forward, cut from the graph, of one other model."""
        self.analyze_all()
        found = [(event.node, event.extra["policy"], event.target) for event in self._events["anchor"].values()]
        trained = None
        for node, held in list(self.values.items()):
            if held.facts.get("lp_at") is not node or not isinstance(node, cst.BinaryOperation):
                continue
            sides = [self.values.get(node.left) or UNKNOWN, self.values.get(node.right) or UNKNOWN]
            graph = [side for side in sides if side.facts.get("grad") == GRAPH]
            fixed = [side for side in sides if side.facts.get("grad") not in (GRAPH, None) and side.facts.get("cut")]
            if len(graph) != 1 or len(fixed) != 1:
                continue
            trained = self.trained_models() if trained is None else trained
            policies = self._run_by(graph[0].facts.get("forwards") or frozenset())
            references = self._run_by(frozenset({fixed[0].facts["cut"]}))
            if len(policies) == 1 and len(references) == 1 and set(policies) <= trained and \
                    not set(references) & (trained | set(policies)):
                found.append((node, next(iter(policies.values())), next(iter(references.values()))))
        return found

    def _run_by(self, nodes: FrozenSet[cst.CSTNode]) -> Dict[Any, Value]:
        """The models built in sight (by identity) whose forwards are these calls, or run through them (a helper's
        call: the run of the helper there, not its own run on a parameter)."""
        return {event.target.facts["model"]: event.target for event in self.forwards
                if (event.via in nodes if event.via is not None else event.node in nodes)
                and isinstance(event.target.facts.get("model"), cst.CSTNode)}

    def record(self, kind: str, event: Event) -> None:
        """Keep an event; `saved` and `read` events fill `saved` and `reads` (keyed by the tensor object)."""
        if kind == "opaque":
            self.opaque.add(event.node)
        elif kind == "saved":
            self.saved.setdefault(event.target.facts["obj"], []).append((event.statement, event.detail))
        elif kind == "read":
            self.reads.setdefault(event.target.facts["obj"], []).append((event.node, event.statement))
        else:
            self._events[kind][(event.node, event.via)] = event  # a loop's second pass replaces its first

    # ---- questions ----

    def value(self, expr: cst.CSTNode) -> Value:
        """The facts of an expression, in its function's own context."""
        found = self.values.get(expr)
        if found is None:
            function = self._locate().get(expr)
            if function is not None:
                self._analyze(function)
            found = self.values.get(expr, UNKNOWN)
        return found

    def keyword_value(self, call: cst.Call, name: str) -> Optional[Value]:
        """What a call is given as `name=`: by keyword, or as the item of a `**mapping` the engine knows holds that
        key (`generate(**inputs, **gen_kwargs)`); None when neither gives it."""
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return self.value(arg.value)
        for arg in call.args:
            if arg.star == "**":
                given = self.value(arg.value)
                if given.facts.get("type") == DICT:
                    found = item_of(given, name)
                    if found is not None:
                        return found
        return None

    def analyze_all(self) -> None:
        """Interpret every function: the events of the whole file."""
        for function in self.ir.all_functions():
            self._analyze(function)

    def grad_mode(self, statement: cst.CSTNode) -> Optional[bool]:
        """Whether gradient is enabled where `statement` runs (None: unknown)."""
        context = self.ir.context.get(statement)
        if context is not None and context.grad is not None:
            return context.grad
        return self.entry_mode(self.ir.function_at(statement))

    def entry_mode(self, function: FunctionIR) -> Optional[bool]:
        """The gradient mode a function starts in."""
        if function not in self._modes:
            self._modes[function] = None  # a call cycle decides nothing
            self._modes[function] = self._entry_mode(function)
        return self._modes[function]

    def _entry_mode(self, function: FunctionIR) -> Optional[bool]:
        if function.is_module:
            return True
        if any(_tail(site.node.func) == "backward" for site in function.calls):
            return True  # it takes a training step: backward under no_grad would raise
        sites = self.callers(function)
        if sites:
            modes = {self.mode_at(site) for site in sites}
            return modes.pop() if len(modes) == 1 else None
        if self.framework_entry(function) or _VERL_POLICY_LOSS in function.decorators:
            return True
        if self.unreached(function) and self._returns_policy_loss(function):
            self.policy_losses.add(function)
            return True
        return None

    def _returns_policy_loss(self, function: FunctionIR) -> bool:
        """Whether what `function` returns holds a policy-gradient term (`logps * advantages`), as a run without a
        known gradient mode finds: a loss built to be backpropagated, so what runs it runs it with gradient."""
        if not function.returns:
            return False
        returned, events, _ = self.summary(function, self._entry_params(function), None, 0, keep=False)
        return any(kind == "policy_gradient" and event.node in returned.sources for kind, event in events)

    def _trainer_model(self, cls: ClassIR) -> Value:
        """The model a trainer framework hands its `compute_loss` / `training_step`: the `model` its
        constructor got (keyword, or first positional argument), at every construction of the class."""
        seen: List[Value] = []
        for site in self.ir.calls_named.get(cls.name, ()):
            self._analyze(site.function)
            callee = self.values.get(site.node.func)
            if callee is None or callee.facts.get("cls") is not cls:
                continue
            given = next((a.value for a in site.node.args if a.keyword is not None and a.keyword.value == "model"),
                         site.node.args[0].value if site.node.args and site.node.args[0].keyword is None else None)
            seen.append(self.values.get(given, UNKNOWN) if given is not None else UNKNOWN)
        return join_all(seen) if seen else UNKNOWN

    def _loads_causal_lm(self, cls: ClassIR) -> bool:
        """A TRL trainer given a model id loads it with `AutoModelForCausalLM.from_pretrained` (all but the reward
        and process-reward trainers, which load classifiers)."""
        bases = [base for base in self._bases(cls) if base.startswith("trl.")]
        return bool(bases) and not any(base.endswith(("RewardTrainer", "PRMTrainer")) for base in bases)

    def framework_entry(self, function: FunctionIR) -> bool:
        """A method a trainer framework calls with gradient enabled and whose loss it backpropagates:
        `compute_loss` / `training_step` of a subclass of a transformers or TRL trainer."""
        cls = function.cls
        return cls is not None and function.name in _TRAINER_ENTRY_METHODS and any(
            base.startswith(_TRAINER_PACKAGES) for base in self._bases(cls))

    def mode_at(self, site: CallSite) -> Optional[bool]:
        """The gradient mode at a call site (of this file or of a module that imports it)."""
        if site.context.grad is not None:
            return site.context.grad
        return site.function.module.flow.entry_mode(site.function)

    def callers(self, function: FunctionIR) -> List[CallSite]:
        """The call sites of the file that call `function`; empty when it escapes (callers out of sight)."""
        if function in self._callers:
            return self._callers[function] or []
        self._callers[function] = None  # recursion adds no caller
        level, outer = _open()
        try:
            found = self.calls_here(function)
            escapes = function.is_module or self.ir.escapes(function)
            if not found and not escapes and (function.cls is None and function.parent is None
                                              or self._constructor_of_module_class(function)):
                found = self._remote_callers(function)
            elif not found and not escapes and self._method_of_module_class(function):
                found = self._remote_callers(function)
                escapes = found is None  # called from another module through a receiver not known there
                found = found or []
        except BaseException:
            _abandon(level, outer)
            raise
        self._callers[function] = [] if escapes else found
        if escapes:
            self._unseen_callers.add(function)
        if _tainted(level):  # a function that may call it was still being interpreted: asked again later
            del self._callers[function]
        _close(level, outer)
        return [] if escapes else found

    def calls_here(self, function: FunctionIR) -> List[CallSite]:
        """The call sites written in this file that call `function` (a function of this file or of another module),
        whether or not it also escapes."""
        found: List[CallSite] = []
        for site in self._candidate_sites(function):
            if site.function is function:
                continue
            self._analyze(site.function)
            callee = self.values.get(site.node.func)
            if callee is None:
                if site.function in self._running:  # not interpreted so far: what it calls here is not known yet
                    _provisional(self._running[site.function])
                continue
            if function in self.may_call(callee):
                found.append(site)
            elif function.name == "__init__" and callee.facts.get("cls") is function.cls and \
                    callee.facts.get("type") == CLASS:
                found.append(site)
            elif function.name in ("forward", "__call__") and callee.facts.get("cls") is function.cls and \
                    callee.facts.get("type") in (MODEL, INSTANCE):
                found.append(site)
        return found

    def cut_in_helper(self, call: cst.Call) -> Optional[cst.CSTNode]:
        """Where the helper of another module that `call` runs cut its result from the graph (`cut_inside`), when
        that no_grad serves no other call of the helper in this file: each runs under this file's own no_grad (a
        reference's log-probs) or there is none. Then the helper's no_grad, not the choice of helper, is what cuts
        the gradient. None when another call here relies on it (runs with gradient enabled), or when the helper is
        declared no-grad whole (`@torch.no_grad()`): then the call chose the wrong helper."""
        inner = self.cut_inside.get(call)
        helper = self.called(self.value(call.func))
        if inner is None or helper is None or any(d in NO_GRAD_CONTEXTS for d in helper.decorators):
            return None
        others = [site for site in self.calls_here(helper) if site.node is not call]
        return inner if all(self.mode_at(site) is False for site in others) else None

    def _constructor_of_module_class(self, function: FunctionIR) -> bool:
        """`__init__` of a class defined at the top of this module that the module never hands over as a
        value: the project files that import it construct it."""
        cls = function.cls
        return function.name == "__init__" and cls is not None and function.parent is None and \
            self.ir.classes.get(cls.name) is cls and cls.node in self.ir.module.body and \
            not self.ir.mentions.get(cls.name)

    def _method_of_module_class(self, function: FunctionIR) -> bool:
        """A method (not `__init__`, not nested) of a class defined at the top of this module: the project files
        that import the module may call it on an instance."""
        cls = function.cls
        return cls is not None and function.parent is None and function.name != "__init__" and \
            not _is_static(function) and self.ir.classes.get(cls.name) is cls and cls.node in self.ir.module.body

    def _remote_callers(self, function: FunctionIR) -> Optional[List[CallSite]]:
        """The call sites of a module-level function (or the constructions of a module-level class, or the calls
        of one of its methods) in the project files that import this module, read as helpers are
        (`summaries.load`), a few files at most: what every caller in the project passes. A file that
        subclasses the class constructs it out of sight (through `super().__init__`): then no caller is known.
        For a method, None when a file calls a method of that name on a receiver it does not know (it may be an
        instance of the class): its callers are out of sight."""
        if not self._cross_module() or self.depth_of_callers >= 1:
            return []
        from rllint.index import importers_of

        cls = function.cls
        method = cls is not None and function.name != "__init__"
        name = function.name if cls is None or method else cls.name
        found: List[CallSite] = []
        for path in importers_of(self.file.path, self.file.settings, MAX_REMOTE_IMPORTERS, runs_only=True):
            digest, module = summaries.load(path, self.file.settings, for_callers=True)
            self.file.dependencies[path] = digest
            if module is None:
                continue
            other: Flow = module.fact(Flow)
            other.depth_of_callers = self.depth_of_callers + 1
            self.file.dependencies.update(module.dependencies)
            if cls is not None and any(base.rsplit(".", 1)[-1] == cls.name for c in other.ir.classes.values()
                                       for base in c.bases):
                return None if method else []
            for site in other.ir.calls_named.get(name, ()):
                other._analyze(site.function)
                other._read_run(site.function, site.node.func)
                callee = other.values.get(site.node.func) or UNKNOWN
                if method:
                    if any(target.qualname == function.qualname and
                           os.path.abspath(target.module.path) == os.path.abspath(self.file.path)
                           for target in other.may_call(callee)):
                        found.append(site)
                    elif not callee.facts.get("type") and isinstance(site.node.func, cst.Attribute):
                        return None
                    continue
                target = callee.facts.get("function") if cls is None else callee.facts.get("cls")
                if target is None and callee.facts.get("type") == REF:
                    target = other.imported(callee.facts.get("qual", ""), callee.facts.get("level", 0))
                target = target if isinstance(target, FunctionIR if cls is None else ClassIR) else None
                qualname = target.qualname if isinstance(target, FunctionIR) else getattr(target, "name", None)
                if target is not None and qualname == (function.qualname if cls is None else name) and \
                        os.path.abspath(target.module.path) == os.path.abspath(self.file.path):
                    found.append(site)
        return found

    def _candidate_sites(self, function: FunctionIR) -> List[CallSite]:
        if function.name in ("forward", "__call__") and function.cls is not None:
            return [site for fn in self.ir.all_functions() for site in fn.calls]  # `model(x)` calls `forward`
        if function.name == "__init__" and function.cls is not None:
            return list(self.ir.calls_named.get(function.cls.name, ()))
        return list(self.ir.calls_named.get(function.name, ()))

    def frozen(self, model: Value) -> Optional[bool]:
        """Whether a model's parameters are frozen in this file (`requires_grad_(False)`, a `requires_grad =
        False` loop over its parameters, TRL's `create_reference_model`); None when it is not a known model."""
        identity = model.facts.get("model")
        if identity is None:
            return None
        if model.facts.get("frozen") or any(self._holds(expr, function, identity)
                                            for expr, function in self._freeze_sites()):
            return True
        if model.facts.get("trains") or model.facts.get("outside"):  # its caller's file trains it, or it is from
            return False  # outside the project, which freezes it nowhere
        if isinstance(identity, tuple):  # from out of sight: frozen where it was built, unless it trains here
            return False if self.trained_place(identity) or identity[0] == "param" and \
                identity[1].endswith(tuple("." + m for m in _TRAINER_ENTRY_METHODS)) or \
                self.from_outside(identity) else None
        return False

    def from_outside(self, place_key: Tuple) -> bool:
        """Whether the object known by this place comes from outside the project: a parameter of a function no code of
        the project runs (`unreached`), or an attribute every method that stores it stores from one; and the file
        hands it to no code out of sight. Nothing in the project then builds it, freezes it or runs it under
        no_grad: a model there keeps what PyTorch gives every model, parameters that require grad."""
        if place_key[0] == "param":
            function = self.ir.functions.get(place_key[1])
            if function is None or not self.unreached(function):
                return False
        elif place_key[0] == "attr" and place_key[1] in self.ir.classes:
            cls = self.ir.classes[place_key[1]]
            stored = [(method, target) for method, targets in self._stores_of(cls).get(place_key[2], ())
                      for target in targets]
            for method, target in stored:
                self._analyze(method)
                held = (self.values.get(target) or UNKNOWN).facts.get("place")
                if not (isinstance(held, tuple) and held[0] == "param" and held[1] == method.qualname and
                        self.unreached(method)):
                    return False
            if not stored:
                return False
        else:
            return False
        return not self._handed_out(place_key)

    def _handed_out(self, place_key: Tuple) -> bool:
        """Whether a call of the file hands the object at this place (under any name that holds it) to a callee
        that is not a function of this module (nor a call known to leave a model's parameters alone): what it does
        to it there is out of sight."""
        for function in self.ir.all_functions():
            for site in function.calls:
                if not any(not arg.star and self._holds(arg.value, function, place_key) for arg in site.node.args):
                    continue
                func = site.node.func
                tail = _tail(func)
                if tail in _LEAVES_MODELS or tail in OPTIMIZERS:
                    continue
                if isinstance(func, cst.Name) and func.value in self.ir.functions:
                    continue
                helper = self._imported_function(func)
                if helper is not None and not helper.module.flow.changes_models():
                    continue  # another module's helper that freezes and trains nothing: it runs what it is given
                if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                        func.value.value == "self" and function.cls is not None and self.method_of(function.cls, tail):
                    continue
                return True
        return False

    def used_as_model(self, call: cst.Call, function: FunctionIR) -> bool:
        """A call written as a transformers model's forward (`_used_as_model`); or one given as its first argument (or
        `input_ids=`) what such a call of the same function is given there (token ids, proven by that use) whose
        output the function fits with a regression (`mse_loss(values, returns)`, `(values - returns) ** 2`): a value
        model, whose parameters that loss trains. Token ids alone do not make a model: a reward function takes them."""
        if _used_as_model(call, self.ir):
            return True
        if function not in self._token_places:
            tokens = {place(arg.value) for site in function.calls if _direct(site.node) and
                      _used_as_model(site.node, self.ir) for arg in [_token_argument(site.node)] if arg is not None}
            self._token_places[function] = (tokens - {None}, _fitted_calls(function))
        tokens, fitted = self._token_places[function]
        given = _token_argument(call)
        return call in fitted and given is not None and place(given.value) in tokens

    def _imported_function(self, func: cst.CSTNode) -> Optional[FunctionIR]:
        """The function of another project module that a called name was imported as."""
        if not isinstance(func, cst.Name):
            return None
        if func.value in self.ir.relative_imports:
            level, module, imported = self.ir.relative_imports[func.value]
            target = self.imported(f"{module}.{imported}" if module else imported, level)
        elif func.value in self.ir.imports:
            target = self.imported(self.ir.imports[func.value], 0)
        else:
            return None
        return target if isinstance(target, FunctionIR) else None

    def unreached(self, function: FunctionIR) -> bool:
        """Whether no code of the project runs `function`: a function or method of this module (a constructor: of
        its class) that nothing here calls, names or hands on, that no decorator hands to a library, in a module no
        other file of the project imports. What its parameters hold is built outside the project (or nowhere)."""
        if self.depth_of_callers or not self._cross_module() or \
                not any(qual == "torch" or qual.startswith("torch.") for qual in self.ir.imports.values()):
            return False  # PyTorch's defaults: MLX and JAX take gradients of named parameters only
        if function not in self._unreached:
            self._unreached[function] = self._unreached_here(function) and not self._imported_here()
        return self._unreached[function]

    def _unreached_here(self, function: FunctionIR) -> bool:
        if function.is_module or function.parent is not None or \
                any(d not in ("staticmethod", "classmethod") for d in function.decorators):
            return False
        cls = function.cls
        if cls is None:
            return not self.ir.calls_named.get(function.name) and not self.ir.escapes(function)
        if function.name.startswith("__") and function.name != "__init__" or function.name == "forward":
            return False  # run by Python or by `nn.Module.__call__`
        if cls.bases or cls.node not in self.ir.module.body or self.ir.mentions.get(cls.name) or \
                self.ir.calls_named.get(cls.name) or any(cls.name in (b.rsplit(".", 1)[-1] for b in other.bases)
                                                         for other in self.ir.classes.values()):
            return False  # a base (a framework's) may call it; the class is built or subclassed here
        return function.name == "__init__" or not self.ir.calls_named.get(function.name) and \
            not self.ir.mentions.get(function.name)

    def _imported_here(self) -> bool:
        """Whether another file of the project imports this module (a snippet that is no file has none)."""
        if self._imported_by_project is None:
            from rllint.index import importers_of

            self._imported_by_project = os.path.isfile(self.file.path) and \
                bool(importers_of(self.file.path, self.file.settings, 1))
        return self._imported_by_project

    def trained(self, model: Value) -> bool:
        """Whether the parameters of a model reach an optimizer (or `accelerator.prepare`) in this file."""
        identity = model.facts.get("model")
        return identity is not None and any(self._holds(expr, function, identity)
                                            for expr, function in self.optimizer_sites())

    def trained_place(self, place_key: Tuple) -> bool:
        """Whether an object from out of sight, known by its place (a parameter, an attribute of a class), has
        its parameters handed to an optimizer of this file: it is a model, and it trains."""
        if self._trained_places is None:
            self._trained_places = {key for expr, function in self.optimizer_sites()
                                    for key in [place_key_of(expr, function)] if key is not None}
        return place_key in self._trained_places

    def runs_trained(self, event: Event, trained: Set[Any]) -> bool:
        """Whether the call an event happens through (`event.via`) runs a method of a trained model (`trained`,
        as `trained_models` gives): `latent.encode(ids)`, or `self.encode(ids)` in a method whose every caller
        runs it on a trained instance. What happens there is that model's own pass."""
        receiver = self.value(event.via.func).facts.get("bound") if event.via is not None else None
        if receiver is None:
            return False
        if receiver.facts.get("model") is None and receiver.facts.get("cls") is not None:  # `self` in its own run
            sites = self.callers(self.ir.function_at(event.via_statement))
            return bool(sites) and all(_instance_called(site) in trained for site in sites)
        return receiver.facts.get("model") in trained

    def trained_models(self) -> Set[Any]:
        """The identities of the models whose parameters an optimizer of this file receives, or whose gradients it
        reads (a building node, or the place of a model from out of sight): the gradient is meant to reach them."""
        found = set()
        for expr, function in self.optimizer_sites() + self._gradient_reads():
            self._analyze(function)
            held = self.values.get(expr) or UNKNOWN
            identity = held.facts.get("model") or place_key_of(expr, function)
            if identity is not None:
                found.add(identity)
            found |= self._submodels(held)
            while isinstance(expr, cst.Attribute):  # `latent.proj.parameters()`: the parameters of a part of
                expr = expr.value  # `latent` are `latent`'s: it trains, and its forward keeps that part's graph
                holder = self.values.get(expr) or UNKNOWN
                if holder.facts.get("type") == MODEL and holder.facts.get("model") is not None:
                    found.add(holder.facts["model"])
        for function in self.ir.all_functions():  # the model a trainer framework hands its loss is the one it trains
            if function.param("model") is not None and self.framework_entry(function):
                self._analyze(function)
                found.add(("param", function.qualname, "model"))
        return found

    def _submodels(self, model: Value) -> Set[Any]:
        """The models an instance of a module class of the project holds in its attributes: `parameters()` of
        the instance are theirs too, so whatever trains it trains them."""
        cls = model.facts.get("cls")
        if not isinstance(cls, ClassIR) or cls.module is not self.ir:
            return set()
        found = set()
        for name in self._stores_of(cls):
            held = self.class_attribute(cls, name) or UNKNOWN
            if held.facts.get("type") == MODEL and held.facts.get("model") is not None:
                found.add(held.facts["model"])
        return found

    def escaped(self, model: Value) -> bool:
        """Whether a model object is handed to code this file does not show: a call of another module's
        function, or of a library that is not known to leave its parameters alone. What happens to it there
        (trained, frozen) is out of sight."""
        identity = model.facts.get("model")
        if identity is None:
            return True
        self.analyze_all()
        for function in self.ir.all_functions():
            for site in function.calls:
                holds = [arg for arg in site.node.args
                         if (self.values.get(arg.value) or UNKNOWN).facts.get("model") == identity]
                if not holds:
                    continue
                callee = self.values.get(site.node.func) or UNKNOWN
                target = callee.facts.get("function")
                if target is None and callee.facts.get("type") == REF:
                    imported = self.imported(callee.facts["qual"], callee.facts.get("level", 0))
                    target = imported if isinstance(imported, FunctionIR) else None
                if target is None and callee.facts.get("type") == CLASS and \
                        getattr(callee.facts.get("cls"), "module", None) is self.ir:
                    init = self.method_of(callee.facts["cls"], "__init__")
                    named = {p.name for p in init.params if not p.star} if init is not None else set()
                    bound = init.bind(site.node, method=True) if init is not None else {}
                    if all(any(bound.get(name) is arg.value for name in named) for arg in holds):
                        continue  # a parameter of the class's own `__init__`: its calls are among these sites
                if target is not None and (target.module is self.ir or not target.module.flow.changes_models()):
                    continue  # interpreted: its own calls are among these sites, or it freezes and trains nothing
                if callee.facts.get("type") == REF and callee.facts.get("qual", "").rsplit(".", 1)[-1] in _LEAVES_MODELS:
                    continue
                if isinstance(site.node.func, cst.Name) and site.node.func.value in _LEAVES_MODELS:
                    continue
                return True
        return False

    def lays_out(self, node: cst.CSTNode) -> Optional[Tuple[str, str]]:
        """How the expression `node` lays out the repeated rows of a batch of prompts ("contiguous": each prompt's
        copies in a row, `repeat_interleave(ids, G)`, `[p for p in ps for _ in range(G)]`; "tiled": the whole batch
        again and again, `ids.repeat(G, 1)`, `[p for _ in range(G) for p in ps]`) and the code of the count it
        repeats by; None when it repeats nothing. The node is a source of what it makes (`layout`)."""
        if node not in self._layouts:
            self._layouts[node] = None
            if _tail(node.func) in _REPEATS if isinstance(node, cst.Call) else \
                    node.for_in.inner_for_in is not None and node.for_in.inner_for_in.inner_for_in is None:
                try:
                    written = ast.parse(self.file.module.code_for_node(node).strip(), mode="eval").body
                except SyntaxError:
                    written = None
                found = layout_of(written, any_receiver=True) if written is not None else None
                if found is not None and found[1] is not None:
                    self._layouts[node] = (found[0], ast.unparse(found[1]))
        return self._layouts[node]

    def layout(self, held: Value) -> Optional[Tuple[str, str, List[cst.CSTNode]]]:
        """The one layout of the rows `held` is made of (its sources made by `lays_out`), the count and where
        they are made; None when no layout, or several, made it."""
        found = [(self._layouts[node], node) for node in held.sources if self._layouts.get(node) is not None]
        if len({made for made, _ in found}) != 1:
            return None
        (layout, count), _ = found[0]
        return layout, count, [node for _, node in found]

    def changes_models(self) -> bool:
        """Whether this module freezes or trains any model (another module's helper that does neither only runs
        the models it is given)."""
        return bool(self._freeze_sites() or self.optimizer_sites())

    def _holds(self, expr: cst.CSTNode, function: FunctionIR, identity: Any) -> bool:
        if isinstance(identity, tuple) and place_key_of(expr, function) == identity:
            return True  # a place: matched by how the expression names it, or by the object its name holds
        self._analyze(function)
        held = self.values.get(expr)
        return held is not None and identity in (held.facts.get("model"), held.facts.get("place"))

    def class_attribute(self, cls: ClassIR, name: str) -> Optional[Value]:
        """`self.name` of an instance of `cls`: what the methods assign it (joined), else the class attribute; a list
        whose elements they write (`self.buffer[i] = batch`) holds those too."""
        key = (cls.name, name)
        if key in self._attributes:
            if key in self._finding:
                _provisional(self._finding[key])
            return self._attributes[key]
        level, outer = _open()
        self._finding[key] = level
        self._attributes[key] = None  # while it is being found: unknown, and a provisional answer (`_open`)
        found: List[Value] = []
        unfinished = False  # a method that stores it is being interpreted (this question comes from inside it)
        try:
            for method, targets in self._stores_of(cls).get(name, ()):
                self._analyze(method)
                if method in self._running:  # its stores so far only
                    unfinished = True
                    _provisional(self._running[method])
                found.extend(self.values[t] for t in targets if t in self.values)
            written: List[Value] = []  # what the methods write into it (`self.buffer[i % n] = batch`)
            for method, values in self._item_stores.get(cls, {}).get(name, ()):
                self._analyze(method)
                if method in self._running:
                    unfinished = True
                    _provisional(self._running[method])
                written.extend(self.values[v] for v in values if v in self.values)
        except BaseException:
            _abandon(level, outer)
            raise
        finally:
            del self._finding[key]
        if not found:
            declared = next((owner for owner in self._class_chain(cls) if name in owner.attributes), None)
            if declared is not None:  # a class attribute or dataclass field, maybe inherited from a base
                default = declared.attributes[name]
                held = self.values.get(default) or self.evaluate(default)
                if held.facts.get("type") == NUMBER and held.facts.get("origin") in (None, "literal"):
                    held = held.but(origin=f"default of {declared.name}.{name}", why={"origin": (default,)})
                found.append(held)
        result = join_all(found)
        if result.facts.get("type") == LIST and written:  # any element is what it was made with, or one of those
            element = join_all([result.facts["element"], *written]) if "element" in result.facts else \
                join_all([x for _, x in result.facts.get("items") or ()] + written)
            result = result.but(items=None, element=element)
        if not result.facts.get("type"):  # an object from out of sight: this attribute is its identity
            result = result.but(place=("attr", cls.name, name))
        if unfinished or _tainted(level):
            del self._attributes[key]  # not all its stores are known yet: asked again once they are
        else:
            self._attributes[key] = result
        _close(level, outer)
        return result

    def assigned_attributes(self) -> FrozenSet[str]:
        """The names of the attributes any statement of this module assigns, on any object (`x.name = v`,
        `setattr(x, "name", v)`)."""
        if self._assigned_attributes is None:
            names: Set[str] = set()
            for node in walk(self.ir.module, into_functions=True):
                targets: List[cst.CSTNode] = []
                if isinstance(node, cst.Assign):
                    targets = [t.target for t in node.targets]
                elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                    targets = [node.target]
                elif isinstance(node, cst.Call) and _tail(node.func) == "setattr" and len(node.args) > 1:
                    name = literal(node.args[1].value)
                    names.add(name if isinstance(name, str) else "*")
                for target in targets:
                    for part in walk(target):
                        if isinstance(part, cst.Attribute):
                            names.add(part.attr.value)
            self._assigned_attributes = frozenset(names)
        return self._assigned_attributes

    def stored_elsewhere(self, cls: ClassIR, name: str) -> bool:
        """Whether a method of `cls` (or of a base) other than `__init__` assigns `self.name`."""
        return any(method.name != "__init__" for method, _ in self._stores_of(cls).get(name, ()))

    def _stores_of(self, cls: ClassIR) -> Dict[str, List[Tuple[FunctionIR, List[cst.Attribute]]]]:
        """Each attribute the methods of `cls` and its bases assign on `self`: the methods that do, in order, each
        with its targets. Read once per class: `class_attribute` is asked for every attribute of every class."""
        if cls not in self._self_stores:
            stores: Dict[str, Dict[FunctionIR, List[cst.Attribute]]] = {}
            items: Dict[str, Dict[FunctionIR, List[cst.BaseExpression]]] = {}
            for method in self._methods(cls):
                for stmt in method.statements:
                    for target in _self_stores(stmt):
                        stores.setdefault(target.attr.value, {}).setdefault(method, []).append(target)
                    for name in _self_item_stores(stmt):
                        items.setdefault(name, {}).setdefault(method, []).append(stmt.value)
            self._self_stores[cls] = {name: list(by_method.items()) for name, by_method in stores.items()}
            self._item_stores[cls] = {name: list(by_method.items()) for name, by_method in items.items()}
        return self._self_stores[cls]

    def called(self, callee: Value) -> Optional[FunctionIR]:
        """The project function a callee names: one of this file, or one imported from a project module."""
        found = callee.facts.get("function")
        if found is None and callee.facts.get("type") == REF:
            found = self.imported(callee.facts.get("qual", ""), callee.facts.get("level", 0))
        return found if isinstance(found, FunctionIR) else None

    def may_call(self, callee: Value) -> List[FunctionIR]:
        """The project functions a call of `callee` may run: the one it names, or each of its candidates."""
        options = callee.facts.get("candidates") if callee.facts.get("type") == FUNCTION else None
        found = [self.called(option) for option in options] if options else [self.called(callee)]
        return [function for function in found if function is not None]

    def imported(self, qual: str, level: int) -> Optional[object]:
        """The function or class of another project module that an imported name stands for (None: a
        library's, unreadable, or `cross-module-values` is off)."""
        key = (qual, level)
        if key not in self._imported:
            self._imported[key] = None
            if self._cross_module():
                found = resolve_import(self.file.path, level, qual, self.file.settings, self.file.dependencies)
                self._imported[key] = found[1] if found is not None and found[0] is not None else None
        return self._imported[key]

    def _cross_module(self) -> bool:
        settings = getattr(self.file, "settings", None)
        return bool(self.file.path) and (settings is None or settings.option(CROSS_MODULE_VALUES))

    def method_of(self, cls: ClassIR, name: str) -> Optional[FunctionIR]:
        """A method of `cls` or of its bases in this file."""
        for owner in self._class_chain(cls):
            if name in owner.methods:
                return owner.methods[name]
        return None

    def is_module_class(self, cls: ClassIR) -> bool:
        """A subclass of `torch.nn.Module` or of a transformers / TRL / PEFT model class."""
        return self.is_pretrained_class(cls) or any(base in NN_MODULE_BASES or base.endswith(".nn.Module")
                                                    for base in self._bases(cls))

    def is_pretrained_class(self, cls: ClassIR) -> bool:
        """A subclass of a transformers / TRL / PEFT model class (which gives it `generate` and `from_pretrained`)."""
        return any(base.startswith(("transformers.", "trl.", "peft.")) and "Model" in base for base in self._bases(cls))

    def holds_parameters(self, cls: ClassIR) -> Optional[bool]:
        """Whether an instance of the module class `cls` holds parameters of its own. False when every base is
        `nn.Module` or a class of this module, no method registers a parameter or module, and every value its
        methods store on `self` is known to be neither a module, a parameter nor an object from out of sight (a
        loss written as a module, built from numbers); None when unknown (a value from a parameter or a local)."""
        if cls.name not in self._holding:
            self._holding[cls.name] = None  # while it is being found (a class that builds itself): unknown
            self._holding[cls.name] = self._holds_parameters(cls)
        return self._holding[cls.name]

    def _holds_parameters(self, cls: ClassIR) -> Optional[bool]:
        chain = list(self._class_chain(cls))
        names = {owner.name for owner in chain}
        if any(base.rsplit(".", 1)[-1] not in names and base not in NN_MODULE_BASES and not base.endswith(".nn.Module")
               for owner in chain for base in owner.bases):
            return None  # a base out of sight may build layers
        stored: List[Value] = []
        for method in self._methods(cls):
            for site in method.calls:
                func = site.node.func
                if isinstance(func, cst.Name) and func.value == "setattr" or isinstance(func, cst.Attribute) and \
                        func.attr.value in _REGISTERS and isinstance(func.value, cst.Name) and func.value.value == "self":
                    return None
            # each stored value as written, its method's locals and parameters unknown: no function is analysed here
            stored.extend(self.evaluate(stmt.value) for stmt in method.statements if any(_self_stores(stmt)))
        if any(v.facts.get("type") == MODEL for v in stored):
            return True
        return False if all(v.facts.get("type") in _PLAIN for v in stored) else None

    # ---- analysis ----

    def _locate(self) -> Dict[cst.CSTNode, FunctionIR]:
        if self._located is None:
            self._located = {node: function for function in self.ir.all_functions()
                             for stmt in function.statements for node in statement_nodes(stmt)}
        return self._located

    def _analyze(self, function: FunctionIR) -> None:
        if function in self._state:
            return
        self._forgotten.discard(function)
        self._state[function] = "running"
        nesting = getattr(_ANALYSES, "nesting", 0)
        callers_in_reach = nesting < MAX_NESTED_ANALYSES
        _ANALYSES.nesting = nesting + 1
        level, outer = _open()
        self._running[function] = level
        try:
            params = {} if function.is_module else self._entry_params(function, callers_in_reach)
            mode = self.entry_mode(function) if callers_in_reach or function in self._modes else None
            frame = Frame(self, function, params, mode, depth=0, record=True, outer=self._closure(function))
            if function.is_module:
                frame.env = self.globals
            frame.run()
        except BaseException:
            _abandon(level, outer)
            raise
        finally:
            _ANALYSES.nesting = nesting
            del self._running[function]
        self.returned[function] = frame.returned()
        if function.nested:
            self._closures[function] = frame.env
        self._state[function] = "done"
        taint = _close(level, outer)
        if taint < _SETTLED:  # it read an attribute still being found: run again once that is known
            _postpone(taint, self, function)

    def forget(self, function: FunctionIR) -> None:
        """Mark `function` to be interpreted in its own context again (its first run read provisional answers):
        the next question about its values runs it first."""
        if self._state.pop(function, None) is not None:
            self._forgotten.add(function)
        self._provisional_runs.pop(function, None)
        if function.is_module:
            self.globals.clear()

    def _read_run(self, function: FunctionIR, node: cst.CSTNode) -> None:
        """Before another function reads the value `function`'s own run gave `node`: a run to be done again is
        done now; a run still under way that has not got to the node, or one that read provisional answers, gives
        a provisional answer (the reader is run again once it is known)."""
        if function in self._forgotten:
            self._analyze(function)
        if function in self._running:
            level = self._running[function]
            if node not in self.values:
                _provisional(level)
            elif _taint_so_far(level) < level:  # what it gave so far rests on a provisional answer
                _provisional(_taint_so_far(level))
        elif function in self._provisional_runs:
            _provisional(self._provisional_runs[function])

    def _closure(self, function: FunctionIR) -> Optional[Dict[str, Value]]:
        """The names of the function a nested function is defined in, as that function's own run leaves them:
        what the nested one reads of them when it runs in its own context (None: not nested, or its
        enclosing function is still being interpreted)."""
        parent = function.parent
        if parent is None or parent.module is not self.ir:
            return None
        self._analyze(parent)
        return self._closures.get(parent)

    def _names(self, function: FunctionIR) -> FrozenSet[str]:
        """The names a function's body reads or writes."""
        if function not in self._mentioned:
            self._mentioned[function] = frozenset(
                n.value for n in _walk(function.node) if isinstance(n, cst.Name))
        return self._mentioned[function]

    def _entry_params(self, function: FunctionIR, callers_in_reach: bool = True) -> Dict[str, Value]:
        """What every caller passes each parameter (joined); the default where no caller passes one. Callers out
        of reach (see MAX_NESTED_ANALYSES) pass unknown values, as those of a function that escapes."""
        params: Dict[str, Value] = {}
        sites = self.callers(function) if callers_in_reach else []
        escapes = self.ir.escapes(function) or function in self._unseen_callers or not callers_in_reach
        method = function.cls is not None and not _is_static(function)
        for param in function.params:
            if param.star:
                continue
            if method and param.index == 0:
                params[param.name] = value(type=INSTANCE, cls=function.cls)
                continue
            given = self._framework_argument(function, param) if not sites else None
            if given is not None:
                params[param.name] = given
                continue
            if not sites:
                if param.name == "model" and self.framework_entry(function):
                    found = self._trainer_model(function.cls)
                    place_key = ("param", function.qualname, param.name)
                    if found.facts.get("type") == TEXT and self._loads_causal_lm(function.cls):
                        found = value(type=MODEL, model=place_key, arch=CAUSAL_LM, pretrained=True)
                    elif not found.facts.get("type"):  # the trainer's policy, built out of sight
                        found = found.but(type=MODEL, model=place_key)
                else:  # verl passes a registered policy loss every parameter (`config` too): not their defaults
                    passed = escapes or _VERL_POLICY_LOSS in function.decorators
                    found = self.default(param, function) if not passed else UNKNOWN
                params[param.name] = found if found.facts.get("type") else found.but(
                    place=("param", function.qualname, param.name))
                continue
            seen: List[Value] = []
            for site in sites:
                bound = function.bind(site.node, method=method)
                caller: Flow = site.function.module.flow
                if param.name in bound:
                    caller._read_run(site.function, bound[param.name])
                    seen.append(caller.values.get(bound[param.name], UNKNOWN))
                elif any(a.star for a in site.node.args):
                    seen.append(UNKNOWN)
                else:
                    seen.append(self.default(param, function))
            joined = join_all(seen)
            key = ("param", function.qualname, param.name)
            if not joined.facts.get("type") and not joined.facts.get("place"):
                joined = joined.but(place=key)  # what the callers pass is unknown: known by its place
            elif joined.facts.get("type") == MODEL and joined.facts.get("model") is None:
                joined = joined.but(model=key)  # models of different callers: this parameter's one
            params[param.name] = joined
        return params

    def _framework_argument(self, function: FunctionIR, param: Param) -> Optional[Value]:
        """What a framework passes a function it calls, by its documented contract: the batch a transformers / TRL
        trainer hands one process (`per_rank`), and the log-probs in it (`_framework_logps`)."""
        given = self._framework_logps(function, param)
        batch = per_rank_parameter(self, function, param)
        if batch is not None:
            given = (given or value(place=("param", function.qualname, param.name))).but(
                per_rank=batch, why={"per_rank": (param.node or function.node,)})
        return given

    def _framework_logps(self, function: FunctionIR, param: Param) -> Optional[Value]:
        """The batch a TRL GRPO trainer hands its `compute_loss` (its rollout log-probs under their documented keys,
        computed without gradient), and the log-probs verl hands a registered policy loss (`log_prob`, the policy's,
        with gradient; `old_log_prob`, the rollout policy's, without)."""
        node = param.node or function.node
        declared = param.default
        if isinstance(declared, cst.Call) and self.ir.qualified(declared.func) in CLI_OPTIONS:
            return cli_option(self, declared)  # a typer command's option: the command line's value
        if _VERL_POLICY_LOSS in function.decorators:
            if param.name == "response_mask":
                return _token_mask(node)
            return _token_logps(node, _VERL_LOSS_LOGPS[param.name]) if param.name in _VERL_LOSS_LOGPS else None
        if self.framework_entry(function) and function.name == "compute_loss" and param.index == 2 and \
                any(base.startswith("trl.") and base.endswith("GRPOTrainer") for base in self._bases(function.cls)):
            items = tuple((key, _token_logps(node, GRAPH_NONE)) for key in _TRL_GRPO_INPUT_LOGPS)
            inputs = Value({"type": DICT, "items": items + (("completion_mask", _token_mask(node)),)})
            size = self._per_device_batch(function.cls)
            return inputs if size is None else inputs.but(samples=minibatches.Part(size, function.node))
        return None

    def _per_device_batch(self, cls: ClassIR) -> Optional[Value]:
        """How many completions a TRL trainer class hands each call of its `compute_loss`: the
        `per_device_train_batch_size` of the config every construction of the class here is given (`args=`), when
        they all agree; None when it is not known."""
        from rllint.analysis.domains.config import setting

        sizes: List[Value] = []
        for site in self.ir.calls_named.get(cls.name, ()):
            self._analyze(site.function)
            callee = self.values.get(site.node.func)
            given = next((a.value for a in site.node.args if a.keyword is not None and a.keyword.value == "args"),
                         None)
            if callee is None or callee.facts.get("cls") is not cls or given is None:
                return None
            sizes.append(setting(self, self.values.get(given, UNKNOWN), "per_device_train_batch_size"))
        numbers = {size.facts.get("number") for size in sizes}
        if len(numbers) != 1 or None in numbers:
            return None
        return sizes[0].but(origin=f"per_device_train_batch_size, {sizes[0].facts.get('origin') or 'literal'}")

    def default(self, param: Param, function: FunctionIR) -> Value:
        """A parameter nobody is seen passing holds its default, with where it is written."""
        if param.default is None:
            return UNKNOWN
        found = self.evaluate(param.default)
        if found.facts.get("type") == NUMBER:
            return found.but(origin=f"default of parameter `{param.name}` of {function.name}()",
                             why={"origin": (param.default,)})
        return found

    def evaluate(self, expr: cst.CSTNode) -> Value:
        """An expression evaluated once at import time (a default, a class attribute): in the module's globals."""
        frame = Frame(self, self.ir.top, {}, True, depth=MAX_DEPTH, record=False)
        frame.env = dict(self.globals)
        return frame.expr(expr)

    def summary(self, function: FunctionIR, args: Dict[str, Value], mode: Optional[bool], depth: int,
                keep: bool = True, outer: Optional[Dict[str, Value]] = None
                ) -> Tuple[Value, List[Tuple[str, "Event"]], Dict[str, Value]]:
        """What `function` returns when called with `args` in gradient mode `mode` (a nested function: with
        the names of its enclosing function's run, `outer`), the events of that run (the caller records them as
        happening through its call), and what a method stored on its instance (`self.config = config`:
        attribute -> value). A run asked by a module read to find callers (`keep` False) is not remembered: it
        may run while an attribute it reads is still being found."""
        if depth >= MAX_DEPTH or self._summary_count >= MAX_SUMMARIES:
            return UNKNOWN, [], {}
        free = () if outer is None else tuple(sorted(
            (name, signature(outer[name])) for name in self._names(function) if name in outer))
        key = (id(function), mode, tuple(sorted((k, signature(v)) for k, v in args.items())), free)
        cached = self._summaries.get(key)
        if cached is not None and cached is not _IN_PROGRESS:
            return cached
        # Met again while it is being interpreted: a recursive call (which `depth` bounds), or the analysis of
        # a caller that this interpretation started (a function's callers, who trains a model). Interpreted
        # again rather than answered "unknown", which would stay in that caller's facts for good.
        self._summaries[key] = _IN_PROGRESS
        self._summary_count += 1
        params = {p.name: args.get(p.name) or self.default(p, function) for p in function.params if not p.star}
        frame = Frame(self, function, params, mode, depth=depth + 1, record=False, outer=outer)
        level, outer_taint = _open()
        try:
            frame.run()
        except BaseException:
            _abandon(level, outer_taint)
            raise
        if _tainted(level):  # it read an attribute still being found: not an answer to remember
            keep = False
        _close(level, outer_taint)
        stores: Dict[str, Value] = {}
        if function.cls is not None and function.params and function.params[0].index == 0 and not _is_static(function):
            prefix = function.params[0].name + "."
            stores = {key[len(prefix):]: held for key, held in frame.env.items()
                      if key.startswith(prefix) and key[len(prefix):].isidentifier()}
        result = (frame.returned(), frame.collected, stores)
        if not keep:
            self._summaries.pop(key, None)
        elif cached is None:  # the outermost interpretation keeps its answer
            self._summaries[key] = result
        return result

    # ---- what the file does to model objects anywhere ----

    def _freeze_sites(self) -> List[Tuple[cst.CSTNode, FunctionIR]]:
        if self._freezes is None:
            self._freezes = []
            for function in self.ir.all_functions():
                for site in function.calls:
                    call = site.node
                    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "requires_grad_" and \
                            call.args and _is_false(call.args[0].value):
                        self._freezes.append((call.func.value, function))
                for stmt in function.statements:
                    if isinstance(stmt, cst.For) and _loop_freezes(stmt):
                        receiver = _parameters_receiver(stmt.iter)
                        if receiver is not None:
                            self._freezes.append((receiver, function))
        return self._freezes

    def _gradient_reads(self) -> List[Tuple[cst.CSTNode, FunctionIR]]:
        """The expressions whose parameters' gradients the file reads: `clip_grad_norm_(m.parameters())`, or a
        loop over `m.parameters()` / `m.named_parameters()` that reads `.grad` of what it iterates."""
        found = []
        for function in self.ir.all_functions():
            for site in function.calls:
                if _tail(site.node.func) in ("clip_grad_norm_", "clip_grad_value_"):
                    found.extend((receiver, function) for node in _walk(site.node)
                                 for receiver in [_parameters_receiver(node)] if receiver is not None)
            for stmt in function.statements:
                receiver = _parameters_receiver(stmt.iter) if isinstance(stmt, cst.For) else None
                if receiver is not None and _loop_reads_grad(stmt):
                    found.append((receiver, function))
        return found

    def optimizer_sites(self) -> List[Tuple[cst.CSTNode, FunctionIR]]:
        """The expressions whose parameters an optimizer (or `accelerator.prepare`, `deepspeed.initialize`)
        receives, with the function they are written in."""
        if self._optimized is None:
            self._optimized = []
            for function in self.ir.all_functions():
                for site in function.calls:
                    tail = _tail(site.node.func)
                    if self._builds_trainer(site.node):
                        given = _model_argument(site.node)
                        if given is not None:
                            self._optimized.append((given, function))  # a trainer trains the model it is given
                        continue
                    if tail not in OPTIMIZERS and tail not in ("prepare", "initialize"):
                        continue
                    for node in _walk(site.node):
                        receiver = _parameters_receiver(node)
                        if receiver is not None:
                            self._optimized.append((receiver, function))
                        elif tail in ("prepare", "initialize") and node is not site.node and \
                                isinstance(node, (cst.Name, cst.Attribute)):
                            self._optimized.append((node, function))
        return self._optimized

    def _builds_trainer(self, call: cst.Call) -> bool:
        """`GRPOTrainer(...)`, `Trainer(...)`, or a project subclass of a transformers / TRL trainer: it trains the
        `model` it is given."""
        qual = self.ir.qualified(call.func) or ""
        if qual.startswith(_TRAINER_PACKAGES):
            return qual.endswith("Trainer")
        cls = self.ir.classes.get(qual)
        return cls is not None and any(base.startswith(_TRAINER_PACKAGES) for base in self._bases(cls))

    def _bases(self, cls: ClassIR) -> List[str]:
        return [base for owner in self._class_chain(cls) for base in owner.bases]

    def _class_chain(self, cls: ClassIR) -> Iterator[ClassIR]:
        seen: Set[str] = set()
        queue = [cls]
        while queue:
            current = queue.pop(0)
            if current.name in seen:
                continue
            seen.add(current.name)
            yield current
            queue.extend(self.ir.classes[b.rsplit(".", 1)[-1]] for b in current.bases
                         if b.rsplit(".", 1)[-1] in self.ir.classes)

    def _methods(self, cls: ClassIR) -> List[FunctionIR]:
        return [m for owner in self._class_chain(cls) for m in owner.methods.values()]


# ---------------------------------------------------------------- the interpreter of one function

class Frame:
    """The interpretation of one function body, in one context. Domains call back into it."""

    def __init__(self, flow: Flow, function: FunctionIR, params: Dict[str, Value], mode: Optional[bool],
                 depth: int, record: bool, outer: Optional[Dict[str, Value]] = None) -> None:
        self.flow = flow
        self.ir = flow.ir
        self.function = function
        self.env: Dict[str, Value] = dict(params)
        self.outer = outer or {}  # the names of the enclosing function's run (a nested function's closure)
        self.entry = mode
        self.mode = mode  # the gradient mode of the current statement
        self.depth = depth
        self.recording = record
        self.collected: List[Tuple[str, Event]] = []  # a summary's events, for its caller to record
        self.returns: List[Value] = []
        # calls given a `**mapping` whose keys are not all known -> those mappings (the keys they are known to hold)
        self.open_mappings: Dict[cst.Call, List[Value]] = {}
        self.statement: cst.CSTNode = function.node
        self.ended = False  # the current path has returned or raised: what follows in its block does not run
        self.stored_on: Set[str] = set()  # names whose attributes this run assigned (`cfg.lr = ...`)

    def returned(self) -> Value:
        if not self.returns:
            return UNKNOWN if self.function.yields else value(type=NONE)
        return join_all(self.returns)

    # ---- hooks for domains ----

    def attributes_read(self, held: Value, at: cst.CSTNode) -> Set[str]:
        """The attributes this function reads (not assigns) from `at` or any other place that holds `held` here
        (`args.x`, `self.args.y` of the same config)."""
        places = {name for name, found in self.env.items() if found is held} | {place(at)}
        places.discard(None)
        stored = {id(t.target) for t in walk(self.function.node) if isinstance(t, cst.AssignTarget)}
        return {n.attr.value for n in walk(self.function.node) if isinstance(n, cst.Attribute)
                and id(n) not in stored and place(n.value) in places}

    def store(self, name: str, result: Value) -> None:
        """The place `name` (`self.args`) holds `result` from here on: assigned here, or by a library call
        that a domain knows stores it."""
        self.env[name] = result
        self.stored_on.add(name.split(".", 1)[0])

    def store_at(self, target: cst.CSTNode, held: Value) -> None:
        """The place the expression `target` names (`parts`, `self.buf`) holds `held` from here on: a library call
        wrote into the object it was given (`dist.all_gather(parts, x)`)."""
        name = place(target)
        if name is not None:
            self.store(name, held)

    def emit(self, kind: str, node: cst.CSTNode, target: Value, detail: str = "", **extra: Any) -> None:
        """An event of this run: recorded now in a function's own context, else handed to the caller."""
        event = Event(node, self.statement, self.function, target, detail, self.mode, extra)
        if self.recording:
            self.flow.record(kind, event)
        else:
            self.collected.append((kind, event))

    def inplace(self, node: cst.CSTNode, target: Value, op: str) -> None:
        self.emit("inplace", node, target, op)

    def saved(self, operand: Value, op: str) -> None:
        if operand.facts.get("obj") is not None:
            self.emit("saved", operand.facts["obj"], operand, op)

    def forward(self, node: cst.Call, model: Value, args: List[Value], kwargs: Dict[str, Value],
                result: Value) -> None:
        self.emit("forward", node, model, "forward", args=args, kwargs=kwargs)

    def run_method(self, receiver: Value, name: str, node: cst.Call, args: List[Value], kwargs: Dict[str, Value]
                   ) -> Optional[Value]:
        """Run a method of the project class of `receiver` with these arguments (None: no such method)."""
        cls = receiver.facts.get("cls")
        method = cls.module.flow.method_of(cls, name) if cls is not None else None
        if method is None:
            return None
        return self._invoke(method, node, args, kwargs, receiver)

    def constant_key(self, node: cst.Subscript) -> Any:
        key = constant_key(node)
        return None if key is NO_KEY else key

    def is_number(self, expr: cst.CSTNode) -> bool:
        found = self.flow.values.get(expr) if self.recording else None
        if found is None:
            found = self._expr(expr) if isinstance(expr, (cst.Integer, cst.UnaryOperation)) else UNKNOWN
        return found.facts.get("type") == NUMBER

    @staticmethod
    def is_slice(node: cst.Subscript) -> bool:
        return any(isinstance(element.slice, cst.Slice) for element in node.slice)

    # ---- statements ----

    def run(self) -> None:
        self.block(self.function.body)

    def block(self, body: Sequence[cst.CSTNode]) -> None:
        for stmt in body:
            if self.ended:
                break
            self.stmt(stmt)

    def _enter(self, stmt: cst.CSTNode) -> None:
        self.statement = stmt
        context = self.ir.context.get(stmt)
        self.mode = context.grad if context is not None and context.grad is not None else self.entry

    def stmt(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self._enter(small)
                self.small(small)
        elif isinstance(stmt, cst.Lambda):  # the one statement of a lambda bound to a name: what it returns
            self._enter(stmt)
            self.returns.append(self.expr(stmt.body))
        elif isinstance(stmt, cst.FunctionDef):
            defined = (self.ir.functions.get(stmt.name.value) if self.function.is_module
                       else self.function.nested.get(stmt.name.value))
            if defined is not None:
                self.env[stmt.name.value] = value(type=FUNCTION, function=defined)
        elif isinstance(stmt, cst.ClassDef):
            cls = self.ir.classes.get(stmt.name.value)
            if cls is not None:
                self.env[stmt.name.value] = value(type=CLASS, cls=cls)
        else:
            self._enter(stmt)
            self._compound(stmt)

    def _compound(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.If):
            test = self.expr(stmt.test)
            truth = self._truth(test)
            if truth is None:
                truth = self._none_test(stmt.test)
            before = dict(self.env)
            # a function's own context reads a dead path too (the attributes it stores are seen as stored), and
            # keeps none of its values
            if truth is not False or self.recording:
                self.block(stmt.body.body)
            taken, taken_ended = self.env, self.ended or truth is False
            self.env, self.ended = before, False
            if truth is not True or self.recording:
                if isinstance(stmt.orelse, cst.If):
                    self.stmt(stmt.orelse)
                elif stmt.orelse is not None:
                    self.block(stmt.orelse.body.body)
            other_ended = self.ended or truth is True
            if truth is None and test.facts.get("shipped") and not taken_ended:
                # true in every run (the project ships the file): the other path is read, its values not kept
                self.env, self.ended = taken, False
            elif taken_ended and other_ended:
                self.ended = True
            elif taken_ended:
                self.ended = False
            elif other_ended:
                self.env, self.ended = taken, False
            else:
                self.env = join_env(taken, self.env)
        elif isinstance(stmt, cst.For):
            passes = self._known_items(stmt)
            if passes is not None:
                self._unrolled(stmt, passes)
            else:
                self._loop(stmt, lambda: self.assign(stmt.target, minibatches.on_pass(element_of(self.expr(stmt.iter)),
                                                                                      stmt), stmt))
        elif isinstance(stmt, cst.While):
            self._loop(stmt, lambda: self.expr(stmt.test))
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                entered = self.expr(item.item)
                if item.asname is not None:  # a model, or a file of settings, enters as itself
                    self.assign(item.asname.name, entered if entered.facts.get("type") in (MODEL, "file") else UNKNOWN,
                                stmt)
            self.block(stmt.body.body)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            before = dict(self.env)
            self.block(stmt.body.body)
            paths = [self.env]
            for handler in stmt.handlers:
                self.env = join_env(before, paths[0])
                self._enter(handler)
                if handler.name is not None and isinstance(handler.name.name, cst.Name):
                    self.env[handler.name.name.value] = UNKNOWN
                self.block(handler.body.body)
                paths.append(self.env)
            self.env = paths[0]
            for other in paths[1:]:
                self.env = join_env(self.env, other)
            self.ended = False
            for extra in (stmt.orelse, stmt.finalbody):
                if extra is not None:
                    self.block(extra.body.body)
        elif isinstance(stmt, cst.Match):
            self.expr(stmt.subject)
            before = dict(self.env)
            paths = []
            for case in stmt.cases:
                self.env = dict(before)
                self.block(case.body.body)
                paths.append(self.env)
                self.ended = False
            self.env = before
            for other in paths:
                self.env = join_env(self.env, other)

    def _none_test(self, test: cst.BaseExpression) -> Optional[bool]:
        """The outcome of `x is None` / `x is not None` when x holds a value of a known type (on every path that
        reaches here): None itself, or another; None when it is not such a test."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return None
        target = test.comparisons[0]
        if not (isinstance(target.comparator, cst.Name) and target.comparator.value == "None"):
            return None
        if not isinstance(test.left, (cst.Name, cst.Attribute)):
            return None
        kind = self.expr(test.left).facts.get("type")
        if kind is None:
            return None
        if isinstance(target.operator, cst.Is):
            return kind == NONE
        return kind != NONE if isinstance(target.operator, cst.IsNot) else None

    def _truth(self, test: Value) -> Optional[bool]:
        """Whether a branch's test is known true or false in a call interpreted with its arguments (a flag the
        caller passes, a parameter's default): only that branch runs. A function's own context, which stands
        for every caller, runs both, unless the truth follows from the kinds of the values (`typed`)."""
        kind = test.facts.get("type")
        if self.recording:
            return bool(test.facts["number"]) if test.facts.get("typed") and kind == BOOL else None
        if kind == NONE:
            return False
        if kind in (BOOL, NUMBER) and "number" in test.facts:
            return bool(test.facts["number"])
        return None

    def _known_items(self, stmt: cst.For) -> Optional[List[Value]]:
        """What each pass of a loop binds, where every pass is known, in a call interpreted with its arguments and
        a body without `break`: none for a list known to be empty (an `append` flag no launch gives); for
        `for k, v in d.items()` over a dict whose every key is known (`complete`: a file of settings), each item,
        its key as text of that `literal`. None otherwise: the loop runs as any other."""
        loop = stmt.iter
        if self.recording or stmt.orelse is not None or any(isinstance(n, cst.Break) for n in walk(stmt.body)):
            return None
        if isinstance(loop, (cst.Name, cst.Attribute)):
            held = self.expr(loop)
            return [] if held.facts.get("type") == LIST and held.facts.get("items") == () and \
                "element" not in held.facts else None
        if not (isinstance(loop, cst.Call) and not loop.args and isinstance(loop.func, cst.Attribute)
                and loop.func.attr.value == "items" and isinstance(loop.func.value, (cst.Name, cst.Attribute))
                and isinstance(stmt.target, cst.Tuple) and len(stmt.target.elements) == 2):
            return None
        held = self.expr(loop.func.value)
        items = held.facts.get("items")
        if held.facts.get("type") != DICT or not held.facts.get("complete") or items is None or \
                len(items) > MAX_UNROLLED or not all(isinstance(k, str) for k, _ in items):
            return None
        return [Value({"type": TUPLE, "items": ((0, Value({"type": TEXT, "literal": k})), (1, item))})
                for k, item in items]

    def _unrolled(self, stmt: cst.For, passes: List[Value]) -> None:
        """A loop whose every pass is known: the body once per pass, with what it binds."""
        for bound in passes:
            self._enter(stmt)
            self.assign(stmt.target, bound, stmt)
            self.block(stmt.body.body)
            self.ended = False

    def _loop(self, stmt: cst.CSTNode, head: Callable[[], Any]) -> None:
        """A loop body runs twice: the second pass sees what the first left (loop-carried values)."""
        before = dict(self.env)
        for _ in range(2):
            self._enter(stmt)
            head()
            self.block(stmt.body.body)
            self.env = join_env(before, self.env)
            self.ended = False  # a pass that returns is one path; the loop may also run out
        if stmt.orelse is not None:
            self.block(stmt.orelse.body.body)

    def small(self, small: cst.CSTNode) -> None:
        if isinstance(small, cst.Assign):
            result = self.expr(small.value)
            for target in small.targets:
                self.assign(target.target, result, small)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self.assign(small.target, self.expr(small.value), small)
        elif isinstance(small, cst.AugAssign):
            current = self.expr(small.target)
            operand = self.expr(small.value)
            if current.facts.get("type") == TENSOR:
                self.inplace(small, current, _augmented(small.operator))
            self.assign(small.target, self.arith(small.operator, current, operand, small), small)
        elif isinstance(small, cst.Expr):
            self.expr(small.value)
        elif isinstance(small, cst.Return):
            self.returns.append(self.expr(small.value) if small.value is not None else value(type=NONE))
            self.ended = True
        elif isinstance(small, cst.Raise):
            if small.exc is not None:
                self.expr(small.exc)
            self.ended = True
        elif isinstance(small, cst.Assert):
            self.expr(small.test)

    def _receiver(self, name: str) -> bool:
        """The first parameter of a method (its instance, whose stores `class_attribute` reads)."""
        params = self.function.params
        return self.function.cls is not None and bool(params) and params[0].name == name and \
            not _is_static(self.function)

    def _with_stores(self, name: str, held: Value) -> Value:
        """A configuration instance after this function set its attributes (`cfg.train.lr = 1e-6`), as it is
        returned or handed to a call: the instance with those settings, nested ones in the instances its fields
        hold. A setting whose holder is not a known instance makes that field unknown."""
        from rllint.analysis.domains.config import setting

        stores = sorted((key[len(name) + 1:].split("."), stored) for key, stored in self.env.items()
                        if key.startswith(name + ".") and "[" not in key)
        if stores and held.facts.get("type") == TOKENIZER:  # `tok.padding_side = "left"`
            return configured(held, {".".join(path): stored for path, stored in stores})
        if stores and held.facts.get("type") == TRAINER:  # `trainer.processing_class = tok`
            return reassigned(held, [path for path, _ in stores], [stored for _, stored in stores])
        if not stores or held.facts.get("type") != INSTANCE:
            return held

        def stored_in(holder: Value, path: List[str], stored: Value) -> Value:
            if holder.facts.get("type") != INSTANCE:
                return UNKNOWN
            fields = dict(holder.facts.get("fields") or ())
            fields[path[0]] = stored if len(path) == 1 else stored_in(
                fields.get(path[0]) or setting(self.flow, holder, path[0]), path[1:], stored)
            return holder.but(fields=tuple(fields.items()))

        for path, stored in stores:
            held = stored_in(held, path, stored)
        return held

    def assign(self, target: cst.CSTNode, result: Value, stmt: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self.stored_on.discard(target.value)  # a new object: the stores were on the old one
            if self.function.is_module and result.facts.get("origin") == "literal" and \
                    getattr(stmt, "value", None) in result.reason("number"):  # `LR = 3e-5` at module level
                result = result.but(origin=f"constant {target.value}", why={"origin": (target,)})
            self.env[target.value] = result
            self._note(target, result)
        elif isinstance(target, (cst.Tuple, cst.List)):
            starred = any(isinstance(e, cst.StarredElement) for e in target.elements)
            for position, element in enumerate(target.elements):
                if isinstance(element, cst.StarredElement):
                    self.assign(element.value, with_sources(UNKNOWN, result.sources), stmt)
                    continue
                part = None if starred else item_of(result, position)
                if part is None and not starred and result.facts.get("type") == "output":
                    part = output_item(result, position, element.value)
                if part is None:
                    part = element_of(result)
                self.assign(element.value, minibatches.read(result, part), stmt)
        elif isinstance(target, cst.Attribute):
            self.expr(target.value)
            name = place(target)
            if name is not None:
                self.store(name, result)
            self._note(target, result)
        elif isinstance(target, cst.Subscript):
            container = self.expr(target.value)
            for element in target.slice:
                if isinstance(element.slice, cst.Index):
                    self.expr(element.slice.value)
            if container.facts.get("type") == TENSOR:
                self.inplace(stmt, container, "[...] =")
                container = written(container, result)
            name = place(target.value)
            if name is not None:
                key = constant_key(target)
                self.env[name] = set_item(container, key, result) if key is not NO_KEY else \
                    with_sources(container, result.sources)
            self._note(target, result)
        elif isinstance(target, cst.StarredElement):
            self.assign(target.value, UNKNOWN, stmt)

    def _note(self, node: cst.CSTNode, result: Value) -> None:
        if self.recording:
            self.flow.values[node] = result

    # ---- expressions ----

    def expr(self, node: cst.CSTNode) -> Value:
        result = self._expr(node)
        if isinstance(node, _LAYOUT_NODES) and self.flow.lays_out(node) is not None:
            result = with_sources(result, frozenset({node}))  # the rows made here keep that layout where they go
        if self.recording:
            self.flow.values[node] = result
        if result.facts.get("obj") is not None and isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
            self.emit("read", node, result)
        return result

    def _expr(self, node: cst.CSTNode) -> Value:
        if isinstance(node, cst.Name):
            return self._name(node)
        if isinstance(node, cst.Attribute):
            return self._attribute(node)
        if isinstance(node, cst.Call):
            return self._call(node)
        if isinstance(node, cst.Subscript):
            return self._subscript(node)
        if isinstance(node, cst.BinaryOperation):
            return self.arith(node.operator, self.expr(node.left), self.expr(node.right), node)
        if isinstance(node, cst.UnaryOperation):
            return self._unary(node)
        if isinstance(node, (cst.Integer, cst.Float)):
            try:
                number = float(node.evaluated_value)
            except (ValueError, OverflowError):
                return UNKNOWN
            return value((node,), type=NUMBER, number=number, origin="literal")
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            written = node.evaluated_value
            if not isinstance(written, str):
                return value((node,), type=TEXT)
            named = written_settings_file(self.flow.file, written)
            return value((node,), type=TEXT, literal=written, files=(named,) if named else None)
        if isinstance(node, cst.FormattedString):
            sources = frozenset()
            for part in node.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    sources |= self.expr(part.expression).sources
            return with_sources(value((node,), type=TEXT, formatted=True), sources)
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            return self._sequence(node)
        if isinstance(node, cst.Dict):
            return self._dict(node)
        if isinstance(node, cst.Comparison):
            return self._comparison(node)
        if isinstance(node, cst.BooleanOperation):
            left, right = self.expr(node.left), self.expr(node.right)
            if isinstance(node.operator, cst.Or) and left.facts.get("type") == NONE:
                return right  # `settings or preset()` given no settings: the preset
            if isinstance(node.operator, cst.And) and left.facts.get("type") == BOOL and \
                    left.facts.get("number") == 0:
                return left  # `a and b` of a false `a` is `a`
            return join(left, right)
        if isinstance(node, cst.IfExp):
            self.expr(node.test)
            return join(self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, cst.NamedExpr):
            result = self.expr(node.value)
            self.assign(node.target, result, self.statement)
            return result
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._comprehension(node)
        if isinstance(node, cst.Await):
            return self.expr(node.expression)
        if isinstance(node, cst.Lambda) and node in self.ir.lambdas:
            return value(type=FUNCTION, function=self.ir.lambdas[node])
        return UNKNOWN

    def _name(self, node: cst.Name) -> Value:
        name = node.value
        if name in self.env:
            if name in self.stored_on and not self._receiver(name):
                return self._with_stores(name, self.env[name])
            return self.env[name]
        if name in ("True", "False"):
            return value((node,), type=BOOL, number=1.0 if name == "True" else 0.0)
        if name == "None":
            return value((node,), type=NONE)
        if name in self.outer:
            return self.outer[name]
        if not self.function.is_module and name in self.flow.globals:
            return self.flow.globals[name]
        if name in self.ir.functions:
            return value(type=FUNCTION, function=self.ir.functions[name])
        if name in self.ir.classes:
            return value(type=CLASS, cls=self.ir.classes[name])
        if name in self.ir.imports:
            ref = value(type=REF, qual=self.ir.imports[name])
        elif name in self.ir.relative_imports:
            level, module, imported = self.ir.relative_imports[name]
            ref = value(type=REF, qual=f"{module}.{imported}" if module else imported, level=level)
        else:
            ref = self._star_imported(name)
            if ref is None:
                return UNKNOWN
        if "." in ref.facts["qual"] or ref.facts.get("level"):  # `from config import LR`: a project's constant?
            found = self.flow.imported(ref.facts["qual"], ref.facts.get("level", 0))
            if isinstance(found, Value):
                return found
        return ref

    def _star_imported(self, name: str) -> Optional[Value]:
        """A name nothing here binds, defined (a `def` or `class` at its top) by a project module this one imports
        with `from module import *`. Its summary says so without reading the module further: a package's
        `__init__` of star imports must not make every unknown name (a builtin) load modules."""
        for level, module in self.ir.star_imports:
            path = find_module(self.flow.file.path, module, level) if self.flow._cross_module() else None
            if path is not None and defines(path, name):
                return value(type=REF, qual=f"{module}.{name}" if module else name, level=level)
        return None

    def _attribute(self, node: cst.Attribute) -> Value:
        name = place(node)
        if name is not None and name in self.env:
            self.expr(node.value)
            return self.env[name]
        base = self.expr(node.value)
        return minibatches.read(base, self.read_attribute(base, node.attr.value, node))

    def read_attribute(self, base: Value, attr: str, node: cst.Attribute) -> Value:
        """`base.<attr>`, read at `node` (whose `value` is the receiver's expression)."""
        kind = base.facts.get("type")
        if kind == REF:
            return base.but(qual=f"{base.facts['qual']}.{attr}") if "qual" in base.facts else UNKNOWN
        cls = base.facts.get("cls")
        if kind == CLASS and attr in PRETRAINED and isinstance(cls, ClassIR) and \
                cls.module.flow.method_of(cls, attr) is None and cls.module.flow.is_module_class(cls):
            return base.but(loader=attr)  # `Policy.from_pretrained(path)`: the library's loader of a project model class
        if kind in (INSTANCE, MODEL) and cls is None and self._declared_by_each(base.facts.get("candidates"), attr):
            return join_all(self.read_attribute(option, attr, node) for option in base.facts["candidates"])
        if kind in (INSTANCE, MODEL) and cls is not None:
            given = dict(base.facts.get("fields") or ())
            if attr in given:
                return self._part_of(base, given[attr])
            owner: Flow = cls.module.flow
            method = owner.method_of(cls, attr)
            if method is not None:
                return value(type=FUNCTION, function=method).but(bound=base)
            if base.facts.get("fields_set"):  # set by a name out of sight: neither its default nor its stores hold
                return with_sources(UNKNOWN.but(bound=base), base.sources)
            if kind == MODEL and (attr in MODULE_METHODS or attr in PRETRAINED_METHODS and owner.is_pretrained_class(cls)):
                # `nn.Module.cuda`, `PreTrainedModel.generate`, inherited: the models domain's
                return with_sources(UNKNOWN.but(bound=base), base.sources)
            stored = owner.class_attribute(cls, attr)
            if stored is not None and (stored.facts.get("type") or kind != INSTANCE):
                return self._part_of(base, stored)
            # nothing of the project sets it: a field a framework base class declares (`class Args(GRPOConfig)`)
            # holds that framework's default, which the domains know
        else:
            stored = None
        for domain in domains():
            found = domain.attribute(self, base, attr, node)
            if found is not None and (found.facts or stored is None):
                return found
        if stored is not None:
            return stored
        return with_sources(UNKNOWN.but(bound=base), base.sources) if base.facts else UNKNOWN

    def _part_of(self, holder: Value, held: Value) -> Value:
        """A module (a layer) held in an attribute of a model: its parameters are the model's, so it trains
        where the model trains (here, or in the file that handed the model over)."""
        if held.facts.get("type") != MODEL or held.facts.get("trains") or holder.facts.get("type") != MODEL:
            return held
        if holder.facts.get("trains") or self.flow.trained(holder):
            return held.but(trains=True, why={"trains": holder.reason("trains") or holder.reason("model")})
        return held

    @staticmethod
    def _declared_by_each(candidates: Optional[Tuple[Value, ...]], attr: str) -> bool:
        """Whether each of one-of-several instances has `attr` from its project class (a method or a field it was
        given): then the attribute is one of theirs. Otherwise it is what a framework base class says of any."""
        return bool(candidates) and all(
            attr in dict(option.facts.get("fields") or ()) or
            option.facts["cls"].module.flow.method_of(option.facts["cls"], attr) is not None
            for option in candidates)

    def _subscript(self, node: cst.Subscript) -> Value:
        base = self.expr(node.value)
        indexes: Dict[int, Value] = {}
        bounds: Dict[int, Tuple[Optional[Value], Optional[Value]]] = {}
        for position, element in enumerate(node.slice):
            if isinstance(element.slice, cst.Index):
                indexes[position] = self.expr(element.slice.value)
            else:
                lower, upper, _ = (self.expr(part) if part is not None else None for part in
                                   (element.slice.lower, element.slice.upper, element.slice.step))
                bounds[position] = (lower, upper)
        return minibatches.sliced(node, bounds, indexes, base, self._selected(node, base, list(indexes.values())))

    def _selected(self, node: cst.Subscript, base: Value, indexes: List[Value]) -> Value:
        """`base[...]`, its indexes already interpreted."""
        name = place(node)
        if name is not None and name in self.env:
            return self.env[name]
        key = constant_key(node)
        kind = base.facts.get("type")
        if key is not NO_KEY:
            found = item_of(base, key)
            if found is not None:
                return found
        elif self._table(node.value, base):
            return with_sources(join_all(item for _, item in base.facts["items"]), base.sources)
        for domain in domains():
            found = domain.subscript(self, base, node)
            if found is not None:
                mask = eos_masked(base, indexes[0]) if len(node.slice) == 1 and indexes else None
                if mask is not None:  # `per_token_loss[mask.bool()]`: the terms the mask selects
                    self.emit("eos_masked", node, mask)
                    found = found.but(sources=found.sources | {node})
                return found
        if kind == BOOL and base.facts.get("content") == MASK:  # a bool is no sequence: an array of 0/1, sliced
            return with_sources(value((node,), content=MASK), base.sources)
        if kind in (LIST, TEXTS, TUPLE):
            if self.is_slice(node):
                return base
            element = base.facts.get("element")
            if element is not None:
                return with_sources(element, base.sources)
        return with_sources(UNKNOWN, base.sources)

    def _unary(self, node: cst.UnaryOperation) -> Value:
        operand = self.expr(node.expression)
        if isinstance(node.operator, cst.Not):
            truth = {NONE: False}.get(operand.facts.get("type")) if "number" not in operand.facts else \
                bool(operand.facts["number"]) if operand.facts.get("type") in (BOOL, NUMBER) else None
            return with_sources(value((node,), type=BOOL, number=None if truth is None else float(not truth)),
                                operand.sources)
        if isinstance(node.operator, cst.Minus) and operand.facts.get("type") == NUMBER and \
                "number" in operand.facts:
            return operand.but(number=-operand.facts["number"], why={"number": operand.reason("number") + (node,)})
        if operand.facts.get("type") == TENSOR:
            result = operand.derived().but(obj=node)
            return negated(result) if isinstance(node.operator, cst.Minus) else result
        return operand

    def _comparison(self, node: cst.Comparison) -> Value:
        left = self.expr(node.left)
        sources = left.sources
        compared = []
        for target in node.comparisons:
            right = self.expr(target.comparator)
            compared.append(right)
            sources |= right.sources
        if left.facts.get("type") == TENSOR:
            facts = {k: left.facts[k] for k in ("rank", "axes") if k in left.facts}
            mask = Value({"type": TENSOR, "grad": "no_grad", "content": "mask", "obj": node, **facts}, {"grad": (node,)})
            if len(compared) == 1 and isinstance(node.comparisons[0].operator, cst.NotEqual):
                mask = excluding_eos(mask, left, compared[0], node)
            return with_sources(mask, sources)
        result = value((node,), type=BOOL, number=_compared(left, node.comparisons, compared))
        if left.facts.get("rank_index") and len(compared) == 1 and compared[0].facts.get("number") == 0 and \
                isinstance(node.comparisons[0].operator, cst.Equal):
            result = result.but(main_process=True, why={"main_process": (node,)})  # `rank == 0`
        if left.facts.get("type") is None and all(type(t.operator) in _ORDER for t in node.comparisons):
            # `ids != pad_id` of an array out of sight: a bool, or a mask of 0/1 (not `is` / `in`, always bools)
            result = result.but(content=MASK)
        return with_sources(result, sources)

    def _sequence(self, node: cst.CSTNode) -> Value:
        items = []
        sources = frozenset()
        exact = True
        for position, element in enumerate(node.elements):
            item = self.expr(element.value)
            sources |= item.sources
            if isinstance(element, cst.StarredElement):
                exact = False
            else:
                items.append((position, item))
        facts: Dict[str, Any] = {"type": TUPLE if isinstance(node, cst.Tuple) else LIST}
        if exact:
            facts["items"] = tuple(items)
        if items:
            facts["element"] = join_all(v for _, v in items)
        return with_sources(Value(facts), sources)

    def _dict(self, node: cst.Dict) -> Value:
        items = []
        sources = frozenset()
        for element in node.elements:
            if isinstance(element, cst.StarredDictElement):
                sources |= self.expr(element.value).sources
                continue
            self.expr(element.key)
            item = self.expr(element.value)
            key = literal(element.key)
            if key is NO_KEY:
                sources |= item.sources
            else:
                items.append((key, item))
        return with_sources(Value({"type": DICT, "items": tuple(items)}), sources)

    def _comprehension(self, node: cst.CSTNode) -> Value:
        saved = dict(self.env)
        sources = frozenset()
        comp = node.for_in
        rows = {}
        while comp is not None:
            iterable = self.expr(comp.iter)
            if comp is node.for_in and comp.inner_for_in is None and not comp.ifs and \
                    iterable.facts.get("per_rank") == ROWS:
                rows = {"per_rank": ROWS}  # one item per row of one process's batch: as many rows
            part = (iterable.facts.get("element") or UNKNOWN).facts.get("rank_part")
            if comp is node.for_in and part is not None and _flattens(node):
                rows = {"gathered": part}  # every rank's items, rank after rank (`all_gather_object`'s parts)
            sources |= iterable.sources
            self.assign(comp.target, element_of(iterable), self.statement)
            for condition in comp.ifs:
                self.expr(condition.test)
            comp = comp.inner_for_in
        if isinstance(node, cst.DictComp):
            self.expr(node.key)
            element = self.expr(node.value)
        else:
            element = self.expr(node.elt)
        self.env = saved
        kind = DICT if isinstance(node, cst.DictComp) else LIST
        rows = rows if kind == LIST else {}
        if kind == LIST and element.facts.get("type") == TEXT:
            text = element.facts.get("text")
            facts = {"type": TEXTS, "element": element, **({"text": text} if text else {}), **rows}
            return with_sources(Value(facts, {"text": element.reason("text")} if text else {}),
                                sources | element.sources)
        return with_sources(Value({"type": kind, "element": element, **rows}), sources | element.sources)

    def arith(self, operator: cst.CSTNode, left: Value, right: Value, node: cst.CSTNode) -> Value:
        result, centred = minibatches.arith(operator, left, right, node, self._arith(operator, left, right, node),
                                            compute)
        if centred is not None:
            self.emit("centred", node, centred)
        return result

    def _arith(self, operator: cst.CSTNode, left: Value, right: Value, node: cst.CSTNode) -> Value:
        lt, rt = left.facts.get("type"), right.facts.get("type")
        if lt == NUMBER and rt == NUMBER and "number" in left.facts and "number" in right.facts:
            number = compute(operator, left.facts["number"], right.facts["number"])
            if number is not None:
                origin = next((o for o in (left.facts.get("origin"), right.facts.get("origin"))
                               if o and o != "literal"), "literal")
                result = Value({"type": NUMBER, "number": number, "origin": origin},
                               {"number": left.reason("number") + right.reason("number") or (node,)})
                return with_sources(result, left.sources | right.sources)
        if isinstance(operator, cst.Multiply) and LIST in (lt, rt) and {lt, rt} <= {LIST, NUMBER, None}:
            held = left if lt == LIST else right  # `[None] * n`: the same elements (a list times a list raises)
            element = held.facts.get("element") or (join_all(x for _, x in held.facts["items"])
                                                    if held.facts.get("items") else None)
            return with_sources(Value({"type": LIST, **({"element": element} if element is not None else {})}),
                                left.sources | right.sources)
        for domain in domains():
            found = domain.arith(self, operator, left, right, node)
            if found is not None:
                return found
        sources = left.sources | right.sources
        stat = left.facts.get("stat") or right.facts.get("stat")
        if stat and isinstance(operator, (cst.Add, cst.AddAssign)):
            return with_sources(value(stat=stat), sources)
        if lt == NUMBER and rt == NUMBER:
            return with_sources(value(type=NUMBER), sources)
        return with_sources(UNKNOWN, sources)

    # ---- calls ----

    def _call(self, node: cst.Call) -> Value:
        callee = self.expr(node.func)
        args: List[Value] = []
        kwargs: Dict[str, Value] = {}
        sources = frozenset()
        for arg in node.args:
            argument = self.expr(arg.value)
            sources |= argument.sources
            if arg.star == "**" and argument.facts.get("complete"):  # a dict whose every key is known
                for key, item in argument.facts.get("items") or ():
                    if isinstance(key, str):
                        kwargs.setdefault(key, item)
                continue
            if arg.star == "**":
                self.open_mappings.setdefault(node, []).append(argument)
            if arg.star:
                continue
            if arg.keyword is not None:
                kwargs[arg.keyword.value] = argument
            else:
                args.append(argument)
        if not _reads_only(node, callee):
            self._settings_handed(node, callee)
            self._tokenizers_handed(node, callee)
        name = _tail(node.func)
        receiver = callee.facts.get("bound")
        if name == "backward" and isinstance(node.func, cst.Attribute):
            loss = args[0] if args and callee.facts.get("type") != FUNCTION else (
                receiver if receiver is not None else UNKNOWN)
            self.emit("backward", node, loss, "backward")
            return value(type=NONE)
        if name == "setattr" and isinstance(node.func, cst.Name) and "setattr" not in self.env and len(args) == 3:
            self._setattr(node, args[1], args[2])
            return value(type=NONE)
        if name == "isinstance" and isinstance(node.func, cst.Name) and "isinstance" not in self.env and \
                len(args) == len(node.args) == 2:
            return self._isinstance(node, args[0], node.args[1].value)
        if name == "hasattr" and isinstance(node.func, cst.Name) and "hasattr" not in self.env and len(args) == 2:
            return self._hasattr(args[0], args[1].facts.get("literal") or literal(node.args[1].value))
        if name == "getattr" and isinstance(node.func, cst.Name) and "getattr" not in self.env and \
                len(args) == len(node.args) in (2, 3) and args[0].facts.get("type") in _SETTINGS_HOLDERS:
            attribute = args[1].facts.get("literal") or literal(node.args[1].value)
            if isinstance(attribute, str) and attribute.isidentifier():
                return self._getattr(node, args[0], attribute, args[2] if len(args) == 3 else None)
        if name in ("append", "extend") and receiver is not None and receiver.facts.get("type") == LIST and args \
                and isinstance(node.func, cst.Attribute):
            self._grow(node.func.value, receiver, args[0] if name == "append" else element_of(args[0]))
            return value(type=NONE)
        stopped = self._stopper(node, name, callee, args)
        if stopped is not None:
            return with_sources(stopped, sources | {node})
        result = self._call_value(node, callee, args, kwargs)
        result, centred = minibatches.called(callee.facts.get("qual") if callee.facts.get("type") == REF else None,
                                             name, node, receiver, args, kwargs, result)
        if centred is not None:
            self.emit("centred", node, centred)
        if result.facts.get("saved"):
            self.saved(result, result.facts["saved"])
        return with_sources(result, sources)

    def _setattr(self, node: cst.Call, name: Value, stored: Value) -> None:
        """`setattr(obj, "name", v)` is `obj.name = v`, also where the name is text the engine knows (the key of
        a dict of settings whose items are looped over); with a name not known (`for k, v in d.items():
        setattr(cfg, k, v)` over a dict of unknown keys), any attribute of `obj` may have changed: what it held,
        what it was built with and its fields' defaults are no longer known (`fields_set`)."""
        holder = place(node.args[0].value)
        if holder is None:
            return
        attribute = name.facts.get("literal") or literal(node.args[1].value)
        if isinstance(attribute, str) and attribute.isidentifier():
            self.env[f"{holder}.{attribute}"] = stored
            self.stored_on.add(holder.split(".", 1)[0])
            return
        for key in [k for k in self.env if k.startswith(holder + ".")]:
            del self.env[key]
        current = self.env.get(holder)
        if current is not None and current.facts.get("type") in (INSTANCE, "config"):
            self.env[holder] = current.but(fields_set=True, fields=None, why={"fields_set": (node,)})

    def _isinstance(self, node: cst.Call, held: Value, classes: cst.BaseExpression) -> Value:
        """`isinstance(model, dict)`: false where the value is a model, tensor or tokenizer (its kind proved by what
        made it) and every class named is a builtin container or scalar. Kinds hold for every caller (a joined
        value has one only when all callers' values do), so the truth is `typed`: it prunes a branch in a
        function's own context too. Anything else is not known."""
        named = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
        if held.facts.get("type") in _LIBRARY_OBJECTS and all(
                isinstance(n, cst.Name) and n.value in _BUILTIN_TYPES and self._builtin(n.value) for n in named):
            return Value({"type": BOOL, "number": 0.0, "typed": True}, {"number": held.reason("type") + (node,)})
        return value(type=BOOL)

    def _builtin(self, name: str) -> bool:
        """Whether `name` here is Python's builtin: nothing of this module or function binds or imports it."""
        return not any(name in names for names in (self.env, self.outer, self.flow.globals, self.ir.functions,
                                                     self.ir.classes, self.ir.imports, self.ir.relative_imports))

    def _hasattr(self, held: Value, attribute: Any) -> Value:
        """`hasattr(obj, "name")`: true for a field its project class declares (a dataclass config), else not
        known (an attribute may be set out of sight)."""
        cls = held.facts.get("cls") if held.facts.get("type") == INSTANCE else None
        if isinstance(attribute, str) and cls is not None and \
                any(attribute in c.fields for c in cls.module.flow._class_chain(cls)):
            return value(type=BOOL, number=1)
        return value(type=BOOL)

    def _getattr(self, node: cst.Call, held: Value, attribute: str, default: Optional[Value]) -> Value:
        """`getattr(cfg, "name", default)` of a configuration object is `cfg.name` where it has that attribute (a
        field of its class, what its constructor or a store gave it); the default only where it has none: its
        classes, all of the project, neither declare nor store it, no name out of sight set it (`fields_set`),
        and nothing in this module assigns an attribute of that name. Else not known."""
        receiver = node.args[0].value
        holder = place(receiver)
        if holder is not None and f"{holder}.{attribute}" in self.env:
            return self.env[f"{holder}.{attribute}"]
        found = self.read_attribute(held, attribute, cst.Attribute(value=receiver, attr=cst.Name(attribute)))
        if default is None or found.facts.get("type"):
            return found
        return default if self._lacks(held, attribute) else UNKNOWN

    def _lacks(self, held: Value, attribute: str) -> bool:
        """Whether an instance of a project class provably has no attribute `attribute` (see `_getattr`)."""
        cls = held.facts.get("cls")
        if held.facts.get("type") != INSTANCE or cls is None or held.facts.get("fields_set") or \
                attribute in dict(held.facts.get("fields") or ()):
            return False
        owner: Flow = cls.module.flow
        chain = list(owner._class_chain(cls))
        known = {c.name for c in chain}
        if any(b.rsplit(".", 1)[-1] not in known and b != "object" for c in chain for b in c.bases):
            return False  # a base out of sight may declare it
        if any(attribute in c.fields or attribute in c.attributes or attribute in c.methods or
               {"__getattr__", "__getattribute__"} & set(c.methods) for c in chain):
            return False
        if attribute in owner._stores_of(cls):
            return False
        return not {attribute, "*"} & self.flow.assigned_attributes()

    def _settings_handed(self, node: cst.Call, callee: Value) -> None:
        """A dict whose every key is known (a file of settings) that a call may change (`cfg.update(...)`, a
        helper given it) no longer has known keys; a function of this file whose parameter only reads it keeps
        them."""
        function = callee.facts.get("function") if callee.facts.get("type") == FUNCTION else None
        kept = set()
        if function is not None and function.module is self.ir:
            bound = function.bind(node, method=callee.facts.get("bound") is not None)
            kept = {id(expr) for name, expr in bound.items()
                    if _only_reads(self.flow.handed_parts(function, name), self.env.get(place(expr) or "", UNKNOWN))}
        held = [a.value for a in node.args if not a.star and id(a.value) not in kept]
        if isinstance(node.func, cst.Attribute) and node.func.attr.value not in _READS:
            held.append(node.func.value)
        for expr in held:
            name = place(expr)
            if name is not None and self.env.get(name, UNKNOWN).facts.get("complete"):
                self.env[name] = self.env[name].but(complete=None, items=None)

    def _tokenizers_handed(self, node: cst.Call, callee: Value) -> None:
        """A tokenizer of known sides handed to a call that may set them (a library's, or a project function or
        class of a module that sets a side but "right" on some tokenizer) has sides not known from here on: all of
        them after a library's call, those its module sets after a project's."""
        names = [place(a.value) for a in node.args if not a.star]
        held = [n for n in names if n is not None and self.env.get(n, UNKNOWN).facts.get("type") == TOKENIZER and
                any(side in self.env[n].facts for side in SIDES)]
        if not held:
            return
        target = callee.facts.get("function") or callee.facts.get("cls")
        if target is None and callee.facts.get("type") == REF:
            target = self.flow.imported(callee.facts.get("qual", ""), callee.facts.get("level", 0))
        changed = SIDES
        if isinstance(target, (FunctionIR, ClassIR)):  # only the sides that module sets may change
            changed = sides_it_sets(target.module.flow.file)
        for name in held:
            self.env[name] = self.env[name].but(**{side: None for side in changed})

    def _grow(self, target: cst.CSTNode, current: Value, added: Value) -> None:
        """`xs.append(x)` / `xs.extend(ys)`: from here on `xs` holds elements like `x` too (a list known to be
        empty holds only those; one whose elements are unknown stays so)."""
        name = place(target)
        if name is None:
            return
        if "element" in current.facts:
            element: Optional[Value] = join(current.facts["element"], added)
        elif current.facts.get("items") == ():
            element = added
        else:
            element = None
        facts: Dict[str, Any] = {"type": LIST}
        if element is not None:
            facts["element"] = element
        self.env[name] = with_sources(Value(facts), current.sources | added.sources)

    def _stopper(self, node: cst.Call, name: str, callee: Value, args: List[Value]) -> Optional[Value]:
        """`.item()`, `.tolist()`, `.numpy()`, `float(t)`, `int(t)`: a Python value, cut from the graph."""
        receiver = callee.facts.get("bound")
        if name in STOPPERS and receiver is not None and receiver.facts.get("type") in (TENSOR, None):
            operand = receiver
        elif isinstance(node.func, cst.Name) and name in _CONVERSIONS and args and \
                args[0].facts.get("type") in (TENSOR, None) and name not in self.env:
            operand = args[0]
        elif callee.facts.get("qual") == "torch.tensor" and args and args[0].facts.get("grad") == GRAPH:
            operand = args[0]  # a copy without history: a new leaf
        else:
            return None
        self.emit("stopper", node, operand, name)
        if name == "tensor":
            return Value({"type": TENSOR, "grad": "no_grad", "obj": node}, {"grad": (node,)})
        return value(type=LIST if name == "tolist" else NUMBER, stat=operand.facts.get("stat"))  # `std.item()`

    def _call_value(self, node: cst.Call, callee: Value, args: List[Value], kwargs: Dict[str, Value]) -> Value:
        kind = callee.facts.get("type")
        # Two paths that hold different functions, classes or imported names join to a kind without its object
        # (`Adam if fused else SGD`): the callee is then not known.
        if kind == FUNCTION and "function" in callee.facts:
            result = self._invoke(callee.facts["function"], node, args, kwargs, callee.facts.get("bound"))
            if _tail(node.func) == "forward" and (callee.facts.get("bound") or UNKNOWN).facts.get("type") == MODEL \
                    and result.facts.get("type") == TENSOR:
                result = result.but(forward_output=node)  # `model.forward(ids)`: the model's own output, as its call
            return result
        if kind == FUNCTION and "candidates" in callee.facts:  # one of several: what any of them may return
            return join_all(self._invoke(option.facts["function"], node, args, kwargs, option.facts.get("bound"))
                            for option in callee.facts["candidates"])
        if kind == CLASS and "cls" in callee.facts and callee.facts.get("loader"):
            return value((node,), type=MODEL, model=node, cls=callee.facts["cls"], pretrained=True)
        if kind == CLASS and "cls" in callee.facts:
            return self._construct(callee.facts["cls"], node, args, kwargs)
        if kind == REF and "qual" in callee.facts:
            return self._call_imported(callee, node, args, kwargs)
        if kind in (FUNCTION, CLASS, REF):
            return UNKNOWN
        if not callee.facts and isinstance(node.func, cst.Name) and node.func.value in ("zip", "enumerate"):
            return _paired(node.func.value, args)
        if not callee.facts and isinstance(node.func, cst.Name) and node.func.value == "range" and not kwargs and \
                1 <= len(args) == len(node.args) <= 3:
            return minibatches.counter(node, args)
        if not callee.facts and isinstance(node.func, cst.Name) and node.func.value == "min" and not kwargs:
            bounded = minibatches.least(args)
            if bounded is not None:
                return bounded
        if not callee.facts and isinstance(node.func, cst.Name) and node.func.value == "len" and len(args) == 1:
            return counted(value((node,), type=NUMBER), args[0], node)  # a count of the first axis of what it counts
        if not callee.facts and isinstance(node.func, cst.Name) and node.func.value in _NUMERIC_BUILTINS and \
                len(args) == len(node.args) >= (1 if node.func.value == "abs" else 2) and not kwargs and \
                all(a.facts.get("type") == NUMBER for a in args):
            return _numeric_builtin(node, args)
        place_key = callee.facts.get("place")
        if kind is None and place_key is not None and self.flow.trained_place(place_key):
            callee = callee.but(type=MODEL, model=place_key)  # its parameters train: a model, known by its place
            kind = MODEL
        elif kind is None and receiver_of(callee) is None and self.flow.used_as_model(node, self.function):
            # called as a transformers model is (token ids, `.logits` read): a model of unknown weights
            callee = callee.but(type=MODEL, model=place_key) if place_key is not None else callee.but(type=MODEL)
            kind = MODEL
        receiver = callee.facts.get("bound")
        if receiver is not None and receiver.facts.get("type") is None and receiver.facts.get("place") is not None \
                and (self.flow.trained_place(receiver.facts["place"]) or _tail(node.func) == "forward" and
                     self.flow.used_as_model(node, self.function)):
            receiver = receiver.but(type=MODEL, model=receiver.facts["place"])  # `m.forward(ids).logits` too
        if receiver is not None:
            name = _tail(node.func)
            if name == "get" and isinstance(node.func, cst.Attribute) and self._table(node.func.value, receiver) and \
                    node.args and not any(a.keyword or a.star for a in node.args):
                return self._lookup(receiver, node, args)
            for domain in domains():
                found = domain.method(self, receiver, name, node, args, kwargs)
                if found is not None:
                    return found
            return with_sources(self._opaque(node, args, kwargs), receiver.sources)
        for domain in domains():
            found = domain.call_value(self, callee, node, args, kwargs)
            if found is not None:
                return found
        return self._opaque(node, args, kwargs)

    def _table(self, expr: cst.CSTNode, held: Value) -> bool:
        """Whether `expr` names a lookup table of the module (`ModuleIR.table`), or holds a dict read whole from a
        settings file (`complete`): its items are all it holds."""
        return held.facts.get("type") == DICT and "items" in held.facts and (held.facts.get("complete") or isinstance(
            expr, cst.Name) and self.ir.table(expr.value))

    def _lookup(self, table: Value, node: cst.Call, args: List[Value]) -> Value:
        """`table.get(key)` / `table.get(key, default)`: the item of a constant key, else any item (the default
        where the key may be missing; without one, None, which the code tests before it uses the item)."""
        key = literal(node.args[0].value) if node.args and not node.args[0].keyword else NO_KEY
        default = args[1] if len(args) > 1 else None
        if key is not NO_KEY:
            found = item_of(table, key) or default or value(type=NONE)
        else:
            found = join_all([item for _, item in table.facts["items"]] + ([default] if default is not None else []))
        return with_sources(found, table.sources)

    def _opaque(self, node: cst.Call, args: List[Value], kwargs: Dict[str, Value]) -> Value:
        """A call nobody here can interpret. Handed a model or a tensor with a graph, its result may carry
        gradient this file does not show (`opaque`)."""
        if any(v.facts.get("type") in (MODEL, "output") or v.facts.get("grad") == GRAPH
               for v in list(args) + list(kwargs.values())):
            return self.opaque(node, UNKNOWN)
        return UNKNOWN

    def opaque(self, node: cst.Call, result: Value) -> Value:
        """`result` of `node` may carry gradient that the code does not show: the call is its own source, and
        `Flow.opaque` names it, so that no one proves a value free of gradient through it."""
        self.emit("opaque", node, UNKNOWN)
        return with_sources(result, frozenset({node}))

    def _call_imported(self, callee: Value, node: cst.Call, args: List[Value], kwargs: Dict[str, Value]
                       ) -> Value:
        """A call of an imported name: a library's (the domains know it) or a project module's (interpreted
        there with these arguments)."""
        qual, level = callee.facts["qual"], callee.facts.get("level", 0)
        owner, _, tail = qual.rpartition(".")
        if tail in PRETRAINED and owner:  # `Policy.from_pretrained(path)` of a model class of another project module
            cls = self.flow.imported(owner, level)
            if isinstance(cls, ClassIR):
                loader = self.read_attribute(value(type=CLASS, cls=cls), tail, node.func)
                if loader.facts.get("loader"):
                    return self._call_value(node, loader, args, kwargs)
        if not level:
            for domain in domains():
                found = domain.call(self, qual, node, args, kwargs)
                if found is not None:
                    return found
        target = self.flow.imported(qual, level)
        if isinstance(target, FunctionIR):
            return self._invoke(target, node, args, kwargs, None)
        if isinstance(target, ClassIR):
            return self._construct(target, node, args, kwargs)
        return self._opaque(node, args, kwargs)

    def _invoke(self, function: FunctionIR, node: cst.Call, args: List[Value], kwargs: Dict[str, Value],
                receiver: Optional[Value], stores: Optional[Dict[str, Value]] = None) -> Value:
        """What a call of a project function returns with these arguments; `stores`, when given, receives what it
        stored on its instance."""
        bound = function.bind(node, method=receiver is not None)
        values = {param: self._argument(expr, node, args, kwargs) for param, expr in bound.items()}
        return self.run_function(function, node, values, receiver, stores)

    def run_function(self, function: FunctionIR, node: cst.Call, values: Dict[str, Value],
                     receiver: Optional[Value] = None, stores: Optional[Dict[str, Value]] = None) -> Value:
        """What `function` returns given these parameters (and `receiver` as its first), run at `node`: a call of
        it there, or a library that calls it there (a DataLoader its collate function). Its events happen
        through `node`; `stores`, when given, receives what it stored on its instance."""
        if function.module is not self.ir:  # another module cannot see which of this file's objects train
            values = {param: self._handed(v) for param, v in values.items()}
            receiver = self._handed(receiver) if receiver is not None else None
        if receiver is not None and function.params and function.params[0].index == 0:
            values[function.params[0].name] = receiver
        owner: Flow = function.module.flow
        outer = self.env if function.parent is self.function else None  # a function defined in this one
        result, events, stored = owner.summary(function, values, self.mode, self.depth,
                                               keep=not self.flow.for_callers, outer=outer)
        if stores is not None:
            stores.update(stored)
        if owner is not self.flow:  # what the other module read makes this file's result stale when it changes
            self.flow.file.dependencies.update(owner.file.dependencies)
        inner = _first_cut(result)
        if inner is not None and (self.mode is False or function.module is not self.ir):
            if function.module is not self.ir:  # where in the other module, for a message
                self.flow.cut_inside.setdefault(node, inner)
            result = _cut_at(result, node)  # cut at this call: it runs under no_grad, or in another module
        if result.facts.get("grad") is not None and function.module is not self.ir:
            result = result.but(why={"grad": (node,) + result.reason("grad")})  # reported in this file
        given = {v.facts.get("obj") for v in [receiver, *values.values()] if v is not None}
        if result.facts.get("obj") is not None and result.facts["obj"] not in given:
            result = result.but(obj=node)  # a tensor the call made: each call makes its own
        # a model a function builds (here or in another module): each call builds its own
        held = {v.facts.get("model") for v in [receiver, *values.values()] if v is not None}
        result = _own_models(result, node, held, owner)
        if result.facts.get("lp_at") is not None and function.module is not self.ir:
            result = result.but(lp_at=node)  # a difference written in another module: this call returns it
        if result.facts.get("forwards"):  # the graph of these forwards came through this call (`Event.via`)
            result = result.but(forwards=result.facts["forwards"] | {node})
        for kind, event in events:
            if self.recording:
                self.flow.record(kind, replace(event, via=node, via_statement=self.statement, via_module=self.ir))
            else:
                self.collected.append((kind, event))
        return result

    def _handed(self, v: Value) -> Value:
        """An object from out of sight, for a helper of another module it is handed to, which cannot see its place:
        a model that trains when an optimizer of this file receives its parameters; `outside` when it comes from
        outside the project (`Flow.from_outside`)."""
        key = v.facts.get("model") if v.facts.get("type") == MODEL else v.facts.get("place")
        if v.facts.get("type") == MODEL and key is not None and not v.facts.get("trains") and self.flow.trained(v):
            return v.but(trains=True)  # built in sight, trained by this file: the other module cannot see which
        if not isinstance(key, tuple) or v.facts.get("type") not in (None, MODEL):
            return v
        if self.flow.trained_place(key):
            return v.but(type=MODEL, model=key, trains=True)
        return v.but(outside=True) if self.flow.from_outside(key) else v

    def _construct(self, cls: ClassIR, node: cst.Call, args: List[Value], kwargs: Dict[str, Value]) -> Value:
        owner: Flow = cls.module.flow
        instance = value((node,), type=INSTANCE, cls=cls)
        if owner.is_module_class(cls):
            instance = instance.but(type=MODEL, model=node, why={"model": (node,)})
        init = owner.method_of(cls, "__init__")
        if init is not None:
            stored: Dict[str, Value] = {}
            self._invoke(init, node, args, kwargs, instance, stored)
            if instance.facts.get("type") == INSTANCE:  # what this construction stored, where no other method stores
                own = {k: v for k, v in stored.items() if v.facts.get("type") and not owner.stored_elsewhere(cls, k)}
                if own:
                    instance = instance.but(fields=tuple(own.items()))
        elif any(c.fields for c in owner._class_chain(cls)):
            # a dataclass (pydantic, attrs) without an `__init__` of its own: the generated one stores each
            # argument in the field of its name, positional ones in the order the fields are declared
            order = [name for c in reversed(list(owner._class_chain(cls))) for name in c.fields]
            given = dict(zip(order, args))
            given.update(kwargs)
            if given:
                instance = instance.but(fields=tuple(given.items()))
            if node in self.open_mappings:  # `Config(**settings)` of a mapping whose keys are not known: any field
                instance = instance.but(fields_set=True, why={"fields_set": (node,)})
        if instance.facts.get("type") == MODEL and owner.holds_parameters(cls) is False:
            instance = instance.but(weightless=True, why={"weightless": (cls.node,)})
        return instance

    def _argument(self, expr: cst.CSTNode, node: cst.Call, args: List[Value], kwargs: Dict[str, Value]) -> Value:
        positional = [a for a in node.args if a.keyword is None and not a.star]
        for index, arg in enumerate(positional):
            if arg.value is expr:
                return args[index] if index < len(args) else UNKNOWN
        for arg in node.args:
            if arg.keyword is not None and arg.value is expr:
                return kwargs.get(arg.keyword.value, UNKNOWN)
        return UNKNOWN


# ---------------------------------------------------------------- helpers

NO_KEY = object()
_READS = frozenset({"get", "keys", "items", "values", "copy", "__getitem__", "__contains__"})
# Builtins and library calls that read their arguments and change none of them (a dict of settings handed to
# them keeps its keys).
_READ_ONLY_BUILTINS = frozenset({"print", "len", "str", "repr", "format", "isinstance", "sorted", "list", "tuple",
                                 "dict", "set", "iter", "any", "all", "bool", "hash", "id", "type"})
_READ_ONLY_LIBRARY = frozenset({"json.dump", "json.dumps", "yaml.dump", "yaml.safe_dump", "pprint.pprint",
                                "copy.copy", "copy.deepcopy", "wandb.init", "wandb.log"})


def _only_reads(parts: Optional[List[Tuple[Any, ...]]], given: Value) -> bool:
    """Whether a function only reads the container `given` that a parameter of it receives, when `parts` are the
    key paths of the parts of that parameter it hands on (`_handed_parts`): each must be a value that is no
    container (`load(cfg["data"]["name"])`)."""
    if parts is None:
        return False
    for path in parts:
        part: Optional[Value] = given
        for step in path:
            part = item_of(part, step) if part is not None else None
        if part is None or part.facts.get("type") in (None, DICT, LIST, TUPLE, INSTANCE):
            return False
    return True


def _handed_parts(function: FunctionIR, param: str) -> Optional[List[Tuple[Any, ...]]]:
    """The key paths of the parts of parameter `param` (and of names bound to parts of it: `sub = cfg["data"]`)
    that the function hands on: to a call, a method, a return, another expression's value or an attribute;
    None when it changes the parameter (stores into it, deletes from it, calls a method of it) or hands on a
    part it does not name by constant keys. Keys read, tests, arithmetic and read-only builtins hand on nothing."""
    parents: Dict[cst.CSTNode, cst.CSTNode] = {}
    stack: List[cst.CSTNode] = [s for s in function.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
    while stack:
        current = stack.pop()
        for child in children(current):
            if not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                parents[child] = current
                stack.append(child)
    paths: Dict[str, Tuple[Any, ...]] = {param: ()}  # names bound to parts of the parameter: their key paths
    grown = True
    while grown:
        grown = False
        for use in [n for n in parents if isinstance(n, cst.Name) and n.value in paths]:
            read, path = _read_part(use, parents, paths[use.value])
            holder = parents.get(read)
            if isinstance(holder, cst.Assign) and holder.value is read and path is not None:
                for target in holder.targets:
                    if isinstance(target.target, cst.Name) and target.target.value not in paths:
                        paths[target.target.value] = path
                        grown = True
    handed: List[Tuple[Any, ...]] = []
    for use in [n for n in parents if isinstance(n, cst.Name) and n.value in paths]:
        read, path = _read_part(use, parents, paths[use.value])
        holder = parents.get(read)
        if isinstance(holder, cst.AssignTarget) and read is use:
            continue  # the name bound (`sub = cfg["data"]`), not what it held
        if isinstance(holder, (cst.AssignTarget, cst.AugAssign, cst.Del)) or \
                isinstance(holder, cst.AnnAssign) and holder.target is read:
            return None  # stored into or deleted
        if isinstance(holder, _READING) or _tested(read, parents):
            continue
        if isinstance(holder, cst.Assign) and all(isinstance(t.target, cst.Name) for t in holder.targets):
            if path is None:
                return None  # an alias of a part that constant keys do not name
            continue  # an alias, followed above
        if isinstance(holder, cst.Arg) and isinstance(parents.get(holder), cst.Call) and \
                isinstance(parents[holder].func, cst.Name) and parents[holder].func.value in _READ_ONLY_BUILTINS:
            continue
        if path is None or read is use:
            return None  # the container itself handed on, or a method of it called (`cfg.update(...)`)
        handed.append(path)
    return handed


def _tested(node: cst.CSTNode, parents: Dict[cst.CSTNode, cst.CSTNode]) -> bool:
    """Whether a value is only the truth of a test: `if cfg.get("data"):`, `x if cfg["a"] and ok else y`."""
    holder = parents.get(node)
    while isinstance(holder, (cst.BooleanOperation, cst.UnaryOperation)):
        node, holder = holder, parents.get(holder)
    return isinstance(holder, (cst.If, cst.While, cst.IfExp)) and holder.test is node


# Where a value is only looked at: tested, compared, printed in an f-string, used as an index or in arithmetic.
_READING = (cst.Expr, cst.If, cst.While, cst.ComparisonTarget, cst.Comparison, cst.FormattedStringExpression,
            cst.Index, cst.BinaryOperation, cst.UnaryOperation)


def _read_part(node: cst.CSTNode, parents: Dict[cst.CSTNode, cst.CSTNode], path: Optional[Tuple[Any, ...]]
               ) -> Tuple[cst.CSTNode, Optional[Tuple[Any, ...]]]:
    """The outermost read of a part of `node` (`cfg["a"]["b"]`, `cfg.get("a")` for `cfg`) and its key path from
    the parameter (None once a key is not a constant)."""
    while True:
        parent = parents.get(node)
        if isinstance(parent, cst.Subscript) and parent.value is node:
            key = constant_key(parent)
            path = path + (key,) if path is not None and key is not NO_KEY else None
            node = parent
        elif isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in _READS and \
                isinstance(parents.get(parent), cst.Call) and parents[parent].func is parent:
            call = parents[parent]
            first = call.args[0].value if call.args and call.args[0].keyword is None else None
            key = first.evaluated_value if parent.attr.value == "get" and isinstance(first, cst.SimpleString) \
                else NO_KEY
            path = path + (key,) if path is not None and key is not NO_KEY else None
            node = call
        else:
            return node, path


def _reads_only(node: cst.Call, callee: Value) -> bool:
    if callee.facts.get("type") == REF:
        return callee.facts.get("qual") in _READ_ONLY_LIBRARY
    return isinstance(node.func, cst.Name) and node.func.value in _READ_ONLY_BUILTINS and \
        callee.facts.get("type") not in (FUNCTION, CLASS)


def _first_cut(v: Value, depth: int = 2) -> Optional[cst.CSTNode]:
    """Where the graph of `v`, or of an item it holds (a dict of outputs), was cut."""
    if v.facts.get("cut") is not None or depth == 0:
        return v.facts.get("cut")
    held = [x for _, x in v.facts.get("items") or ()] + ([v.facts["element"]] if v.facts.get("element") else [])
    return next((cut for cut in (_first_cut(x, depth - 1) for x in held) if cut is not None), None)


def _cut_at(v: Value, node: cst.CSTNode, depth: int = 2) -> Value:
    """What a call run under no_grad (or in another module) returns: the call is where its graph was cut, and the
    graph of each item it holds (`{"logits": ...}`)."""
    if v.facts.get("cut") is not None:
        v = v.but(cut=node)
    if depth and v.facts.get("items"):
        v = v.but(items=tuple((k, _cut_at(x, node, depth - 1)) for k, x in v.facts["items"]))
    if depth and v.facts.get("element") is not None:
        v = v.but(element=_cut_at(v.facts["element"], node, depth - 1))
    return v


def _token_mask(node: cst.CSTNode) -> Value:
    """The `[batch, time]` mask of completion tokens a framework hands over."""
    return Value({"type": TENSOR, "rank": 2, "axes": (BATCH, TIME), "content": "mask", "grad": "no_grad", "obj": node},
                 {"grad": (node,), "rank": (node,), "axes": (node,)})


def _token_logps(node: cst.CSTNode, grad: str) -> Value:
    """Per-token log-probs `[batch, time]` that a framework hands over, with the policy's gradient or none."""
    graph = grad == GRAPH
    facts = {"type": TENSOR, "rank": 2, "axes": (BATCH, TIME), "content": "token_logprobs", "logp": True,
             "grad": GRAPH if graph else "no_grad", "lp": (1, 0) if graph else (0, 1), "obj": node}
    return Value(facts, {"grad": (node,), "rank": (node,), "axes": (node,)})


def join_env(a: Dict[str, Value], b: Dict[str, Value]) -> Dict[str, Value]:
    """The environment after two paths meet; a name bound on one path only keeps that path's value."""
    if a is b:
        return a
    merged = {}
    for key in a.keys() | b.keys():
        left, right = a.get(key), b.get(key)
        merged[key] = join(left, right) if left is not None and right is not None else (left or right)
    return merged


def _flattens(node: cst.CSTNode) -> bool:
    """`[x for part in parts for x in part]`: every item of every part, in order (no test leaves one out)."""
    outer = node.for_in
    inner = outer.inner_for_in
    return isinstance(node, cst.ListComp) and inner is not None and inner.inner_for_in is None and \
        not outer.ifs and not inner.ifs and isinstance(outer.target, cst.Name) and \
        isinstance(inner.iter, cst.Name) and inner.iter.value == outer.target.value and \
        isinstance(inner.target, cst.Name) and isinstance(node.elt, cst.Name) and node.elt.value == inner.target.value


def place(node: cst.CSTNode) -> Optional[str]:
    """`x`, `self.x`, `out["loss"]`, `batch["ids"]`: an expression that names a place of the environment."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = place(node.value)
        return f"{base}.{node.attr.value}" if base is not None else None
    if isinstance(node, cst.Subscript):
        key = constant_key(node)
        base = place(node.value)
        return f"{base}[{key!r}]" if key is not NO_KEY and base is not None else None
    return None


def constant_key(node: cst.Subscript) -> Any:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return NO_KEY
    return literal(node.slice[0].slice.value)


def literal(node: cst.CSTNode) -> Any:
    """A string or integer written literally, else NO_KEY."""
    if isinstance(node, cst.SimpleString):
        try:
            evaluated = node.evaluated_value
        except (ValueError, SyntaxError):
            return NO_KEY
        return evaluated if isinstance(evaluated, str) else NO_KEY
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and \
            isinstance(node.expression, cst.Integer):
        return -int(node.expression.evaluated_value)
    return NO_KEY



def _instance_called(site: CallSite) -> Any:
    """The model a call site runs the forward or a method of (`latent(ids)`, `latent.encode(ids)`)."""
    callee = site.function.module.flow.value(site.node.func)
    held = callee if callee.facts.get("type") == MODEL else callee.facts.get("bound")
    return held.facts.get("model") if held is not None else None


def _own_models(result: Value, call: cst.Call, given: set, owner: "Flow") -> Value:
    """`result` (or the items of the tuple it is) with each model built inside the called function of another
    module known by the call: `load_model(name)` twice loads two objects, whatever node of the helper built them.
    Models the helper built apart stay apart (`return policy, frozen_copy`): the first is known by the call, the
    others by the node that built them. A model the call was given keeps its identity; one the helper froze is
    frozen (`owner`, the helper's module, sees where)."""
    renamed: Dict[Any, Any] = {}

    def own(v: Value) -> Value:
        identity = v.facts.get("model")
        if v.facts.get("type") != MODEL or identity is None or identity in given:
            return v
        if owner.frozen(v):
            v = v.but(frozen=True)
        renamed.setdefault(identity, call if not renamed else identity)
        return v.but(model=renamed[identity], why={"model": (call,)})

    if result.facts.get("type") == TUPLE and result.facts.get("items"):
        return result.but(items=tuple((key, own(item)) for key, item in result.facts["items"]))
    return own(result)


def _numeric_builtin(node: cst.Call, args: List[Value]) -> Value:
    """`min(a, b)`, `max(a, b)`, `abs(a)` of numbers: a number, its value when every argument's is known (a
    coefficient clamped into a range stays a number, whatever the range)."""
    numbers = [a.facts.get("number") for a in args]
    origin = next((a.facts.get("origin") for a in args if a.facts.get("origin") not in (None, "literal")), "literal")
    sources = frozenset().union(*(a.sources for a in args))
    if any(n is None for n in numbers):
        return with_sources(value(type=NUMBER), sources)
    result = _NUMERIC_BUILTINS[node.func.value](*numbers)
    return with_sources(Value({"type": NUMBER, "number": result, "origin": origin},
                              {"number": tuple(n for a in args for n in a.reason("number")) or (node,)}), sources)

def _paired(builtin: str, args: List[Value]) -> Value:
    """`zip(a, b)` / `enumerate(a)`: a list of tuples of the elements of what they iterate."""
    parts = [value(type=NUMBER), element_of(args[0])] if builtin == "enumerate" and args else \
        [element_of(a) for a in args]
    sources = frozenset().union(*(a.sources for a in args)) if args else frozenset()
    return with_sources(Value({"type": LIST, "element": Value({"type": TUPLE, "items": tuple(enumerate(parts))})}),
                        sources)


def element_of(iterable: Value) -> Value:
    """What a loop over `iterable` (or an unpacking of it) binds."""
    element = iterable.facts.get("element")
    if element is not None:
        return with_sources(element, iterable.sources)
    kind = iterable.facts.get("type")
    if kind == TEXTS:
        text = iterable.facts.get("text")
        return Value({"type": TEXT, **({"text": text} if text else {})}, {"text": iterable.reason("text")} if text
                     else {})
    if kind == TENSOR:
        facts: Dict[str, Any] = {"type": TENSOR}
        rank = iterable.facts.get("rank")
        if rank:
            facts["rank"] = rank - 1
        for fact in ("grad", "cut", "sources", "logp", "forwards"):
            if fact in iterable.facts:
                facts[fact] = iterable.facts[fact]
        facts.update(_row_layout(iterable))
        return Value(facts, {k: iterable.reason(k) for k in facts if k != "type" and iterable.reason(k)})
    return with_sources(UNKNOWN, iterable.sources)


def _row_layout(tensor: Value) -> Dict[str, Any]:
    """What a row of `tensor` (a pass of a loop over its first axis, as `for row in logits`) keeps of it, as
    `tensor[i]` does: the axes after the first, and, unless the distribution's axis is the one looped over, what
    it holds along it (a row of logits is logits, at their temperature)."""
    facts: Dict[str, Any] = {}
    axes, dist = tensor.facts.get("axes"), tensor.facts.get("dist")
    if axes:
        facts["axes"] = tuple(axes[1:])
    if dist == 0:
        return facts
    if dist is not None:
        facts["dist"] = dist - 1
    if "content" in tensor.facts:
        facts["content"] = tensor.facts["content"]
    facts.update({k: tensor.facts[k] for k in KEPT_BY_VIEWS if k in tensor.facts})
    return facts


_ORDER = {cst.Equal: lambda a, b: a == b, cst.NotEqual: lambda a, b: a != b, cst.LessThan: lambda a, b: a < b,
          cst.LessThanEqual: lambda a, b: a <= b, cst.GreaterThan: lambda a, b: a > b,
          cst.GreaterThanEqual: lambda a, b: a >= b}


def _compared(left: Value, comparisons: Sequence[cst.ComparisonTarget], rights: List[Value]) -> Optional[float]:
    """The truth (1.0 / 0.0) of a comparison of known numbers (`temperature == 0`, `0 < lr <= 1`), else None."""
    outcome = True
    for target, right in zip(comparisons, rights):
        test = _ORDER.get(type(target.operator))
        if test is None or any(v.facts.get("type") != NUMBER or "number" not in v.facts for v in (left, right)):
            return None
        outcome = outcome and test(left.facts["number"], right.facts["number"])
        left = right
    return float(outcome)


def compute(operator: cst.CSTNode, a: float, b: float) -> Optional[float]:
    try:
        if isinstance(operator, cst.Add):
            return a + b
        if isinstance(operator, cst.Subtract):
            return a - b
        if isinstance(operator, cst.Multiply):
            return a * b
        if isinstance(operator, cst.Divide):
            return a / b
        if isinstance(operator, cst.Power):
            return float(a ** b)
        if isinstance(operator, cst.FloorDivide):
            return a // b
    except (ZeroDivisionError, OverflowError, ValueError, TypeError):
        return None
    return None


def statement_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes of a statement's own expressions (not its nested blocks or functions), itself first."""
    yield root
    if isinstance(root, (cst.If, cst.While)):
        stack = [root.test]
    elif isinstance(root, cst.For):
        stack = [root.target, root.iter]
    elif isinstance(root, cst.With):
        stack = list(root.items)
    elif isinstance(root, (cst.FunctionDef, cst.ClassDef, cst.Try, cst.TryStar, cst.Match)):
        return
    else:
        stack = list(children(root))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(children(node))


def _walk(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, cst.Lambda):
            stack.extend(children(node))


def _augmented(operator: cst.CSTNode) -> str:
    return {cst.AddAssign: "+=", cst.SubtractAssign: "-=", cst.MultiplyAssign: "*=",
            cst.DivideAssign: "/="}.get(type(operator), "op=")


def _tail(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


def _is_false(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _loop_freezes(loop: cst.For) -> bool:
    """`for p in m.parameters(): p.requires_grad = False` (or `p.requires_grad_(False)`)."""
    for stmt in loop.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and _is_false(small.value) and any(
                    isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad"
                    for t in small.targets):
                return True
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and \
                    _tail(small.value.func) == "requires_grad_" and small.value.args and \
                    _is_false(small.value.args[0].value):
                return True
    return False


def _loop_reads_grad(loop: cst.For) -> bool:
    """`for p in m.parameters(): ... p.grad ...` (or `for name, p in m.named_parameters()`)."""
    held = {node.value for node in _walk(loop.target) if isinstance(node, cst.Name)}
    return any(isinstance(node, cst.Attribute) and node.attr.value == "grad" and isinstance(node.value, cst.Name)
               and node.value.value in held for stmt in loop.body.body for node in _walk(stmt))


def _parameters_receiver(node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """`m` of `m.parameters()` / `m.named_parameters()`."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
            node.func.attr.value in ("parameters", "named_parameters"):
        return node.func.value
    return None


def receiver_of(callee: Value) -> Optional[Value]:
    return callee.facts.get("bound")


_MODEL_KEYWORDS = frozenset({"input_ids", "inputs_embeds", "attention_mask"})


def _used_as_model(call: cst.Call, ir: ModuleIR) -> bool:
    """A call written as a transformers model's forward: token ids or embeddings by keyword, or its output's
    `.logits` / `.last_hidden_state` read."""
    return call in ir.output_read or any(a.keyword is not None and a.keyword.value in _MODEL_KEYWORDS
                                         for a in call.args)


def _direct(call: cst.Call) -> bool:
    """A call of a name or of `self.x` itself (or of its `.forward`), not a method of another object (`m.generate`)."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        func = func.value
    return isinstance(func, cst.Name) or isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
        func.value.value == "self"


_REGRESSIONS = frozenset({"mse_loss", "smooth_l1_loss", "huber_loss", "l1_loss"})


def _fitted_calls(function: FunctionIR) -> Set[cst.Call]:
    """The direct calls (`_direct`) of a function whose output, assigned to a name (through tensor methods and
    indexing: `values = critic(ids)[:, :-1]`), is an operand of a regression there: `mse_loss(values, returns)`,
    `(values - returns) ** 2`, `(values - returns).pow(2)`."""
    fitted: Set[str] = set()
    for node in _walk(function.node):
        operands: Sequence[cst.CSTNode] = ()
        if isinstance(node, cst.Call) and _tail(node.func) in _REGRESSIONS:
            operands = [arg.value for arg in node.args[:2]]
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power) and \
                isinstance(node.right, cst.Integer) and node.right.value == "2":
            operands = _difference(node.left)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                (node.func.attr.value == "square" or node.func.attr.value == "pow" and len(node.args) == 1 and
                 isinstance(node.args[0].value, cst.Integer) and node.args[0].value.value == "2"):
            operands = _difference(node.func.value)
        fitted.update(name for name in map(place, operands) if name is not None)
    found: Set[cst.Call] = set()
    for stmt in function.statements:
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and place(stmt.targets[0].target) in fitted:
            node = stmt.value
            while isinstance(node, (cst.Subscript, cst.Attribute, cst.Call)):
                if isinstance(node, cst.Call) and _direct(node):
                    found.add(node)
                    break
                node = node.func if isinstance(node, cst.Call) else node.value
    return found


def _difference(node: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """The operands of `a - b` (in parentheses or not)."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        return [node.left, node.right]
    return ()


def _token_argument(call: cst.Call) -> Optional[cst.Arg]:
    """The argument a transformers model takes its token ids by: `input_ids=`, else the first positional one."""
    keyword = next((a for a in call.args if a.keyword is not None and a.keyword.value == "input_ids"), None)
    first = call.args[0] if call.args and call.args[0].keyword is None and not call.args[0].star else None
    return keyword or first


def _model_argument(call: cst.Call) -> Optional[cst.CSTNode]:
    """The `model` a trainer is built with: by keyword, or its first positional argument."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "model":
            return arg.value
    first = call.args[0] if call.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


def place_key_of(expr: cst.CSTNode, function: FunctionIR) -> Optional[Tuple]:
    """The place an expression names, as the engine keys objects from out of sight: `self.x` in a method
    is ("attr", class, "x"); a parameter the function never rebinds is ("param", function, name)."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        cls = function.cls or (function.parent.cls if function.parent is not None else None)
        return ("attr", cls.name, expr.attr.value) if cls is not None else None
    if isinstance(expr, cst.Name) and function.param(expr.value) is not None and \
            not any(_rebinds(stmt, expr.value) for stmt in function.statements):
        return ("param", function.qualname, expr.value)
    return None


def _rebinds(stmt: cst.CSTNode, name: str) -> bool:
    if isinstance(stmt, cst.Assign):
        targets = [t.target for t in stmt.targets]
    elif isinstance(stmt, (cst.AnnAssign, cst.AugAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, cst.For):
        targets = [stmt.target]
    else:
        return False
    while targets:
        target = targets.pop()
        if isinstance(target, cst.Name) and target.value == name:
            return True
        if isinstance(target, (cst.Tuple, cst.List)):
            targets.extend(e.value for e in target.elements)
    return False


def _self_stores(stmt: cst.CSTNode) -> Iterator[cst.Attribute]:
    """The targets `self.*` that a statement assigns."""
    if isinstance(stmt, cst.Assign):
        targets = [t.target for t in stmt.targets]
    elif isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
    else:
        return
    while targets:
        target = targets.pop()
        if isinstance(target, (cst.Tuple, cst.List)):
            targets.extend(e.value for e in target.elements)
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            yield target


def _self_item_stores(stmt: cst.CSTNode) -> Iterator[str]:
    """The attributes `self.name` an assignment writes an element of (`self.name[i] = v`)."""
    if isinstance(stmt, cst.Assign):
        for target in stmt.targets:
            subscript = target.target
            if isinstance(subscript, cst.Subscript) and isinstance(subscript.value, cst.Attribute) and \
                    isinstance(subscript.value.value, cst.Name) and subscript.value.value.value == "self":
                yield subscript.value.attr.value


def _is_static(function: FunctionIR) -> bool:
    return any(d.rsplit(".", 1)[-1] == "staticmethod" for d in function.decorators)


Target = Union[FunctionIR, ClassIR, Value, str]  # a function, a class, a constant, a module's path


# Libraries that no project module stands for: their calls are the domains' business, and looking them up
# as project files would cost a file-system probe per spelling.
_LIBRARIES = frozenset({"torch", "numpy", "np", "transformers", "trl", "peft", "datasets", "accelerate",
                        "deepspeed", "vllm", "math", "os", "re", "json", "random", "copy", "collections",
                        "functools", "itertools", "typing", "dataclasses", "argparse", "logging", "time",
                        "wandb", "tqdm", "ray", "omegaconf", "hydra", "sglang", "openrlhf", "verl", "tinker"})


def resolve_import(importer: str, level: int, dotted: str, settings, dependencies: Dict[str, str]
            ) -> Optional[Tuple[Optional[Flow], Target]]:
    """What `dotted` (a name imported into `importer` at `level`, then attributes) names in the project:
    (the Flow of the module that defines it, the function or class) or (None, path) for a module itself.
    None when it is not the project's (a library) or cannot be read."""
    parts = [p for p in dotted.split(".") if p]
    if not parts or (not level and parts[0] in _LIBRARIES):
        return None
    for hops in range(summaries.MAX_HOPS):
        found = None
        for split in range(len(parts), 0, -1):
            module, rest = ".".join(parts[:split]), parts[split:]
            path = find_module(importer, module, level)
            if path is not None:
                found = (path, rest)
                break
        if found is None and level:
            path = find_module(importer, "", level)
            found = (path, parts) if path is not None else None
        if found is None:
            return None
        path, rest = found
        digest, module_file = summaries.load(path, settings)
        dependencies[path] = digest
        if module_file is None:
            return None
        if not rest:
            return None, path
        flow: Flow = module_file.fact(Flow)
        dependencies.update(module_file.dependencies)
        ir = flow.ir
        name = rest[0]
        if len(rest) == 1 and name in ir.functions:
            return flow, ir.functions[name]
        if len(rest) == 1 and name in flow.globals and flow.globals[name].facts.get("type") == NUMBER:
            return flow, flow.globals[name].but(origin=f"constant {name} of {os.path.basename(path)}")
        if len(rest) == 1 and name in flow.globals and flow.globals[name].facts.get("type") == DICT and \
                ir.table(name):
            return flow, flow.globals[name]  # a lookup table (a registry of the module's functions)
        if name in ir.classes:
            cls = ir.classes[name]
            if len(rest) == 1:
                return flow, cls
            method = flow.method_of(cls, rest[1])
            return (flow, method) if method is not None and len(rest) == 2 else None
        # a re-export: `from .core import token_logps` in the module named
        if name in ir.relative_imports:
            level, source, imported = ir.relative_imports[name]
            importer, parts = path, ([*source.split("."), imported] if source else [imported]) + rest[1:]
            continue
        if name in ir.imports:
            importer, level, parts = path, 0, ir.imports[name].split(".") + rest[1:]
            continue
        return None
    return None
