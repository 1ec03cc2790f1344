"""RL6xx: hyperparameters of RL post-training runs (RL code and launch configs only)."""
from __future__ import annotations

import os
import re
from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.clipping import one_and
from rllint.analysis.context import RLContext, tokens
from rllint.analysis.purpose import Purpose, distills, is_rl_class
from rllint.analysis.hparams import (
    EVALUATION, GROUP_CONFIGS, GROUP_SIZE_TRIGGERS, MEAN, NOT_THE_POLICY, STD, LaunchRuns, belongs_elsewhere,
    group_baseline, is_clip_range, is_estimator_key, is_group_size, is_kl_coefficient, is_learning_rate,
    is_grad_clip_norm, is_rl_hyperparameter, is_sequence_level, is_std_switch, last_part, rl_hyperparameter_kind,
)
from rllint.analysis.domains.config import framework_class, setting
from rllint.analysis.facts import CAUSAL_LM, DICT, NUMBER, UNKNOWN, VALUE_HEAD, Value as EngineValue
from rllint.analysis.flow import Flow
from rllint.analysis.imports import Imports
from rllint.analysis.launches import CONFIG_FILES, settings_file
from rllint.analysis.loss import LossSlice
from rllint.analysis.rates import RateSinks, optimizer_name
from rllint.analysis.roles import ModelRoles, header
from rllint.analysis.settings_use import SettingsUse
from rllint.analysis.syntax import walk
from rllint.analysis.tensors import GroupBaselines
from rllint.analysis.values import Declaration, RemoteNode, Value, Values, format_number, written_at
from rllint.index import ProjectIndex
from rllint.diagnostic import Severity, Tier
from rllint.registry import CSTRule, Option

MAX_LEARNING_RATE = Option(
    "max-learning-rate", float, 1e-5,
    "RL601: learning rates above this value are reported in RL code (the value itself is not).",
)
LORA_LR_MULTIPLIER = Option(
    "lora-lr-multiplier", float, 10.0,
    "RL601: when the run trains LoRA adapters, the learning-rate limit is multiplied by this factor.",
)

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OVERRIDE = re.compile(r"\+{0,2}([A-Za-z_][\w.\-]*)=([-+0-9.eE]+)")


def _advice(limit: float, lora: bool) -> str:
    """The rates to suggest: the usual range, or below the configured limit where that is lower, so that
    the advice never holds the reported value (which is at or above the limit)."""
    usual, top = ("1e-05..5e-05 for LoRA", 5e-5) if lora else ("<= 1e-06..5e-06", 5e-6)
    return usual if top < limit else f"< {format_number(limit)}" + (" for LoRA" if lora else "")


class SFTScaleLearningRate(CSTRule):
    """
    ## What it does
    By default: a learning rate above `max-learning-rate` (default `1e-5`; `1e-5` itself
    is not reported) that the run provably uses, in a script that trains an RL policy with
    no LoRA adapters in sight. The rate is followed through every layer of configuration
    (literals, constants, `argparse` defaults, dataclass fields and their inherited
    defaults, `os.environ` defaults, the framework's own defaults per release, YAML or JSON
    settings files the script loads (reported at their line in that file), and the
    project's launch scripts that run the file with `--flag value`) into the `learning_rate`
    of an RL trainer's config (`GRPOConfig(learning_rate=...)`, or the config object handed
    to `GRPOTrainer(args=...)`), or the `lr` of an Adam-family optimizer over the
    parameters of a pretrained causal language model. A default that a launch script
    replaces is no run's value, and is not reported.

    When RL601 is selected by name (`--select RL601`, `extend-select`), the broad form
    runs too: the learning-rate keys of RL launch configs (YAML, shell; see below), and, in
    RL training code, a learning rate above the limit in `learning_rate=` / `lr=` of a trainer
    config, an optimizer or any call, `actor_learning_rate`, an `argparse` default, a
    dataclass or class field (also when a GRPO config inherits it from a shared base),
    a module constant, an environment-variable default. The finding points where the
    value is written, and says where it is used. When the run trains LoRA adapters
    (`LoraConfig`, `get_peft_model`, a `peft_config` given to a trainer,
    `use_peft=True`, a LoRA rank above 0, a tinker LoRA training client) the limit is
    multiplied by `lora-lr-multiplier` (default 10).

    A rate counts only where it can reach the policy's optimizer: a value whose uses
    in the file reach only the optimizer of a critic, value head or reward model
    (`critic_learning_rate`, an optimizer over `critic.parameters()`), of a few bare
    tensors (an entropy temperature `alpha_lr`, one scalar), of a network the file
    trains from scratch (a module class of its own, no pretrained weights loaded), or of
    an SGD-family optimizer
    (the limit is an Adam limit) is not reported; nor are rates in records of a run
    (metrics, logged or saved trainer state), a function parameter's default that
    reaches no policy optimizer in the file (its callers set the rate), SFT configs, and
    files that are not RL code (an SFT script at `2e-5` is right). A shell launcher of
    a Python script that builds LoRA adapters (`LoraConfig`, `get_peft_model`) is judged
    by the LoRA limit.

    ## Why is this bad?
    Learning rates that suit supervised fine-tuning (1e-5 to 5e-5) are one to two
    orders of magnitude too large for full-parameter RL post-training: the policy
    drifts far from the reference within a few steps, the KL explodes, and reward
    collapses or the model degenerates. PPO/GRPO recipes use 1e-6 to 5e-6 (LoRA about
    ten times more).

    ## Example
    ```python
    training_args = GRPOConfig(output_dir="grpo", learning_rate=2e-5, num_generations=8)
    ```

    ## Use instead
    ```python
    training_args = GRPOConfig(output_dir="grpo", learning_rate=1e-6, num_generations=8)
    ```

    ## Options
    - `max-learning-rate` (float, default `1e-5`): rates above it are reported.
    - `lora-lr-multiplier` (float, default `10`): the limit is multiplied by it for LoRA runs.
    - `rl-context` (`"auto"` or `"always"`, default `"auto"`): which files count as RL code.
    """

    code = "RL601"
    tier = Tier.SUSPICIOUS  # on by default in its proven form (`_proven`); the broad form when RL601 is named
    name = "sft-scale-learning-rate"
    severity = Severity.WARNING
    message = "learning rate {value}{where} is SFT-scale{lora}: RL post-training at this rate usually collapses; use {advice}"
    options = (MAX_LEARNING_RATE, LORA_LR_MULTIPLIER)
    triggers = ("lr", "learning_rate", "learningrate")
    triggers_ignore_case = True
    file_kinds = ("python", "yaml", "shell")

    def __init__(self, file) -> None:
        super().__init__(file)
        self._context: Optional[RLContext] = None
        # id(node where the value is written) -> (value, how it is used, the node of that use)
        self._found: Dict[int, Tuple[Value, Optional[str], Optional[cst.CSTNode]]] = {}
        self._targets: List[cst.Assign] = []  # the assignments being visited, innermost last
        self._functions = 0  # how deep in function bodies the traversal is
        self._inherited: Dict[int, List[str]] = {}  # id(value node) -> classes that inherit the field
        self._local: Dict[int, Value] = {}  # learning rates assigned to local names, by where they are written
        self._elsewhere: Set[int] = set()  # values used as a critic's or an SFT stage's learning rate
        self._inside_other: Set[int] = set()  # dicts and calls nested under a critic / SFT key
        self._proven_places: Set[int] = set()  # where the proven form reported

    def _rl(self) -> bool:
        if self._context is None:
            self._context = self.file.fact(RLContext)
        return self.file.fact(Purpose).rl_settings

    def check_config(self) -> None:
        """`actor_rollout_ref.actor.optim.lr: 2e-5`, `--actor_learning_rate 2e-5`, `--actor.adam.lr`, TRL's
        `learning_rate:`; the run's LoRA rank or `use_peft` raises the limit, critic keys are exempt. Part of the
        broad form: a launch config does not show whether the script it runs builds LoRA adapters in a module it
        imports, or which optimizer a key reaches (primer: 2 real of 6)."""
        if not self.file.settings.names(self.code):
            return
        group = _config_group(self.file.path)
        for run in self.file.fact(LaunchRuns):
            limit = self.option(MAX_LEARNING_RATE) * (self.option(LORA_LR_MULTIPLIER) if run.lora else 1)
            for entry in run.entries:
                if (is_learning_rate(last_part(entry.key)) and not belongs_elsewhere(group + entry.key)
                        and _number(entry.value) is not None and entry.value > limit * (1 + 1e-9)):
                    _report_entry(self, entry, value=format_number(entry.value), where=_used_as(entry),
                                  lora=" even for LoRA" if run.lora else "",
                                  advice=_advice(limit, run.lora))

    # ---- uses ------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        exempt = id(node) in self._inside_other
        self._nest(((a.keyword.value if a.keyword else "", a.value) for a in node.args), exempt)
        keywords = [a for a in node.args if a.keyword is not None and is_learning_rate(a.keyword.value)]
        optimizer = optimizer_name(node)
        callee = self.file.fact(Imports).qualified(node.func) if keywords or optimizer else None
        if callee is None or not self._rl():
            return
        short = callee.split(".")[-1]
        context = set(tokens(short)) | self._target_words() | self._parameter_words(node)
        exempt = exempt or bool(context & NOT_THE_POLICY)
        for arg in keywords:
            self._use(arg.value, "`{}` of {}".format(arg.keyword.value, short), arg, arg.keyword.value, exempt)
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if optimizer and len(positional) >= 2 and not keywords:  # Adam(params, 3e-5)
            self._use(positional[1].value, "the learning rate of {}".format(short), positional[1], "", exempt)

    def _nest(self, items: Iterable[Tuple[str, cst.CSTNode]], exempt: bool) -> None:
        """`{"critic": {"lr": 1e-4}}`, `dict(critic=dict(lr=1e-4))`: what nests under a critic is the critic's."""
        for key, value in items:
            if isinstance(value, (cst.Dict, cst.Call)) and (exempt or set(tokens(key)) & NOT_THE_POLICY):
                self._inside_other.add(id(value))

    def visit_Assign(self, node: cst.Assign) -> None:
        self._targets.append(node)
        for target in node.targets:
            self._assigned(target.target, node.value, node)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        self._targets.pop()

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assigned(node.target, node.value, node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions -= 1

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        """A launcher written in Python: `"actor_rollout_ref.actor.optim.lr=3e-5"` in an override list."""
        text = _string(node)
        match = _OVERRIDE.fullmatch(text) if text and "=" in text else None
        if match and is_learning_rate(match.group(1)) and self._rl():
            self._override(match.group(1), match.group(2), node)

    def visit_List(self, node: cst.List) -> None:
        """`["--actor_learning_rate", "3e-5"]`: a flag and its value, as a launcher passes them."""
        elements = [e.value for e in node.elements]
        for flag, value in zip(elements, elements[1:]):
            name = _string(flag)
            if name and name.startswith("--") and is_learning_rate(name[2:]) and self._rl():
                number = _string(value)
                if number is not None:
                    self._override(name[2:], number, value)

    def _override(self, key: str, text: str, node: cst.CSTNode) -> None:
        if set(tokens(key)) & NOT_THE_POLICY:
            return
        try:
            number = float(text)
        except ValueError:
            return
        self._found.setdefault(id(node), (Value(number, node, (key,), "override {}".format(key)), None, None))

    def visit_Dict(self, node: cst.Dict) -> None:
        """`{"learning_rate": 3e-5}`; in a parameter group, `{"params": critic.parameters(), "lr": 1e-4}` is the critic's."""
        exempt = id(node) in self._inside_other
        elements = [e for e in node.elements if isinstance(e, cst.DictElement)]
        keyed = [(_string(e.key) or "", e.value) for e in elements]
        self._nest(keyed, exempt)
        rates = [e for e in elements if is_learning_rate(_string(e.key) or "")]
        if not rates or not self._rl() or self.file.fact(RateSinks).is_record(node):
            return
        code = self.file.module.code_for_node
        others = {w for e in elements if e not in rates for w in _words_in(code(e.value))}
        exempt = exempt or bool(others & NOT_THE_POLICY)
        for element in rates:
            self._use(element.value, "key {}".format(element.key.value), element, _string(element.key), exempt)

    def _assigned(self, target: cst.BaseExpression, value: cst.BaseExpression, statement: cst.CSTNode) -> None:
        """`lr = 3e-5` in a function, `args.learning_rate = 3e-5`, `cfg["lr"] = 3e-5` (module constants and
        class fields are declarations)."""
        if isinstance(target, cst.Name):
            if self._functions and is_learning_rate(target.value) and self._rl():
                # A local declaration: reported unless it only ever feeds a critic or an SFT stage.
                found = self.file.fact(Values).of(value)
                if found is not None and not isinstance(found.number, bool) and not self._not_policy(found, ""):
                    self._local.setdefault(id(found.node), found)
            return
        if isinstance(target, cst.Attribute):
            name = target.attr.value
        elif (isinstance(target, cst.Subscript) and len(target.slice) == 1
              and isinstance(target.slice[0].slice, cst.Index)):
            name = _string(target.slice[0].slice.value)
        else:
            return
        if name and is_learning_rate(name) and self._rl():
            self._use(value, None, statement, self.file.module.code_for_node(target))

    def _use(self, expr: cst.BaseExpression, how: Optional[str], where: cst.CSTNode, name: str = "",
             exempt: bool = False) -> None:
        """`expr` is used (`how`; None for a plain assignment) as a learning rate named `name`: remember where
        its value is written and its first use, or that it serves a critic or an SFT stage (`exempt`)."""
        value = self.file.fact(Values).of(expr)
        if value is None or isinstance(value.number, bool):
            return
        if exempt or self._not_policy(value, name):
            self._elsewhere.add(id(value.node))
        elif id(value.node) not in self._found or self._found[id(value.node)][1] is None:
            self._found[id(value.node)] = (value, how, where)

    @staticmethod
    def _not_policy(value: Value, name: str) -> bool:
        return bool({w for n in (name,) + value.names for w in tokens(n)} & NOT_THE_POLICY)

    def _target_words(self) -> Set[str]:
        """Words of the names being assigned: `critic_optimizer = AdamW(...)` belongs to the critic."""
        if not self._targets:
            return set()
        module = self.file.module
        return {w for t in self._targets[-1].targets for w in _words_in(module.code_for_node(t.target))}

    def _parameter_words(self, call: cst.Call) -> Set[str]:
        """Words of an optimizer's parameter argument: `AdamW(critic.parameters(), ...)` belongs to the critic."""
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if not positional:
            return set()
        return set(_words_in(self.file.module.code_for_node(positional[0])))

    # ---- declarations, and the report ---------------------------------------------

    def leave_Module(self, original_node: cst.Module) -> None:
        self._proven()
        if not self.file.settings.names(self.code):
            return  # the broad form below (names, every declaration) runs when RL601 is selected by name
        values = None
        declared = dict(self._local)
        for declaration in self._declarations():
            values = values or self.file.fact(Values)
            value = values.value_of(declaration)
            if value is None or isinstance(value.number, bool) or self._not_policy(value, ""):
                continue
            declared.setdefault(id(value.node), value)
            if declaration.kind == "field" and id(value.node) not in self._inherited:
                self._inherited[id(value.node)] = [
                    sub for sub in values.subclasses(declaration.owner)
                    if values.field(sub, declaration.name) is declaration and not set(tokens(sub)) & NOT_THE_POLICY]
        for key, value in declared.items():
            if key not in self._elsewhere:  # declared, and not only ever used for a critic or an SFT stage
                self._found.setdefault(key, (value, None, None))
        if not self._found:
            return
        lora = self._context is not None and self._context.uses_lora
        limit = self.option(MAX_LEARNING_RATE) * (self.option(LORA_LR_MULTIPLIER) if lora else 1)
        sinks = self.file.fact(RateSinks)
        for key, (value, how, use) in self._found.items():
            if key not in self._proven_places and value.number > limit * (1 + 1e-9) and sinks.reaches_policy(value):
                self._flag(value, how, use, lora)

    def _proven(self) -> None:
        """The default form: a rate above the limit that the engine follows to where the run uses it, in a file
        that trains an RL policy with no LoRA adapters in sight: the `learning_rate` of an RL trainer's
        config (given as a keyword, or read from the config object handed to the trainer, its fields' and
        the framework's defaults included), or the `lr` of an Adam-family optimizer over the parameters of a
        pretrained causal language model."""
        purpose = self.file.fact(Purpose)
        if not purpose.rl_run or self.file.fact(RLContext).uses_lora:
            return
        flow = self.file.fact(Flow)
        flow.analyze_all()
        limit = self.option(MAX_LEARNING_RATE)
        for use, how, rate in _policy_rates(flow):
            written = rate.reason("number")
            if rate.facts.get("type") != NUMBER or not written or rate.facts["number"] <= limit * (1 + 1e-9):
                continue
            place = written[0]
            if not isinstance(place, cst.CSTNode):
                self._proven_in_settings_file(place, use, how, rate, limit)
                continue
            place = written_at(self.file, place)
            if isinstance(place, RemoteNode) and os.path.abspath(place.path) == os.path.abspath(self.file.path):
                key = (place.path, place.line)  # a class of this file read through a module that imports it
            elif isinstance(place, cst.CSTNode):
                key = id(place)
            else:  # written in another module of the project: reported there
                self._proven_remote(use, how, rate, limit)
                continue
            if key in self._proven_places:
                continue
            self._proven_places.add(key)
            self._found.pop(key, None)
            origin = rate.facts.get("origin") or "literal"
            details = [] if origin == "literal" else [origin]
            values = self.file.fact(Values)
            line = place.line if isinstance(place, RemoteNode) else values.line(place)
            if values.line(use) != line:
                details.append("used as {} on line {}".format(how, values.line(use)))
            where = " ({})".format(", ".join(details)) if details else ""
            found = dict(value=format_number(rate.facts["number"]), where=where, lora="", advice=_advice(limit, False))
            if isinstance(place, RemoteNode):
                self.report_at(place.line, place.column, place.end_line, place.end_column, **found)
            else:
                self.report(place, **found)

    def _proven_in_settings_file(self, place, use: cst.CSTNode, how: str, rate: EngineValue, limit: float) -> None:
        """A proven rate written in a settings file the script reads (`yaml.safe_load`): reported at its line
        there, saying where this file uses it. A launch script's flag is judged in that script."""
        if not place.path.endswith(CONFIG_FILES) or (place.path, place.line) in self._proven_places:
            return
        self._proven_places.add((place.path, place.line))
        where = " ({}, used as {} on line {} of {})".format(rate.facts.get("origin"), how,
                                                            self.file.fact(Values).line(use), self.file.path)
        self._report_remote(place, use, dict(value=format_number(rate.facts["number"]), where=where, lora="",
                                             advice=_advice(limit, False)))

    def _proven_remote(self, use: cst.CSTNode, how: str, rate: EngineValue, limit: float) -> None:
        """A proven rate written in another module: reported where it is written (once for every importer, with
        that file's suppressions), saying where this file uses it."""
        values = self.file.fact(Values)
        written = values.of(use.value) if isinstance(use, cst.Arg) else None
        if written is None or isinstance(written.node, cst.CSTNode) or id(written.node) in self._proven_places:
            return
        self._proven_places.add(id(written.node))
        self._found.pop(id(written.node), None)
        where = " ({}, used as {} on line {} of {})".format(rate.facts.get("origin") or written.origin, how,
                                                            values.line(use), self.file.path)
        self.report_value(written, used_at=use, value=format_number(rate.facts["number"]), where=where, lora="",
                          advice=_advice(limit, False))

    def _declarations(self) -> Iterable[Declaration]:
        """Learning-rate declarations of RL code that belong to the policy."""
        if not self._rl():
            return []
        found = []
        for declaration in self.file.fact(Values).declarations():
            if not is_learning_rate(declaration.name):
                continue
            owner = set(tokens(declaration.owner or ""))
            if owner & NOT_THE_POLICY or set(tokens(declaration.name)) & NOT_THE_POLICY:
                continue
            found.append(declaration)
        return found

    def _flag(self, value: Value, how: Optional[str], use: Optional[cst.CSTNode], lora: bool) -> None:
        details = _details(self, value, how, use)
        heirs = self._inherited.get(id(value.node))
        if heirs:
            details.insert(1, "inherited by {}".format(", ".join(heirs)))
        where = " ({})".format(", ".join(details)) if details else ""
        advice = _advice(self.option(MAX_LEARNING_RATE) * (self.option(LORA_LR_MULTIPLIER) if lora else 1), lora)
        self.report(value.node, value=format_number(value.number), where=where,
                    lora=" even for LoRA" if lora else "", advice=advice)


# Optimizers whose learning-rate scale RL601's limit is for (Adam and its relatives).
_ADAM_FAMILY = re.compile(r"Adam|Lion")


def _policy_rates(flow: Flow) -> Iterable[Tuple[cst.CSTNode, str, EngineValue]]:
    """(where it is used, how, the rate) of every learning rate the engine follows into an RL trainer's config
    or an Adam-family optimizer of a pretrained causal language model in this file."""
    for function in flow.ir.all_functions():
        for site in function.calls:
            call = site.node
            callee = flow.value(call.func)
            qual = callee.facts.get("qual") or ""
            tail = qual.rsplit(".", 1)[-1] if qual else _callee(call)
            keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
            framework = framework_class(qual) if qual else None
            if framework is not None and is_rl_class(framework[1]) and "learning_rate" in keywords:
                arg = keywords["learning_rate"]
                yield arg, "`learning_rate` of {}".format(framework[1]), flow.value(arg.value)
            elif is_rl_class(tail) and tail.endswith("Trainer") and "args" in keywords:
                config = flow.value(keywords["args"].value)
                if _rl_config(config):
                    yield keywords["args"], "the `learning_rate` of the config {} trains with".format(tail), \
                        setting(flow, config, "learning_rate")
            elif _ADAM_FAMILY.search(tail) and tail[:1].isupper():
                positional = [a for a in call.args if a.keyword is None and not a.star]
                params = positional[0].value if positional else (keywords["params"].value if "params" in keywords
                                                                 else None)
                rate = keywords.get("lr") or (positional[1] if len(positional) > 1 else None)
                if rate is not None and params is not None and _pretrained_language_model(flow, params):
                    yield rate, "the learning rate of {}".format(tail), flow.value(rate.value)


def _rl_config(config: EngineValue) -> bool:
    """A framework RL config, or an instance of a project class that extends one."""
    framework = config.facts.get("framework")
    if framework is not None:
        return is_rl_class(framework[1])
    cls = config.facts.get("cls")
    return cls is not None and any(is_rl_class(b.rsplit(".", 1)[-1]) for owner in cls.module.flow._class_chain(cls)
                                   for b in owner.bases)


def _pretrained_language_model(flow: Flow, params: cst.BaseExpression) -> bool:
    """`model.parameters()` of a model loaded from pretrained weights as a causal language model (the policy
    of RL post-training; a value head's or reward model's architecture is another), with no LoRA adapters."""
    if not (isinstance(params, cst.Call) and isinstance(params.func, cst.Attribute)
            and params.func.attr.value in ("parameters", "named_parameters")):
        return False
    model = flow.value(params.func.value)
    return bool(model.facts.get("pretrained")) and model.facts.get("arch") in (CAUSAL_LM, VALUE_HEAD) and \
        not model.facts.get("lora")


def _details(rule: CSTRule, value: Value, how: Optional[str], use: Optional[cst.CSTNode]) -> List[str]:
    """How a value is declared and where it is used, for the message. A value written in another module
    (`Values` resolves imports) has no node of this file: its use is named with this file's path."""
    details = [] if value.origin == "literal" else [value.origin]
    if how is not None and use is not None:
        values = rule.file.fact(Values)
        line = values.line(use)
        if not isinstance(value.node, cst.CSTNode):
            details.append("used as {} on line {} of {}".format(how, line, rule.file.path))
        elif line != values.line(value.node):
            details.append("used as {} on line {}".format(how, line))
    return details


def _string(node: cst.CSTNode) -> Optional[str]:
    """The text of a plain string literal. Most have no prefix or escape, and libcst's
    `evaluated_value` (an `ast.literal_eval` per string) was a hot spot of this rule."""
    if not isinstance(node, cst.SimpleString):
        return None
    if not node.prefix and "\\" not in node.value:
        return node.raw_value
    value = node.evaluated_value
    return value if isinstance(value, str) else None


def _words_in(code: str) -> Iterable[str]:
    for word in _WORD.findall(code):
        yield from tokens(word)


MAX_KL_COEF = Option(
    "max-kl-coef", float, 0.5,
    "RL602: KL penalty coefficients above this value are reported in RL code and launch configs.",
)
MIN_CLIP_RANGE = Option(
    "min-clip-range", float, 0.1,
    "RL603: PPO/GRPO clip ranges below this value are reported in RL code and launch configs.",
)


def _number(value: object) -> Optional[float]:
    """A config value that is a number (not a boolean), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _used_as(entry) -> str:
    """Where a config value is used: ` (`key` of entry point)`."""
    command = " of {}".format(entry.command) if entry.command else ""
    return " (`{}`{})".format(entry.key.lstrip("-+"), command)


def _config_group(path: str) -> str:
    """A YAML file's Hydra config group, as a key prefix: `config/critic/critic.yaml` is mounted under
    `critic.`, so its `optim.lr` is the critic's."""
    parts = re.split(r"[\\/]", path)
    return parts[-2] + "." if len(parts) >= 2 and path.endswith((".yaml", ".yml")) else ""


def _report_entry(rule: CSTRule, entry, **values) -> None:
    rule.report_at(entry.line, entry.column, entry.line, entry.column + max(len(entry.text), 1), **values)


def _callee(call: cst.Call) -> str:
    """The last name of what is called: `GRPOConfig`, `sample` of `client.sample`."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


def _literal_string(expr: Optional[cst.BaseExpression]) -> Optional[str]:
    return _string(expr) if expr is not None else None


class _Threshold(CSTRule):
    """A numeric RL hyperparameter judged wherever it is written: keyword arguments and dict keys, attribute
    assignments, declarations (argparse defaults, class and dataclass fields, constants, parameter defaults),
    YAML keys and shell flags. Subclasses say which names (`_names`) and which values (`_judge`)."""

    file_kinds = ("python", "yaml", "shell")
    declaration_kinds = ("argparse", "field", "constant", "parameter")

    def __init__(self, file) -> None:
        super().__init__(file)
        self._context: Optional[RLContext] = None
        # id(node where the value is written) -> (value, how it is used, the node of that use, message values)
        self._found: Dict[int, Tuple[Value, Optional[str], Optional[cst.CSTNode], dict]] = {}

    def _rl(self) -> bool:
        if self._context is None:
            self._context = self.file.fact(RLContext)
        return self.file.fact(Purpose).rl_settings

    # ---- what subclasses say ----------------------------------------------------------

    def _names(self, name: str, owner: Optional[str], grouped_config: bool = False) -> bool:
        raise NotImplementedError

    def _judge(self, number: float, name: str, owner: Optional[str], siblings: Dict[str, object],
               grouped: Optional[Tuple[Optional[str], bool]]) -> Optional[dict]:
        """Message values when `number` is bad, else None. `siblings`: the other settings given with it
        (keyword arguments, dict keys, fields of its class: name -> expression or config value);
        `grouped`: what the launch run says about its group baseline, `(Run.baseline, Run.verl)` (None in
        Python, where the siblings say)."""
        raise NotImplementedError

    # ---- Python -----------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        owner = _callee(node)
        keywords = [a for a in node.args if a.keyword is not None]
        matched = [a for a in keywords if self._names(a.keyword.value, owner)]
        if matched and self._rl():
            siblings = {a.keyword.value: a.value for a in keywords}
            for arg in matched:
                self._use(arg.value, "`{}` of {}".format(arg.keyword.value, owner), arg, arg.keyword.value, owner,
                          siblings)

    def visit_Dict(self, node: cst.Dict) -> None:
        elements = [e for e in node.elements if isinstance(e, cst.DictElement) and _string(e.key)]
        matched = [e for e in elements if self._names(_string(e.key), None)]
        if matched and self._rl():
            siblings = {_string(e.key): e.value for e in elements}
            for element in matched:
                key = _string(element.key)
                self._use(element.value, "key {!r}".format(key), element, key, None, siblings)

    def visit_Assign(self, node: cst.Assign) -> None:
        """`config.kl_coef = 1.0`, `cfg["clip_ratio"] = 0.05` (plain names are declarations or locals)."""
        for target in node.targets:
            target = target.target
            if isinstance(target, cst.Attribute):
                name = target.attr.value
            elif (isinstance(target, cst.Subscript) and len(target.slice) == 1
                  and isinstance(target.slice[0].slice, cst.Index)):
                name = _string(target.slice[0].slice.value)
            else:
                continue
            if name and self._names(name, None) and self._rl():
                self._use(node.value, None, node, name, None, {})

    def _use(self, expr: cst.BaseExpression, how: Optional[str], where: cst.CSTNode, name: str,
             owner: Optional[str], siblings: Dict[str, object], grouped: Optional[Tuple[Optional[str], bool]] = None
             ) -> None:
        value = self.file.fact(Values).of(expr)
        if value is None or isinstance(value.number, bool):
            return
        if grouped is None and owner and owner.startswith("sample") and any(is_group_size(n) for n in value.names):
            # `client.sample(..., num_samples=cfg.group_size)`: a group (tinker centres it by its mean)
            grouped = (MEAN, False)
        verdict = self._judge(value.number, name, owner, siblings, grouped)
        if verdict is not None and (id(value.node) not in self._found or self._found[id(value.node)][1] is None):
            self._found[id(value.node)] = (value, how, where, verdict)

    def leave_Module(self, original_node: cst.Module) -> None:
        if self._rl():
            values = self.file.fact(Values)
            declarations = values.declarations()
            for declaration in declarations:
                if declaration.kind not in self.declaration_kinds:
                    continue
                owner = declaration.owner if declaration.kind == "field" else None
                if not self._names(declaration.name, owner):
                    continue
                value = values.value_of(declaration)
                if value is None or isinstance(value.number, bool) or id(value.node) in self._found:
                    continue
                siblings = {d.name: d.default for d in declarations
                            if d.kind == declaration.kind and d.owner == declaration.owner and d.default is not None}
                # The declaring class is no evidence of how the value is used: RLOOConfig's own default is
                # not a run's setting.
                verdict = self._judge(value.number, declaration.name, None, siblings, None)
                if verdict is not None:
                    self._found[id(value.node)] = (value, None, None, verdict)
        for value, how, use, verdict in self._found.values():
            self._flag(value, how, use, verdict)

    def _flag(self, value: Value, how: Optional[str], use: Optional[cst.CSTNode], verdict: dict) -> None:
        details = _details(self, value, how, use)
        self.report(value.node, value=format_number(value.number),
                    where=" ({})".format(", ".join(details)) if details else "", **verdict)

    # ---- launch configs ---------------------------------------------------------------

    def check_config(self) -> None:
        for run in self.file.fact(LaunchRuns):
            grouped_config = run.trl_grouped and not run.dpo_family
            siblings = {key: entry.value for key, entry in run.keys.items()}
            for entry in run.entries:
                number = _number(entry.value)
                if number is None or not self._names(entry.key, None, grouped_config):
                    continue
                verdict = self._judge(number, entry.key, None, siblings, (run.baseline, run.verl))
                if verdict is not None:
                    _report_entry(self, entry, value=format_number(number), where=_used_as(entry), **verdict)


class KLCoefficientTooLarge(_Threshold):
    """
    ## What it does
    Reports a KL penalty coefficient of PPO, GRPO or RLOO above `max-kl-coef` (default
    `0.5`): `beta` of TRL's `GRPOConfig` / `RLOOConfig` (in Python or in the YAML config of
    `trl grpo`), `kl_coef`, `init_kl_coef`, verl's `algorithm.kl_ctrl.kl_coef` and
    `actor_rollout_ref.actor.kl_loss_coef`, OpenRLHF's `--init_kl_coef`, wherever the
    value is written: a keyword argument, a dataclass field, a constant, an `argparse`
    default, a YAML key, a shell flag or variable.

    The `beta` of DPO-family losses (DPO, IPO, CPO, SimPO, ORPO, KTO) is a temperature
    of the preference loss, not a KL weight, and is never reported; nor are KL targets
    (`target_kl`, `kl_target`) of adaptive controllers, nor a function's parameter that
    only weighs terms of losses given to backward without a policy gradient (cross-entropy
    plus a KL to a teacher's logits: knowledge distillation).

    ## Why is this bad?
    The KL penalty keeps the policy near the reference model. A weight near 1 or above
    dominates the reward signal (rewards are typically in [0, 1]): the policy cannot
    move, the reward stays flat, and the run looks like RL "does nothing". Recipes use
    0.001 to 0.1.

    ## Example
    ```python
    training_args = GRPOConfig(output_dir="grpo", beta=2.0)
    ```

    ## Use instead
    ```python
    training_args = GRPOConfig(output_dir="grpo", beta=0.04)
    ```

    ## Options
    - `max-kl-coef` (float, default `0.5`): coefficients above it are reported.
    - `rl-context` (`"auto"` or `"always"`, default `"auto"`): which files count as RL code.
    """

    code = "RL602"
    name = "kl-coefficient-too-large"
    severity = Severity.WARNING
    message = ("KL coefficient {value}{where} is above {limit}: the penalty outweighs the reward and the policy "
               "cannot move; use 0.001..0.1")
    options = (MAX_KL_COEF,)
    triggers = ("kl", "beta")
    triggers_ignore_case = True

    def _names(self, name: str, owner: Optional[str], grouped_config: bool = False) -> bool:
        return is_kl_coefficient(name, owner, grouped_config)

    def _judge(self, number, name, owner, siblings, grouped) -> Optional[dict]:
        limit = self.option(MAX_KL_COEF)
        return {"limit": format_number(limit)} if number > limit and not distills(self.file.text) else None

    def _flag(self, value: Value, how: Optional[str], use: Optional[cst.CSTNode], verdict: dict) -> None:
        if not self._weighs_other_losses(value):
            super()._flag(value, how, use, verdict)

    def _weighs_other_losses(self, value: Value) -> bool:
        """A parameter's default that weighs only terms of losses given to backward without a policy gradient
        (`loss = ce + kl_coef * kl(student, teacher)`, a distillation step): not a penalty of an RL loss."""
        function, param = next(((f, p) for f in walk(self.file.module, into_functions=True)
                                if isinstance(f, cst.FunctionDef)
                                for p in f.params.params + f.params.kwonly_params if p.default is value.node),
                               (None, None))
        if param is None:
            return False
        loss = self.file.fact(LossSlice)
        name = param.name.value
        # statements that compute with it (a test, `if kl_coef != 0:`, weighs nothing)
        readers = [stmt for stmt, _ in self.file.fact(ModelRoles).calls.get(function, ())
                   if not isinstance(stmt, (cst.If, cst.While)) and any(
                       isinstance(n, cst.Name) and n.value == name for part in header(stmt) for n in walk(part))]
        steps = [loss.slice.get(stmt) for stmt in readers]
        weighed = [step for step in steps if step is not None]
        return bool(weighed) and all(step.sink.backward and not loss.policy_gradient(step.sink) for step in weighed)


class ClipRangeTooNarrow(_Threshold):
    """
    ## What it does
    Reports a PPO/GRPO clip range below `min-clip-range` (default `0.1`): `cliprange`,
    `epsilon` of TRL's GRPO/RLOO configs, OpenRLHF's `--eps_clip`, verl's `clip_ratio` and
    `clip_ratio_low`, `clip_range`, `clip_eps`, and a ratio clamp written
    `torch.clamp(ratio, 1 - c, 1 + c)` with a small `c`, wherever `c` is written.

    The value-function clip (`cliprange_value`, `value_clip`), the upper bound of an
    asymmetric clip (`epsilon_high`, `clip_ratio_high`), dual-clip's constant
    (`clip_ratio_c`) and gradient or reward clipping are other settings and are not
    reported. Nor are the clip ranges of sequence-level ratios (GSPO:
    `importance_sampling_level="sequence"`, verl's `policy_loss.loss_mode=gspo`, a loss
    function that offers a sequence-level ratio), which are around 3e-4 by design.

    ## Why is this bad?
    The clip range bounds how far one update may move each token's probability ratio.
    With `0.02` almost every token is clipped after the first mini-batch: the gradient
    vanishes and the policy barely learns, while the logs look healthy. PPO and GRPO use
    0.2 (DAPO: 0.2 low, 0.28 high).

    ## Example
    ```python
    clipped = torch.clamp(ratio, 1 - 0.01, 1 + 0.01)
    ```

    ## Use instead
    ```python
    clipped = torch.clamp(ratio, 1 - 0.2, 1 + 0.2)
    ```

    ## Options
    - `min-clip-range` (float, default `0.1`): clip ranges below it are reported.
    - `rl-context` (`"auto"` or `"always"`, default `"auto"`): which files count as RL code.
    """

    code = "RL603"
    tier = Tier.PEDANTIC  # primer precision below 0.9 (0 real of 1): deliberate settings dominate
    name = "clip-range-too-narrow"
    severity = Severity.WARNING
    message = ("clip range {value}{where} is below {limit}: almost every token is clipped and the policy barely "
               "learns; use about 0.2")
    options = (MIN_CLIP_RANGE,)
    triggers = ("clip", "epsilon", "clamp")
    triggers_ignore_case = True

    def __init__(self, file) -> None:
        super().__init__(file)
        self._sequence_level: List[bool] = []  # per enclosing function: it computes a sequence-level ratio
        self._sequence_defaults: Set[int] = set()  # parameter defaults of such functions
        self._mentions_sequence = bool(_SEQUENCE_FUNCTION.search(file.text))

    def _names(self, name: str, owner: Optional[str], grouped_config: bool = False) -> bool:
        return is_clip_range(name, owner, grouped_config)

    def _judge(self, number, name, owner, siblings, grouped) -> Optional[dict]:
        limit = self.option(MIN_CLIP_RANGE)
        if any(is_sequence_level(k or "", v if isinstance(v, str) else _literal(v)) for k, v in siblings.items()):
            return None  # GSPO's sequence-level ratios take clip ranges near 3e-4
        return {"limit": format_number(limit)} if 0 < number < limit else None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """A function that offers a sequence-level ratio (a GSPO mode or `importance_sampling_level`): its
        clip range may be GSPO's, and the evidence that it is a token-level range is mixed."""
        sequence = self._mentions_sequence and bool(_SEQUENCE_FUNCTION.search(self.file.module.code_for_node(node)))
        self._sequence_level.append(sequence)
        if sequence:
            self._sequence_defaults.update(id(p.default) for p in node.params.params + node.params.kwonly_params
                                           if p.default is not None)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._sequence_level.pop()

    def _flag(self, value: Value, how: Optional[str], use: Optional[cst.CSTNode], verdict: dict) -> None:
        if id(value.node) not in self._sequence_defaults:
            super()._flag(value, how, use, verdict)

    def visit_Call(self, node: cst.Call) -> None:
        """Also `torch.clamp(ratio, 1 - c, 1 + c)` / `ratio.clamp(...)`: `c` is the clip range."""
        super().visit_Call(node)
        if any(self._sequence_level):
            return
        if _callee(node) not in ("clamp", "clip", "clamp_", "clip_"):
            return
        bounds = [a.value for a in node.args if a.keyword is None and not a.star]
        bounds = bounds[-2:] if len(bounds) >= 2 else [a.value for a in node.args
                                                      if a.keyword and a.keyword.value in ("min", "max")]
        if len(bounds) != 2:
            return
        low, high = bounds
        if one_and(low, cst.Subtract) is None or one_and(high, cst.Add) is None or not self._rl():
            return
        self._use(low.right, "the lower bound of a ratio clamp", node, "clip", None, {})


_SEQUENCE_FUNCTION = re.compile(r"importance_sampling_level|[\"']gspo[\"']|[\"']sequence[\"']")


class GroupSizeTooSmall(_Threshold):
    """
    ## What it does
    Reports a group size of 1 (an error) or 2 (a warning) for group-normalized advantage
    estimators: `num_generations` of TRL's GRPO/RLOO configs, OpenRLHF's
    `--n_samples_per_prompt` with a group estimator (`--advantage_estimator group_norm`,
    `rloo`, `reinforce_baseline`), verl's `actor_rollout_ref.rollout.n` with
    `algorithm.adv_estimator=grpo` / `rloo`, tinker-cookbook's `group_size`, and the
    `num_samples` of a sampling call, wherever the value is written.

    A group of 2 is reported only where the baseline divides by the group's std (GRPO,
    OpenRLHF's `group_norm`): a mean-only or leave-one-out baseline (RLOO with k = 2,
    `reinforce_baseline`, `scale_rewards=False`, `norm_adv_by_std_in_grpo=false`, tinker's
    mean centring) is sound with two samples. Methods that do not normalize within groups
    (PPO with a critic and GAE, REINFORCE++, ReMax; verl's and OpenRLHF's default
    estimator is GAE) and evaluation sample counts (`val_kwargs.n`,
    `eval.n_samples_per_prompt`, `num_return_sequences` of a generate call) are not
    reported.

    ## Why is this bad?
    Group-relative estimators compare each sample with the other samples of its prompt.
    With one sample per prompt the baseline is the sample itself and the advantage is
    always zero, so nothing is learned; verl special-cases a group of one (mean 0,
    std 1), so there the advantage is the raw reward with no baseline at all. With two
    samples and a std baseline, the group's standard deviation is noise and each
    advantage is +-1 whatever the reward gap.

    ## Example
    ```python
    training_args = GRPOConfig(output_dir="grpo", num_generations=1)
    ```

    ## Use instead
    ```python
    training_args = GRPOConfig(output_dir="grpo", num_generations=8)
    ```

    ## Options
    No threshold: 1 and 2 are reported. `rl-context` (`"auto"` or `"always"`, default
    `"auto"`) says which files count as RL code.
    """

    code = "RL604"
    tier = Tier.PEDANTIC  # primer precision below 0.9 (0 real of 3): deliberate settings dominate
    name = "group-size-too-small"
    severity = Severity.ERROR
    message = "group size {value}{where}: {why}"
    triggers = GROUP_SIZE_TRIGGERS
    triggers_ignore_case = True
    declaration_kinds = ("argparse", "field", "constant")

    def _names(self, name: str, owner: Optional[str], grouped_config: bool = False) -> bool:
        return is_group_size(name, owner)

    def _judge(self, number, name, owner, siblings, grouped) -> Optional[dict]:
        if number not in (1, 2) or isinstance(number, float) and not number.is_integer():
            return None
        baseline, verl = grouped if grouped is not None else (_baseline_in_code(owner, siblings), False)
        if baseline is None and grouped is None and owner is None:
            # a setting (not a call's per-call count, `rollout(..., num_generations=1)` in a loop) that a
            # hand-written loop groups rewards by
            baseline = self.file.fact(GroupBaselines).of(name)
        if baseline is None:
            return None
        if number == 1:
            if verl:
                return {"why": "verl scores a group of one by its raw reward (mean 0, std 1): there is no baseline "
                               "and the advantage is the reward itself; use >= 4"}
            return {"why": "with one sample per prompt the group baseline is the sample itself and the advantage is "
                           "always zero; use >= 4"}
        if baseline != STD:
            return None  # a mean-only or leave-one-out baseline is sound with two samples (RLOO with k = 2)
        return {"why": "with two samples per prompt the group std is noise; use >= 4", "severity": Severity.WARNING}


def _baseline_in_code(owner: Optional[str], siblings: Dict[str, object]) -> Optional[str]:
    """The group baseline of a group size in Python code: a GRPO config or trainer divides by the std unless
    `scale_rewards` turns it off, an RLOO one leaves one out, an estimator given with it decides. A bare
    `group_size=1` says nothing: test and evaluation builders, distillation and sampling take one sample per
    prompt."""
    switch = next((v for k, v in siblings.items() if k and is_std_switch(k)), None)
    switch = _literal(switch)
    if owner in GROUP_CONFIGS:
        return group_baseline("rloo" if owner.startswith("RLOO") else "grpo", switch)
    for key, value in siblings.items():
        if key and is_estimator_key(key):
            text = value if isinstance(value, str) else _literal_string(value)
            if text:
                return group_baseline(text, switch)
    return None


def _literal(value: object) -> object:
    """A config value, or the constant a literal expression writes (`False`, `"none"`), else None."""
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return value.value == "True"
    if isinstance(value, cst.BaseExpression):
        return _literal_string(value)
    return value


_KL_WORDS = frozenset({"kl", "kld", "kldiv"})
_REWARD_WORDS = frozenset({"reward", "rewards", "score", "scores", "returns", "return"})
_IN_REWARD, _AS_LOSS = "use_kl_in_reward", "use_kl_loss"


class KLAppliedTwice(CSTRule):
    """
    ## What it does
    Reports a KL penalty applied twice in one run: verl's `algorithm.use_kl_in_reward`
    and `actor_rollout_ref.actor.use_kl_loss` both true (in a YAML config, in shell
    overrides, or as the defaults of one config class or call), or a function that
    subtracts a KL term from the rewards and also adds a KL term to the loss. The finding
    is on the KL-loss side.

    A KL applied once (in the reward only, or as a loss only) is not reported, nor are
    coefficients that are set while their switch is off (verl's defaults set both
    coefficients to 0.001 with both switches off).

    ## Why is this bad?
    Each mechanism is a full KL regularizer. Both together double the penalty under two
    coefficients tuned apart, and the KL in the reward also enters the advantages,
    which are then normalized: the policy is held near the reference much more strongly
    than intended (verl #265).

    ## Example
    ```yaml
    algorithm:
      use_kl_in_reward: true
    actor_rollout_ref:
      actor:
        use_kl_loss: true
    ```

    ## Use instead
    ```yaml
    algorithm:
      use_kl_in_reward: false
    actor_rollout_ref:
      actor:
        use_kl_loss: true
    ```

    ## Options
    - `rl-context` (`"auto"` or `"always"`, default `"auto"`): which files count as RL code.

    ## References
    - verl issue #265: KL loss and KL reward both enabled.
    """

    code = "RL605"
    name = "kl-applied-twice"
    severity = Severity.WARNING
    message = "the KL penalty is applied twice: {detail}; keep one of the two"
    triggers = ("kl",)
    triggers_ignore_case = True
    file_kinds = ("python", "yaml", "shell")

    def __init__(self, file) -> None:
        super().__init__(file)
        self._functions: List[Dict[str, List[cst.CSTNode]]] = []  # per enclosing function: reward / loss sides

    def check_config(self) -> None:
        for run in self.file.fact(LaunchRuns):
            in_reward = run.last(lambda key: last_part(key) == _IN_REWARD)
            as_loss = run.last(lambda key: last_part(key) == _AS_LOSS)
            if in_reward is not None and as_loss is not None and in_reward.value is True and as_loss.value is True:
                _report_entry(self, as_loss, detail="`{}` is on while `{}` (line {}) is on".format(
                    as_loss.key.lstrip("-+"), in_reward.key.lstrip("-+"), in_reward.line))

    def _rl(self) -> bool:
        return self.file.fact(Purpose).rl_settings

    # ---- switches given together --------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        self._switches({a.keyword.value: a.value for a in node.args if a.keyword is not None})

    def visit_Dict(self, node: cst.Dict) -> None:
        self._switches({_string(e.key): e.value for e in node.elements
                        if isinstance(e, cst.DictElement) and _string(e.key)})

    def _switches(self, given: Dict[str, cst.BaseExpression]) -> None:
        if _IN_REWARD in given and _AS_LOSS in given and self._rl():
            values = self.file.fact(Values)
            if all(_true(values.of(given[k])) for k in (_IN_REWARD, _AS_LOSS)):
                self.report(given[_AS_LOSS], detail="`{}` and `{}` are both on".format(_AS_LOSS, _IN_REWARD))

    def leave_Module(self, original_node: cst.Module) -> None:
        """Defaults of one class (or of one command line): both switches on."""
        if not self._rl() or _IN_REWARD not in self.file.text:
            return
        values = self.file.fact(Values)
        groups: Dict[Tuple[str, Optional[str]], Dict[str, Declaration]] = {}
        for declaration in values.declarations():
            if declaration.name in (_IN_REWARD, _AS_LOSS) and declaration.kind in ("field", "argparse"):
                groups.setdefault((declaration.kind, declaration.owner), {})[declaration.name] = declaration
        for group in groups.values():
            if len(group) == 2 and all(_true(values.value_of(d)) for d in group.values()):
                self.report(values.value_of(group[_AS_LOSS]).node, detail="the defaults of `{}` and `{}` are both "
                                                                          "on".format(_AS_LOSS, _IN_REWARD))

    # ---- a function that puts the KL in the reward and in the loss -----------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append({"reward": [], "loss": []})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        sides = self._functions.pop()
        if sides["reward"] and sides["loss"] and self._rl():
            line = self.file.fact(Values).line(sides["reward"][0])
            for node in sides["loss"]:
                self.report(node, detail="a KL term is added to the loss after one was subtracted from the rewards "
                                         "on line {}".format(line))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not self._functions:
            return
        if isinstance(node.operator, cst.Subtract) and _words(self, node.left) & _REWARD_WORDS \
                and _words(self, node.right) & _KL_WORDS:
            self._functions[-1]["reward"].append(node)
        elif isinstance(node.operator, cst.Add):
            left, right = _words(self, node.left), _words(self, node.right)
            if ("loss" in left and right & _KL_WORDS) or ("loss" in right and left & _KL_WORDS):
                self._functions[-1]["loss"].append(node)


def _true(value: Optional[Value]) -> bool:
    return value is not None and value.number is True


def _words(rule: CSTRule, node: cst.CSTNode) -> Set[str]:
    return set(_words_in(rule.file.module.code_for_node(node)))


# Names of objects that hold a whole parsed configuration: `**vars(args)`, `Config(**cfg)`.
_CONFIG_HOLDERS = frozenset({"args", "arguments", "config", "configs", "cfg", "conf", "opt", "opts", "options",
                             "flags", "hparams", "hp", "hps", "params", "settings", "namespace", "parsed"})
_FORWARDERS = ("vars", "asdict", "astuple", "fields", "to_dict", "model_dump", "dict", "to_container", "replace",
               "to_yaml", "save", "update")


class UnusedHyperparameter(CSTRule):
    """
    ## What it does
    Reports an RL hyperparameter (learning rate, KL coefficient or `beta`, clip range,
    sampling temperature, group size, generation length) declared as an `argparse`
    argument or a config-class field and never read in the file that consumes that
    command line or config class, and a value read from such a hyperparameter and then
    overwritten by a literal before it is used (`kl = args.beta` then `kl = 0.0`). Also a
    setting that the run's launch command or settings file gives (`--beta 0.1`, or
    `max_grad_norm: 2.0` in the YAML file that TRL's `--config` names or that the code loads)
    and that the code then overwrites with another literal (`training_args.max_grad_norm = 1.0`,
    `cfg["beta"] = 0.0`, not under a condition): the launches of an entry file that calls a function of this module
    (`from train.pipeline import main; main()`) are this module's command line. And a number
    that a settings file the code loads (`yaml.safe_load`, `json.load` of a file the code or
    its launch names) gives an RL hyperparameter under a key no code path reads: a KL weight
    written under `lora:` when the code reads only the LoRA keys of that section. Keys read
    (`cfg["lora"]["r"]`, `.get("r", 64)`), sections used whole (`LoraConfig(**cfg["lora"])`,
    handed to code out of sight) and names that any code of the project reads count as read; a
    key whose hyperparameter the code reads from another key of the file (a stale duplicate of
    `max_completion_length`) is not reported.
    The finding points at the declaration, at the overwriting literal, or at the unread key.

    The fields of an evaluation, SFT, reward-model or critic config class (`SFTConfig.lr`
    beside a PPO config) are not the RL run's settings and are not reported.

    Parameters forwarded as a whole (`GRPOConfig(**vars(args))`, `Config(**cfg)`,
    `asdict(config)`), fields of classes that extend another class (a `GRPOConfig` or
    `TrainingArguments` subclass: the framework reads them) are not reported.

    Scope: reads are looked for in the declaring file (attribute reads `args.x`,
    `config.x`, string keys `cfg["x"]`, `getattr(args, "x")`) and then, through the
    project index, in every other Python file of the project (`self.args.x` in a trainer
    that was handed `args` whole, `self.config.training.x`): a field read anywhere is
    read. A command line or class that this file does not consume itself (a config
    module) is judged when a module it imports, or that imports it, reads some of its
    other fields, and no such module hands an object over whole (`launch(**vars(cfg))`),
    since its fields are then read where the index cannot follow.

    ## Why is this bad?
    The run silently uses another value than the one on the command line or in the
    config: a `--beta` that never reaches the trainer, a temperature that the sampler
    does not see. Experiments then compare runs that differ in nothing (nanoGRPO #1,
    HelloAgents #107).

    ## Example
    ```python
    parser.add_argument("--beta", type=float, default=0.04)
    args = parser.parse_args()
    config = GRPOConfig(output_dir="grpo", beta=0.0)
    ```

    ## Use instead
    ```python
    parser.add_argument("--beta", type=float, default=0.04)
    args = parser.parse_args()
    config = GRPOConfig(output_dir="grpo", beta=args.beta)
    ```

    ## Options
    - `rl-context` (`"auto"` or `"always"`, default `"auto"`): which files count as RL code.
    """

    code = "RL606"
    name = "unused-hyperparameter"
    severity = Severity.WARNING
    message = "{detail}: the run silently uses another value"
    triggers = ("add_argument", "dataclass", "class ", "DEFINE_", "option", "parse_args", "yaml.", "json.load")

    def __init__(self, file) -> None:
        super().__init__(file)
        self._functions: List[Optional[str]] = [None]  # the enclosing function, innermost last
        self._declared_in: Dict[int, Optional[str]] = {}  # id(add_argument call) -> its function
        self._skip_strings: Set[int] = set()  # strings of declarations (`dest="lr"`), which are no reads
        self._targets: Set[int] = set()  # names and attributes assigned to or set by keyword: no reads
        self._attributes: Set[str] = set()  # attribute and plain names read
        self._strings: Set[str] = set()  # string constants (keys, getattr names)
        self._forwarded: Set[Optional[str]] = set()  # functions that forward parsed values as a whole
        self._forwarded_anywhere = False  # a named config object forwarded as a whole
        self._instance_forwarded = False  # `asdict(x)`, `vars(x)`: some object's fields read as a whole
        self._extends: Dict[str, bool] = {}  # class name -> whether it extends another class
        self._overwrites: List[Tuple[cst.CSTNode, str, str]] = []  # (literal, local name, attribute read)
        self._mentions: Dict[str, int] = {}  # name -> how often the file names it (not where a class is defined)
        self._attribute_bases: Dict[str, int] = {}  # name -> how often it is named as `name.attr`
        self._class_names: Set[int] = set()  # the Name nodes of class definitions

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._class_names.add(id(node.name))
        self._extends[node.name.value] = any(
            not (isinstance(b.value, cst.Name) and b.value.value in ("object", "ABC")) for b in node.bases
            if b.keyword is None)

    def visit_Call(self, node: cst.Call) -> None:
        callee = _callee(node)
        if callee == "add_argument" or callee == "option" or callee.startswith("DEFINE_"):
            self._declared_in[id(node)] = self._functions[-1]
            self._skip_strings.update(id(a.value) for a in node.args)
        if callee in _FORWARDERS and node.args:
            self._forward(node.args[0].value)
            self._instance_forwarded |= isinstance(node.args[0].value, (cst.Name, cst.Attribute))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._targets.add(id(node.keyword))  # `GRPOConfig(beta=...)` sets `beta`, reads nothing named so
        if node.star == "**":
            self._forward(node.value)

    def _forward(self, expr: cst.BaseExpression) -> None:
        """Values forwarded as a whole: in their own function always; elsewhere when a named object that
        holds a configuration is (`**vars(args)`, `asdict(config)`), not a fresh call or `**kwargs`."""
        self._forwarded.add(self._functions[-1])
        if isinstance(expr, cst.Call) and _callee(expr) in _FORWARDERS and expr.args:
            expr = expr.args[0].value
        if isinstance(expr, (cst.Name, cst.Attribute)) and \
                set(_words_in(self.file.module.code_for_node(expr))) & _CONFIG_HOLDERS:
            self._forwarded_anywhere = True

    def visit_Assign(self, node: cst.Assign) -> None:
        self._targets.update(id(t.target) for t in node.targets)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._targets.add(id(node.attr))  # the attribute's name is read, or written, as the attribute
        if isinstance(node.value, cst.Name):
            self._attribute_bases[node.value.value] = self._attribute_bases.get(node.value.value, 0) + 1
        if node.attr.value == "__dict__":
            self._forward(node.value)
        elif id(node) not in self._targets:
            self._attributes.add(node.attr.value)

    def visit_Name(self, node: cst.Name) -> None:
        """Plain names read: click and typer hand options to the function as parameters of that name."""
        if id(node) not in self._class_names:
            self._mentions[node.value] = self._mentions.get(node.value, 0) + 1
        if id(node) not in self._targets:
            self._attributes.add(node.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if id(node) not in self._skip_strings:
            text = _string(node)
            if text:
                self._strings.add(text)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        """`kl = args.beta` ... `kl = 0.0` in one block, `kl` not read in between."""
        code = self.file.module.code_for_node
        read_from: Dict[str, str] = {}  # local name -> the attribute it was read from
        for statement in node.body:
            assign = _simple_assign(statement)
            if assign is not None and assign[0] in read_from and _number_literal(assign[1]):
                self._overwrites.append((assign[1], assign[0], read_from.pop(assign[0])))
                continue
            if read_from:
                text = code(statement)
                for name in [n for n in read_from if re.search(r"\b{}\b".format(re.escape(n)), text)]:
                    del read_from[name]  # read, or changed, before any overwrite
            if assign is not None and isinstance(assign[1], cst.Attribute):
                read_from[assign[0]] = assign[1].attr.value

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self.file.fact(Purpose).rl_settings:
            return
        values = self.file.fact(Values)
        declarations = [d for d in values.declarations() if d.kind in ("argparse", "field")]
        # an evaluation config's settings are not the run's, nor are an SFT, reward-model or critic config's
        watched = {id(d) for d in declarations if is_rl_hyperparameter(d.name)
                   and not set(tokens(d.owner or "")) & (EVALUATION | NOT_THE_POLICY)}
        read = self._attributes | self._strings
        unread, consumed_elsewhere = [], {}
        for declaration in declarations:
            if id(declaration) not in watched or _read_name(declaration) in read or self._exempt(declaration):
                continue
            group = {_read_name(d) for d in declarations if self._same_group(d, declaration) and d is not declaration}
            if not group & read:
                consumed_elsewhere[declaration] = group  # this file consumes nothing of it: do other modules?
            unread.append(declaration)
        index = self.file.fact(ProjectIndex)
        if consumed_elsewhere and _escapes(index, {n for group in consumed_elsewhere.values() for n in group}):
            unread = [d for d in unread if d not in consumed_elsewhere]
        # `self.args.beta` in a trainer handed `args` whole, `cfg.training.lr` in another module: read there.
        elsewhere = index.read_elsewhere({_read_name(d) for d in unread if not self._closed(d, index)}) \
            if unread else set()
        # Consumed elsewhere: a module this one imports, or that imports it, reads some of the group.
        nearby = {n for _, summary in index.neighbours() for n in summary.reads} if consumed_elsewhere else set()
        for declaration in unread:
            if _read_name(declaration) in elsewhere:
                continue
            if declaration in consumed_elsewhere and not consumed_elsewhere[declaration] & nearby:
                continue  # no module around it reads anything of that command line or class
            self.report(declaration.node, detail="`{}` ({}) is declared but never read".format(
                declaration.name, declaration.origin))
        self._configured_overwritten()
        self._unread_settings(read, index)
        watched_names = {d.name for d in declarations if id(d) in watched}
        for literal, name, source in self._overwrites:
            if source in watched_names:
                self.report(literal, detail="`{}` is read from `{}` and then overwritten by the literal {}".format(
                    name, source, self.file.module.code_for_node(literal)))

    def _configured_overwritten(self) -> None:
        """`training_args.max_grad_norm = 1.0` (or `cfg["beta"] = 0.0`) in the body of a function or script, not
        under a condition, when the run's settings file or launch command gives that setting another value: the
        configured value never reaches the run. The setting's value comes from the engine (`_launched`,
        `_loaded`), written where the file or the launch writes it."""
        flow = self.file.fact(Flow)
        for function in flow.ir.all_functions():
            for statement in function.body:
                assign = _setting_literal(statement)
                if assign is None or not _tuned(assign[2]):
                    continue
                target, holder, key, literal = assign
                held = flow.value(holder)
                configured = dict(held.facts.get("items") or ()).get(key, UNKNOWN) \
                    if held.facts.get("type") == DICT else setting(flow, held, key)
                places = [p for p in configured.reason("number") if isinstance(p, RemoteNode)]
                number = _literal_number(literal)
                if places and number is not None and configured.facts.get("number") not in (None, number):
                    self.report(literal, detail="`{}` is set to {} by {} and then overwritten by the literal {}".format(
                        self.file.module.code_for_node(target), format_number(configured.facts["number"]),
                        configured.facts.get("origin", "the run's settings"), self.file.module.code_for_node(literal)))

    def _unread_settings(self, read: Set[str], index: ProjectIndex) -> None:
        """A number a settings file that this code loads gives an RL hyperparameter (`lora.kl_coeff: 0.05`) under
        a key that no code path reads (`SettingsUse`), nor any code of the project by that name, while the code
        reads no other key of the file for that hyperparameter: reported where the file writes it."""
        use = self.file.fact(SettingsUse)
        for path in use.loaded():
            entries = settings_file(self.file, path, nested=True) or []
            # a duplicate: the code reads (or may read) another key of the file that sets that hyperparameter
            configured = {rl_hyperparameter_kind(entry.key) for entry in entries if not use.unread(path, entry.key)}
            unread = [entry for entry in entries
                      if _number(entry.value) is not None and rl_hyperparameter_kind(entry.key) is not None
                      and rl_hyperparameter_kind(entry.key) not in configured
                      and not set(tokens(entry.key)) & (EVALUATION | NOT_THE_POLICY) and use.unread(path, entry.key)
                      and last_part(entry.key) not in read]
            elsewhere = index.read_elsewhere({last_part(entry.key) for entry in unread}) if unread else set()
            for entry in unread:
                if last_part(entry.key) not in elsewhere:
                    self.report(entry.place, detail="`{}` is set to {} in {} but no code path reads it".format(
                        entry.key, format_number(entry.value), entry.path))

    def _same_group(self, other: Declaration, declaration: Declaration) -> bool:
        if declaration.kind == "field":
            return other.kind == "field" and other.owner == declaration.owner
        return other.kind == "argparse" and self._declared_in.get(id(other.node)) == \
            self._declared_in.get(id(declaration.node))

    def _closed(self, declaration: Declaration, index: ProjectIndex) -> bool:
        """A field of a plain class that never leaves this file: the file names the class only to read or set
        its attributes (`Config.lr`: never built, passed or stored), and no project file imports this one.
        Another file's read of a field of that name reads something else."""
        owner = declaration.owner
        return declaration.kind == "field" and owner is not None and self._extends.get(owner) is False and \
            self._mentions.get(owner, 0) == self._attribute_bases.get(owner, 0) and index.enabled and \
            not index.importers()

    def _exempt(self, declaration: Declaration) -> bool:
        if self._closed(declaration, self.file.fact(ProjectIndex)):
            return False  # nothing is handed over whole: the class itself never is
        if self._forwarded_anywhere:
            return True
        if declaration.kind == "field":
            return self._extends.get(declaration.owner or "", True) or self._instance_forwarded
        return self._declared_in.get(id(declaration.node), "?") in self._forwarded


def _escapes(index: ProjectIndex, names: Set[str]) -> bool:
    """Whether a module that reads some of `names` also hands an object over whole (`launch(**vars(cfg))`,
    `asdict(cfg)`): the fields are then read where the index cannot follow. Without the index, always."""
    return not index.enabled or any(summary.whole and summary.reads & names and index.consulted(path)
                                    for path, summary in index.others(names))


def _read_name(declaration: Declaration) -> str:
    """The attribute that reads a declaration: `--actor.eps_clip` is read as `args.actor.eps_clip`."""
    return declaration.name.rsplit(".", 1)[-1]


def _simple_assign(statement: cst.CSTNode) -> Optional[Tuple[str, cst.BaseExpression]]:
    """`name = value` as a whole statement line."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            return small.targets[0].target.value, small.value
    return None


def _setting_literal(statement: cst.CSTNode
                     ) -> Optional[Tuple[cst.BaseExpression, cst.BaseExpression, str, cst.BaseExpression]]:
    """`holder.setting = <number>` or `holder["setting"] = <number>` as a whole statement line: (target, holder,
    setting, number)."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and _number_literal(small.value)):
        return None
    target = small.targets[0].target
    if isinstance(target, cst.Attribute):
        return target, target.value, target.attr.value, small.value
    if isinstance(target, cst.Subscript) and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
        key = _string(target.slice[0].slice.value)
        return (target, target.value, key, small.value) if key else None
    return None


def _literal_number(expr: cst.BaseExpression) -> Optional[float]:
    negative = isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus)
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    number = float(expr.evaluated_value) if isinstance(expr, (cst.Integer, cst.Float)) else None
    return -number if negative and number is not None else number


def _tuned(name: str) -> bool:
    """The settings whose replacement changes what the run learns: RL606's hyperparameters and the gradient
    clipping norm."""
    return is_rl_hyperparameter(name) or is_grad_clip_norm(name)


def _number_literal(expr: cst.BaseExpression) -> bool:
    """`0.0`, `-1`, `1e-6`."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))
