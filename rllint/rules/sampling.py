"""RL3xx sampling: what the rollouts are sampled with, and whether training scores them by the same distribution
(rollout length limits, the sampling temperature of the log-probs)."""
from __future__ import annotations

import os
from typing import Dict, List, NamedTuple, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.configs import LaunchConfig
from rllint.analysis.context import tokens
from rllint.analysis.hparams import (
    EVALUATION, ROLLOUT_LENGTH_LIMITS, LaunchRuns, builds_reward_model, constructor_default,
    default_replaced_by_callers, last_part,
)
from rllint.analysis.domains.config import CONFIG, setting
from rllint.analysis.domains.text import SAMPLER
from rllint.analysis.facts import (DICT, GRAPH, LOGITS, LOGPROBS, MODEL, NLL, NUMBER, PROBS, SEQ_CLS,
                                   TOKEN_LOGPROBS, item_of)
from rllint.analysis.flow import Flow
from rllint.analysis.imports import Imports
from rllint.analysis.purpose import Purpose
from rllint.analysis.syntax import dotted, keyword, positional, walk
from rllint.analysis.tensors import Tensors
from rllint.analysis.text import Scope, Scopes, call_tail
from rllint.analysis.values import RemoteNode, Values, written_at
from rllint.diagnostic import Severity, Tier
from rllint.files import KINDS
from rllint.index import SAMPLER_CALLS as _SAMPLER_CALLS, SAMPLING_LIBRARIES, ProjectIndex, temperature_keyword
from rllint.registry import CSTRule, Option
from rllint.rules.decoding import FunctionRule, generation_kwargs

class Setting(NamedTuple):
    """A sampling setting's number and how it was set (the shape `Values.of` answers with)."""

    number: float
    origin: str


class Written(NamedTuple):
    """A number the engine proves, with the place it is written (a node of another module as a RemoteNode)."""

    number: float
    node: object
    origin: str


MIN_GENERATION_TOKENS = Option(
    "min-generation-tokens", int, 512,
    "RL306: the smallest rollout length limit (`max_new_tokens`, `max_completion_length`, ...) "
    "that is not reported in RL code.",
)


class ShortGenerationLimit(CSTRule):
    """
    ## What it does
    Reports, in RL training code, a rollout length limit (`max_new_tokens`,
    `max_tokens`, `max_completion_length`, `response_length`,
    `max_response_length`, `generate_max_len`) given to a sampler (`generate`,
    `GenerationConfig`, vLLM or Tinker `SamplingParams`, `sample`) or to an RL
    trainer's config (`GRPOConfig`, `RLOOConfig`, `OnlineDPOConfig`...), or declared
    as a field of a subclass of such a config, below `min-generation-tokens`. The finding points where the value is written: the
    keyword argument, the `argparse` default, the dataclass field or the constant.
    In launch configs of RL runs it reads the same keys: verl's `data.max_response_length`,
    OpenRLHF's `--generate_max_len` and `--rollout.max_new_tokens`, TRL's
    `max_completion_length`; evaluation settings (`val_kwargs`, `eval.*`) and evaluation
    runs (`trainer.val_only=True`) are left alone. Runs scored by a learned reward model
    (dialogue or summarisation RLHF: `reward_model.enable=True`, `--reward_pretrain`, a
    file that builds a reward-model class), where there is no final answer to cut off,
    are not reported, nor is a function parameter's default that the callers replace.

    ## Why is this bad?
    Completions longer than the limit are cut off before their answer, score 0, and
    push the policy toward short, unreasoned answers; with 256 tokens almost every
    math completion was truncated in trl #6264. Evaluation scripts that are not RL
    code are not reported.

    ## Example
    ```python
    config = GRPOConfig(output_dir="out", max_completion_length=256)
    ```

    ## Use instead
    ```python
    config = GRPOConfig(output_dir="out", max_completion_length=2048)
    ```

    ## Options
    - `min-generation-tokens` (default 512): the smallest limit that is not reported.
    """

    code = "RL306"
    tier = Tier.PEDANTIC  # primer precision below 0.9 (10 real of 30 findings): deliberate budgets dominate
    name = "short-generation-limit"
    severity = Severity.WARNING
    message = "rollout length limit `{name}` = {value} ({origin}) is below {limit} tokens: longer completions are cut off before their answer and score 0"
    options = (MIN_GENERATION_TOKENS,)
    triggers = tuple(sorted(ROLLOUT_LENGTH_LIMITS)) + ("generate-max-len", "max-new-tokens", "max-response-length")
    file_kinds = KINDS

    def __init__(self, file) -> None:
        super().__init__(file)
        self._reported: Set[int] = set()
        self._active: Optional[bool] = None

    def check_config(self) -> None:
        """Rollout length limits that an RL launch config sets (only its RL commands or documents)."""
        limit = self.option(MIN_GENERATION_TOKENS)
        quiet = {id(e) for run in self.file.fact(LaunchRuns) if run.learned_reward or run.evaluation
                 for e in run.entries}  # no final answer to cut off; or no rollouts trained on
        for entry in self.file.fact(LaunchConfig).rl_entries:
            if id(entry) in quiet:
                continue
            name = last_part(entry.key).replace("-", "_")
            if name not in ROLLOUT_LENGTH_LIMITS or set(tokens(entry.key)) & EVALUATION:
                continue
            value = entry.value
            if isinstance(value, int) and not isinstance(value, bool) and 1 < value < limit:
                where = "set here" if entry.command is None else f"given to {entry.command}"
                self.report_at(entry.line, entry.column, entry.line, entry.column + len(entry.text),
                               name=entry.key.lstrip("-+"), value=value, origin=where, limit=limit)

    def _is_active(self) -> bool:
        """RL settings, of a run not scored by a learned reward model (dialogue or summarisation RLHF, where
        there is no final answer to cut off)."""
        if self._active is None:
            self._active = self.file.fact(Purpose).rl_settings and not builds_reward_model(self.file)
        return self._active

    def visit_Module(self, node: cst.Module) -> None:
        """Fields of the file's subclasses of an RL trainer config (`class Args(GRPOConfig)`)."""
        if not any(c.endswith("Config") and c in self.file.text for c in _SAMPLER_CALLS) or not self._is_active():
            return
        values = self.file.fact(Values)
        owners = {sub for base in _SAMPLER_CALLS if base.endswith("Config") for sub in values.subclasses(base)}
        for declaration in values.declarations():
            if declaration.kind == "field" and declaration.owner in owners and declaration.name in ROLLOUT_LENGTH_LIMITS:
                self._judge(declaration.name, values.value_of(declaration))

    def visit_Call(self, node: cst.Call) -> None:
        if call_tail(node) not in _SAMPLER_CALLS:
            return  # a limit handed to a sampler or an RL trainer's config is a rollout limit
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in ROLLOUT_LENGTH_LIMITS and self._is_active():
                found = self.file.fact(Values).of(arg.value)
                if found is not None and constructor_default(found):
                    found = self._proven(arg.value) or found
                self._judge(arg.keyword.value, found)

    def _proven(self, expr: cst.BaseExpression) -> Optional["Written"]:
        """The limit the engine proves where the file's own reading stops at a constructor's default (an
        attribute set in `__init__`, replaced by what the constructing code passes): where that number is
        written, in this file or another."""
        found = self.file.fact(Flow).value(expr)
        written = found.reason("number")
        if found.facts.get("type") != NUMBER or "number" not in found.facts or not written:
            return None
        if not isinstance(written[0], cst.CSTNode):
            return None  # a launch script's or settings file's number is judged there
        place = written_at(self.file, written[0])
        return Written(found.facts["number"], place, found.facts.get("origin") or "literal") if place else None

    def visit_Assign(self, node: cst.Assign) -> None:
        self._settings(generation_kwargs(node))

    def visit_Arg(self, node: cst.Arg) -> None:
        self._settings(generation_kwargs(node))

    def _settings(self, settings: Dict[str, Tuple[cst.BaseExpression, cst.CSTNode]]) -> None:
        for key, (value, _) in settings.items():
            if key in ROLLOUT_LENGTH_LIMITS and self._is_active():
                self._judge(key, self.file.fact(Values).of(value))

    def _judge(self, name: str, value) -> None:
        if value is None or isinstance(value.number, bool) or id(value.node) in self._reported:
            return
        if constructor_default(value) or default_replaced_by_callers(self.file, value.origin):
            return  # a constructor's default, or one the callers replace, is a placeholder: they set the limit
        limit = self.option(MIN_GENERATION_TOKENS)
        if 1 < value.number < limit:
            self._reported.add(id(value.node))
            number_text = int(value.number) if float(value.number).is_integer() else value.number
            origin = "set here" if value.origin == "literal" else value.origin
            self.report(value.node, name=name, value=number_text, origin=origin, limit=limit)


_LOG_SOFTMAX = {"log_softmax", "selective_log_softmax"}


def _is_module_call(call: cst.Call, imports: Imports) -> bool:
    """`F.log_softmax(x)` / `torch.log_softmax(x)` rather than the method `x.log_softmax()`."""
    root = call.func
    while isinstance(root, cst.Attribute):
        root = root.value
    return isinstance(root, cst.Name) and root.value in imports.aliases


def _divides(node: cst.CSTNode) -> bool:
    return (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide)) or (
        isinstance(node, cst.Call) and call_tail(node) in ("div", "div_", "true_divide"))


def _written(found) -> str:
    """Where a number the engine knows is written, for a message: the files of the launches that pass it."""
    remote = sorted({os.path.basename(n.path) for n in found.reason("number") if isinstance(n, RemoteNode)})
    return f"set in {', '.join(remote)}" if remote else "literal"


def _samplers(file) -> List[Optional[Setting]]:
    """The temperature of every sampler of a module (this file, or another read as helpers are): a sampler's
    `temperature=` or its framework config's default, and hand-written samplers; None for one not known."""
    found: List[Optional[Setting]] = []
    own = {s.name.value for s in file.module.body if isinstance(s, cst.FunctionDef)}  # they sample where they do
    imports = file.fact(Imports)
    for node in walk(file.module, into_functions=True):
        if not isinstance(node, cst.Call):
            continue
        first = temperature_keyword(imports.qualified(node.func))
        if first is not None:  # `make_sampler(temp, top_p=...)`, read by the engine alone
            arg = keyword(node, first) or next((a for a in node.args if a.keyword is None and not a.star), None)
            if arg is not None:
                found.append(_temperature_of(file, arg.value))
        elif call_tail(node) in _SAMPLER_CALLS and not (isinstance(node.func, cst.Name) and node.func.value in own):
            samples = sampler_call(file, node)
            if samples is False:
                continue
            given = file.fact(Flow).keyword_value(node, "temperature")  # by keyword or in a `**settings` dict
            if samples is None:
                if given is not None:
                    found.append(None)  # `x.generate(temperature=...)` of an object of unknown kind: not evidence
            elif given is not None:
                found.append(_setting(given))
            else:
                found.extend(_framework_temperature(file, node))
    return found + _drawn(file) + _drawn_by_hand(file)


def sampler_call(file, call: cst.Call) -> Optional[bool]:
    """Whether a call named like a sampler (`generate`, `sample`, `SamplingParams`, `GRPOConfig`...) samples the
    policy's rollouts, as the engine knows it: the method of a model or a sampling engine it knows (True), or of an
    object it knows to be something else (False); a class or function of a sampling library, reached through the
    imports (True), or of the project or another library (False: a project's `generate` samples where its body
    does). A `generate` of an object of unknown kind samples when the call turns sampling on itself
    (`do_sample=True`, transformers' switch); else None: not known."""
    func = call.func
    root = func
    while isinstance(root, cst.Attribute):
        root = root.value
    imports = file.fact(Imports)
    if isinstance(root, cst.Name) and root.value in imports.aliases:
        qualified = imports.qualified(func) or ""
        return qualified.split(".")[0] in SAMPLING_LIBRARIES
    if isinstance(func, cst.Name):
        return False if any(isinstance(s, cst.ClassDef) and s.name.value == func.value
                            for s in file.module.body) else None
    if not isinstance(func, cst.Attribute):
        return None
    flow = file.fact(Flow)
    kind = flow.value(func.value).facts.get("type")
    if kind in (MODEL, SAMPLER):
        return True
    if kind is not None:
        return False
    switch = keyword(call, "do_sample")
    return True if switch is not None and flow.value(switch.value).facts.get("number") == 1.0 else None


def _drawn_by_hand(file) -> List[Optional[Setting]]:
    """The temperatures of the tokens a module draws by hand (`torch_ops.draw`), asked of the engine only where
    the module or one it imports calls `multinomial` or `argmax`. A draw in a function of this module counts in
    that function's own context (its callers' temperatures joined), not once more for each call of it here: a
    demo `main()` is not every caller."""
    index = file.fact(ProjectIndex)
    if not index.may_draw(index.path, index.own):
        return []
    return [_drawn_at(event.target) for event in file.fact(Flow).draws if event.via is None or not event.local]


def _drawn_at(temperature) -> Optional[Setting]:
    """The setting of a token drawn by hand at a temperature the engine follows (None: not known)."""
    if "number" not in temperature.facts:
        return None
    return Setting(temperature.facts["number"], temperature.facts.get("origin") or _written(temperature))


def _temperature_of(file, expr: cst.BaseExpression) -> Optional[Setting]:
    """The number a sampler's `temperature=` holds after every layer of configuration (the engine's config
    domain: argparse, dataclass fields and constructor arguments, environment and framework defaults,
    launch scripts, files of settings); None where the engine cannot follow it (a declaration that merely
    shares the attribute's name is no evidence)."""
    return _setting(file.fact(Flow).value(expr))


def _setting(found) -> Optional[Setting]:
    """The setting a value the engine followed holds (None: not a known number)."""
    if found.facts.get("type") == NUMBER and "number" in found.facts:
        return Setting(found.facts["number"], found.facts.get("origin") or _written(found))
    return None


def _drawn(file) -> List[Optional[Setting]]:
    """The temperatures of hand-written samplers: `torch.multinomial` of a softmax over logits divided by T
    (through the names of its function) draws at T; a division whose divisor the engine cannot read is
    unknown (None)."""
    flow, scopes = file.fact(Flow), file.fact(Scopes)
    found: List[Optional[Setting]] = []
    for function in walk(file.module, into_functions=True):
        if not isinstance(function, cst.FunctionDef):
            continue
        scope = scopes.of(function)
        for call in scope.calls:
            drawn = positional(call, 0) if call_tail(call) == "multinomial" else None
            sources = sources_of(drawn, scope) if drawn is not None else []
            if not any(isinstance(n, cst.Call) and call_tail(n) == "softmax" for n in sources):
                continue
            for division in (n for n in sources if _divides(n) and isinstance(n, cst.BinaryOperation)
                             and n.left is not n.right):
                divisor = flow.value(division.right)
                known = divisor.facts.get("type") == NUMBER and "number" in divisor.facts
                found.append(Setting(divisor.facts["number"], divisor.facts.get("origin") or _written(divisor))
                             if known else None)
    return found


def _framework_temperature(file, call: cst.Call) -> List[Setting]:
    """The sampling temperature of a framework config built without one (`GRPOConfig(...)`): the
    framework's default in the release the project pins (none when the default changed across releases
    and nothing pins one)."""
    flow = file.fact(Flow)
    config = flow.value(call)
    if config.facts.get("type") != CONFIG:
        return []
    found = setting(flow, config, "temperature")
    if found.facts.get("type") != NUMBER:
        return []
    return [Setting(found.facts["number"], found.facts["origin"])]


def sources_of(expr: cst.BaseExpression, scope: Scope) -> List[cst.CSTNode]:
    """The nodes of `expr` and, through the names in it, of what they were assigned."""
    found: List[cst.CSTNode] = []
    pending, seen = [expr], set()
    while pending and len(found) < 2000:
        current = pending.pop()
        for node in walk(current):
            found.append(node)
            if isinstance(node, cst.Name) and node.value not in seen:
                seen.add(node.value)
                pending.extend(scope.assigned.get(node.value, ()))
                if node.value in scope.augmented_divisions:
                    found.append(cst.BinaryOperation(node, cst.Divide(), node))
    return found


class LogprobsIgnoreTemperature(FunctionRule):
    """
    ## What it does
    Reports, in a project that samples rollouts at a temperature other than 1, log-probs
    (`log_softmax`, `-cross_entropy(..., reduction="none")`, or a `log_softmax` written out:
    logits, gathered or not, minus their `logsumexp` over the vocabulary, whole or row by
    row) over logits that were never
    divided by that temperature (the engine proves the logits by where they come from: a
    language model's logits, or what a model's forward returns as a tensor, through casts,
    slices and rows, or a forward's `.logits` unless the model is a classifier; when the rule
    is named, a value it follows without finding them or knows nothing of, such as an
    argument whose callers are out of sight, also counts by its name), and `-loss` of the
    trained policy's forward given `labels=`
    (the labels' mean log-prob, which the model takes from its raw logits); a log-prob helper (of the same module or another) whose
    `temperature` parameter defaults to 1 and that is called without it (one that returns the
    log-probs, or backpropagates a loss of them); and a division of
    log-probs (rather than logits) by the number the rollouts are sampled at (the engine proves
    the log-probs by how they are computed; when the rule is named, a value the engine knows
    nothing of also counts when its name calls it log-probs; a contrastive loss's own
    temperature is another number and is not reported). The sampling temperature is the
    file's own, or, when the file samples nothing, that of the project modules it imports or
    that import it (followed through their configuration too, and through what they build:
    a sampler object keeps the config it was constructed with); then only a function or
    method of this module that a function they call reaches scores the rollouts. A sampler is a
    `temperature=` (by keyword or as the item of a `**settings` dict) given to the `generate` of a model
    or sampling engine the engine knows (or of any object, when the call turns sampling on with
    `do_sample=True`), or to a sampling library's `GenerationConfig`, `SamplingParams` or RL trainer config
    (a `generate` of an object of unknown kind, or of a project class, is not evidence), the first
    argument of mlx_lm's `make_sampler`, or a token drawn by hand from a
    model's logits divided by T: `torch.multinomial` of their softmax, or the argmax of a
    Gumbel-max perturbation (`logits / T` plus Gumbel noise, `exp(logits) / E ** T` as
    LLaDA's `add_gumbel_noise`, weights divided by exponential noise), here or in a helper of
    another module that a call of this file runs with its temperature; greedy decoding (the
    argmax of the logits) draws at 0. A function of the module named like a sampler samples
    where its body does. Where a sampler
    at temperature 1 is among them (rollouts at 1, evaluation at 0.7) nothing is reported:
    which sampler drew the rollouts is not known. Nor is a temperature that is only a
    constructor's default. The temperature is read after every layer of configuration: a
    config class's field or the argument it was built with (in this module or the ones that
    construct it), an `argparse` default that no launch script replaces, the flags and
    `--config` file a launch gives TRL's parser, a YAML or JSON file of settings that every
    launch names, an environment default, and the framework's own default when a config such
    as `GRPOConfig` is built without one (TRL's GRPO sampled at 0.9 until 0.17 and at 1.0
    since: the release the project pins decides; without a pin, the releases that accept every
    flag or keyword the project gives the config, else that default is not known). Logits
    given to a helper (of this module or another) that divides them by its `temperature`
    parameter are tempered, and so are the processed `scores` that `generate(...,
    output_scores=True, return_dict_in_generate=True)` returns: the temperature that drew the
    tokens. A TRL config whose `generation_kwargs` sample at another temperature than its
    `temperature`, by which TRL's loss divides the logits, is reported too.

    ## Why is this bad?
    The sampler drew tokens from `softmax(logits / T)`. Log-probs computed from the raw
    logits belong to another distribution, so the importance ratio between the
    sampling and the training policy is off even before any update: clipping fires
    on tokens that did not change and the KL estimate is biased (trl #3029).
    Dividing log-probs by T does not give the tempered distribution either: the
    result is not normalised (prime-rl #697).

    ## Example
    ```python
    out = policy.generate(**enc, do_sample=True, temperature=0.7)
    logps = F.log_softmax(policy(seqs).logits, dim=-1)
    ```

    ## Use instead
    ```python
    logps = F.log_softmax(policy(seqs).logits / 0.7, dim=-1)
    ```

    ## Options
    None.
    """

    code = "RL309"
    name = "logprobs-ignore-temperature"
    severity = Severity.WARNING
    message = "{what}"
    triggers = ("temperature", "log_softmax", "cross_entropy", "logsumexp")

    def __init__(self, file) -> None:
        super().__init__(file)
        self._temperature: Optional[tuple] = None
        self._callers: Optional[Set[str]] = None  # with a temperature of other modules: the names they call
        self._reads: Set[cst.CSTNode] = set()  # labelled losses reported

    def sampling_temperature(self) -> Optional[Tuple[float, str]]:
        """The temperature the rollouts are sampled at and where that is said, when the source shows one
        other than 1: this file's samplers, else those of the project modules it imports or that import it
        (read by the index, or by following the values there when it cannot read them).
        A sampler at 1 among them (rollouts at 1, evaluation at 0.7) makes the evidence mixed: which one drew
        the rollouts is not known, so None. A constructor's default is a placeholder, not evidence."""
        if self._temperature is None:
            found = _samplers(self.file)
            known = [(v.number, v.origin) for v in found if v is not None and v.number > 0
                     and not constructor_default(v)]
            if not found:
                known = []
                index = self.file.fact(ProjectIndex)
                sampling: Set[str] = set()  # the names the neighbours that sample call
                # What the modules this one imports draw, its own calls of them show (`_drawn_by_hand`); a module
                # that imports this one may drive its functions with tokens it draws by hand.
                drivers = {path for path, _ in index.importers()}
                for path, summary in index.neighbours():
                    numbers = [(n, f"sampled in {os.path.basename(path)}") for n in summary.samples]
                    if any(n is None for n, _ in numbers) or \
                            not numbers and path in drivers and index.may_draw(path, summary):
                        numbers = self._followed(path)  # the engine reads what the index cannot, and draws by hand
                    numbers = [n for n in numbers if n[0] != 0]  # greedy decoding (prompt log-probs) draws none
                    known.extend(numbers)
                    if numbers:
                        sampling |= summary.called
                if any(number is None for number, _ in known):
                    known = []  # a temperature that neither the index nor the engine reads: mixed evidence
                self._callers = sampling if known else None
            tempered = [v for v in known if v[0] != 1]
            self._temperature = (tempered[0] if tempered and len(tempered) == len(known) else None,)
        return self._temperature[0]

    def _followed(self, path: str) -> List[Tuple[Optional[float], str]]:
        """The temperatures of another module's samplers after every layer of configuration (its engine, read
        as helpers are); None for one it cannot read either."""
        from rllint.analysis import summaries

        digest, module = summaries.load(path, self.file.settings)
        self.file.dependencies[path] = digest
        if module is None:
            return [(None, "")]
        found = _samplers(module)
        self.file.dependencies.update(module.dependencies)
        where = os.path.basename(path)
        return [(None, "") if v is None or constructor_default(v) else (v.number, f"sampled in {where}: {v.origin}")
                for v in found]

    def visit_Call(self, node: cst.Call) -> None:
        if call_tail(node) not in _LOG_SOFTMAX:
            self._helper_at_default(node)
            self._overridden(node)
            return
        if isinstance(node.func, cst.Attribute) and call_tail(node) == "log_softmax" \
                and not _is_module_call(node, self.file.fact(Imports)):
            self._check(node, node.func.value)  # logits.log_softmax(-1)
        else:
            self._check(node, positional(node, 0))

    def _overridden(self, call: cst.Call) -> None:
        """A TRL config whose `generation_kwargs` sample at another temperature than its own `temperature`,
        by which TRL's loss divides the logits: `generation_kwargs` override the sampler's settings."""
        given = keyword(call, "generation_kwargs")
        if given is None or call_tail(call) not in _SAMPLER_CALLS:
            return
        flow = self.file.fact(Flow)
        config = flow.value(call)
        if config.facts.get("type") != CONFIG or (config.facts.get("framework") or ("",))[0] != "trl":
            return
        sampled = item_of(flow.value(given.value), "temperature")
        divided = setting(flow, config, "temperature")
        if sampled is None or sampled.facts.get("type") != NUMBER or divided.facts.get("type") != NUMBER:
            return
        if sampled.facts.get("number") in (None, 0, divided.facts.get("number")) or "number" not in divided.facts:
            return  # a value that differs by path is not known
        written = sampled.reason("number")
        self.report(written[0] if written else given.value, what=(
            f"`generation_kwargs` sample at temperature {sampled.facts['number']:g} while TRL's loss divides the "
            f"logits by {config.facts['framework'][1]}.temperature {divided.facts['number']:g} "
            f"({divided.facts.get('origin') or 'set here'}): set `temperature` instead"))

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        """`-F.cross_entropy(logits, ids, reduction="none")`: per-token log-probs too, also when reshaped or
        reduced before the sign (`-F.cross_entropy(...).view(shape)`)."""
        call = node.expression
        while isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and \
                isinstance(call.func.value, cst.Call) and call_tail(call) != "cross_entropy":
            call = call.func.value  # a method of the per-token losses: still their values, negated
        if isinstance(node.operator, cst.Minus) and isinstance(call, cst.Call) and call_tail(call) == "cross_entropy":
            reduction = keyword(call, "reduction")
            if reduction is not None and isinstance(reduction.value, cst.SimpleString) \
                    and reduction.value.evaluated_value == "none":
                self._check(node, positional(call, 0))
        elif isinstance(node.operator, cst.Minus):
            self._labelled_loss(node)

    def _labelled_loss(self, node: cst.UnaryOperation) -> None:
        """`-out.loss` (or `-loss` of `loss = out.loss`) of the trained policy's forward given `labels=`: the
        labels' mean log-prob, which the model computes from its raw logits (reported where the loss is read)."""
        flow = self.file.fact(Flow)
        loss = flow.value(node.expression)
        if loss.facts.get("content") != NLL or loss.facts.get("grad") != GRAPH:
            return
        if self.sampling_temperature() is None or not self._scores_here():
            return
        read = loss.facts.get("obj")
        if not isinstance(read, cst.Attribute) or read in self._reads:
            return  # a tensor computed from the loss (`-logp` of `logp = -loss`), or the same loss negated again
        self._reads.add(read)
        self.report(read if flow.owns(read) else node, what=(
            f"{self._what(*self.sampling_temperature())} (`-loss` of a forward given `labels=` scores the raw "
            "logits: compute the log-probs from logits divided by the temperature)"))

    def _scores_here(self) -> bool:
        """Whether log-probs computed here score the rollouts: always when this module samples; when another
        module does, only in a function or method of this module that it calls, or that one of those calls here
        (`self._token_logps(...)` of the `compute_loss` a trainer calls)."""
        if self._callers is None:
            return True
        if self.function is None or len(self._functions) > 1:
            return False
        flow = self.file.fact(Flow)
        pending = [f for f in flow.ir.all_functions() if f.node is self.function]
        seen: Set[object] = set()
        while pending and len(seen) < 64:
            function = pending.pop()
            if function in seen or function.module is not flow.ir:
                continue
            seen.add(function)
            if function.name in self._callers and (function.cls is not None or function.parent is None):
                return True
            pending.extend(site.function for site in flow.callers(function))
        return False

    def _named_log_probs(self, expr: cst.BaseExpression) -> bool:
        """When the rule is named: a value the engine knows nothing of that its name calls log-probs (a sampler's
        log-probs handed in, `sampler_logprobs`)."""
        if not self.file.settings.names(self.code) or self.file.fact(Flow).value(expr).facts.get("type"):
            return False
        kind = self.file.fact(Tensors).kind(expr)
        return kind is not None and kind.kind == LOGPROBS

    def _check(self, node: cst.CSTNode, operand: Optional[cst.BaseExpression]) -> None:
        if operand is None:
            return
        sources = self._sources(operand, self.scope)  # what this file shows first; the project's samplers last
        if not self._logits(operand, sources) or any(self._handled(n) for n in sources):
            return
        if self.sampling_temperature() is None:
            return
        if any(self._tempering(n) for n in sources) or self._at_sampling_temperature(operand):
            return
        if not self._scores_here():
            return  # another module samples: only a function of this module that it calls computes its log-probs
        self.report(node, what=self._what(*self.sampling_temperature()))

    def _logits(self, operand: cst.BaseExpression, sources: List[cst.CSTNode]) -> bool:
        """Whether the operand holds a model's logits: the engine's value says so (a language model's logits, or
        what a model's forward returns as a tensor, sliced, cast or handed on), or it is read from a forward's
        `.logits` (an API field, unless the engine knows the model is a classifier). A value the engine knows
        nothing of (an argument whose callers are out of sight, a model loaded out of sight) or follows without
        finding a model's logits in it counts by its name only when the rule is named: a name is no evidence for
        a default finding."""
        flow = self.file.fact(Flow)
        value = flow.value(operand)
        if value.facts.get("content") == LOGITS or value.facts.get("temperature") is not None or \
                value.facts.get("forward_output") is not None:
            return True
        if any(isinstance(n, cst.Attribute) and n.attr.value == "logits"
               and flow.value(n.value).facts.get("arch") != SEQ_CLS for n in sources):
            return True
        if value.facts.get("content") or not self.file.settings.names(self.code):
            return False
        return any(isinstance(n, cst.Name) and "logits" in n.value.lower() for n in sources)

    def _at_sampling_temperature(self, operand: cst.BaseExpression) -> bool:
        """Logits the engine knows are at the sampling temperature, or at the one their tokens were drawn at
        (`generate(..., output_scores=True)`'s processed `scores`)."""
        tempered = self.file.fact(Flow).value(operand).facts.get("temperature")
        return tempered is not None and (tempered[0].facts.get("drawn") is not None
                                         or tempered[0].facts.get("number") == self.sampling_temperature()[0])

    @staticmethod
    def _handled(node: cst.CSTNode) -> bool:
        """A node that brings the logits to the sampled distribution: a division (by the temperature)."""
        return _divides(node)

    def _tempering(self, node: cst.CSTNode) -> bool:
        """A call of a project helper (of this module or another) that divides by its `temperature` parameter,
        given a temperature that is not known to differ from the sampling one."""
        key = dotted(node.func) if isinstance(node, cst.Call) else None
        if key is None:
            return False
        index = self.file.fact(ProjectIndex)
        function = index.own.functions.get(key) or (index.function(key) or (None, None))[1]
        if function is None or not function.divides:
            return False
        position = function.params.index("temperature")
        given = keyword(node, "temperature")
        passed = [a for a in node.args if a.keyword is None and not a.star]
        expr = given.value if given is not None else passed[position].value if len(passed) > position else None
        if expr is None:
            return False  # at its default: `_helper_at_default` judges it
        found = self.file.fact(Flow).value(expr)
        return found.facts.get("type") != NUMBER or found.facts.get("number") == self.sampling_temperature()[0]

    @staticmethod
    def _what(number: float, origin: str) -> str:
        return (f"log-probs from logits not divided by the sampling temperature {number:g} "
                f"({origin}): the ratio compares two different distributions")

    def _written_out(self, node: cst.BinaryOperation) -> None:
        """`token_logits - logits.logsumexp(-1)`: a `log_softmax` written out, whose log-normaliser the engine knows
        is that of raw logits (`partition`), while the rollouts are sampled at another temperature."""
        partition = self.file.fact(Flow).value(node.right).facts.get("partition")
        if partition is None or partition[0].facts.get("number") != 1.0 or partition[0].facts.get("drawn"):
            return  # logits divided before the normaliser, or at the temperature their tokens were drawn at
        sampling = self.sampling_temperature()
        if sampling is not None and self._scores_here():
            self.report(node, what=self._what(*sampling))

    def _helper_at_default(self, call: cst.Call) -> None:
        """A log-prob helper (of this module or another) that divides the logits by its `temperature`
        parameter, whose default is 1, called without it while rollouts are sampled at another."""
        key = dotted(call.func)
        if key is None or keyword(call, "temperature") is not None or any(a.star for a in call.args):
            return
        index = self.file.fact(ProjectIndex)
        function = index.own.functions.get(key)
        where = "this module"
        if function is None:
            found = index.function(key)
            function, where = (found[1], os.path.basename(found[0])) if found is not None else (None, "")
        if function is None or function.temperature != 1 or not function.divides or not function.logprobs:
            return
        if len([a for a in call.args if a.keyword is None]) > function.params.index("temperature"):
            return
        temperature = self.sampling_temperature()
        if temperature is not None:
            self.report(call, what=(
                f"`{self.source(call)}` computes log-probs at its default temperature 1 ({where}) while rollouts "
                f"are sampled at {temperature[0]:g} ({temperature[1]}): pass the sampling temperature"))

    @staticmethod
    def _sources(expr: cst.BaseExpression, scope: Scope) -> List[cst.CSTNode]:
        return sources_of(expr, scope)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        """Log-probs divided by the number the rollouts are sampled at (prime-rl #697): the engine proves both,
        the log-probs by how they are computed and the divisor by its value (a contrastive loss's temperature
        is another number)."""
        if isinstance(node.operator, cst.Subtract):
            self._written_out(node)
            return
        if not isinstance(node.operator, cst.Divide):
            return
        flow = self.file.fact(Flow)
        dividend, divisor = flow.value(node.left), flow.value(node.right)
        if divisor.facts.get("type") != NUMBER or not (
                dividend.facts.get("content") in (LOGPROBS, TOKEN_LOGPROBS) or self._named_log_probs(node.left)):
            return
        sampling = self.sampling_temperature()
        if sampling is not None and divisor.facts.get("number") == sampling[0]:
            self.report(node, what=(f"`{self.source(node)}` divides log-probs by the sampling temperature: the result "
                                    "is not the tempered distribution; divide the logits before log_softmax"))


# Sampler settings that truncate the distribution, and the value of each that leaves it whole.
_TRUNCATIONS = {"top_p": 1.0, "top_k": 0.0, "min_p": 0.0}
# Operations that filter logits as a truncating sampler does (a top-k / top-p mask) before the log-probs.
_FILTERS = frozenset({"topk", "top_k_top_p_filtering", "masked_fill", "masked_fill_", "where", "sort", "cumsum",
                      "apply_top_k_top_p", "TopPLogitsWarper", "TopKLogitsWarper"})


def _truncations(flow, call: cst.Call) -> List[Tuple[str, object]]:
    """The truncating settings a sampler call is given, as (key, value): by keyword, or as items of a `**dict`
    the engine reads (`GenerationConfig(**params)`)."""
    found = []
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in _TRUNCATIONS:
            found.append((arg.keyword.value, flow.value(arg.value)))
        elif arg.star == "**":
            given = flow.value(arg.value)
            found.extend((key, item) for key, item in given.facts.get("items") or ()
                         if given.facts.get("type") == DICT and key in _TRUNCATIONS)
    return found


class TruncatedSamplingFullLogprobs(LogprobsIgnoreTemperature):
    """
    ## What it does
    Reports, where every sampler of the file draws rollouts from a truncated distribution
    (`top_p` below 1, `top_k` above 0, `min_p` above 0, given by keyword or as items of the
    dict a `GenerationConfig(**settings)` is built with, as the engine reads them after every
    layer of configuration), log-probs of those rollouts (`log_softmax`,
    `-cross_entropy(..., reduction="none")`) taken over the full softmax: logits that no
    top-k / top-p mask (`topk`, `sort`, `masked_fill`, `where`... of the logits or their
    probabilities) filtered first. A file that also samples without truncation, or with a
    `generation_config` built out of sight, is mixed evidence and is not reported. The message
    names the truncating setting (`top_p`, `top_k` or `min_p`) and where it is written.

    This rule is `pedantic`, unlike RL309: TRL and verl themselves sample with `top_p` /
    `top_k` and score the rollouts with full-softmax log-probs, so many runs accept the bias
    on purpose and their authors would not call it a bug; a rule on by default must be a
    bug when it fires (or stay above 0.9 precision on the primer). Select it to find
    hand-written loops whose truncation was not a conscious choice.

    ## Why is this bad?
    The rollouts come from the renormalised truncated distribution, the loss scores them
    under the full one: the importance ratio between the sampling and the training policy is
    off before any update, tokens outside the nucleus that could never be sampled still get
    probability mass, and the KL estimate is biased (RL309's mismatch, for truncation).

    ## Example
    ```python
    out = policy.generate(**enc, do_sample=True, top_p=0.75)
    logps = F.log_softmax(policy(out).logits, dim=-1)
    ```

    ## Use instead
    ```python
    out = policy.generate(**enc, do_sample=True, top_p=1.0)
    logps = F.log_softmax(policy(out).logits, dim=-1)
    ```

    ## Options
    None.
    """

    code = "RL325"
    tier = Tier.PEDANTIC
    name = "truncated-sampling-full-logprobs"
    severity = Severity.WARNING
    message = "{what}"
    triggers = ("top_p", "top_k", "min_p")

    def sampling_temperature(self) -> Optional[Tuple[float, str]]:
        """The truncating setting every sampler of the file uses, as (value, `setting (origin)`); None when a
        sampler samples the whole distribution or a setting is not known."""
        if self._temperature is None:
            flow = self.file.fact(Flow)
            found: List[Tuple[float, str]] = []
            whole = False
            owners = [n for n in walk(self.file.module, into_functions=True)
                      if isinstance(n, (cst.Module, cst.FunctionDef))]
            calls = [(n, owner) for owner in owners for n in walk(owner)
                     if isinstance(n, cst.Call) and call_tail(n) in _SAMPLER_CALLS]
            for node, owner in calls:
                given = keyword(node, "generation_config")
                if given is not None:  # samples with the settings of that config: judged where it is built here
                    built = sources_of(given.value, self.file.fact(Scopes).of(owner))
                    whole |= not any(isinstance(n, cst.Call) and call_tail(n) in _SAMPLER_CALLS for n in built)
                    continue
                settings = _truncations(flow, node)
                known = [(key, v) for key, v in settings if v.facts.get("type") == NUMBER and
                         v.facts.get("number") is not None]  # `max(0.7, cfg.top_p)`: a number, its value unknown
                truncating = [(key, v) for key, v in known
                              if (v.facts["number"] < 1.0 if key == "top_p" else v.facts["number"] > 0)]
                if truncating:
                    key, v = truncating[0]
                    found.append((v.facts["number"], f"{key}, {v.facts.get('origin') or 'literal'}"))
                elif len(known) == len(settings):
                    whole = True  # samples the whole distribution (or its settings are all known and neutral)
            self._temperature = (found[0] if found and not whole else None,)
        return self._temperature[0]

    def _helper_at_default(self, call: cst.Call) -> None:
        return None

    def _overridden(self, call: cst.Call) -> None:
        return None

    def _labelled_loss(self, node: cst.UnaryOperation) -> None:
        return None

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        return None

    def _at_sampling_temperature(self, operand: cst.BaseExpression) -> bool:
        """Logits the engine knows are at the sampling temperature, or at the one their tokens were drawn at
        (`generate(..., output_scores=True)`'s processed `scores`)."""
        tempered = self.file.fact(Flow).value(operand).facts.get("temperature")
        return tempered is not None and (tempered[0].facts.get("drawn") is not None
                                         or tempered[0].facts.get("number") == self.sampling_temperature()[0])

    def _handled(self, node: cst.CSTNode) -> bool:
        """A top-k / top-p filter applied to the vocabulary distribution (logits, or the probabilities whose
        mask then filters them): not one applied to other tensors the forward was given (`cumsum` of a mask)."""
        if not (isinstance(node, cst.Call) and call_tail(node) in _FILTERS):
            return False
        flow = self.file.fact(Flow)
        operands = [a.value for a in node.args] + ([node.func.value] if isinstance(node.func, cst.Attribute) else [])
        return any(flow.value(o).facts.get("content") in (LOGITS, LOGPROBS, PROBS) for o in operands)

    @staticmethod
    def _what(number: float, origin: str) -> str:
        return (f"log-probs of the full softmax while rollouts are sampled from a truncated distribution "
                f"({origin}: {number:g}): the ratio scores samples under a distribution they were not drawn from")
