"""RL5xx: gradients and optimization: frozen references, no-grad regions, the loss slice, clip bounds.

Each rule asks `GradFlow` (grad regions, gradient taint, model forwards), `LossSlice`
(what reaches backward) and `ModelRoles` (which model is which) and only words findings.
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

import libcst as cst

from rllint.analysis.clipping import clamp_of, one_and
from rllint.analysis.grad import INPLACE_METHODS, STOPPED, GradFlow
from rllint.analysis.imports import Imports
from rllint.analysis.loss import LossSlice
from rllint.analysis.roles import (OLD_POLICY, POLICY_NAMES, REFERENCE, REFERENCE_NAMES, REWARD, ModelRoles,
                                   call_name)
from rllint.analysis.syntax import dotted
from rllint.analysis.tensors import TensorRule, argument, number_value
from rllint.analysis.values import Values
from rllint.diagnostic import Severity, Tier
from rllint.registry import CSTRule


def _code(rule: CSTRule, node: cst.CSTNode, limit: int = 70) -> str:
    text = " ".join(rule.file.module.code_for_node(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ReferenceNotFrozen(CSTRule):
    """
    ## What it does
    Reports a KL reference model that is not a frozen copy of the policy: the reference
    is the policy object itself (`ref_model = model`, `self.ref = self.policy`, or a trainer
    given the same object twice, `Trainer(model=p, ref_model=p)`); its
    parameters are given to an optimizer (reported at the `ref.parameters()` expression);
    or it is built with `copy.deepcopy` / `from_pretrained` and the file never freezes it
    (no `requires_grad_(False)`, no `p.requires_grad = False` loop over its parameters,
    no `create_reference_model`) nor hands it to code that may (a trainer, a DeepSpeed or
    accelerate wrapper).

    `ref_model = None`, PEFT set-ups that use the policy with its adapter disabled as
    the reference (`ref = model if use_peft else ...`), and a copy that this file only ever
    runs under `torch.no_grad()` (no gradient can reach it here) are not reported.

    ## Why is this bad?
    The KL penalty measures how far the policy moved from where it started. If the
    reference is the policy, the KL is always zero; if its weights train (an optimizer
    holds them, or they keep `requires_grad=True` and receive gradient through a
    forward that was not under `torch.no_grad()`), the anchor drifts with the policy and
    the penalty stops constraining anything. An unfrozen copy also doubles optimizer
    state and gradient memory when its parameters end up in a parameter group.

    ## Example
    ```python
    policy = AutoModelForCausalLM.from_pretrained(name)
    ref_model = policy
    ```

    ## Use instead
    ```python
    policy = AutoModelForCausalLM.from_pretrained(name)
    ref_model = copy.deepcopy(policy).eval().requires_grad_(False)
    ```

    ## Options
    - `reference-model-names` and `policy-model-names`: name patterns that extend the
      built-in vocabularies of reference and policy names.

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


class ReferenceForwardWithGrad(CSTRule):
    """
    ## What it does
    Reports a forward pass of the reference model, the old policy or the reward model
    (`ref_model(...)`, `self.ref_model.forward(...)`, `get_logps(ref_model, ...)` with a
    helper of this file or of another module of the project that runs the model it is given
    with gradient, `reward_model(...)`) that runs
    outside `torch.no_grad()` / `torch.inference_mode()` / a `@torch.no_grad()` function
    (or a private or nested function only ever called from such places), and whose result is not
    `.detach()`ed right away. It is reported even when the model is frozen elsewhere:
    freezing is not visible at the call site.

    A call is a model's forward by what the code shows, not by its name: token tensors go in
    (`input_ids=`, `*_ids`, `seq`), logits or hidden states are read from its output, or the
    file builds it as a model (`from_pretrained`, `deepcopy`) or uses it as one
    (`.parameters()`, `.eval()`, `.generate()`). `self.monitor_reward_model(scores)`, an
    HTTP client `query_reward_model(url, texts)` or a weakref called `reference` are not.
    A helper that runs both the policy and the reference it is given (`pair_loss(batch, policy,
    ref)`) is reported at its own forward of the reference, where the fix goes: no_grad around
    the call would cut the policy's gradient too.
    Not reported either: a helper that runs the model it is given under no_grad itself, a
    helper's own forward of its model parameter when other modules call it (they are judged there),
    functions that every call site of this file runs under no_grad, reward models this file
    trains (their parameters reach an optimizer, or their output feeds a backward that is not
    a policy-gradient step), MLX and JAX code, and files that are not RL post-training code.

    ## Why is this bad?
    Autograd records every operation of a forward that runs with gradient enabled and
    keeps its activations until the graph is freed: a second full model's worth of
    activation memory per step, often the difference between fitting a batch and OOM. If
    the model is not frozen, its weights also receive gradient through the KL or reward
    term and the optimizer state grows.

    ## Example
    ```python
    ref_logps = get_per_token_logps(self.ref_model, input_ids, attention_mask)
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        ref_logps = get_per_token_logps(self.ref_model, input_ids, attention_mask)
    ```

    ## Options
    - `reference-model-names` and `policy-model-names`: name patterns that extend the
      built-in vocabularies of reference and policy names.
    """

    code = "RL502"
    name = "reference-forward-with-grad"
    severity = Severity.ERROR
    # Off by default: whether a forward runs with gradient often depends on callers in other modules
    # (primer precision 0.27 after the fixes of issue 9).
    tier = Tier.PEDANTIC
    message = ("`{call}` runs the {role} `{model}` with gradient enabled: autograd keeps its activations "
               "for a backward that must not reach it (wrap it in `torch.no_grad()` or detach the result)")
    options = (REFERENCE_NAMES, POLICY_NAMES)
    triggers = ("ref", "old", "reward_", "rm(", "rm.", "initial_", "frozen_", "behavio")

    def visit_Module(self, node: cst.Module) -> None:
        grad = self.file.fact(GradFlow)
        for forward in grad.reported_forwards():
            if forward.role not in (REFERENCE, OLD_POLICY, REWARD) or forward.no_grad or forward.detached:
                continue
            if forward.adapter_off or not grad.model_evidence(forward) or self.file.fact(LossSlice).trains(
                    forward.model):
                continue
            self.report(forward.node, call=_code(self, forward.node), role=forward.role, model=forward.model)


class ItemInLossPath(CSTRule):
    """
    ## What it does
    Reports `.item()`, `.tolist()`, `.numpy()`, `float(t)`, `int(t)`, numpy calls and
    `torch.tensor(t)` (a copy, a new leaf even with `requires_grad=True`) applied to a value
    that carries gradient, inside the backward slice of a loss: the
    statements whose values reach `loss.backward()`, `accelerator.backward(loss)`,
    `engine.backward(loss)`, `scaler.scale(loss).backward()`, or the return of a
    `compute_loss` / `*_loss` function, including through local helper functions.
    The same calls for logging and metrics, outside that slice, are not reported, nor
    metrics returned next to the loss (`return loss, pg_loss.item()`).

    ## Why is this bad?
    A Python number has no autograd history. Whatever is computed from it and then
    re-wrapped (`torch.tensor(...)`, `requires_grad=True`) is a new leaf: the loss still
    has a value, `backward()` still runs, but no gradient reaches the policy through that
    term, and training silently optimizes something else (often nothing).

    ## Example
    ```python
    kl = float((torch.exp(delta) - delta - 1).mean())
    return pg_loss + beta * kl
    ```

    ## Use instead
    ```python
    kl = (torch.exp(delta) - delta - 1).mean()
    return pg_loss + beta * kl
    ```

    ## Options
    None.
    """

    code = "RL503"
    name = "item-in-loss-path"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "`{expr}` on line {line} is in the loss: {path}; gradients stop here"
    triggers = ("backward", "loss")

    def visit_Module(self, node: cst.Module) -> None:
        grad = self.file.fact(GradFlow)
        losses = self.file.fact(LossSlice)
        for stopper in grad.stoppers:
            if not losses.contains(stopper.statement, stopper.node) or grad.gradient_of(stopper) is None:
                continue
            lines = self.file.fact(Values)
            path = losses.describe(stopper.statement, lines.line)
            self.report(stopper.node, expr=_code(self, stopper.node), line=lines.line(stopper.node), path=path)


class InPlaceOnGraphTensor(CSTRule):
    """
    ## What it does
    Reports in-place masking or arithmetic on a tensor that carries gradient (derived from a
    policy or value-model forward, or a current log-prob / logit / ratio parameter of a loss
    helper; not detached, not under no_grad): `logps[mask] = 0`, `ratio[~mask] *= 0`,
    `.masked_fill_()`, `.mul_()`, `.add_()`, `.div_()`, `.zero_()`, `.clamp_()`, `.copy_()`.
    In-place operations on data tensors (`labels[labels == pad] = -100`, `input_ids`,
    `attention_mask`), on detached tensors and under no_grad are not reported, nor the first
    in-place op on a fresh model output or reduction before anything else uses it
    (`logits = model(ids).logits; logits.div_(temperature)`, `kl = kl_div(...).sum(-1);
    kl.masked_fill_(pad, 0.0)`): nothing saved for backward is overwritten, and autograd
    raises if it were. MLX and JAX code and files that are not RL post-training code are
    not reported.

    ## Why is this bad?
    Autograd saves tensors it needs for the backward pass. Overwriting one in place
    either raises "one of the variables needed for gradient computation has been modified
    by an inplace operation" at `backward()` time, far from the cause, or, through views
    and `.data`, silently yields wrong gradients.

    ## Example
    ```python
    per_token_logps[completion_mask == 0] = 0.0
    ```

    ## Use instead
    ```python
    per_token_logps = per_token_logps.masked_fill(completion_mask == 0, 0.0)
    ```

    ## Options
    None.
    """

    code = "RL504"
    name = "in-place-on-graph-tensor"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("in-place `{op}` on `{target}`, which carries gradient from {origin}: autograd may need the "
               "overwritten values (use `masked_fill`, `torch.where` or an out-of-place op)")
    triggers = tuple(sorted(f"{method}(" for method in INPLACE_METHODS)) + ("] =", "] *=", "] +=", "] -=", "] /=")

    def visit_Module(self, node: cst.Module) -> None:
        for event in self.file.fact(GradFlow).inplace:
            op = (f".{call_name(event.node)}()" if isinstance(event.node, cst.Call)
                  else _code(self, event.node, 50))
            self.report(event.node, op=op, target=event.target, origin=event.origin.text)


class PolicyForwardUnderNoGrad(CSTRule):
    """
    ## What it does
    Reports the policy's log-probs computed under `torch.no_grad()` (or `.detach()`ed) in a
    training step whose loss, at `backward()` or returned by `compute_loss` / a `*_loss`
    function, gets no gradient from anything else: the
    old and reference log-probs of that step are named as such (`old_*`, `ref_*`,
    `rollout_*`...) and computed under no_grad as they should be, but the current ones
    were too, here or inside a helper of another module of the project (a log-prob helper
    decorated with `@torch.no_grad()` in `utils.py`). Old and reference log-probs under
    no_grad are not reported, nor losses that are handed a model this file does not show running.

    ## Why is this bad?
    The loss is then a constant with respect to the policy's weights: `backward()` raises
    "element 0 of tensors does not require grad" or, if something else in the graph
    requires grad, the step silently trains nothing while the logs look normal.

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
    - `policy-model-names`: name patterns that extend the built-in vocabulary of policy names.
    """

    code = "RL505"
    name = "policy-forward-under-no-grad"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("the policy output here is cut from the graph ({how}), and nothing else in the loss `{loss}` "
               "(line {line}) carries gradient: backpropagating it trains nothing (compute the current log-probs "
               "with gradient)")
    options = (POLICY_NAMES,)
    triggers = ("backward", "loss")

    def visit_Module(self, node: cst.Module) -> None:
        losses = self.file.fact(LossSlice)
        for sink, tags in losses.gradless_losses():
            lines = self.file.fact(Values)
            for tag in sorted(tags, key=lambda t: lines.line(t.node)):
                if tag.kind == STOPPED:
                    self.report(tag.node, how=tag.text,
                                loss=_code(self, sink.roots[0], 40), line=lines.line(sink.node))


class AdvantageNotDetached(CSTRule):
    """
    ## What it does
    Reports advantages or returns computed from a value-model forward that still carries
    gradient (`critic(...)`, `value_model(...)`, `self.value_head(...)`, or the values an
    actor-critic policy returns, `logits, _, values = model(x)`; outside no_grad and not
    detached) and then multiplied with the policy's ratio or log-probs in the policy
    loss. Reported at the subtraction of the value prediction. Values computed under no_grad,
    or detached before the subtraction, are not reported; neither is the value loss itself.

    ## Why is this bad?
    The policy-gradient term then also differentiates through the critic: the actor loss
    pushes the value model to make advantages large, fighting the value loss, and the
    gradient of the policy loss no longer is the policy gradient.

    ## Example
    ```python
    values = critic(input_ids)
    advantages = returns - values
    pg_loss = -(advantages * ratio).mean()
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
    message = ("`{expr}` subtracts a value prediction that still carries gradient, and the result meets "
               "{policy} in the policy loss: the actor loss trains the critic (detach the values first)")
    # value models by name, or by the regression loss that fits them (a learned baseline)
    triggers = ("critic", "value", "v_head", "vpred", "mse_loss", "l1_loss", "huber", "** 2", "pow(2", "square(")

    def visit_Module(self, node: cst.Module) -> None:
        for sub, policy in self.file.fact(GradFlow).advantages.items():
            self.report(sub, expr=_code(self, sub), policy=policy.text)


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
