"""RL5xx: gradients and optimization: frozen references, no-grad regions, what reaches backward, clip bounds.

Each rule asks the fact engine (`rllint.analysis.flow.Flow`: gradient facts followed from model forwards,
the gradient mode at every caller, model objects and what the file does to them, and what flows into each
backward) and only words findings.
"""
from __future__ import annotations

import os
import re
from typing import List, Optional, Tuple

import libcst as cst

from rllint.analysis import summaries
from rllint.analysis.clipping import clamp_of, one_and
from rllint.analysis.domains.models import CHECKPOINT, DTYPE, QUANTIZATION, REVISION, differences
from rllint.analysis.domains.torch_ops import INPLACE
from rllint.analysis.facts import GRAPH, Value, item_of
from rllint.analysis.flow import Flow, place_key_of, statement_nodes
from rllint.analysis.grad import GradFlow
from rllint.analysis.imports import Imports
from rllint.analysis.names import POLICY_NAMES, REFERENCE_NAMES
from rllint.analysis.positions import Lines
from rllint.analysis.purpose import RLCodeOnly
from rllint.analysis.roles import ModelRoles, call_name
from rllint.analysis.syntax import children, dotted, keyword
from rllint.analysis.tensors import argument, number_value
from rllint.analysis.values import RemoteNode, Values
from rllint.diagnostic import Severity, Tier
from rllint.registry import CSTRule
from rllint.rules.bases import TensorRule


# What a file that returns a policy-gradient loss for code out of the project to backpropagate (`Flow.policy_losses`)
# writes: its log-probs come from a softmax or a cross-entropy.
POLICY_LOSS_WORDS = ("softmax", "cross_entropy")


def _code(rule: CSTRule, node: cst.CSTNode, limit: int = 70) -> str:
    text = " ".join(rule.file.module.code_for_node(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ReferenceNotFrozen(CSTRule):
    """
    ## What it does
    Reports a KL reference model that is not a frozen copy of the policy, where the code proves it:
    a trainer given the same model object as the policy and as the reference
    (`PPOTrainer(model=policy, ref_model=policy)`, through any names that hold that object), or
    a model handed to a trainer as its reference whose parameters also reach an optimizer of this
    file (reported at the `ref.parameters()` expression).

    When RL501 is selected by name (`--select RL501`, or its family `RL5`), it also reports by
    names, as earlier versions did: an assignment that makes a reference-named attribute hold the
    policy (`self.ref_model = self.model`), and a reference-named model built with `deepcopy` /
    `from_pretrained` that the file never freezes. The names come from a built-in vocabulary
    (`ref_model`, `reference_model`, `ref_policy`...) extended by the options.

    `ref_model = None`, PEFT set-ups that use the policy with its adapter disabled as the
    reference, and frozen copies (`requires_grad_(False)`, a `requires_grad = False` loop over its
    parameters, TRL's `create_reference_model`) are not reported.

    ## Why is this bad?
    The KL penalty measures how far the policy moved from where it started. If the reference is
    the policy, the KL is always zero; if its weights train, the anchor drifts with the policy and
    the penalty stops constraining anything.

    ## Example
    ```python
    policy = AutoModelForCausalLM.from_pretrained(name)
    trainer = PPOTrainer(config, model=policy, ref_model=policy, processing_class=tokenizer)
    ```

    ## Use instead
    ```python
    trainer = PPOTrainer(config, model=policy, ref_model=create_reference_model(policy), processing_class=tokenizer)
    ```

    ## Options
    - `reference-model-names` and `policy-model-names`: name patterns that extend the built-in
      vocabularies of the by-name form (reported only when RL501 is selected by name).

    ## References
    - TRL, `create_reference_model`.
    """

    code = "RL501"
    name = "reference-not-frozen"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "{detail}"
    options = (REFERENCE_NAMES, POLICY_NAMES)
    triggers = ("ref", "initial_", "frozen_", "deepcopy", "from_pretrained")

    def visit_Module(self, node: cst.Module) -> None:
        flow = self.file.fact(Flow)
        flow.analyze_all()
        for function in flow.ir.all_functions():
            for site in function.calls:
                self._trainer_call(flow, site.node)
        if self.file.settings.names(self.code):
            self._by_name()

    def _trainer_call(self, flow: Flow, call: cst.Call) -> None:
        reference = keyword(call, "ref_model") or keyword(call, "ref_policy")
        policy = keyword(call, "model") or keyword(call, "policy") or (
            call.args[0] if call.args and call.args[0].keyword is None else None)
        if reference is None or _passes(call, "peft_config"):  # PEFT: the policy with its adapter disabled
            return
        identity = _identity(flow.value(reference.value))
        if identity is None:
            return
        if policy is not None and _identity(flow.value(policy.value)) == identity:
            self.report(reference, detail=(
                f"`{_code(self, reference)}` hands the trainer the policy itself as its reference: the KL to it "
                f"is always zero and it moves with every update (use a frozen copy, e.g. `create_reference_model`)"))
            return
        for expr, owner in flow.optimizer_sites():
            if _identity(flow.value(expr)) == identity or place_key_of(expr, owner) == identity:
                self.report(expr, detail=(
                    f"`{_code(self, expr)}` gives the parameters of the trainer's reference model to an optimizer: "
                    f"the KL anchor trains along with the policy (optimize the policy's parameters only)"))

    def _by_name(self) -> None:
        roles = self.file.fact(ModelRoles)
        for stmt, target, source in roles.aliases:
            alias = f"{target}={source}" if isinstance(stmt, cst.Arg) else f"{target} = {source}"
            self.report(stmt, detail=(
                f"`{alias}` makes the reference model the policy itself: the KL to it is always "
                f"zero and it moves with every update (use a frozen copy, e.g. `create_reference_model`)"))
        for call, owner in roles.optimized:
            self.report(call, detail=(
                f"`{_code(self, call)}` gives the reference model's parameters to the optimizer: the KL anchor "
                f"trains along with the policy (optimize the policy's parameters only)"))
        grad = self.file.fact(GradFlow)
        for build in roles.builds():
            if not build.frozen and not grad.only_without_grad(build.key):
                self.report(build.node, detail=(
                    f"reference `{build.key}` is built with `{build.how}` and never frozen in this file: its "
                    f"weights keep `requires_grad=True`, so any forward outside no_grad trains the anchor "
                    f"(call `{build.key}.requires_grad_(False)`)"))


class ReferenceForwardWithGrad(RLCodeOnly, CSTRule):
    """
    ## What it does
    Reports the forward pass of a model that this file never trains, run with gradient enabled in a
    file that trains another model (an optimizer of the file receives the policy's parameters): a reference, old-policy or reward model
    (`ref_logits = ref_model(ids).logits`), directly or through a helper, here or in another module of
    the project. By default it is reported where the forward records a graph: the model's parameters
    still require grad (the project never freezes it: no `requires_grad_(False)`, no `requires_grad =
    False` loop over its parameters, not made by TRL's `create_reference_model`), it is not handed to
    code this file does not show (which might freeze or train it), gradient is enabled where the
    forward runs (not under `torch.no_grad()` / `torch.inference_mode()` / a `@torch.no_grad()`
    function, here or at every caller), its result is not detached in the same expression, and its output
    reaches the loss the step backpropagates (its graph, or a number taken from it with `.item()`). A helper
    called twice is judged per call: the run whose result reaches the loss, not a probe of the same model
    through the same helper elsewhere.

    When RL502 is selected by name (`--select RL502` or `RL5`), a frozen model's forward outside
    no_grad is reported too (autograd still records the ops that follow it if an input requires grad),
    and so is a forward whose output reaches no loss (a model probed in a notebook cell).

    A helper that runs the model is reported at its call, where `no_grad` goes; one that also runs
    the policy with gradient is reported at its own forward of the untrained model.

    Not reported: forwards under no_grad, or detached at once; models that an optimizer of this file
    trains (a reward model being trained, a critic) or whose gradients it reads (`p.grad` of their
    parameters, `clip_grad_norm_`); modules fed the graph of a trained model's forward (a head on the
    policy's output: no_grad would cut the policy's gradient); modules that hold no parameters (a loss
    written as an `nn.Module`, storing only numbers); models this file only receives (a parameter with no
    caller here: who built it is out of sight); MLX and JAX code, where gradients are taken only of named
    parameters; files that are not RL post-training code.

    ## Why is this bad?
    Autograd records every operation of a forward that runs with gradient enabled and keeps its
    activations until the graph is freed: a second full model's worth of activation memory per step,
    often the difference between fitting a batch and OOM. Since the model's weights require grad and its
    output reaches the loss, they also receive gradient that nothing uses.

    ## Example
    ```python
    ref_model = AutoModelForCausalLM.from_pretrained(name)
    ref_logps = token_logps(ref_model, input_ids)
    ```

    ## Use instead
    ```python
    ref_model = AutoModelForCausalLM.from_pretrained(name).requires_grad_(False)
    with torch.no_grad():
        ref_logps = token_logps(ref_model, input_ids)
    ```

    ## Options
    None.
    """

    code = "RL502"
    name = "reference-forward-with-grad"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("`{call}` runs `{model}`, a model this file never trains, with gradient enabled{frozen}: autograd "
               "keeps its activations for a backward that must not reach it (wrap it in `torch.no_grad()`)")
    triggers = ("backward", "compute_loss")

    def visit_Module(self, node: cst.Module) -> None:
        flow = self.file.fact(Flow)
        flow.analyze_all()
        trained = flow.trained_models()
        if not flow.losses() or not trained:  # which model is the policy is out of sight
            return
        broad = self.file.settings.names(self.code)  # named, RL502 reports forwards that reach no loss too
        runs = {event.node: event.target.facts.get("model") for event in flow.forwards}
        reported = set()
        for event in flow.forwards:
            model = event.target
            identity = model.facts.get("model")
            if event.grad_mode is not True or not isinstance(identity, cst.CSTNode) or identity in trained:
                continue  # a model from out of sight (a parameter, an attribute) may be frozen where it is built
            if _fed_by_policy(event, runs, trained):
                continue  # the policy's gradient flows through it: no_grad would cut the policy's own
            if event.via is None and flow.callers(event.function):
                continue  # judged at each call, in the caller's context
            callee = flow.value(event.via.func).facts.get("function") if event.via is not None else None
            if callee is not None and callee is not event.function and callee.module is flow.ir:
                continue  # deeper than the called function: its own run reports it at its own call
            if event.via is not None and (runs.get(event.via) in trained or flow.runs_trained(event, trained)):
                continue  # a submodule run by a trained module's forward or method: part of its pass
            frozen = flow.frozen(model)
            if (frozen or not flow.reaches_loss(event)) and not broad or flow.escaped(model):
                continue
            at = event.via or event.node
            if event.via is not None and event.function.module is flow.ir and any(
                    other.via is event.via and other.target.facts.get("model") in trained for other in flow.forwards):
                at = event.node  # the helper also runs the policy: no_grad around its call would cut its gradient
            direct = at is event.node
            if at in reported or _detached_at_once(at, event.statement if direct else event.via_statement):
                continue
            reported.add(at)
            self.report(at, call=_code(self, at), model=_code(self, _model_expr(flow, event, direct), 40),
                        frozen=" (its weights are frozen, but the ops after it are recorded)" if frozen else "")


def _fed_by_policy(event, runs, trained) -> bool:
    """Whether an input of a forward carries the graph of a trained model's forward (`runs`: forward node ->
    model identity): a head or a loss module applied to the policy's output, not a reference's forward."""
    return any(held.facts.get("grad") == GRAPH and any(runs.get(node) in trained for node in held.facts.get("forwards", ()))
               for held in [*event.extra.get("args", ()), *event.extra.get("kwargs", {}).values()])


def _model_expr(flow: Flow, event, direct: bool) -> cst.CSTNode:
    """The expression that names the model in the reported call: the argument of a helper's call that holds
    it, or the callee of a direct forward."""
    if not direct:
        identity = event.target.facts.get("model")
        for arg in event.via.args:
            if flow.value(arg.value).facts.get("model") == identity:
                return arg.value
        return event.via.func
    func = event.node.func
    return func.value if isinstance(func, cst.Attribute) and func.attr.value == "forward" else func


class ItemInLossPath(RLCodeOnly, CSTRule):
    """
    ## What it does
    Reports `.item()`, `.tolist()`, `.numpy()`, `float(t)` and `int(t)` applied to a tensor that
    carries gradient, whose result flows into a loss that is backpropagated: `loss.backward()`,
    `accelerator.backward(loss)`, `scaler.scale(loss).backward()`, or the loss a trainer framework
    backpropagates (`compute_loss` of a transformers / TRL trainer), or a policy-gradient loss that a
    function no code of the project runs returns to its caller. The value is followed through
    assignments, helpers of this file and of other modules, and returned dicts and tuples key by key: a
    loss function that returns `{"loss": loss, "kl": kl.item()}` to a caller that runs
    `out["loss"].backward()` keeps `kl.item()` out of the loss. The same calls for logging and metrics,
    outside what reaches the backward, are not reported.

    On by default in this one form: gradient is followed from the forwards of models built or trained in
    sight (through helpers and the callers' arguments), or known by their use (called on token ids, their
    `.logits` read) where they come from outside the project (an argument of a function nothing in the
    project runs or freezes). A tensor from out of sight (a batch from a loader, a parameter the project
    passes) is not known to carry gradient and is not reported. No option or selection widens it.

    ## Why is this bad?
    A Python number has no autograd history. Whatever is computed from it and then re-wrapped
    (`torch.tensor(...)`, `requires_grad=True`) is a new leaf: the loss still has a value, `backward()`
    still runs, but no gradient reaches the policy through that term, and training silently optimizes
    something else (often nothing).

    ## Example
    ```python
    kl = float((torch.exp(delta) - delta - 1).mean())
    loss = pg_loss + beta * kl
    loss.backward()
    ```

    ## Use instead
    ```python
    kl = (torch.exp(delta) - delta - 1).mean()
    loss = pg_loss + beta * kl
    loss.backward()
    ```

    ## Options
    None.
    """

    code = "RL503"
    name = "item-in-loss-path"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "`{expr}` cuts a tensor that carries gradient out of the loss backpropagated on line {line}; gradients stop here"
    triggers = ("backward", "compute_loss") + POLICY_LOSS_WORDS

    def visit_Module(self, node: cst.Module) -> None:
        flow = self.file.fact(Flow)
        flow.analyze_all()
        stoppers = {}
        for event in flow.stoppers:
            if event.target.facts.get("grad") == GRAPH or event.node not in stoppers:
                stoppers[event.node] = event
        lines = self.file.fact(Lines)
        found = {}
        for sink, loss in _losses(flow):
            for source in loss.sources:
                event = stoppers.get(source)
                if event is not None and event.target.facts.get("grad") == GRAPH:
                    found.setdefault(event.node if event.local else event.via, sink)
        for at, sink in sorted(found.items(), key=lambda item: lines.line(item[0])):
            self.report(at, expr=_code(self, at), line=_sink_line(lines, sink))


class InPlaceOnGraphTensor(RLCodeOnly, CSTRule):
    """
    ## What it does
    Reports in-place masking or arithmetic on a tensor that carries gradient (`logps[mask] = 0`,
    `ratio[~mask] *= 0`, `.masked_fill_()`, `.mul_()`, `.add_()`, `.div_()`, `.clamp_()`...) where the
    engine can prove it harmful:
    - the tensor was saved for backward: the output of `exp`, `softmax`, `log_softmax`, `sigmoid`,
      `tanh`, `sqrt`, `pow` (or a view of it), or an operand of a `*` / `/` with a tensor that carries
      gradient, before the in-place op: backward raises "one of the variables needed for gradient
      computation has been modified by an inplace operation", on the cluster, after the job was queued;
    - it is a slice of a larger tensor that carries a graph (`logits[:, -k:].div_(t)`): the base's
      whole storage stays alive through backward (TRL #6553);
    - it aliases a tensor that is read again later under another name (a second variable, a batch dict
      entry): that reader silently sees the masked values.
    Gradient is followed from the model forwards that produce it (not from names); a function run under
    no_grad at every caller is not reported.

    When RL504 is selected by name (`--select RL504` or `RL5`), every in-place op on a tensor that
    carries gradient is reported, also where nothing saved is overwritten (masking a `gather` or linear
    output in place, scaling a fresh lm-head output): harmless for the gradient, but fragile.

    Not reported: in-place ops on data tensors (`labels[labels == pad] = -100`, `input_ids`,
    `attention_mask`), on detached tensors and under no_grad, and files that are not RL post-training code.

    ## Why is this bad?
    Autograd saves tensors it needs for the backward pass. Overwriting one in place either raises at
    `backward()` time, far from the cause, or, through views and aliases, silently changes what other
    code reads.

    ## Example
    ```python
    ratio = torch.exp(logps - old_logps)
    ratio[completion_mask == 0] = 0.0
    ```

    ## Use instead
    ```python
    ratio = torch.exp(logps - old_logps).masked_fill(completion_mask == 0, 0.0)
    ```

    ## Options
    None.
    """

    code = "RL504"
    name = "in-place-on-graph-tensor"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "in-place `{op}` on `{target}`, which carries gradient: {harm} (use `masked_fill`, `torch.where` or an out-of-place op)"
    triggers = tuple(sorted(f"{method}(" for method in INPLACE)) + ("] =", "] *=", "] +=", "] -=", "] /=", "*=",
                                                                   "+=", "-=", "/=")

    def visit_Module(self, node: cst.Module) -> None:
        flow = self.file.fact(Flow)
        flow.analyze_all()
        broad = self.file.settings.names(self.code)
        reported = set()
        for event in flow.inplace:
            target = event.target
            if event.grad_mode is not True or target.facts.get("grad") != GRAPH or not event.local or \
                    event.node in reported:
                continue
            harm = _harm(flow, event)
            if harm is None and not broad:
                continue
            reported.add(event.node)
            self.report(event.node, op=event.detail, target=_code(self, _receiver(event.node), 50),
                        harm=harm or "nothing saved for backward is overwritten here, but the edit is fragile")


class PolicyForwardUnderNoGrad(RLCodeOnly, CSTRule):
    """
    ## What it does
    Reports a loss that is backpropagated although the code proves it carries no gradient: every term
    comes from forwards run under `torch.no_grad()` / `inference_mode()` (here, in a helper, or in a
    helper of another module decorated with `@torch.no_grad()`), from `.detach()`ed values, or from
    tensors built from data. Reported where the gradient was cut: the forward under no_grad, or the
    `.detach()`; for a helper of another module, inside it when no other call of the helper in the file
    needs its no_grad (each runs under the caller's own), else at the call that chose a no-grad helper
    (one that another call relies on, or that is declared no-grad whole by a decorator). A term
    multiplied by a literal zero (`0.0 * model.param.sum()`, a trick that hides the error) carries no
    gradient either.

    ## Why is this bad?
    The loss is then a constant with respect to the policy's weights: `backward()` raises "element 0 of
    tensors does not require grad" or, if a zero-weighted term keeps it quiet, the step silently trains
    nothing while the logs look normal.

    ## Example
    ```python
    with torch.no_grad():
        old_logps = token_logps(policy, ids)
        logps = token_logps(policy, ids)
    loss = -(torch.exp(logps - old_logps) * adv).mean()
    loss.backward()
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        old_logps = token_logps(policy, ids)
    logps = token_logps(policy, ids)
    ```

    ## Options
    None.
    """

    code = "RL505"
    name = "policy-forward-under-no-grad"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("the loss `{loss}` backpropagated on line {line} has no gradient: it is cut here ({how}), and "
               "backpropagating it trains nothing (compute the current log-probs with gradient)")
    triggers = ("backward",)

    def visit_Module(self, node: cst.Module) -> None:
        flow = self.file.fact(Flow)
        flow.analyze_all()
        lines = self.file.fact(Lines)
        for event in flow.backwards:
            loss = event.target
            cut = loss.facts.get("cut")
            if event.grad_mode is not True or cut is None or loss.facts.get("grad") == GRAPH or \
                    not event.local or loss.sources & flow.opaque:
                continue
            how = "`.detach()`" if _is_detach(cut) else "under no_grad"
            loss_code = _code(self, _loss_expr(event.node), 40)
            helper = flow.called(flow.value(cut.func)) if cut in flow.cut_inside else None
            if helper is not None:  # in the helper of another module this call runs
                how = f"{'`.detach()`' if _is_detach(flow.cut_inside[cut]) else 'under no_grad'} in " \
                      f"`{helper.qualname}` of {os.path.basename(helper.module.path)}"
                inner = flow.cut_in_helper(cut)
                where = summaries.place_of(inner) if inner is not None else None
                if where is not None:  # the helper's own no_grad is the cut: reported there
                    line = f"{lines.line(event.node)} of {self.file.path} (through the call on line {lines.line(cut)})"
                    self._report_remote(RemoteNode(*where), cut, dict(loss=loss_code, line=line, how=how))
                    continue
            self.report(cut, loss=loss_code, line=lines.line(event.node), how=how)


def _identity(value: Value):
    """The object a value holds: the model it is (by what built it), or its place when it comes from out of
    sight (an attribute of a class, a parameter)."""
    return value.facts.get("model") or value.facts.get("place")


def _passes(call: cst.Call, name: str) -> bool:
    given = keyword(call, name)
    return given is not None and not (isinstance(given.value, cst.Name) and given.value.value == "None")


def _is_detach(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "detach"


def _losses(flow: Flow) -> List[Tuple[cst.CSTNode, Value]]:
    """(where, the loss) of every backward of the file, and of the losses a trainer framework backpropagates
    (the value `compute_loss` of a transformers / TRL trainer subclass returns) or code out of the project does
    (a policy-gradient loss returned by a function no code of the project runs)."""
    found = [(event.node, event.target) for event in flow.backwards if event.grad_mode is not False]
    for function in flow.ir.all_functions():
        if (function.name == "compute_loss" and flow.framework_entry(function) or function in flow.policy_losses) \
                and function.returns:
            returned = flow.returned.get(function)
            if returned is not None:
                loss = item_of(returned, 0) if returned.facts.get("type") == "tuple" else returned
                found.append((function.returns[-1], loss or returned))
    return found


def _sink_line(lines: Lines, sink: cst.CSTNode) -> str:
    """The line of a backward, or of the return that hands the loss to whoever backpropagates it."""
    if isinstance(sink, cst.Return):
        return f"{lines.line(sink)} (it is returned there for its caller to backpropagate)"
    return str(lines.line(sink))


def _harm(flow: Flow, event) -> Optional[str]:
    """Why an in-place op on a tensor that carries gradient breaks something, or None."""
    target = event.target
    saved = target.facts.get("saved")
    if saved:
        return f"`{saved}` saved this tensor for its backward, which raises once the values change"
    obj = target.facts.get("obj")
    order = _order(event.function)
    here = order.get(event.statement, -1)
    for statement, op in flow.saved.get(obj, ()):
        if order.get(statement, len(order)) < here:
            return f"a `{op}` before it saved this tensor for its backward, which raises once the values change"
    if target.facts.get("view") is not None and isinstance(event.node, cst.Call) and \
            not _whole_read_later(flow, event, obj, order, here):
        return "it is a slice of a larger tensor with a graph, whose whole storage stays alive through backward"
    mutated = _written_place(_receiver(event.node))
    if mutated is None:  # written through an expression that names no place: which reader is another is unknown
        return None
    for read, statement in flow.reads.get(obj, ()):
        if order.get(statement, -1) > here and flow.ir.function_at(statement) is event.function and \
                _place_code(read) not in (mutated, None) and not _place_code(read).startswith(mutated + "["):
            return f"`{_place_code(read)}` holds the same tensor and reads the masked values later"
    return None


def _whole_read_later(flow: Flow, event, obj, order: dict, here: int) -> bool:
    """The whole tensor that a slice views is read after the in-place op (`return logits` after masking its
    rows): its storage is needed anyway, so keeping it alive costs nothing."""
    return any(order.get(statement, -1) > here and flow.ir.function_at(statement) is event.function and
               flow.value(read).facts.get("view") is None for read, statement in flow.reads.get(obj, ()))


def _order(function) -> dict:
    return {stmt: index for index, stmt in enumerate(function.statements)}


def _receiver(node: cst.CSTNode) -> cst.CSTNode:
    """What an in-place op writes: the receiver of `x.mul_(...)`, the base of `x[m] = ...`, the target of `x *= ...`."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.value
    if isinstance(node, cst.Assign):
        node = node.targets[0].target
    elif isinstance(node, cst.AugAssign):
        node = node.target
    return node.value if isinstance(node, cst.Subscript) else node


def _written_place(node: cst.CSTNode) -> Optional[str]:
    """The place an in-place op writes through: `logits` for `logits[row]` (a key that is not constant)."""
    while isinstance(node, cst.Subscript) and _place_code(node) is None:
        node = node.value
    return _place_code(node)


def _place_code(node: cst.CSTNode) -> Optional[str]:
    from rllint.analysis.flow import place

    return place(node)


def _loss_expr(backward: cst.Call) -> cst.CSTNode:
    if backward.args:
        return backward.args[0].value
    return backward.func.value if isinstance(backward.func, cst.Attribute) else backward


def _detached_at_once(call: cst.Call, statement: cst.CSTNode) -> bool:
    """Whether a forward's result is `.detach()`ed in the same expression (`ref(x).logits.detach()`)."""
    parents = {}
    for node in statement_nodes(statement):
        for child in children(node):
            parents[child] = node
    node = call
    while node in parents:
        parent = parents[node]
        if isinstance(parent, cst.Attribute) and parent.value is node:
            if parent.attr.value == "detach":
                return True
        elif isinstance(parent, cst.Subscript) and parent.value is node:
            pass
        elif isinstance(parent, cst.Call) and parent.func is node:
            pass
        else:
            return False
        node = parent
    return False


class AdvantageNotDetached(RLCodeOnly, CSTRule):
    """
    ## What it does
    Reports a weight of the policy's log-probs (or of their ratio) in a backpropagated loss that itself
    carries a graph from a model forward without going through log-probs: advantages or returns
    computed from a value model's prediction (`advantages = returns - critic(ids)`), or rewards from a
    reward model, that were never detached. The loss is one that reaches a backward, or a policy-gradient
    loss returned by a function that no code of the project runs (its caller, out of the project,
    backpropagates it). Reported once, where the weight is made (`returns - critic(ids)`, where
    the `.detach()` goes); at the weight in the product when it is made elsewhere. Gradient is followed
    from the forwards that make it (a model built or trained in sight, run with gradient enabled; or one
    known by its use that comes from outside the project, which freezes it nowhere: its `.logits` read, or
    called on the policy's token ids with its output fitted by a regression, as a value model is), so
    values computed under no_grad, detached, or from a callable that is not known to be a model (a reward
    function given token ids) are not reported; neither is the value loss itself (no log-probs in it).

    ## Why is this bad?
    The policy-gradient term then also differentiates through the critic (or the reward model): the
    actor loss pushes the value model to make advantages large, fighting the value loss, and the
    gradient of the policy loss no longer is the policy gradient.

    ## Example
    ```python
    values = critic(input_ids).logits.squeeze(-1)
    advantages = returns - values
    pg_loss = -(advantages * logps).mean()
    ```

    ## Use instead
    ```python
    advantages = returns - values.detach()
    ```

    ## Options
    None.
    """

    code = "RL506"
    name = "advantage-not-detached"
    severity = Severity.WARNING
    message = ("`{expr}` carries gradient from `{forward}` into the policy loss backpropagated on line {line}: "
               "the actor loss trains that model too (detach it first)")
    triggers = ("backward",) + POLICY_LOSS_WORDS

    def visit_Module(self, node: cst.Module) -> None:
        flow = self.file.fact(Flow)
        flow.analyze_all()
        lines = self.file.fact(Lines)
        products = {event.node: event for event in flow.weighted if event.local and event.grad_mode}
        reported = set()
        for sink, loss in _losses(flow):
            for product in sorted(loss.sources & products.keys(), key=lines.line):
                event = products[product]
                factor = event.extra["factor"]
                weight = factor
                while isinstance(weight, cst.UnaryOperation):  # `-advantages`: the tensor is `advantages`'
                    weight = weight.expression
                made = flow.value(weight).facts.get("obj")  # one cause, reported once where it is fixed
                at = made if isinstance(made, cst.CSTNode) and lines.holds(made) else factor
                if at in reported:
                    continue
                reported.add(at)
                forward = min(event.target.facts["forwards"], key=lambda n: str(self.file.module.code_for_node(n)))
                self.report(at, expr=_code(self, at, 50), forward=_code(self, forward, 50),
                            line=_sink_line(lines, sink))


# ("1-c" | "1+c" | "number" | "", the number it holds, the code of `c` or of the whole bound)
Shape = Tuple[str, Optional[float], str]


class MalformedClipBounds(TensorRule):
    """
    ## What it does
    Reports a PPO ratio clamp (`torch.clamp(ratio, lo, hi)`, `ratio.clamp(lo, hi)`,
    `clip`, with positional or `min=`/`max=` bounds) whose bounds are not shaped
    `1 - c` and `1 + c`: a bare clip range as a bound (`clamp(ratio, eps, 1 + eps)`),
    swapped bounds (`clamp(ratio, 1 + eps, 1 - eps)`), a lower bound >= 1 or an upper
    bound <= 1. Bounds are judged by how they are built, through local assignments
    (`low = 1 - delta` is a `1 - c` bound whatever it is called), not by their names: a
    bound is a bare clip range when it is the `c` of the other bound (`clamp(r, delta,
    1 + delta)`) or of a `1 - c` / `1 + c` bound of another ratio clamp in the file, or
    the number that `c` holds. Asymmetric bounds (`1 - eps_low`, `1 + eps_high`), one-sided
    clamps (dual-clip `clamp(ratio, max=c)`, truncated importance weights) and clamps of
    anything that is not a ratio are not reported.

    ## Why is this bad?
    The clipped surrogate keeps the ratio within `[1 - c, 1 + c]` around 1. With `eps`
    as the lower bound the ratio may fall to 0.2 before clipping; swapped bounds clamp
    every ratio to a constant and the clipped term has no gradient; an upper bound of 1
    stops the policy from raising any token's probability.

    ## Example
    ```python
    clipped = torch.clamp(ratio, eps, 1 + eps)
    ```

    ## Use instead
    ```python
    clipped = torch.clamp(ratio, 1 - eps, 1 + eps)
    ```

    ## Options
    None.

    ## References
    - Schulman et al., "Proximal Policy Optimization Algorithms", 2017, eq. 7.
    """

    code = "RL507"
    name = "malformed-clip-bounds"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "`{expr}` clamps the PPO ratio to {problem}: the bounds must be `1 - c` and `1 + c`"
    triggers = ("clamp", "clip")

    def __init__(self, file) -> None:
        super().__init__(file)
        self.clamps: List[Tuple[cst.Call, Shape, Shape]] = []

    def visit_Call(self, node: cst.Call) -> None:
        clamp = clamp_of(self.file.fact(Imports), node)
        if clamp is None or clamp.lower is None or clamp.upper is None or not _is_ratio(clamp.operand):
            return
        self.clamps.append((node, self._shape(clamp.lower), self._shape(clamp.upper)))

    def leave_Module(self, original_node: cst.Module) -> None:
        ranges = {c for _, lower, upper in self.clamps for shape, _, c in (lower, upper) if shape in ("1-c", "1+c")}
        for node, lower, upper in self.clamps:
            problem = self._problem(lower, upper, ranges)
            if problem:
                self.report(node, expr=_code(self, node), problem=problem)

    def _shape(self, bound: cst.BaseExpression) -> Shape:
        """The bound as built: `1 - c` / `1 + c` (with the code of `c`), a number, or neither (its code)."""
        if isinstance(bound, cst.Name):
            bound = self.tensors().resolve(bound)
        for shape, operator in (("1-c", cst.Subtract), ("1+c", cst.Add)):
            c = one_and(bound, operator)
            if c is not None:
                return shape, self._number(c), _code(self, c, 200)
        value = self._number(bound)
        return ("number" if value is not None else ""), value, _code(self, bound, 200)

    def _number(self, expr: cst.BaseExpression) -> Optional[float]:
        value = number_value(expr)
        if value is None and dotted(expr) is not None:
            found = self.file.fact(Values).of(expr)
            value = None if found is None else float(found.number)
        return value

    @staticmethod
    def _problem(lower: Shape, upper: Shape, ranges) -> str:
        """What is wrong with the bounds, from their shapes; `ranges` holds the clip ranges (`c` of a `1 - c` or
        `1 + c` bound) of every ratio clamp of the file."""
        if lower[0] == "1+c" and upper[0] == "1-c":
            return "swapped bounds (`1 + c` below, `1 - c` above)"
        if _bare(lower, upper, ranges):
            return "a lower bound of the bare clip range instead of `1 - c`"
        if _bare(upper, lower, ranges):
            return "an upper bound of the bare clip range instead of `1 + c`"
        if lower[0] == "1+c" or (lower[0] == "number" and lower[1] >= 1.0):
            return "a lower bound at or above 1"
        if upper[0] == "1-c" or (upper[0] == "number" and upper[1] <= 1.0):
            return "an upper bound at or below 1"
        return ""


def _bare(bound: Shape, other: Shape, ranges) -> bool:
    """Whether `bound` is a clip range itself: the `c` of the other bound or of another ratio clamp's `1 +- c`,
    by its code, or the number that `c` holds (`clamp(r, 0.2, 1.2)`)."""
    if bound[0] not in ("", "number"):
        return False
    if bound[2] in ranges or (other[0] in ("1-c", "1+c") and bound[2] == other[2]):
        return True
    if bound[0] != "number":
        return False
    if other[0] == "number":
        return other[1] > 1.0 and abs(bound[1] - (other[1] - 1.0)) < 1e-9
    return other[0] in ("1-c", "1+c") and other[1] is not None and abs(bound[1] - other[1]) < 1e-9 and bound[1] < 0.5


_RATIO_NAME = re.compile(r"ratio|^(rhos?|coef_1|(importance|is)_weights?)$")


def _is_ratio(expr: cst.BaseExpression) -> bool:
    """A likelihood ratio: a name with `ratio` in it (not a log-ratio), `rho`, or `exp(...)` of a difference."""
    key = dotted(expr)
    if key is not None:
        last = key.rsplit(".", 1)[-1].lower()
        return bool(_RATIO_NAME.search(last)) and "log" not in last and "clip" not in last
    if isinstance(expr, cst.Call) and call_name(expr) == "exp":
        inner = argument(expr, 0) if isinstance(expr.func, cst.Attribute) and dotted(expr.func.value) == "torch" \
            else (expr.func.value if isinstance(expr.func, cst.Attribute) else None)
        return isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Subtract)
    return False


# Keyword parameters that name one tensor role each (the kind is the matched suffix); two of them given the
# same variable is a mix-up unless the kinds are the same (two masks) or documented twins.
_ROLE_KEYWORD = re.compile(r"(^|_)(ids|mask|advantages|returns|values|rewards|scores|log_probs?|logprobs?|logps|"
                           r"logits|labels|length|tokens)$")
_KIND = {"returns": "advantages", "scores": "rewards", "log_prob": "logps", "log_probs": "logps",
         "logprob": "logps", "logprobs": "logps", "labels": "ids"}  # input_ids=ids, labels=ids for causal LMs


def _kind(keyword: str) -> Optional[str]:
    match = _ROLE_KEYWORD.search(keyword)
    return None if match is None else _KIND.get(match.group(2), match.group(2))


def _mixed_up(first: str, second: str) -> bool:
    """Different roles, or the `min_*` / `max_*` bounds of one quantity."""
    if _kind(first) != _kind(second):
        return True
    bounds = sorted(k.split("_", 1)[0] for k in (first, second))
    return bounds == ["max", "min"] and first.split("_", 1)[1] == second.split("_", 1)[1]


_CONSTANTS = {"None", "True", "False"}


class OneValueTwoRoles(CSTRule):
    """
    ## What it does
    Reports a call that passes the same variable (`adv`, `batch.adv`, `batch["adv"]`) to two
    different keyword parameters that each name a tensor role (`*_ids`, `*_mask`,
    `advantages`, `returns`, `values`, `rewards`, `log_probs`, `logits`, `labels`,
    `min_length` / `max_length`...):
    `loss_fn(advantages=adv, response_mask=adv)`, `model(input_ids=ids, attention_mask=ids)`.
    Parameters that are documented twins are not reported (`input_ids=ids, labels=ids`
    for a causal LM, which shifts the labels itself; `advantages=scores, returns=scores` for
    outcome-reward GRPO), nor two parameters of the same kind (`response_mask=m, loss_mask=m`),
    nor constants (`None`, `True`).

    ## Why is this bad?
    A copy-paste slip that type-checks and runs: the advantages become the mask, the ids
    become the attention mask, the minimum length equals the maximum. Losses and metrics
    stay finite, so nothing fails; the run just learns from the wrong signal (verl #2506).

    ## Example
    ```python
    loss = compute_policy_loss(old_log_prob=old, log_prob=new, advantages=adv, response_mask=adv)
    ```

    ## Use instead
    ```python
    loss = compute_policy_loss(old_log_prob=old, log_prob=new, advantages=adv, response_mask=mask)
    ```

    ## Options
    None.
    """

    code = "RL508"
    name = "one-value-two-roles"
    severity = Severity.WARNING
    # Off by default: on the primer every finding was a deliberate `min_new_tokens == max_new_tokens`.
    tier = Tier.PEDANTIC
    message = "`{value}` is passed as both `{first}=` and `{second}=`: one of them is meant to be another value"
    # The last word of every keyword `_ROLE_KEYWORD` matches (`log_prob` and `logprob` cover their plurals).
    triggers = ("ids", "mask", "advantages", "returns", "values", "rewards", "scores", "log_prob", "logprob",
                "logps", "logits", "labels", "length", "tokens")

    def visit_Call(self, node: cst.Call) -> None:
        seen = {}
        for arg in node.args:
            if arg.keyword is None or _kind(arg.keyword.value) is None:
                continue
            keyword = arg.keyword.value
            value = _variable(arg.value)
            if value is None:
                continue
            first = seen.get(value)
            if first is not None and _mixed_up(first, keyword):
                self.report(node, value=value, first=first, second=keyword)
                return
            seen.setdefault(value, keyword)


def _variable(expr: cst.BaseExpression) -> Optional[str]:
    """`adv`, `batch.adv`, `batch["adv"]`: a variable, spelled the same way wherever it is passed."""
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) \
            and isinstance(expr.slice[0].slice.value, cst.SimpleString):
        base = dotted(expr.value)
        return None if base is None else f"{base}[{expr.slice[0].slice.value.value}]"
    key = dotted(expr)
    return None if key is None or key in _CONSTANTS else key


class ReferenceLoadedDifferently(RLCodeOnly, CSTRule):
    """
    ## What it does
    Reports a KL reference model loaded differently from the policy it anchors: another
    checkpoint or model id than the one the policy starts from, another `revision=`, or
    another quantization (a reference loaded in 4 or 8 bits, with `load_in_4bit=True`,
    `load_in_8bit=True` or a `quantization_config=` such as `BitsAndBytesConfig(...)`, beside a
    policy that is not, or the reverse). When RL509 is selected by name (`--select RL509`, or
    `RL5`), another `torch_dtype=` / `dtype=` (or a cast such as `.half()`) is reported too.

    The reference is the model the KL anchors the policy to, as the code shows it: the
    `ref_model=` of a TRL / transformers trainer given the policy as `model=` (`ref_policy=` and
    `policy=` of TRL's RLOO and PPO trainers of releases 0.11-0.13), or the model whose
    log-probs, computed without gradient, are subtracted from those of the model an optimizer
    of the file trains (`logp - ref_logp`). Each load's settings are the values the engine
    resolves for the arguments of transformers' (or TRL's) `from_pretrained` (literals, constants, `argparse` and
    dataclass defaults, YAML keys and launch flags of the project), given by keyword or
    through a `**dict` of known keys; a keyword not given holds the library's default
    (revision `"main"`, no quantization) unless a `**mapping` whose keys are not known may give
    it. Only settings known on both sides are compared.

    Not reported: the same id, revision, dtype and quantization on both sides (through one
    variable, a config key, or a helper called twice with the same arguments); a reference
    taken from the SFT checkpoint the policy also starts from; copies of the policy
    (`deepcopy`, TRL's `create_reference_model`); PEFT set-ups whose reference is the policy
    with its adapter disabled; `ref_model=None`; reward models, critics and other models
    the KL does not anchor to; loads whose arguments the engine cannot resolve (a parameter
    with no caller in sight).

    ## Why is this bad?
    The KL penalty keeps the policy near where it started. A reference that is another model,
    another revision or a quantized copy is not where the policy started: the KL is far from
    zero at the first step and its gradient pulls the policy toward that other model (or
    toward the quantization error) instead of holding it in place. Runs look normal, with a
    KL term that never settles.

    ## Example
    ```python
    policy = AutoModelForCausalLM.from_pretrained(args.sft_path, torch_dtype=torch.bfloat16)
    ref = AutoModelForCausalLM.from_pretrained(args.sft_path, load_in_4bit=True)
    trainer = DPOTrainer(model=policy, ref_model=ref, args=config)
    ```

    ## Use instead
    ```python
    policy = AutoModelForCausalLM.from_pretrained(args.sft_path, torch_dtype=torch.bfloat16)
    ref = AutoModelForCausalLM.from_pretrained(args.sft_path, torch_dtype=torch.bfloat16)
    trainer = DPOTrainer(model=policy, ref_model=ref, args=config)
    ```

    ## Options
    None. Select RL509 by name to compare the dtypes too: a bfloat16 policy beside a float16
    or float32 reference shifts the KL by rounding only, which many runs accept.
    """

    code = "RL509"
    name = "reference-loaded-differently"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    message = "{detail}"
    triggers = ("from_pretrained", "ref_model", "ref_policy", "backward")

    def visit_Module(self, node: cst.Module) -> None:
        flow = self.file.fact(Flow)
        keys = (CHECKPOINT, REVISION, QUANTIZATION) + ((DTYPE,) if self.file.settings.names(self.code) else ())
        reported = set()
        for paired, policy, reference in flow.anchors():
            found = differences(policy, reference, keys)
            if not found:
                continue
            # at the reference's load, else where the setting that differs is written here, else where they pair
            written = found[0][2].reason("setting")
            at = next((n for n in (reference.facts.get("model"), *written)
                       if isinstance(n, cst.CSTNode) and flow.owns(n)), paired)
            if at in reported:
                continue
            reported.add(at)
            what = "; ".join(_load_difference(key, mine, theirs) for key, mine, theirs in found)
            self.report(at, detail=(
                f"the KL reference is loaded {what}: the KL is far from 0 at the first step and pulls the policy "
                f"toward another model (load the reference as the policy is loaded)"))


def _load_difference(key: str, policy: Value, reference: Value) -> str:
    """One load setting in which the reference differs from the policy, in words."""
    def shown(held: Value) -> str:
        setting = held.facts["setting"]
        if key == QUANTIZATION:
            text = "not quantized" if setting == 0 else \
                f"quantized to {setting} bits" if isinstance(setting, int) else "quantized"
        else:
            text = f"`{setting}`"
        origin = held.facts.get("origin")
        return f"{text} ({origin})" if origin else text

    noun = {CHECKPOINT: "from checkpoint", REVISION: "at revision", DTYPE: "in dtype", QUANTIZATION: ""}[key]
    return f"{noun + ' ' if noun else ''}{shown(reference)} while the policy is {noun + ' ' if noun else ''}" \
           f"{shown(policy)}"
