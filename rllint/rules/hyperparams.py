"""RL6xx: hyperparameters of RL post-training runs (RL code and launch configs only)."""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.context import RLContext, tokens
from rllint.analysis.imports import Imports
from rllint.analysis.values import Declaration, Value, Values, format_number
from rllint.diagnostic import Severity
from rllint.registry import CSTRule, Option

MAX_LEARNING_RATE = Option(
    "max-learning-rate", float, 1e-5,
    "RL601: learning rates at or above this value are reported in RL code (1e-5 itself is reported).",
)
LORA_LR_MULTIPLIER = Option(
    "lora-lr-multiplier", float, 10.0,
    "RL601: when the run trains LoRA adapters, the learning-rate limit is multiplied by this factor.",
)

# Words that make a learning-rate name something else: a bound, a schedule, a multiplier.
_NOT_A_RATE = {"min", "end", "final", "warmup", "decay", "ratio", "scale", "scaling", "factor", "mult", "multiplier",
               "schedule", "scheduler", "sched", "type", "kwargs", "name", "steps", "step", "epochs", "gamma",
               "patience", "cycle", "milestones", "power", "div", "eta", "finder", "range", "search", "grid"}
# Words that say the rate belongs to something other than the policy (or to a non-RL stage):
# critics and value heads, reward models, SFT and pre-training; optimizers whose lr has another scale
# (Prodigy and D-Adaptation take a multiplier, Muon's orthogonalised updates take ~0.02).
_NOT_THE_POLICY = {"critic", "value", "values", "vf", "reward", "rm", "prm", "discriminator", "disc", "q", "sft",
                   "pretrain", "pretraining", "prodigy", "dadapt", "dadaptation", "muon", "baseline"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OVERRIDE = re.compile(r"\+{0,2}([A-Za-z_][\w.\-]*)=([-+0-9.eE]+)")


def is_learning_rate(name: str) -> bool:
    """`learning_rate`, `lr`, `actor_lr`, `policy_learning_rate`, `optim.lr`; not `min_lr`, `lr_scheduler_type`."""
    words = tokens(name)
    if "lr" not in words and not _adjacent(words, "learning", "rate") and "learningrate" not in words:
        return False
    return not set(words) & _NOT_A_RATE


def _adjacent(words: List[str], first: str, second: str) -> bool:
    return any(a == first and b == second for a, b in zip(words, words[1:]))


class SFTScaleLearningRate(CSTRule):
    """
    ## What it does
    Reports, in RL training code, a learning rate at or above `max-learning-rate`
    (default `1e-5`; `1e-5` itself is reported): `learning_rate=` / `lr=` of a trainer
    config, an optimizer or any call, `actor_learning_rate`, an `argparse` default, a
    dataclass or class field (also when a GRPO config inherits it from a shared base),
    a module constant, an environment-variable default. The finding points where the
    value is written, and says where it is used. When the run trains LoRA adapters
    (`LoraConfig`, `get_peft_model`, a `peft_config` given to a trainer,
    `use_peft=True`, a LoRA rank above 0, a tinker LoRA training client) the limit is
    multiplied by `lora-lr-multiplier` (default 10).

    Critic, value-head and reward-model learning rates (`critic_learning_rate`,
    `critic_lr`, an optimizer over `critic.parameters()`), SFT configs and files that
    are not RL code (an SFT script at `2e-5` is right) are not reported.

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
    - `max-learning-rate` (float, default `1e-5`): rates at or above it are reported.
    - `lora-lr-multiplier` (float, default `10`): the limit is multiplied by it for LoRA runs.
    - `rl-context` (`"auto"` or `"always"`, default `"auto"`): which files count as RL code.
    """

    code = "RL601"
    name = "sft-scale-learning-rate"
    severity = Severity.WARNING
    message = "learning rate {value}{where} is SFT-scale{lora}: RL post-training at this rate usually collapses; use {advice}"
    options = (MAX_LEARNING_RATE, LORA_LR_MULTIPLIER)
    triggers = ("lr", "LR", "learning_rate", "LEARNING_RATE", "learningRate", "Lr")

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

    def _rl(self) -> bool:
        if self._context is None:
            self._context = self.file.fact(RLContext)
        return self._context.is_rl

    # ---- uses ------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        exempt = id(node) in self._inside_other
        self._nest(((a.keyword.value if a.keyword else "", a.value) for a in node.args), exempt)
        keywords = [a for a in node.args if a.keyword is not None and is_learning_rate(a.keyword.value)]
        callee = self.file.fact(Imports).qualified(node.func) if keywords or _is_optimizer_name(node) else None
        if callee is None or not self._rl():
            return
        short = callee.split(".")[-1]
        if _is_optimizer_name(node) and _toy_parameters(node):
            return
        context = set(tokens(short)) | self._target_words() | self._parameter_words(node)
        exempt = exempt or bool(context & _NOT_THE_POLICY)
        for arg in keywords:
            self._use(arg.value, "`{}` of {}".format(arg.keyword.value, short), arg, arg.keyword.value, exempt)
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if _is_optimizer_name(node) and len(positional) >= 2 and not keywords:  # Adam(params, 3e-5)
            self._use(positional[1].value, "the learning rate of {}".format(short), positional[1], "", exempt)

    def _nest(self, items: Iterable[Tuple[str, cst.CSTNode]], exempt: bool) -> None:
        """`{"critic": {"lr": 1e-4}}`, `dict(critic=dict(lr=1e-4))`: what nests under a critic is the critic's."""
        for key, value in items:
            if isinstance(value, (cst.Dict, cst.Call)) and (exempt or set(tokens(key)) & _NOT_THE_POLICY):
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
        if set(tokens(key)) & _NOT_THE_POLICY:
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
        if not rates or not self._rl():
            return
        code = self.file.module.code_for_node
        others = {w for e in elements if e not in rates for w in _words_in(code(e.value))}
        exempt = exempt or bool(others & _NOT_THE_POLICY)
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
        return bool({w for n in (name,) + value.names for w in tokens(n)} & _NOT_THE_POLICY)

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
                    if values.field(sub, declaration.name) is declaration and not set(tokens(sub)) & _NOT_THE_POLICY]
        for key, value in declared.items():
            if key not in self._elsewhere:  # declared, and not only ever used for a critic or an SFT stage
                self._found.setdefault(key, (value, None, None))
        if not self._found:
            return
        lora = self._context is not None and self._context.uses_lora
        limit = self.option(MAX_LEARNING_RATE) * (self.option(LORA_LR_MULTIPLIER) if lora else 1)
        for value, how, use in self._found.values():
            if value.number >= limit * (1 - 1e-9):
                self._flag(value, how, use, lora)

    def _declarations(self) -> Iterable[Declaration]:
        """Learning-rate declarations of RL code that belong to the policy."""
        if not self._rl():
            return []
        found = []
        for declaration in self.file.fact(Values).declarations():
            if not is_learning_rate(declaration.name):
                continue
            owner = set(tokens(declaration.owner or ""))
            if owner & _NOT_THE_POLICY or set(tokens(declaration.name)) & _NOT_THE_POLICY:
                continue
            found.append(declaration)
        return found

    def _flag(self, value: Value, how: Optional[str], use: Optional[cst.CSTNode], lora: bool) -> None:
        values = self.file.fact(Values)
        details = [] if value.origin == "literal" else [value.origin]
        heirs = self._inherited.get(id(value.node))
        if heirs:
            details.append("inherited by {}".format(", ".join(heirs)))
        if how is not None and use is not None:
            line = values.line(use)
            if line != values.line(value.node):
                details.append("used as {} on line {}".format(how, line))
        where = " ({})".format(", ".join(details)) if details else ""
        advice = "1e-05..5e-05 for LoRA" if lora else "<= 1e-06..5e-06"
        self.report(value.node, value=format_number(value.number), where=where,
                    lora=" even for LoRA" if lora else "", advice=advice)


def _is_optimizer_name(call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name[:1].isupper() and ("Adam" in name or name in ("SGD", "RMSprop", "Adagrad", "Adafactor", "Lion"))


def _string(node: cst.CSTNode) -> Optional[str]:
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return node.evaluated_value
    return None


def _toy_parameters(call: cst.Call) -> bool:
    """`AdamW([logits], lr=1e-3)`: an optimizer over a few bare tensors (a test or a toy), not a model."""
    first = next((a.value for a in call.args if a.keyword is None and not a.star), None)
    if first is None:
        first = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "params"), None)
    return (isinstance(first, (cst.List, cst.Tuple)) and bool(first.elements)
            and all(isinstance(e.value, cst.Name) for e in first.elements))


def _words_in(code: str) -> Iterable[str]:
    for word in _WORD.findall(code):
        yield from tokens(word)
