"""RL1xx: log-probabilities and numerics: ratios, preference margins, gathers, casts, shifts."""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.domains.torch_ops import balanced
from rllint.analysis.clipping import around_one, clamp_of, clip_range, exponent_of, summed_log_ratio, surrogate_sign
from rllint.analysis.facts import TOKEN_LOGPROBS, VOCAB
from rllint.analysis.flow import Flow
from rllint.analysis.ir import FunctionIR
from rllint.analysis.grad import EMPTY, GradFlow, carries
from rllint.analysis.imports import Imports
from rllint.analysis.kl import (bound_name, k3_exponents, linear_terms, log_ratio, reference_use, says_reverse,
                                weighted_by_name)
from rllint.analysis.logged import LOG_CALLS
from rllint.analysis.loss import LossSlice
from rllint.analysis.purpose import RLCodeOnly
from rllint.analysis import summaries
from rllint.analysis.roles import bound_parameter
from rllint.analysis.syntax import children, updates_in_place, walk
from rllint.analysis.tensors import (
    ADVANTAGES, CHOSEN, LOGITS, LOGPROBS, OLD_ROLE, PROBS, REF_ROLE, REJECTED, REWARDS, TOKEN_IDS, Kind,
    Tensors, argument, int_value, last_part, name_kind, number_value, shifted_names,
)
from rllint.analysis.values import Values, format_number
from rllint.diagnostic import Severity, Tier
from rllint.rules.bases import TensorRule


def callee(call: cst.Call) -> Optional[str]:
    """The last name of what a call calls: `F.log_softmax(...)` -> `log_softmax`. A cheap test
    that keeps rules from asking `Tensors` about calls that cannot matter."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else None


class ReversedImportanceRatio(TensorRule):
    """
    ## What it does
    Reports an importance ratio written with the old (behaviour, rollout) log-probs first,
    `torch.exp(old_logps - logps)` or `(behaviour_logps - logps).exp()`, and a ratio to the
    reference model written the same way when it is used as a ratio (clamped, or named a
    ratio or weight).

    The sign is tracked through unary minus, subtraction order, positive factors and names
    assigned such differences. Names that hold negative log-probs (`neglogp`, `nll`)
    reverse the polarity, so `exp(old_neglogp - neglogp)` is correct. The k3 KL estimator
    `exp(ref - logp) - (ref - logp) - 1` is correct with the reference first, and
    `exp(logp - logp.detach())` is not a ratio of two policies; neither is reported, and
    neither is the k3 estimator weighted by the importance ratio (`coef * exp(ref - logp) -
    (ref - logp) - 1`). A ratio that is only printed, logged or collected (comparing vLLM's
    log-probs with the trainer's) weights no loss and is not reported. Log-probs computed as
    those of a mixture of policies (`log(a * teacher_lp.exp() + (1 - a) * old_lp.exp())`,
    MiniLLM's behaviour policy) are the policy's only if every component is.

    ## Why is this bad?
    PPO and GRPO clip `pi_new / pi_old`. The inverted ratio `pi_old / pi_new` falls when
    the policy raises a token's probability, so the surrogate pushes probability away from
    high-advantage tokens and clipping holds the update on the wrong side. Training runs
    without an error while the reward falls.

    ## Example
    ```python
    ratio = torch.exp(old_per_token_logps - per_token_logps)
    ```

    ## Use instead
    ```python
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    ```

    ## Options
    None. Silence a deliberate inverse ratio with `# noqa: RL101`.

    ## References
    - Schulman et al., "Proximal Policy Optimization Algorithms", 2017, eq. 6.
    """

    code = "RL101"
    name = "reversed-importance-ratio"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("`{expr}` is {first}/new: the PPO ratio is inverted, so clipping keeps the policy moving "
               "away from high-advantage tokens (use `exp(new - {first})`)")
    triggers = ("exp(",)

    def __init__(self, file) -> None:
        super().__init__(file)
        self.candidates: List[Tuple[cst.Call, str]] = []
        self.kl_terms: Set[int] = set()
        self.ratio_like: Set[int] = set()
        self.bound: Dict[int, str] = {}  # exp calls assigned to a name: the name

    def visit_Call(self, node: cst.Call) -> None:
        if callee(node) not in ("exp", "clamp", "clip", "clamp_max", "clamp_min"):
            return
        tensors = self.tensors()
        op, operand = tensors.call_name(node)
        if op in ("clamp", "clip", "clamp_max", "clamp_min") and operand is not None:
            self.ratio_like.add(id(tensors.resolve(operand)))
        if op != "exp" or operand is None:
            return
        first = self._inverted(tensors, operand)
        if first:
            self.candidates.append((node, first))

    def visit_Assign(self, node: cst.Assign) -> None:
        target = node.targets[0].target if len(node.targets) == 1 else None
        name = last_part(target) if isinstance(target, cst.Name) else None
        if name and ("ratio" in name.lower() or "weight" in name.lower() or "coef" in name.lower()):
            self.ratio_like.add(id(node.value))
        if name and isinstance(node.value, cst.Call):
            self.bound[id(node.value)] = name

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        """Marks `exp(d)` in `exp(d) - d - 1` (and `r - 1 - d` with `r = exp(d)`): the k3 KL estimator."""
        if isinstance(node.operator, cst.Subtract):
            self.kl_terms.update(id(call) for call in k3_exponents(self.tensors(), node))

    def leave_Module(self, original_node: cst.Module) -> None:
        tensors = self.tensors()
        for call, first in self.candidates:
            if id(call) in self.kl_terms:
                continue
            if first == "ref" and id(call) not in self.ratio_like:
                continue
            if id(call) in self.bound and _only_displayed(tensors, call, self.bound[id(call)]):
                continue
            self.report(call, expr=tensors.code(call), first=first)

    @staticmethod
    def _inverted(tensors: Tensors, exponent: cst.BaseExpression) -> Optional[str]:
        """"old" / "ref" when the exponent is (old or ref) - new in log-prob terms, else None."""
        signs = log_ratio(tensors, exponent)
        if signs is None or signs["new"] != -1:
            return None
        if signs["old"] == 1 and signs["ref"] == 0:
            return "old"
        if signs["ref"] == 1 and signs["old"] == 0:
            return "ref"
        return None


def _only_displayed(tensors: Tensors, call: cst.Call, name: str) -> bool:
    """Whether the name a ratio is bound to is only printed, logged or collected (`print(f"{ratio}")`,
    `ratios.append(ratio)`): a comparison of two sets of log-probs, not a ratio that weights a loss."""
    scope = tensors.scope(call)
    if scope is None:
        return False
    uses = 0
    stack: List[Tuple[cst.CSTNode, bool]] = [(scope.node, False)]
    while stack:
        node, displayed = stack.pop()
        if isinstance(node, cst.Name) and node.value == name:
            uses += 1
            if not displayed:
                return False
            continue
        if isinstance(node, cst.AssignTarget) or (isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not scope.node):
            continue
        shown = displayed or isinstance(node, cst.FormattedString) or (
            isinstance(node, cst.Call) and _displays(tensors, node))
        stack.extend((child, shown) for child in children(node))
    return uses > 0


_DISPLAYS = LOG_CALLS | {"append", "extend"}
_NUMERIC = ("torch", "numpy", "math", "mlx", "jax")


def _displays(tensors: Tensors, call: cst.Call) -> bool:
    """A call that prints, logs or collects its arguments; `torch.log(x)` and `x.log()` compute."""
    name = callee(call)
    if name not in _DISPLAYS:
        return False
    if name != "log":
        return True
    qualified = tensors.qualified(call.func) or ""
    return bool(qualified) and not qualified.startswith(_NUMERIC)


def _policy_side(pattern):
    def accepts(leaf: cst.BaseExpression) -> bool:
        name = last_part(leaf) if isinstance(leaf, (cst.Name, cst.Attribute, cst.Subscript)) else None
        if not name:
            return False
        lowered = name.lower()
        return bool(pattern.search(lowered)) and not REF_ROLE.search(lowered)
    return accepts


_IS_CHOSEN = _policy_side(CHOSEN)
_IS_REJECTED = _policy_side(REJECTED)


class ReversedPreferenceMargin(TensorRule):
    """
    ## What it does
    Reports a DPO / IPO / SimPO-style loss that falls as the rejected response beats the
    chosen one: `-logsigmoid(beta * (rejected - chosen))`,
    `softplus(beta * (chosen - rejected))`, `-logsigmoid(-beta * margin)` with
    `margin = chosen - rejected`. The sign is followed through unary minus, subtraction
    order, positive scale factors (`beta`, literals), names assigned such expressions and
    monotone functions. Reference log-probs (`ref_chosen_logps`) do not count as the
    policy's side. The deliberately flipped term of a label-smoothed loss is left alone: the
    term weighted by `s` where another term is weighted by `(1 - s)`, whatever `s` is called,
    or by a smoothing weight by name (`... * label_smoothing`, `eps * reverse_loss` with
    `reverse_loss` a name for the reversed term, as in conservative DPO); the main term,
    weighted by `(1 - s)`, is checked like any other.

    ## Why is this bad?
    Minimising such a loss raises the likelihood of the rejected responses and lowers that
    of the chosen ones: the model is trained toward the dispreferred behaviour while the
    loss curve looks healthy.

    ## Example
    ```python
    losses = -F.logsigmoid(beta * (rejected_logratios - chosen_logratios))
    ```

    ## Use instead
    ```python
    losses = -F.logsigmoid(beta * (chosen_logratios - rejected_logratios))
    # or, equivalently
    losses = F.softplus(beta * (rejected_logratios - chosen_logratios))
    ```

    ## Options
    None.

    ## References
    - Rafailov et al., "Direct Preference Optimization", 2023, eq. 7.
    """

    code = "RL102"
    name = "reversed-preference-margin"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("`{expr}` falls as the rejected response beats the chosen one: minimising it trains the "
               "policy toward the rejected responses (the margin must be chosen - rejected)")
    triggers = ("sigmoid", "softplus")

    def __init__(self, file) -> None:
        super().__init__(file)
        self.smoothing: Set[int] = set()
        self.candidates: List[Tuple[cst.CSTNode, cst.Call]] = []
        self.main_weights: Set[str] = set()  # `s` of the `(1 - s)` weights of main terms
        self.weighted: List[Tuple[str, int]] = []  # (the weight's code, the term) of other weighted terms

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Multiply):
            for factor, other in ((node.left, node.right), (node.right, node.left)):
                main = _one_minus(factor)
                if isinstance(other, cst.Name) and main is None and _smoothing_factor(factor):
                    other = self.tensors().resolve(other)  # `reverse = -logsigmoid(...)`, then `eps * reverse`
                other = _peel_reduction(other)
                if isinstance(other, cst.UnaryOperation):
                    other = _peel_reduction(other.expression)
                if not (isinstance(other, cst.Call) and callee(other) in ("softplus", "logsigmoid")):
                    continue
                if main is not None:  # `(1 - s) * main_term`: the term to check, and `s` the smoothing weight
                    self.main_weights.add(self.tensors().code(main, 200))
                    continue
                self.weighted.append((self.tensors().code(factor, 200), id(other)))
                if _smoothing_factor(factor):
                    self.smoothing.add(id(other))

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Minus):
            inner = _peel_reduction(node.expression)
            if isinstance(inner, cst.Call) and callee(inner) == "log" and len(inner.args) == 1 and \
                    isinstance(inner.args[0].value, cst.Call) and callee(inner.args[0].value) == "sigmoid":
                inner = inner.args[0].value  # -log(sigmoid(z)), written out
                self._check(node, inner, "sigmoid", expected=1)
            else:
                self._check(node, inner, "logsigmoid", expected=1)

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node, node, "softplus", expected=-1)

    def _check(self, reported: cst.CSTNode, call: cst.BaseExpression, op_name: str, expected: int) -> None:
        if not isinstance(call, cst.Call) or callee(call) != op_name or id(call) in self.smoothing:
            return
        tensors = self.tensors()
        op, operand = tensors.call_name(call)
        if op != op_name or operand is None:
            return
        chosen = tensors.polarity(operand, _IS_CHOSEN)
        rejected = tensors.polarity(operand, _IS_REJECTED)
        if chosen is None or rejected is None or (chosen == 0 and rejected == 0):
            return
        if chosen in (0, -expected) and rejected in (0, expected):
            self.candidates.append((reported, call))

    def leave_Module(self, original_node: cst.Module) -> None:
        tensors = self.tensors()
        self.smoothing.update(term for weight, term in self.weighted if weight in self.main_weights)
        for reported, call in self.candidates:
            if id(call) not in self.smoothing:
                self.report(reported, expr=tensors.code(reported))


def _one_minus(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`s` of a `(1 - s)` weight: the weight of the main term of a smoothed loss, whose `s` term is flipped."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Subtract) \
            and number_value(expr.left) == 1.0:
        return expr.right
    return None


def _smoothing_factor(expr: cst.BaseExpression) -> bool:
    """`label_smoothing`, `eps`: by its name, the weight of the flipped term of a smoothed preference loss."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and ("smooth" in node.value.lower() or node.value in ("eps", "ls", "epsilon")):
            return True
        stack.extend(node.children)
    return False


def _peel_reduction(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`f(x).mean()` -> `f(x)`: reductions keep the direction of a loss."""
    while (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
           and expr.func.attr.value in ("mean", "sum") and not expr.args):
        expr = expr.func.value
    return expr


_LOSS_MODULES = {"CrossEntropyLoss": "cross_entropy", "NLLLoss": "nll_loss"}
_RESHAPES = ("view", "reshape", "squeeze", "view_as", "reshape_as", "float", "contiguous")


class CrossEntropyAsLogProb(TensorRule):
    """
    ## What it does
    Reports the result of `cross_entropy` or `nll_loss` with `reduction="none"` stored,
    without a minus sign, under a log-prob name (`logp`, `log_probs`, `logprobs`,
    `token_logps`, `per_token_logps`...), unless the next statement that reads the name
    negates it (`logprobs = torch.neg(logprobs)`, `logprobs = -logprobs`, `logprobs.neg_()`).

    ## Why is this bad?
    Cross-entropy is the *negative* log-likelihood. Used as log-probs, every ratio, KL
    term and policy-gradient weight built on it has the wrong sign: `exp(logp - old)`
    becomes `old / new`, and a loss that should raise the likelihood of good completions
    lowers it.

    ## Example
    ```python
    token_logps = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    ```

    ## Use instead
    ```python
    token_logps = -F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    # or keep the sign and say so
    token_nll = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    ```

    ## Options
    None.
    """

    code = "RL103"
    name = "cross-entropy-as-log-prob"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("`{target}` holds `{op}(..., reduction=\"none\")`, a negative log-prob: negate it "
               "(`-{op}(...)`) or every ratio and KL term built on it has the wrong sign")
    triggers = ("cross_entropy", "nll_loss")

    def __init__(self, file) -> None:
        super().__init__(file)
        self._after: Dict[int, List[cst.BaseStatement]] = {}  # id(small statement) -> the statements after it

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        target = node.targets[0].target.value
        kind = name_kind(target)
        if kind is None or kind.kind != LOGPROBS:
            return
        value = node.value
        while isinstance(value, cst.Call) and callee(value) in _RESHAPES and isinstance(value.func, cst.Attribute):
            value = value.func.value
        if not isinstance(value, cst.Call):
            return
        if isinstance(value.func, cst.Call) and callee(value.func) in _LOSS_MODULES:
            value, op = value.func, _LOSS_MODULES[callee(value.func)]  # nn.CrossEntropyLoss(reduction="none")(x, y)
        elif callee(value) in ("cross_entropy", "nll_loss"):
            op = callee(value)
            if not self.tensors().is_function(value.func):
                return
        else:
            return
        reduction = argument(value, None, "reduction")
        if isinstance(reduction, cst.SimpleString) and reduction.evaluated_value == "none" and \
                not self._negated_next(node, target):
            self.report(node, target=target, op=op)

    def visit_Module(self, node: cst.Module) -> None:
        self._index(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._index(node.body)

    def _index(self, body) -> None:
        for index, statement in enumerate(body):
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    self._after[id(small)] = list(body[index + 1:])

    def _negated_next(self, assign: cst.Assign, target: str) -> bool:
        """The next statement that reads `target` negates it in place or rebinds it to its negation
        (`logprobs = torch.neg(logprobs)`, `logprobs = -logprobs`, `logprobs.neg_()`, `logprobs *= -1`): the name
        holds log-probs from there on."""
        for statement in self._after.get(id(assign), ()):
            if not any(isinstance(n, cst.Name) and n.value == target for n in walk(statement)):
                continue
            small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and \
                len(statement.body) == 1 else None
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                    isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == target:
                return _negation_of(small.value, target)
            if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and \
                    small.target.value == target:
                return isinstance(small.operator, cst.MultiplyAssign) and number_value(small.value) == -1
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                call = small.value
                return isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and \
                    call.func.value.value == target and (callee(call) == "neg_" or (
                        callee(call) == "mul_" and len(call.args) == 1 and number_value(call.args[0].value) == -1))
            return False
        return False


def _negation_of(expr: cst.BaseExpression, name: str) -> bool:
    """`-name`, `torch.neg(name)`, `name.neg()`, `torch.negative(name)`, `-1 * name`, `name * -1`."""
    def is_name(e: cst.BaseExpression) -> bool:
        return isinstance(e, cst.Name) and e.value == name
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return is_name(expr.expression)
    if isinstance(expr, cst.Call) and callee(expr) in ("neg", "negative"):
        operand = expr.func.value if isinstance(expr.func, cst.Attribute) and not expr.args else (
            expr.args[0].value if len(expr.args) == 1 else None)
        return operand is not None and is_name(operand)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return (is_name(expr.left) and number_value(expr.right) == -1) or (
            is_name(expr.right) and number_value(expr.left) == -1)
    return False


class ReversedLogSoftmax(TensorRule):
    """
    ## What it does
    Reports a hand-made log-softmax with the sign reversed, `x.logsumexp(-1, keepdim=True) - x`,
    where it is used as log-probs: stored under a log-prob name or gathered.

    ## Why is this bad?
    `logsumexp(x) - x` is the negative log-probability, always >= 0. As log-probs it turns
    every ratio, KL term and likelihood objective upside down.

    ## Example
    ```python
    logps = logits.logsumexp(dim=-1, keepdim=True) - logits
    ```

    ## Use instead
    ```python
    logps = logits - logits.logsumexp(dim=-1, keepdim=True)  # or logits.log_softmax(-1)
    ```

    ## Options
    None. A negative log-prob stored as such (`nll = x.logsumexp(-1) - picked`) and entropy
    (`logsumexp(x) - (p * x).sum(-1)`) are not reported.
    """

    code = "RL104"
    name = "reversed-log-softmax"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "`{expr}` is logsumexp(x) - x, the negative log-softmax (>= 0), used as log-probs: use `x - logsumexp(x)`"
    triggers = ("logsumexp",)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            kind = name_kind(node.targets[0].target.value)
            if kind is not None and kind.kind == LOGPROBS:
                self._check(node.value)

    def visit_Return(self, node: cst.Return) -> None:
        function = self._nesting[-1]
        if node.value is not None and isinstance(function, cst.FunctionDef):
            name = function.name.value.lower()
            kind = name_kind(name)
            if "log_softmax" in name or (kind is not None and kind.kind == LOGPROBS):
                self._check(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        if callee(node) not in ("gather", "take_along_dim"):
            return
        tensors = self.tensors()
        gather = tensors.gather(node)
        if gather is not None:
            self._check(gather.source)

    def _check(self, expr: cst.BaseExpression) -> None:
        """Reports `expr` when it is logsumexp(x) - x (in any spelling of the same sum)."""
        if not isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation)):
            return
        tensors = self.tensors()
        terms = tensors.terms(expr, depth=0)
        if not terms or len(terms) != 2:
            return
        for (sign, leaf), (other_sign, other) in (terms, terms[::-1]):
            call = tensors.resolve(leaf)
            if isinstance(call, cst.Call) and callee(call) == "logsumexp" and sign == 1 and other_sign == -1:
                _, operand = tensors.call_name(call)
                if operand is not None and operand.deep_equals(other):
                    self.report(expr, expr=tensors.code(expr))
                    return


# Id tensors that cover the whole sequence (prompt and completion), as opposed to completion ids.
_FULL_SEQUENCE_IDS = {"input_ids", "labels", "sequences", "seqs", "sequence_ids", "full_ids", "token_ids"}
_SEQUENCE_ID_NAMES = ("ids", "tokens", "sequences", "seqs", "responses")


class GatherNonFinalDim(TensorRule):
    """
    ## What it does
    Reports `gather` / `torch.gather` / `take_along_dim` on a vocabulary-shaped tensor (logits,
    log-probs or probabilities) along a dim other than its vocabulary axis, and `softmax` /
    `log_softmax` of per-token log-probs that were already gathered (`[B, T]`: the vocabulary axis
    is gone, so the softmax runs over the time axis).

    By default it reports only where the engine knows the tensor's rank and which axis is the
    vocabulary, from where the tensor comes from: the `.logits` of a causal language model built in
    sight (`AutoModelForCausalLM.from_pretrained`, the model a TRL trainer is built with), followed
    through slices, indexing (`logits[0]` is `[T, V]`), `squeeze(0)`, `view` / `reshape` (the axis
    whose size is read from the vocabulary stays the vocabulary), transposes and softmaxes. So
    `model(x).logits.squeeze(0).log_softmax(-1).gather(1, ids)` (dim 1 *is* the vocabulary of a
    `[T, V]` tensor), a gather along the same dim as the softmax that produced the tensor, and
    gathers of tensors without a vocabulary axis (values, rewards) are not reported. A name is never
    the evidence: `def f(logits, labels): ...gather(1, ...)` is silent by default.

    When RL105 is selected by name (`--select RL105` or `RL1`), tensors whose rank is not known are
    judged too, from their names and how they are cut: a parameter called `logits` or `log_probs`
    gathered on dim 1 with the ids of a sequence (`response_ids`, `ids[:, 1:]`), or on dim 0 with
    token ids; a softmax of a tensor that a gather of log-probs produced.

    ## Why is this bad?
    Gathering token ids along the time or batch axis picks the probability of *some* token
    at *another position*: the result has the right shape, the loss trains, and the
    log-probs are garbage. A softmax of gathered log-probs normalises across the tokens of a
    sequence instead of over the vocabulary: each token's value then depends on the others.

    ## Example
    ```python
    log_probs = F.log_softmax(model(ids).logits, dim=-1)     # [B, T, V]
    token_logps = torch.gather(log_probs, 1, ids.unsqueeze(-1)).squeeze(-1)
    ```

    ## Use instead
    ```python
    token_logps = torch.gather(log_probs, -1, ids.unsqueeze(-1)).squeeze(-1)
    ```

    ## Options
    None.
    """

    code = "RL105"
    name = "gather-non-final-dim"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "`{expr}` {why}"
    triggers = ("gather", "take_along_dim", "softmax")
    _GATHER = ("gathers along dim {dim} of a vocabulary-shaped {kind} tensor: it picks values at other positions, "
               "not the log-prob of each token (gather along dim -1)")
    _SOFTMAX = ("normalises per-token log-probs that were already gathered: the vocabulary axis is gone, so "
                "`{op}` runs over the time (or batch) axis and mixes the tokens of a sequence")

    def visit_Call(self, node: cst.Call) -> None:
        broad = self.file.settings.names(self.code)
        if callee(node) in ("softmax", "log_softmax"):
            if self._gathered_logps(node):
                self.report(node, expr=self.tensors().code(node), why=self._SOFTMAX.format(op=callee(node)))
            elif broad:
                self._softmax_over_time(node)
            return
        if callee(node) not in ("gather", "take_along_dim"):
            return
        gather = self.tensors().gather(node)
        if gather is None:
            return
        proven = self._proven(gather)
        if proven is not None:
            if proven:
                self.report(node, expr=self.tensors().code(node), why=proven)
        elif broad:
            self._by_names(node)

    def _proven(self, gather) -> Optional[str]:
        """What is wrong with a gather whose source has a known rank and vocabulary axis ("" when nothing is),
        or None when the engine does not know them."""
        facts = self.file.fact(Flow).value(gather.source).facts
        rank, axes, dist = facts.get("rank"), facts.get("axes") or (), facts.get("dist")
        content = facts.get("content")
        vocab = axes.index(VOCAB) if VOCAB in axes else None
        if rank is None or content not in (LOGITS, LOGPROBS, PROBS) or (vocab is None and dist is None):
            return None
        dim = int_value(gather.dim) if gather.dim is not None else None
        if dim is None:
            return None
        axis = dim + rank if dim < 0 else dim
        if axis in (vocab, dist) or not 0 <= axis < rank:
            return ""  # the vocabulary, or the axis its softmax normalised
        return self._GATHER.format(dim=dim, kind=content)  # the engine's content names are the kinds' names

    def _gathered_logps(self, node: cst.Call) -> bool:
        """`softmax(x)` of per-token log-probs, as the engine follows them from a gather along the vocabulary."""
        _, operand = self.tensors().call_name(node)
        return operand is not None and self.file.fact(Flow).value(operand).facts.get("content") == TOKEN_LOGPROBS

    def _by_names(self, node: cst.Call) -> None:
        """The broad form: tensors of unknown rank, judged by their names and how they are cut."""
        found = _vocab_gather(self, node)
        if found is None:
            return
        gather, kind = found
        dim = int_value(gather.dim)
        if dim is None or dim == -1 or dim == kind.dim:
            return
        tensors = self.tensors()
        rank = kind.rank
        if rank is not None:
            if dim == rank - 1:
                return
        elif dim >= 2 or (dim == 1 and not self._sequence_index(tensors, gather.index)) or (
                dim == 0 and (tensors.kind(gather.index) or _NO_KIND).kind != TOKEN_IDS):
            return  # rank unknown: dim 0 with row positions (`nonzero()`) selects rows
        self.report(node, expr=tensors.code(node), why=self._GATHER.format(dim=dim, kind=kind.kind))

    def _softmax_over_time(self, node: cst.Call) -> None:
        """`softmax(token_logps, dim=-1)` where `token_logps` was gathered per token: the vocabulary axis is gone."""
        tensors = self.tensors()
        op, operand = tensors.call_name(node)
        if op not in ("softmax", "log_softmax") or operand is None or tensors.token_gather(operand) is None:
            return
        kind = tensors.kind(operand)
        if kind is not None and kind.kind == LOGPROBS and not kind.vocab:
            self.report(node, expr=tensors.code(node), why=self._SOFTMAX.format(op=op))

    @staticmethod
    def _sequence_index(tensors: Tensors, index: cst.BaseExpression) -> bool:
        """An index of token ids with a time axis (so the gathered tensor is at least [B, T, V])."""
        for step in tensors.history(index):
            if isinstance(step, cst.Subscript) and any(_scalar_index(e.slice) for e in step.slice):
                return False  # `ids[i, a:b]` drops the batch axis: the time axis may be dim 0
            if isinstance(step, cst.Subscript) and any(
                    isinstance(e.slice, cst.Slice) for e in step.slice[1:]):
                return True
            if isinstance(step, cst.Name) and tensors.value_of(step) is not None:
                continue  # its source is visible: the source decides
            name = last_part(step) if isinstance(step, (cst.Name, cst.Attribute, cst.Subscript)) else None
            if name:
                kind = name_kind(name)
                return bool(kind and kind.kind == TOKEN_IDS and name.lower().endswith(_SEQUENCE_ID_NAMES))
        return False


_NO_KIND = Kind("")


def _scalar_index(index: cst.BaseSlice) -> bool:
    """An index that picks one position of its axis (`i`, `0`), not `:`, `...`, `None` or a mask."""
    if not isinstance(index, cst.Index):
        return False
    value = index.value
    if isinstance(value, cst.Name):
        return value.value != "None" and name_kind(value.value) is None
    return isinstance(value, (cst.Integer, cst.UnaryOperation, cst.BinaryOperation))


class GatherIndexRank(TensorRule):
    """
    ## What it does
    Reports a gather on a vocabulary-shaped tensor whose index is a token-id tensor
    (`input_ids`, `labels`, `completion_ids`, `actions`, `tokens`...) that was never given
    its trailing axis (`.unsqueeze(-1)`, `[..., None]`). A slice of one position
    (`ids[:, t:t + 1]`) keeps its axis and is fine.

    ## Why is this bad?
    `gather` needs an index of the same rank as the source. With `[B, T]` ids on a
    `[B, T, V]` tensor it raises at best; with a `[B]` index on `[B, V]` or where a
    framework broadcasts, it silently picks the wrong entries.

    ## Example
    ```python
    token_logps = torch.gather(logps, -1, completion_ids)
    ```

    ## Use instead
    ```python
    token_logps = torch.gather(logps, -1, completion_ids.unsqueeze(-1)).squeeze(-1)
    ```

    ## Options
    None.
    """

    code = "RL106"
    name = "gather-index-rank"
    severity = Severity.WARNING
    message = ("`{expr}` indexes a vocabulary-shaped tensor with token ids `{index}` that lack the trailing "
               "axis: use `{index}.unsqueeze(-1)` (and `.squeeze(-1)` after)")
    triggers = ("gather", "take_along_dim")

    def visit_Call(self, node: cst.Call) -> None:
        found = _vocab_gather(self, node)
        if found is None:
            return
        gather, kind = found
        tensors = self.tensors()
        index_kind = tensors.kind(gather.index)
        if index_kind is None or index_kind.kind != TOKEN_IDS or tensors.unsqueezed(gather.index) or \
                self._ranks_match(gather):
            return
        self.report(node, expr=tensors.code(node), index=tensors.code(gather.index, 40))

    def _ranks_match(self, gather) -> bool:
        """The engine knows the gathered tensor has one axis (one position's logits, `logits[0, -1]`), or the
        index has as many as it: nothing is missing."""
        flow = self.file.fact(Flow)
        source, index = (flow.value(e).facts.get("rank") for e in (gather.source, gather.index))
        return source == 1 or (source is not None and source == index)


_LOW_PRECISION_SENSITIVE = ("log_softmax", "logsumexp", "softmax", "cross_entropy", "entropy")


class LowPrecisionLogSoftmax(TensorRule):
    """
    ## What it does
    Reports `log_softmax`, `logsumexp`, `softmax`, `cross_entropy` or `entropy` applied to a
    tensor explicitly cast to float16 or bfloat16 (`.half()`, `.bfloat16()`,
    `.to(torch.bfloat16)`, `dtype=torch.bfloat16`) with no `.float()` in between. Inside
    `torch.autocast` these ops run in float32 and are not reported; casts after the op are
    fine.

    ## Why is this bad?
    bfloat16 keeps 8 bits of mantissa. Over a 150k-token vocabulary, the normaliser and the
    per-token log-probs lose most of their precision: importance ratios of identical
    policies drift away from 1, and KL estimates and clipping fractions become noise.

    ## Example
    ```python
    logps = F.log_softmax(logits.to(torch.bfloat16), dim=-1)
    ```

    ## Use instead
    ```python
    logps = F.log_softmax(logits.float(), dim=-1)
    ```

    ## Options
    None.
    """

    code = "RL107"
    name = "low-precision-log-softmax"
    severity = Severity.WARNING
    message = ("`{op}` runs on `{cast}`, a {dtype} tensor: log-probs lose precision over the vocabulary "
               "(ratios of equal policies drift from 1); upcast with `.float()` first")
    triggers = ("half", "bfloat16", "float16")

    def visit_Call(self, node: cst.Call) -> None:
        if callee(node) not in _LOW_PRECISION_SENSITIVE:
            return
        tensors = self.tensors()
        op, operand = tensors.call_name(node)
        if op not in _LOW_PRECISION_SENSITIVE or operand is None or tensors.in_autocast(node):
            return
        if op == "entropy" and not tensors.is_function(node.func):
            return
        own = tensors.cast_precision(node, op)
        if own == "full":
            return
        cast = node if own == "half" else tensors.half_cast(operand)
        if cast is None:
            return
        dtype = "bfloat16" if "bfloat16" in tensors.code(cast, 1000) else "float16"
        self.report(node, op=op, cast=tensors.code(cast, 60), dtype=dtype)


class LogOfSoftmax(RLCodeOnly, TensorRule):
    """
    ## What it does
    Reports `torch.log(softmax(x))`, `x.softmax(-1).log()` and `torch.log(probs + 1e-8)`
    where `probs` came from `softmax`, in RL post-training code (the same line in a vision
    model or a sampler is another library's business).

    ## Why is this bad?
    Small probabilities underflow to 0 in `softmax`, so `log` returns `-inf` (or, with the
    epsilon, a floor of `log(1e-8)` that biases every rare token). `log_softmax` computes
    the same thing stably and in one kernel.

    ## Example
    ```python
    log_p = torch.log(torch.softmax(logits, dim=-1) + 1e-8)
    ```

    ## Use instead
    ```python
    log_p = torch.log_softmax(logits, dim=-1)
    ```

    ## Options
    None. `log_softmax(x).exp()` and `softmax(log_softmax(x))` are fine. Off by default
    (on real RL code most findings were entropies, `p * log(p.clamp_min(eps))`, where the
    floor is multiplied by a vanishing `p`); turn it on with `extend-select = ["RL108"]`.
    """

    code = "RL108"
    name = "log-of-softmax"
    severity = Severity.WARNING
    tier = Tier.PEDANTIC
    message = "`{expr}` takes the log of a softmax: it underflows to -inf (or is floored by the epsilon); use `log_softmax`"
    triggers = ("softmax",)

    def visit_Call(self, node: cst.Call) -> None:
        if callee(node) != "log":
            return
        tensors = self.tensors()
        op, operand = tensors.call_name(node)
        if op != "log" or operand is None:
            return
        while isinstance(operand, cst.BinaryOperation) and isinstance(operand.operator, cst.Add) and (
                _constant(operand.right) or _constant(operand.left)):
            operand = operand.left if _constant(operand.right) else operand.right
        if tensors.origin_op(operand) == "softmax":
            self.report(node, expr=tensors.code(node))


def _constant(expr: cst.BaseExpression) -> bool:
    """A literal or an epsilon name (`eps`, `self.epsilon`, `EPS`)."""
    name = last_part(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    return number_value(expr) is not None or bool(name and name.lower().strip("_") in ("eps", "epsilon", "tiny"))


class UnshiftedLogprobGather(TensorRule):
    """
    ## What it does
    Reports token log-probs gathered from causal-LM logits at the same positions as the ids
    they score, `log_softmax(model(ids).logits).gather(-1, input_ids.unsqueeze(-1))`, where
    the index is a full-sequence id tensor (`input_ids`, `labels`, `sequences`, `seqs`, or
    the very ids the model was called on) and neither it nor the logits was shifted
    (`[:, :-1]`, `[:, 1:]`, a shift helper) or cut to the completion window in the function.
    Only logits whose model call is visible in the function are considered; an index holding
    completion, target or action ids is taken as already aligned, and so are labels that the
    file, or a helper it imports from another module of the project, builds already shifted
    (`"labels": ids[:, 1:]` in a tokenizing helper, `labels[:, :-1] = ids[:, 1:]`, ids written one
    position early as in `labels[i, start - 1:end - 1] = answer`) and ids the function hands to an
    unshifted cross-entropy as the targets of the same logits.

    By default the index must be the very ids the model was called on, or a copy of them
    (`.to(device)`, `.clone()`) that the function does not rewrite in place. Labels that come
    from a helper (its result's `labels`, a parameter) are of unknown alignment and not
    reported; when RL109 is selected by name, a full-sequence name (`labels`, `sequences`) is
    judged too.

    ## Why is this bad?
    The logits at position t predict token t+1. Gathered at token t, each token is scored by
    its own position's prediction: the log-probs look plausible, but the policy gradient and
    the KL are computed for the wrong tokens.

    ## Example
    ```python
    logits = model(input_ids=input_ids).logits
    logps = F.log_softmax(logits, dim=-1).gather(-1, input_ids.unsqueeze(-1)).squeeze(-1)
    ```

    ## Use instead
    ```python
    logits = model(input_ids=input_ids).logits[:, :-1]
    logps = F.log_softmax(logits, dim=-1).gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    ```

    ## Options
    None.
    """

    code = "RL109"
    name = "unshifted-logprob-gather"
    severity = Severity.WARNING
    message = ("`{expr}` scores `{ids}` with the logits of the same positions, but logits at t predict token "
               "t+1: shift them (`logits[:, :-1]` with `{ids}[:, 1:]`)")
    triggers = ("gather", "take_along_dim")

    def visit_Call(self, node: cst.Call) -> None:
        found = _vocab_gather(self, node)
        if found is None:
            return
        gather, kind = found
        tensors = self.tensors()
        dim = int_value(gather.dim)
        if kind.dim not in (None, -1):
            return
        if dim != -1 and not (dim == 2 and kind.rank in (None, 3)):
            return
        model_call = tensors.model_logits(gather.source)
        if model_call is None:
            return
        ids = self._full_sequence_ids(tensors, gather.index, model_call, self.file.settings.names(self.code))
        if ids is None or tensors.shifted(gather.index) or tensors.shifted(gather.source) or \
                _cross_entropy_targets(tensors, node, gather.index, model_call):
            return
        self.report(node, expr=tensors.code(node), ids=ids)

    def _full_sequence_ids(self, tensors: Tensors, index: cst.BaseExpression, model_call: cst.Call, broad: bool
                           ) -> Optional[str]:
        """The name of the index when it holds whole sequences: the very ids the model was called on (through
        aliases and copies not written in place), or, in the broad form, a full-sequence name."""
        inputs = {tensors.code(arg.value, 1000) for arg in model_call.args
                  if arg.keyword is None or arg.keyword.value == "input_ids"}
        first: Optional[str] = None
        for step in tensors.history(index):
            name = last_part(step) if isinstance(step, (cst.Name, cst.Attribute, cst.Subscript)) else None
            if not name:
                continue
            if tensors.code(step, 1000) in inputs:
                return first or name
            if first is None:
                first = name
                if broad and name in _FULL_SEQUENCE_IDS and not tensors.built_shifted(name) and \
                        not self._helper_builds_shifted(name):
                    return name
            if not isinstance(step, cst.Name) or _written_in_place(tensors, step):
                return None  # a key or attribute of something else, or ids rewritten where they were built
        return None


    def _helper_builds_shifted(self, name: str) -> bool:
        """Whether a function the file imports from another project module builds ids of this name already
        shifted (`labels[i, start - 1:end - 1] = answer` in a tokenizing helper)."""
        flow = self.file.fact(Flow)
        ir = flow.ir
        imported = [(dotted, 0) for dotted in ir.imports.values()] + [
            (f"{source}.{name_}" if source else name_, level) for level, source, name_ in ir.relative_imports.values()]
        for qual, level in imported:
            helper = flow.imported(qual, level)
            if isinstance(helper, FunctionIR) and not helper.is_module:
                _, module = summaries.load(helper.module.path, flow.file.settings)
                tree = module.function_tree(helper.qualname) if module is not None else None
                if tree is not None and name in shifted_names(tree):
                    return True
        return False


def _cross_entropy_targets(tensors: Tensors, gather: cst.Call, index: cst.BaseExpression, model_call: cst.Call
                           ) -> bool:
    """Whether the function hands the ids of `index` to a cross-entropy as the targets of the same model's
    logits, unshifted (`criterion(logits.view(-1, V), labels.view(-1))` with `criterion = CrossEntropyLoss()`):
    the ids were built to line up with the logits, so they are already shifted."""
    names = {step.value for step in tensors.history(index) if isinstance(step, cst.Name)}
    scope = tensors.scope(gather)
    while scope is not None and not isinstance(scope.node, cst.FunctionDef):
        scope = scope.parent
    if not names or scope is None:
        return False
    for call in walk(scope.node):
        if not isinstance(call, cst.Call) or not _is_cross_entropy(tensors, call):
            continue
        logits, targets = argument(call, 0, "input"), argument(call, 1, "target")
        if logits is None or targets is None or tensors.model_logits(logits) is not model_call or \
                tensors.shifted(logits) or tensors.shifted(targets):
            continue
        if any(isinstance(step, cst.Name) and step.value in names for step in tensors.history(targets)):
            return True
    return False


def _is_cross_entropy(tensors: Tensors, call: cst.Call) -> bool:
    """`F.cross_entropy(...)`, `nn.CrossEntropyLoss()(...)`, or a name bound to a `CrossEntropyLoss` called
    (or its `.forward`)."""
    op, _ = tensors.call_name(call)
    if op == "cross_entropy":
        return True
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        func = func.value
    if isinstance(func, cst.Name):
        func = tensors.value_of(func)
    return isinstance(func, cst.Call) and tensors.call_name(func)[0] == "CrossEntropyLoss"


def _written_in_place(tensors: Tensors, name: cst.Name) -> bool:
    """Whether the function of `name` changes what it holds without rebinding it (`labels[:, :-1] = ids[:, 1:]`,
    `labels.copy_(...)`): its positions then are not those of the value it was made from."""
    scope = tensors.scope(name)
    while scope is not None and not isinstance(scope.node, cst.FunctionDef):
        scope = scope.parent
    if scope is None:
        return False
    for node in walk(scope.node):
        if updates_in_place(node, name.value):
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value.endswith("_") \
                and isinstance(node.func.value, cst.Name) and node.func.value.value == name.value:
            return True
    return False


def _vocab_gather(rule: TensorRule, node: cst.Call):
    """`(gather, kind)` when `node` is a gather / take_along_dim on a vocabulary-shaped tensor
    (logits, log-probs, probabilities), else None: the common first step of RL105, RL106, RL109."""
    if callee(node) not in ("gather", "take_along_dim"):
        return None
    tensors = rule.tensors()
    gather = tensors.gather(node)
    if gather is None:
        return None
    kind = tensors.is_vocab(gather.source)
    if kind is None or kind.kind not in (LOGITS, LOGPROBS, PROBS):
        return None
    return gather, kind


class KLEstimatorDirection(TensorRule):
    """
    ## What it does
    Reports a KL estimator of KL(policy || reference) written backwards, and the k1 estimator
    used as a loss term:

    - k3 with the ratio reversed, `exp(logp - ref) - (logp - ref) - 1` (correct:
      `exp(ref - logp) - (ref - logp) - 1`);
    - k1 or k2 with the sign reversed where it is used as a penalty: a reward that grows with
      the policy's log-probs over the reference's (`rewards - beta * (ref - logp)`), or
      `-0.5 * (logp - ref) ** 2`;
    - when the rule is named (`--select RL110`): k1 with the sign reversed returned by a function
      that is a KL estimator by its name (`def approx_kl(logp, ref): return ref - logp`), unless its
      docstring writes the direction it estimates (`KL(ref || pi)`, in any words) or it returns a
      scaled penalty (`-beta * (logp - ref)`); a name is not evidence for the default form;
    - the k1 estimator `logp - ref` added to a loss whose policy log-probs carry gradient, or its
      reverse `ref - logp`, which also pays the policy for moving away from the reference.

    Whose log-probs each operand holds comes from the tensor roles (policy, old policy,
    reference); an operand of unknown role keeps the rule silent. An estimator that its name
    or its function's docstring declares as the reverse KL (`reverse_kl`, "KL(ref || pi)") is
    left alone. A log-ratio keeps its direction through masks and positive scales
    (`(logp - ref) * mask`).

    The k1 estimator in a loss is also found by following the values: log-probs computed with
    the policy's gradient minus log-probs computed without any (a reference or rollout forward
    under `no_grad`, the reference log-probs a TRL GRPO trainer hands `compute_loss`, the
    rollout log-probs verl hands a registered policy loss), carried through helpers, other
    modules, lists and returned dicts, the functions a lookup table (a registry that the code only
    reads) may dispatch to, and the branch of a penalty that a flag switches on, to what is handed
    to autograd (a `backward`, the loss a trainer framework backpropagates). It is reported where the difference is written, or at
    the call of the helper of another module that returns it; the k3 form `exp(d) - d - 1`,
    a difference weighted by advantages, and the policy against its own detached copy are not.

    ## Why is this bad?
    The reversed k3 estimates another quantity, with a variance that explodes where the
    policy is much more likely than the reference. A reversed k1 or k2 penalty pays the policy
    for drifting away from the reference. And the gradient of k1 in the loss is
    `E[grad log pi] = 0` in expectation: the "KL penalty" adds noise and no pull toward the
    reference (use k3 in the loss, or k1 in the reward).

    ## Example
    ```python
    per_token_kl = torch.exp(logps - ref_logps) - (logps - ref_logps) - 1
    loss = pg_loss + beta * (logps - ref_logps).mean()
    ```

    ## Use instead
    ```python
    per_token_kl = torch.exp(ref_logps - logps) - (ref_logps - logps) - 1
    loss = pg_loss + beta * per_token_kl.mean()
    ```

    ## Options
    None.

    ## References
    - J. Schulman, "Approximating KL Divergence", 2020.
    - "On a few pitfalls in KL divergence gradient estimation for RL", 2025.
    """

    code = "RL110"
    name = "kl-estimator-direction"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "`{expr}` {why}"
    # names of roles; and where a loss is handed to autograd (the engine's k1 in the loss)
    triggers = ("ref", "init_", "sft", "backward", "compute_loss", "register_policy_loss")

    _K3 = ("is the k3 KL estimator with the ratio reversed (exp(policy - ref)): it does not estimate "
           "KL(policy || ref) and its variance explodes (use `exp(ref - logp) - (ref - logp) - 1`)")
    _PENALTY = ("rewards the policy's log-probs over the reference's: the KL penalty has the wrong sign and "
                "pushes the policy away from the reference")
    _K2 = "is the k2 KL estimator with a negative sign: the penalty rewards divergence from the reference"
    _K1 = ("is the k1 KL estimator with the sign reversed (`ref - logp`): it estimates -KL(policy || ref), so a "
           "penalty built on it rewards divergence from the reference (use `logp - ref`)")
    _K1_LOSS = ("adds the k1 KL estimator `logp - ref` to the loss: its gradient is zero in expectation, so the "
                "penalty does not pull toward the reference (use k3 in the loss, or k1 in the reward)")
    _K1_LOSS_REVERSED = ("adds the k1 KL estimator with the sign reversed (`ref - logp`) to the loss: minimizing it pays "
                         "the policy for moving away from the reference, and as k1 its gradient is zero in expectation "
                         "anyway (use k3 `exp(ref - logp) - (ref - logp) - 1` in the loss, or `logp - ref` in the reward)")

    def __init__(self, file) -> None:
        super().__init__(file)
        self.inner: Set[int] = set()  # sums inside a sum already read
        self.reported: Set[int] = set()  # k1 sums already reported
        self.k3_leaves: Set[int] = set()  # log-prob leaves of k3 estimators: a k1 there is a k3's part
        self.k1_in_loss: List[Tuple[cst.CSTNode, List[cst.BaseExpression]]] = []
        self.target: Optional[str] = None  # the name the current statement assigns

    def visit_Assign(self, node: cst.Assign) -> None:
        self.target = bound_name(node.targets[0].target) if len(node.targets) == 1 else None
        self._k2(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.target = bound_name(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        if callee(node) == "backward":
            self._k1_in_loss(node)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._k1_in_loss(node)
            if self.file.settings.names(self.code):  # the function's name is the evidence: named form only
                self._k1_returned(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if id(node) in self.inner:
            return
        if not isinstance(node.operator, (cst.Add, cst.Subtract)):
            return
        self.inner.update(id(n) for n in walk(node) if n is not node and isinstance(n, cst.BinaryOperation)
                          and isinstance(n.operator, (cst.Add, cst.Subtract)))
        tensors = self.tensors()
        for call in k3_exponents(tensors, node):
            exponent = tensors.call_name(call)[1]
            for part in (exponent, node):
                self.k3_leaves.update(id(leaf) for _, leaf in tensors.terms(part) or ())
            signs = log_ratio(tensors, exponent)
            if signs == {"new": 1, "old": 0, "ref": -1} and not says_reverse(tensors, node, self.target):
                self.report(node, expr=tensors.code(node), why=self._K3)
            return
        terms = linear_terms(tensors, node)
        rewards = {sign for sign, leaf in terms if _kind(tensors, leaf) == REWARDS}
        if len(rewards) == 1 and not says_reverse(tensors, node, self.target):
            reward = rewards.pop()  # a reward shaped by a penalty: the policy's log-probs count against it
            signs = _role_signs(tensors, terms, sampled=True)
            if signs == {"new": reward, "ref": -reward}:
                self.report(node, expr=tensors.code(node), why=self._PENALTY)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        self.target = None

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        self.target = None

    def _k2(self, node: cst.Assign) -> None:
        """`kl = -0.5 * (logp - ref) ** 2`: the k2 estimator, always >= 0, bound to a KL term with a minus."""
        if not self.target or "kl" not in self.target.lower():
            return
        tensors = self.tensors()
        terms = tensors.terms(node.value)
        if not terms or len(terms) != 1 or terms[0][0] != -1 or weighted_by_name(tensors, node.value):
            return
        power = terms[0][1]
        if isinstance(power, cst.BinaryOperation) and isinstance(power.operator, cst.Power) and \
                int_value(power.right) == 2 and not says_reverse(tensors, node, self.target):
            signs = log_ratio(tensors, power.left)
            if signs is not None and signs["old"] == 0 and {signs["new"], signs["ref"]} == {1, -1}:
                self.report(node.value, expr=tensors.code(node.value), why=self._K2)

    def _k1_returned(self, node: cst.Return) -> None:
        """`def approx_kl(logp, ref): return ref - logp`: a function that is a KL estimator by its name returns
        the k1 estimator reversed (a scaled penalty, `-beta * (logp - ref)`, is not an estimator)."""
        tensors = self.tensors()
        scope = tensors.scope(node)
        function = scope.node if scope is not None else None
        if not isinstance(function, cst.FunctionDef) or "kl" not in function.name.value.lower() or \
                weighted_by_name(tensors, node.value) or says_reverse(tensors, node) or \
                _DIRECTION.search(function.get_docstring() or ""):
            return  # a docstring that writes the direction (`KL(a || b)`, in any words) declares what it estimates
        if log_ratio(tensors, node.value) == {"new": -1, "old": 0, "ref": 1}:
            self.report(node.value, expr=tensors.code(node.value), why=self._K1)

    def _k1_in_loss(self, node: cst.CSTNode) -> None:
        """A loss (a backward's root, the return of a loss function) that is, read linearly through names,
        reductions and masks, a sum with the policy's and the reference's log-probs at opposite signs."""
        loss = self.file.fact(LossSlice)
        sink = next((s for s in loss.sinks if s.node is node), None)
        if sink is None:
            return
        tensors = self.tensors()
        for root in sink.roots:
            terms = linear_terms(tensors, root)
            if any(_kind(tensors, leaf) in (REWARDS, ADVANTAGES) for _, leaf in terms):
                continue
            leaves = [(sign, leaf) for sign, leaf in terms if _role(tensors, leaf) in ("new", "ref")]
            if _role_signs(tensors, leaves) not in ({"new": 1, "ref": -1}, {"new": -1, "ref": 1}):
                continue
            grad = self.file.fact(GradFlow)
            if all(carries(grad.name_flows.get(leaf, EMPTY)) for _, leaf in leaves if _role(tensors, leaf) == "new"):
                written = _smallest_sum(tensors.scope(root), [leaf for _, leaf in leaves])
                if written is not None and id(written) not in self.reported:
                    self.reported.add(id(written))
                    self.k1_in_loss.append((written, [leaf for _, leaf in leaves]))

    def leave_Module(self, original_node: cst.Module) -> None:
        for written, leaves in self.k1_in_loss:
            if not any(id(leaf) in self.k3_leaves for leaf in leaves):
                self.report(written, expr=self.file.fact(Tensors).code(written), why=self._K1_LOSS)
        flow = self.file.fact(Flow)
        for loss in flow.losses():
            lp, written = loss.facts.get("lp"), loss.facts.get("lp_at")
            if balanced(lp) and written is not None and flow.owns(written) and id(written) not in self.reported:
                self.reported.add(id(written))
                self.report(written, expr=self.file.fact(Tensors).code(written),
                            why=self._K1_LOSS if lp[0] > 0 else self._K1_LOSS_REVERSED)


_DIRECTION = re.compile(r"kl\s*[(（][^)）]*(\|\||‖)", re.IGNORECASE)


def _smallest_sum(scope, leaves: List[cst.BaseExpression]) -> Optional[cst.CSTNode]:
    """The smallest sum in `scope` that holds every one of `leaves`: where the k1 estimator is written."""
    if scope is None:
        return None
    wanted = {id(leaf) for leaf in leaves}
    best = None
    for node in walk(scope.node):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
            inside = {id(n) for n in walk(node)} & wanted
            if inside == wanted:
                best = node  # walk goes outside in: the last one found is the innermost
    return best


def _kind(tensors: Tensors, leaf: cst.BaseExpression) -> Optional[str]:
    kind = tensors.kind(leaf)
    return kind.kind if kind is not None else None


def _role(tensors: Tensors, leaf: cst.BaseExpression) -> Optional[str]:
    return tensors.role(leaf) if _kind(tensors, leaf) == LOGPROBS else None


def _role_signs(tensors: Tensors, terms, sampled: bool = False) -> Dict[str, int]:
    """The summed signs of the policy's and the reference's log-probs among `terms` (roles that occur). With
    `sampled`, the old policy's log-probs count as the policy's: a reward is shaped at rollout time, when
    the sampling policy is the policy (verl's `old_log_prob - ref_log_prob`)."""
    signs: Dict[str, int] = {}
    for sign, leaf in terms:
        role = _role(tensors, leaf)
        role = "new" if sampled and role == "old" else role
        if role in ("new", "ref"):
            signs[role] = signs.get(role, 0) + sign
    return {role: sign for role, sign in signs.items() if sign}


class KLToOldPolicy(TensorRule):
    """
    ## What it does
    Reports the old policy's log-probs (old, behaviour, rollout, sampling-engine log-probs)
    given where the reference model's are expected: a keyword argument, a parameter of a local
    function, or a dictionary key named for the reference's log-probs (`ref_log_probs=old_log_prob`,
    `kl_penalty(logps, old_logps)` with `def kl_penalty(logp, ref_logp)`,
    `batch["ref_logps"] = rollout_logps`).

    A KL to the old policy that is meant as a trust-region term (PPO-KL, `approx_kl` between
    old and new) is not given to a reference slot and is not reported; nor is a slot of a
    project function (of this module or another, or a method of the instance it is called on)
    that never reads it, or that divides the policy by it in a clamped importance ratio
    (`clamp(exp(logp - ref_logp), ...)`), where the old policy is the right value.

    ## Why is this bad?
    The old policy is the policy of a step ago. A KL "to the reference" computed against it
    stays near zero and its anchor moves with every update: nothing keeps the policy close to
    the model it started from, and the KL coefficient tunes nothing.

    ## Example
    ```python
    kl = compute_kl(logprob=log_probs, ref_logprob=old_log_probs)
    ```

    ## Use instead
    ```python
    kl = compute_kl(logprob=log_probs, ref_logprob=ref_log_probs)
    ```

    ## Options
    None.
    """

    code = "RL111"
    name = "kl-to-old-policy"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("`{value}` holds the old policy's log-probs but is given as the reference's (`{slot}`): the KL "
               "anchor moves with every step and the penalty stays near zero (pass the reference model's log-probs)")
    triggers = ("ref",)

    def visit_Call(self, node: cst.Call) -> None:
        helper = None
        for index, arg in enumerate(node.args):
            if arg.star:
                continue
            slot = arg.keyword.value if arg.keyword is not None else None
            if slot is None:
                if helper is None:
                    helper = self.file.fact(GradFlow).helper_of(node) or False
                slot = bound_parameter(node, index, helper) if helper else None
            self._check(slot, arg.value, node)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if isinstance(node.key, cst.SimpleString) and isinstance(node.key.evaluated_value, str):
            self._check(node.key.evaluated_value, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._check(last_part(target.target), node.value)

    def _check(self, slot: Optional[str], value: cst.BaseExpression, call: Optional[cst.Call] = None) -> None:
        if not slot or not _reference_slot(slot):
            return
        tensors = self.tensors()
        if _role(tensors, value) == "old" and not (call is not None and self._not_a_reference(call, slot)):
            self.report(value, value=tensors.code(value, 60), slot=slot)

    def _not_a_reference(self, call: cst.Call, slot: str) -> bool:
        """The project function the call runs (here or in another module, a method of the instance it is
        called on) never reads the slot, or divides the policy by it in a clamped importance ratio: the old
        policy is the right value there."""
        callee = self.file.fact(Flow).value(call.func).facts.get("function")
        return reference_use(callee, slot) is not None


def _reference_slot(name: str) -> bool:
    """A parameter or key that holds the reference model's per-token log-probs: `ref_log_probs`, `ref_logprob`."""
    lowered = name.lower()
    kind = name_kind(lowered)
    return bool(REF_ROLE.search(lowered)) and not OLD_ROLE.search(lowered) and kind is not None and \
        kind.kind == LOGPROBS


_BOUNDS = {"min": "min", "minimum": "min", "fmin": "min", "max": "max", "maximum": "max", "fmax": "max"}
_ARRAY_MODULES = ("torch.", "numpy.", "jax.numpy.", "mlx.core.")


class InvertedClipObjective(TensorRule):
    """
    ## What it does
    Reports a PPO / GRPO clipped surrogate whose pessimistic bound is inverted: the objective
    to maximise written with a max, `max(ratio * adv, clip(ratio) * adv)`, or the loss to
    minimise written with a min, `min(-ratio * adv, -clip(ratio) * adv)`. A call is the
    surrogate when its two operands are the same product except that one holds the ratio and
    the other its clamp to `[1 - c, 1 + c]`, whatever they are called; the sign of the two
    terms is followed through unary minus, positive factors and names (`pg_losses = -adv *
    ratio`), as RL102 follows a margin. The correct forms, `-min(r * A, clip(r) * A)` and
    `max(-r * A, -clip(r) * A)`, and dual-clip's third bound (`min(max(pg1, pg2), -A * c)`,
    whose operands are not the ratio and its clamp) are not reported.

    ## Why is this bad?
    PPO takes the pessimistic (lower) bound of the objective, so that clipping only ever
    removes incentive. With the optimistic bound, a token with a negative advantage whose
    ratio has already fallen below `1 - c` keeps the unclipped term: its update is unbounded
    and the trust region is inverted. Training runs, and collapses on the first large step.

    ## Example
    ```python
    surrogate = torch.max(ratio * advantages, torch.clamp(ratio, 1 - eps, 1 + eps) * advantages)
    loss = -surrogate.mean()
    ```

    ## Use instead
    ```python
    surrogate = torch.min(ratio * advantages, torch.clamp(ratio, 1 - eps, 1 + eps) * advantages)
    loss = -surrogate.mean()
    ```

    ## Options
    None.

    ## References
    - Schulman et al., "Proximal Policy Optimization Algorithms", 2017, eq. 7.
    """

    code = "RL112"
    name = "inverted-clip-objective"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = ("`{expr}` takes the {taken} of the clipped surrogate's {terms}: the bound is optimistic, so for "
               "negative advantages the clip no longer limits the update ({fix})")
    triggers = ("clamp", "clip")

    _FIX = {"max": "use `min` of `r * A` and `clip(r) * A`, and negate it for a loss",
            "min": "a loss takes the `max` of `-r * A` and `-clip(r) * A`"}

    def visit_Call(self, node: cst.Call) -> None:
        taken = self._bound(node)
        if taken is None:
            return
        operands = [a.value for a in node.args if not a.star and (a.keyword is None or a.keyword.value in ("input",
                                                                                                            "other"))]
        if len(operands) != 2 or len(node.args) != 2:
            return
        tensors = self.tensors()
        sign = surrogate_sign(tensors, self.file.fact(Imports), *operands)
        if (sign, taken) in ((1, "max"), (-1, "min")):
            self.report(node, expr=tensors.code(node), taken=taken, fix=self._FIX[taken],
                        terms="objective terms `r * A`" if sign == 1 else "loss terms `-r * A`")

    def _bound(self, call: cst.Call) -> Optional[str]:
        """"min" / "max" for an element-wise minimum or maximum of two operands (torch, numpy, jax, mlx, builtin)."""
        name = callee(call)
        if name not in _BOUNDS:
            return None
        if isinstance(call.func, cst.Name) and name in ("min", "max") and name not in self.file.fact(Imports).aliases:
            return _BOUNDS[name]  # the builtin, on per-token floats
        qualified = self.file.fact(Imports).qualified(call.func) or ""
        return _BOUNDS[name] if qualified.startswith(_ARRAY_MODULES) else None


TOKEN_SCALE = 0.05  # clip ranges from here up are token-scale (PPO's 0.2); GSPO's sequence ranges are ~3e-4


class SequenceRatioTokenClip(TensorRule):
    """
    ## What it does
    Reports an importance ratio of whole sequences, built as `exp` of a sum over tokens of the
    policy-minus-old log-ratio (`exp((logp - old_logp).sum(-1))`, `exp(logp.sum(-1) -
    old_logp.sum(-1))`), clamped to a token-scale band `[1 - c, 1 + c]` with `c` of 0.05 or
    more (PPO's 0.2). The clip range is read where it is written (literals, constants,
    defaults, config fields). The sums may be taken elsewhere: the engine follows a masked sum
    over the time axis of log-probs from the rollout or helper that made it to the ratio (a
    parameter whose callers pass `(logp * completion_mask).sum(-1)`). Token-level ratios, length-normalised sequence ratios (GSPO's
    `exp(mean(logp - old_logp))`, a masked sum divided by the length) and sequence ratios
    clamped with GSPO-scale ranges (around 3e-4) are not reported.

    ## Why is this bad?
    The ratio of a sequence is the product of its token ratios. Over hundreds of tokens, a
    per-token drift of 0.1% already moves it out of `1 +- 0.2`: nearly every sample is clipped
    (no gradient), and the ones that are not carry a ratio that explodes. The run looks
    unstable, and the learning rate gets the blame.

    ## Example
    ```python
    seq_ratio = torch.exp((logps - old_logps).sum(dim=-1))
    clipped = torch.clamp(seq_ratio, 1 - 0.2, 1 + 0.2)
    ```

    ## Use instead
    ```python
    seq_ratio = torch.exp(((logps - old_logps) * mask).sum(-1) / mask.sum(-1))  # GSPO
    clipped = torch.clamp(seq_ratio, 1 - 3e-4, 1 + 4e-4)
    # or keep token-level ratios with the token-scale range
    ```

    ## Options
    None.

    ## References
    - Zheng et al., "Group Sequence Policy Optimization", 2025, section 4.
    """

    code = "RL113"
    name = "sequence-ratio-token-clip"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    message = ("`{expr}` clips the whole-sequence ratio `exp({exponent})`, a sum of token log-ratios, to 1 +- {c}: "
               "a product of hundreds of token ratios leaves that band almost always, so nearly every sample is "
               "clipped or the ratio explodes (normalise by the length, as GSPO, with a range near 3e-4)")
    triggers = ("clamp", "clip")

    def visit_Call(self, node: cst.Call) -> None:
        if callee(node) not in ("clamp", "clip"):
            return
        clamp = clamp_of(self.file.fact(Imports), node)
        if clamp is None or clamp.lower is None or clamp.upper is None:
            return
        tensors = self.tensors()
        if not around_one(tensors, clamp):
            return
        exponent = exponent_of(tensors, clamp.operand)
        summed = summed_log_ratio(tensors, exponent) if exponent is not None else None
        if summed is None:  # the engine's: the sums were taken where the log-probs were made (a rollout, a helper)
            summed = self.file.fact(Flow).value(clamp.operand).facts.get("lp_seq_exp")
        if summed is None:
            return
        c = clip_range(tensors, self.file.fact(Values), clamp)
        if c is not None and c >= TOKEN_SCALE:
            exponent = summed.with_changes(lpar=[], rpar=[]) if isinstance(summed, cst.BinaryOperation) else summed
            self.report(node, expr=tensors.code(node, 70), exponent=tensors.code(exponent, 50), c=format_number(c))
