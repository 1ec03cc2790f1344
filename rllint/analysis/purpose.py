"""What a file is for, from what it does: RL training, SFT, reward-model training, distillation,
evaluation, a library of helpers, or tests (RULES.md, "How rllint knows it is looking at RL code").

An RL repository holds much that is not an RL run: the SFT stage before it, the reward model
it uses, an evaluation harness, unit tests with toy values. Rules about a run's settings (RL6xx,
RL306) apply only where an RL run is trained; rules whose pattern also occurs in other ML code
(a log of a softmax, a masked mean, a decode) apply only to RL post-training code. Both are
decided here, once per file, from evidence of behaviour:

- trains: a backward pass, an optimizer step, a trainer's `.train()`, an MLX/JAX/tinker update;
- builds or subclasses an RL trainer or config (`GRPOTrainer`, `PPOConfig`), imports one from
  an RL framework (TRL, OpenRLHF, verl, tinker-cookbook's RL), builds an SFT or reward-model
  trainer, or a distillation set-up;
- generates (a `generate` / `sample` call) without training: an evaluation script;
- the RL vocabulary of its code (`rllint.analysis.context`) ranks what a training file trains,
  never decides on its own that a file trains.

Test code is recognised by its path (`tests/`, `test_*.py`, `*_test.py`, `conftest.py`,
the fixtures inside them, smoke and debug scripts): its values are toys, not a run's settings.
"""
from __future__ import annotations

import ast
import re
from typing import Optional, Set

from rllint.analysis.context import RL_CONTEXT, RLContext
from rllint.analysis.imports import Imports
from rllint.analysis.nodes import AstNodes
from rllint.files import is_test_path

RL = "rl"
SFT = "sft"
REWARD_MODEL = "reward-model"
DISTILLATION = "distillation"
EVALUATION = "evaluation"
LIBRARY = "library"


# Class names of trainers and configs that train an RL policy, and of the other kinds.
_RL_CLASS = re.compile(r"(?<![A-Za-z])(?:GRPO|PPO|RLOO|DPO|OnlineDPO|KTO|ORPO|CPO|XPO|BCO|SimPO|NashMD|"
                       r"Reinforce|ReMax|DAPO|GSPO)[A-Za-z]*(?:Trainer|Config)$")
_SFT_CLASS = re.compile(r"^SFT(?:Trainer|Config)$")
_RM_CLASS = re.compile(r"^(?:Reward|PRM)(?:Trainer|Config)$|^AutoModelForSequenceClassification$")
_KD_CLASS = re.compile(r"^GKD(?:Trainer|Config)$|Distill\w*(?:Trainer|Config)$")
# Calls that update weights, besides `.backward()`: tinker's training client, MLX's and optax's updates.
_UPDATES = frozenset({"backward", "forward_backward", "forward_backward_async", "optim_step", "optim_step_async",
                      "value_and_grad", "apply_updates"})
_GENERATES = frozenset({"generate", "sample", "sample_async", "chat", "completions"})
_RL_VOCABULARY = 4  # the weight of RL vocabulary that makes a training file an RL trainer (as `RLContext`)
_RL_DOMAIN_VOCABULARY = 2  # the weight that makes a file of helpers RL post-training code


def is_rl_class(name: str) -> bool:
    """A trainer or config class that trains an RL policy (`GRPOConfig`, `PPOTrainer`, `DPOConfig`)."""
    return bool(_RL_CLASS.search(name))


class Purpose:
    """`kind` of a Python file and the two questions rules ask: `rl_run` and `rl_code`."""

    def __init__(self, file) -> None:
        self._file = file
        self.is_test = is_test_path(file.path)
        self._always = file.settings.option(RL_CONTEXT) == "always"
        self._kind: Optional[str] = None
        self._context = file.fact(RLContext)

    @property
    def kind(self) -> str:
        """RL, SFT, REWARD_MODEL, DISTILLATION, EVALUATION (generates, never trains) or LIBRARY."""
        if self._kind is None:
            self._kind = self._decide()
        return self._kind

    @property
    def rl_run(self) -> bool:
        """The file trains an RL policy (not tests)."""
        return self._always or (self.kind == RL and not self.is_test)

    @property
    def rl_settings(self) -> bool:
        """The file's hyperparameters are an RL run's: it trains an RL policy, or it is a module of RL code
        (losses, configs) that does not train on its own. Not tests, evaluation, SFT, reward-model or
        distillation scripts."""
        if self._always:
            return True
        if self.is_test:
            return False
        return self.kind == RL or (self.kind == LIBRARY and self._context.vocabulary >= _RL_VOCABULARY)

    @property
    def rl_code(self) -> bool:
        """RL post-training code in the broad sense: an RL run, or helpers, rewards and evaluation that speak
        RL. Not SFT, reward-model or distillation training, nor ML code of other kinds."""
        if self._always or self.kind == RL:
            return True
        if self.kind not in (LIBRARY, EVALUATION):
            return False
        return bool(self._context.frameworks) or self._context.vocabulary >= _RL_DOMAIN_VOCABULARY

    @property
    def array_library(self) -> Optional[str]:
        """"mlx" or "jax" when the file computes with them and not with torch: torch advice does not apply."""
        imports = self._file.fact(Imports)
        if imports.imports_from("torch"):
            return "torch"
        for library in ("mlx", "jax"):
            if imports.imports_from(library):
                return library
        return None

    def _decide(self) -> str:
        built = self._classes_used()
        if any(_KD_CLASS.search(name) for name in built) or distills(self._file.text):
            return DISTILLATION
        if any(_RL_CLASS.search(name) for name in built) or self._context.imports_rl_trainer:
            return RL
        if any(_SFT_CLASS.search(name) for name in built):
            return SFT
        if not self._trains():
            return EVALUATION if self._generates() else LIBRARY
        # A PPO script builds a sequence-classification reward model too: what it trains, its vocabulary says.
        if self._context.vocabulary >= _RL_VOCABULARY:
            return RL
        return REWARD_MODEL if any(_RM_CLASS.search(name) for name in built) else SFT

    def _classes_used(self) -> Set[str]:
        """Names of classes called, built with a class method (`X.from_pretrained`) or subclassed in the file
        (their last dotted part)."""
        nodes = self._file.fact(AstNodes)
        names = {_last_name(call.func) for call in nodes.of(ast.Call)}
        names.update(_last_name(call.func.value) for call in nodes.of(ast.Call) if isinstance(call.func, ast.Attribute))
        names.update(_last_name(base) for cls in nodes.of(ast.ClassDef) for base in cls.bases)
        names.discard(None)
        return {name for name in names if name[:1].isupper()}

    def _trains(self) -> bool:
        for call in self._file.fact(AstNodes).of(ast.Call):
            name = _last_name(call.func)
            if name in _UPDATES:
                return True
            if name in ("step", "train", "update") and isinstance(call.func, ast.Attribute):
                owner = _last_name(call.func.value) or ""
                if re.search(r"optim|opt$|trainer|learner", owner, re.I):
                    return True
        return False

    @property
    def rl_source(self) -> bool:
        """RL post-training code that is not a test: chat templates and sampling settings are written the same
        way in every ML codebase (image pipelines, model processors), and a test's strings are fixtures."""
        return self.rl_code and not self.is_test

    def _generates(self) -> bool:
        return any(_last_name(call.func) in _GENERATES for call in self._file.fact(AstNodes).of(ast.Call))


class RLCodeOnly:
    """Base of rules whose pattern also occurs in ML code of other kinds (a log of a softmax, a masked
    mean, an epsilon beside a std): they report only in RL post-training code (`Purpose.rl_code`)."""

    def report(self, node, severity=None, **values) -> None:
        if self.file.fact(Purpose).rl_code:
            super().report(node, severity, **values)


def _last_name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _last_name(node.func)
    if isinstance(node, ast.Subscript):
        return _last_name(node.value)
    return None


def distills(text: str) -> bool:
    """On-policy or offline distillation code or config: its "KL penalty" is the KL to a teacher, the training
    signal itself, not a penalty that holds the policy near a reference."""
    return "teacher" in text and "distill" in text.lower()
