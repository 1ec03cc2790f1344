"""Which names and keys are which RL hyperparameter, in every framework's spelling, and what a launch run is.

RL hyperparameters are written under many names: TRL config fields (`learning_rate`,
`beta`, `epsilon`, `num_generations`), OpenRLHF flags flat and dotted
(`--actor_learning_rate`, `--actor.adam.lr`, `--init_kl_coef`, `--eps_clip`,
`--n_samples_per_prompt`), verl keys (`actor_rollout_ref.actor.optim.lr`,
`algorithm.kl_ctrl.kl_coef`, `actor.clip_ratio_low`, `rollout.n`), tinker-cookbook
configs (`learning_rate`, `group_size`) and hand-written code. The RL6xx rules, RL306
and RL402 ask this module what a name means, so that the vocabulary lives in one place.

Some names mean a hyperparameter only for some trainers: `beta` is GRPO's KL weight but
DPO's temperature; `epsilon` is GRPO's clip range but Adam's denominator term. Those are
matched only with an owner (the config class or the launch run) that says which.

`LaunchRuns` groups a YAML or shell file's RL entries into runs (one command, or one
YAML document) and says what each run is: its advantage estimator, whether it
normalizes within groups, whether it is a GRPO/RLOO-style config, DPO-family, LoRA.
"""
from __future__ import annotations

import ast
import functools
import os
import re
from typing import Dict, Iterable, List, Optional, Sequence

from rllint.analysis.configs import ConfigEntry, LaunchConfig
from rllint.analysis.context import tokens
from rllint.analysis.nodes import AstNodes
from rllint.source import SourceError, content_hash, read_source

# Words that make a learning-rate name something else: a bound, a schedule, a multiplier.
NOT_A_RATE = frozenset({
    "min", "end", "final", "warmup", "decay", "ratio", "scale", "scaling", "factor", "mult", "multiplier",
    "schedule", "scheduler", "sched", "type", "kwargs", "name", "steps", "step", "epochs", "gamma", "patience",
    "cycle", "milestones", "power", "div", "eta", "finder", "range", "search", "grid"})
# Words that say a value belongs to something other than the policy (or to a non-RL stage):
# critics and value heads, reward models, SFT and pre-training, SAC's entropy temperature (`alpha_lr`); optimizers whose lr has another
# scale (Prodigy and D-Adaptation take a multiplier, Muon's orthogonalised updates take ~0.02).
NOT_THE_POLICY = frozenset({
    "critic", "value", "values", "vf", "reward", "rm", "prm", "discriminator", "disc", "q", "sft", "pretrain",
    "pretraining", "prodigy", "dadapt", "dadaptation", "muon", "baseline", "alpha"})
# Key parts of the frozen reference model.
_FROZEN = frozenset({"ref", "reference", "ref_model", "reference_model"})
# Words that make a key an evaluation or validation setting, not the training run's.
EVALUATION = frozenset({"eval", "evaluation", "val", "valid", "validation", "test", "testing", "benchmark"})

# Config classes and trainers whose `beta` is a KL weight and whose `epsilon` is the clip range.
GROUP_CONFIGS = frozenset({"GRPOConfig", "RLOOConfig", "GRPOTrainer", "RLOOTrainer"})
# Trainers whose `beta` is a temperature of a preference loss, not a KL weight.
DPO_FAMILY = frozenset({"dpo", "cpo", "orpo", "kto", "simpo", "ipo", "bco", "xpo", "nash", "nashmd", "sppo",
                        "onlinedpo", "apo", "rpo", "gkd"})

_KL_WEIGHT = frozenset({"coef", "coeff", "coefficient", "weight", "beta", "penalty", "lambda", "alpha"})
_NOT_A_KL_WEIGHT = frozenset({"target", "horizon", "threshold", "max", "min", "clip", "estimator", "type", "warmup",
                              "schedule", "use", "enable", "estimate"})
_CLIP = frozenset({"clip", "cliprange", "clipping"})
# Clip settings that are not the policy's surrogate clip range: value, gradient, reward and
# advantage clips, the upper bound of an asymmetric clip, dual-clip's constant, log-ratio caps.
_NOT_THE_CLIP_RANGE = frozenset({
    "value", "values", "vf", "critic", "grad", "grads", "gradient", "norm", "reward", "rewards", "adv",
    "advantage", "advantages", "high", "upper", "max", "c", "dual", "logit", "logits", "log", "obs",
    "observation", "action", "actions", "fraction", "frac", "kl", "score", "scores", "imp", "tis", "is",
    "importance", "weight", "weights", "threshold", "mode", "type", "enable", "use", "model", "skip", "cov",
    "lb", "ub"})
_GROUP_NAMES = frozenset({"num_generations", "n_samples_per_prompt", "group_size", "rloo_k",
                          "num_generations_per_prompt", "samples_per_prompt", "n_samples"})
# Words a file must contain to set a group size (file prefilter of RL402 and RL604), whatever their case
# (`NUM_GENERATIONS = 4`): the rules match them with `triggers_ignore_case`.
GROUP_SIZE_TRIGGERS = tuple(sorted(_GROUP_NAMES)) + ("num_samples", "rollout")
# Advantage estimators (verl `algorithm.adv_estimator`, OpenRLHF `--advantage_estimator`).
_NOT_GROUPED = frozenset({"gae", "reinforce", "reinforce_plus_plus", "remax", "ppo", "vtrace"})
_GROUPED_WORDS = frozenset({"grpo", "rloo", "group", "baseline", "opo", "gpg", "passk", "gspo", "dapo", "drgrpo",
                            "norm", "leave", "one", "out"})
_ESTIMATOR_KEYS = frozenset({"adv_estimator", "advantage_estimator", "estimator"})

# Rollout length limits (RL306), by the names that frameworks and scripts give them.
ROLLOUT_LENGTH_LIMITS = frozenset({
    "max_new_tokens", "max_tokens", "max_completion_length", "response_length", "max_response_length",
    "generate_max_len", "max_gen_len", "max_generation_length", "max_completion_tokens",
})
# Every length setting of a run (RL606), rollout limits and prompt/sequence lengths alike.
_LENGTH = re.compile(r"max_(?:new_)?(?:completion_|response_|prompt_|generation_|gen_|seq_|sequence_)?"
                     r"(?:length|len|tokens)\b|generate_max_len|response_length|prompt_length")


def last_part(key: str) -> str:
    """`actor_rollout_ref.actor.optim.lr` -> `lr`; `--actor.adam.lr` -> `lr`."""
    return key.lstrip("-+").rsplit(".", 1)[-1]


def _key(name: str) -> str:
    """The last part in lower case: keys match whatever their case (`NUM_GENERATIONS`, `ADV_ESTIMATOR`)."""
    return last_part(name).lower()


def is_learning_rate(name: str) -> bool:
    """`learning_rate`, `lr`, `actor_lr`, `policy_learning_rate`, `optim.lr`; not `min_lr`, `lr_scheduler_type`."""
    words = tokens(name)
    if "lr" not in words and not _adjacent(words, "learning", "rate") and "learningrate" not in words:
        return False
    return not set(words) & NOT_A_RATE


def belongs_elsewhere(key: str) -> bool:
    """A key of a critic, value head, reward model or SFT stage (`critic.optim.lr`, `critic_learning_rate`),
    or of the frozen reference model (`actor_rollout_ref.ref.optim.lr`, which nothing trains)."""
    return bool(set(tokens(key)) & NOT_THE_POLICY) or any(p in _FROZEN for p in key.lstrip("-+").split("."))


def is_kl_coefficient(name: str, owner: Optional[str] = None, grouped_config: bool = False) -> bool:
    """`kl_coef`, `init_kl_coef`, `kl_ctrl.kl_coef`, `kl_loss_coef`, `kl_penalty_coef`; `beta` only where it
    is GRPO/RLOO's KL weight (`owner` a GRPO/RLOO config or trainer, or `grouped_config`)."""
    part = last_part(name)
    words = tokens(part)
    if words == ("beta",):
        return grouped_config or owner in GROUP_CONFIGS
    glued = any(w.startswith("kl") and w[2:] in _KL_WEIGHT for w in words)  # `klcoef`
    if not (glued or "kl" in words and set(words) & _KL_WEIGHT):
        return False
    return not set(words) & _NOT_A_KL_WEIGHT


def is_clip_range(name: str, owner: Optional[str] = None, grouped_config: bool = False) -> bool:
    """`cliprange`, `eps_clip`, `clip_ratio`, `clip_ratio_low`, `clip_range`, `clip_eps`; `epsilon` and
    `epsilon_low` only where they are GRPO's clip range. Not value, gradient or reward clips, nor the upper
    bound of an asymmetric clip (`clip_ratio_high`, `epsilon_high`) or dual-clip's `clip_ratio_c`."""
    part = last_part(name)
    words = tokens(part)
    if words in (("epsilon",), ("epsilon", "low")):
        return grouped_config or owner in GROUP_CONFIGS
    return bool(set(words) & _CLIP) and not set(words) & _NOT_THE_CLIP_RANGE and not belongs_elsewhere(name)


def is_group_size(name: str, owner: Optional[str] = None) -> bool:
    """`num_generations`, `n_samples_per_prompt`, `group_size`, `rloo_k`, verl's `rollout.n`, and tinker's
    `num_samples` of a sampling call (`owner` `sample`); not evaluation counts (`val_kwargs.n`, `eval.*`)."""
    key = name.lstrip("-+")
    if set(tokens(key)) & EVALUATION:
        return False
    part = _key(key)
    if part in _GROUP_NAMES:
        return True
    if part == "num_samples":
        return bool(owner) and owner.startswith("sample")
    parts = key.split(".")
    return len(parts) >= 2 and parts[-2:] == ["rollout", "n"]


def grouped_estimator(value: object) -> Optional[bool]:
    """True for estimators that normalize within a group of samples per prompt (GRPO, RLOO, OpenRLHF's
    `group_norm` / `reinforce_baseline`), False for those that do not (GAE with a critic, REINFORCE++,
    ReMax), None when the value does not say."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().lower()
    if text in _NOT_GROUPED:
        return False
    return True if set(tokens(text)) & _GROUPED_WORDS else None


# Estimators that divide by the group's std (GRPO and its variants, OpenRLHF's `group_norm`); the other group
# estimators subtract a mean (OpenRLHF's `reinforce_baseline`, Dr. GRPO) or the leave-one-out mean (RLOO).
_STD_ESTIMATORS = frozenset({"grpo", "group_norm", "grpo_passk", "gspo", "dapo", "grpo_vectorized"})
# Switches that turn the std division off (verl's `norm_adv_by_std_in_grpo`, TRL's `scale_rewards`).
_STD_SWITCHES = ("norm_adv_by_std_in_grpo", "scale_rewards")
STD, MEAN, LEAVE_ONE_OUT = "std", "mean", "leave-one-out"


def group_baseline(estimator: str, std_switch: object = None) -> Optional[str]:
    """How a group estimator forms its baseline: STD (mean and std of the group), MEAN (the group mean only),
    LEAVE_ONE_OUT (RLOO); None when the estimator does not normalize within groups or does not say.
    `std_switch`: the value of `norm_adv_by_std_in_grpo` / `scale_rewards` when given."""
    if not grouped_estimator(estimator):
        return None
    text = estimator.strip().lower()
    if set(tokens(text)) & {"rloo", "loo", "leave"}:
        return LEAVE_ONE_OUT
    if text not in _STD_ESTIMATORS:
        return MEAN
    if std_switch is False or isinstance(std_switch, str) and std_switch.strip().lower() in ("none", "false"):
        return MEAN
    return STD


def is_std_switch(name: str) -> bool:
    return _key(name) in _STD_SWITCHES


_SEQUENCE_LEVEL = re.compile(r"\bsequence\b|\bseq\b|gspo", re.I)


def is_sequence_level(key: str, value: object) -> bool:
    """A setting that makes the importance ratio one per sequence (GSPO): `importance_sampling_level="sequence"`,
    verl's `policy_loss.loss_mode=gspo`, `loss_type="gspo"`. Its clip range is around 3e-4 by design."""
    words = set(tokens(last_part(key)))
    if not (words & {"level", "mode", "type"} and words & {"importance", "sampling", "loss", "ratio"}):
        return False
    return isinstance(value, str) and bool(_SEQUENCE_LEVEL.search(value))


def is_estimator_key(name: str) -> bool:
    return _key(name) in _ESTIMATOR_KEYS


def is_rl_hyperparameter(name: str) -> bool:
    """Names RL606 watches: learning rates, KL weights and `beta`, clip ranges, sampling temperatures,
    group sizes and generation lengths of the training run (not evaluation settings)."""
    return rl_hyperparameter_kind(name) is not None


def rl_hyperparameter_kind(name: str) -> Optional[str]:
    """Which of RL606's hyperparameters a name sets: "learning rate", "KL weight", "clip range", "temperature",
    "group size", "prompt length" or "length" (of generations and sequences); None for other names and for
    evaluation settings."""
    words = tokens(name)
    if set(words) & EVALUATION:
        return None
    if is_learning_rate(name):
        return "learning rate"
    if is_kl_coefficient(name, grouped_config=True):
        return "KL weight"
    if is_clip_range(name):
        return "clip range"
    if "temperature" in words:
        return "temperature"
    if is_group_size(name):
        return "group size"
    if _LENGTH.search(name.lower()):
        return "prompt length" if "prompt" in words else "length"
    return None


def is_grad_clip_norm(name: str) -> bool:
    """The norm gradients are clipped to: `max_grad_norm`, `grad_clip`, `clip_grad_norm`, `gradient_clipping`."""
    words = set(tokens(name))
    return bool(words & {"grad", "gradient", "grads"}) and bool(words & {"norm", "clip", "clipping"})


def _adjacent(words: Sequence[str], first: str, second: str) -> bool:
    return any(a == first and b == second for a, b in zip(words, words[1:]))


# Top-level keys of verl's and OpenRLHF's (dotted) configs: a run that sets them is not a TRL run.
_OTHER_STACKS = frozenset({"actor_rollout_ref", "algorithm", "critic", "actor", "rollout", "trainer", "data",
                           "reward_model", "ref"})


class Run:
    """The entries one launch run receives (one shell command, or one YAML document), last value wins."""

    def __init__(self, entries: List[ConfigEntry], text: str, script_lora: bool = False) -> None:
        self.entries = entries
        self._script_lora = script_lora
        self.keys: Dict[str, ConfigEntry] = {}
        for entry in entries:
            self.keys[entry.key.lstrip("-+")] = entry
        self.command = next((e.command for e in entries if e.command), None)
        words = set(tokens(self.command or "")) | ({w.lower() for w in re.findall(r"[A-Za-z]+", text)}
                                                   if self.command is None else set())
        self._words = words

    def last(self, predicate) -> Optional[ConfigEntry]:
        found = [e for key, e in self.keys.items() if predicate(key)]
        return found[-1] if found else None

    @functools.cached_property
    def estimator(self) -> Optional[ConfigEntry]:
        return self.last(is_estimator_key)

    @functools.cached_property
    def trl_grouped(self) -> bool:
        """A TRL GRPO/RLOO run: `trl grpo`, or a config with `num_generations` / `rloo_k` (TRL's names)."""
        if any(key.split(".")[0] in _OTHER_STACKS for key in self.keys):
            return False
        if self._words & {"grpo", "rloo"} and not self.dpo_family:
            return True
        return any(_key(k) in ("num_generations", "rloo_k") for k in self.keys)

    @functools.cached_property
    def dpo_family(self) -> bool:
        """A DPO-family run, whose `beta` is a temperature: its command or (for YAML) its text says so."""
        return bool(self._words & DPO_FAMILY) and not any(_key(k) in ("num_generations", "rloo_k")
                                                           for k in self.keys)

    @functools.cached_property
    def grouped(self) -> Optional[bool]:
        """Does the run normalize advantages within groups? The estimator decides; without one, verl and
        OpenRLHF default to GAE and TRL's GRPO/RLOO always group."""
        estimator = self.estimator
        if estimator is not None:
            return grouped_estimator(estimator.value)
        return True if self.trl_grouped else False

    @functools.cached_property
    def baseline(self) -> Optional[str]:
        """The group baseline of the run (`group_baseline`): its estimator, or TRL's GRPO (std) or RLOO."""
        if not self.grouped:
            return None
        estimator = self.estimator
        if estimator is not None and isinstance(estimator.value, str):
            text = estimator.value
        else:
            rloo = "rloo" in tokens(self.command or "") or any(_key(k) == "rloo_k" for k in self.keys)
            text = "rloo" if rloo else "grpo"
        switch = self.last(is_std_switch)
        return group_baseline(text, None if switch is None else switch.value)

    @functools.cached_property
    def learned_reward(self) -> bool:
        """The run is scored by a learned reward model: verl's `reward_model.enable=True`, OpenRLHF's
        `--reward_pretrain`, a `reward_model_path` or reward LoRA given (not a verifier's URL, not a reward
        function). A run whose `reward_model.enable` is false is not."""
        enable = self.last(lambda key: key.split(".")[-2:] == ["reward_model", "enable"])
        if enable is not None:
            return enable.value is True
        for key, entry in self.keys.items():
            words = set(tokens(key))
            if words & {"reward", "rm"} and words & {"pretrain", "path", "lora", "checkpoint"} \
                    and not words & {"custom", "function", "fn", "funcs", "url"} \
                    and isinstance(entry.value, str) and entry.value.strip():
                return True
        return False

    @functools.cached_property
    def evaluation(self) -> bool:
        """An evaluation run of a training entry point (verl's `trainer.val_only=True`)."""
        only = self.last(lambda key: _key(key) == "val_only")
        return only is not None and only.value is True

    @functools.cached_property
    def verl(self) -> bool:
        """A verl run: its keys are verl's Hydra groups, or its entry point is verl's."""
        return any(key.split(".")[0] in ("actor_rollout_ref", "algorithm") for key in self.keys) or \
            "verl" in (self.command or "")

    @functools.cached_property
    def lora(self) -> bool:
        """LoRA on: a rank above 0 (`lora_rank`, `lora_r`, `lora.rank`), `use_peft` / `use_lora` true, or a
        launched script that builds LoRA adapters itself, unless the run sets a rank of 0 or switches it off."""
        for key, entry in self.keys.items():
            words = tokens(key)
            switch = ("lora" in words and words[-1] in ("rank", "r")) or _key(key) in (
                "lora_rank", "lora_r", "use_peft", "use_lora")
            if switch and entry.value in (0, False):
                return False
        if self._script_lora:
            return True
        for key, entry in self.keys.items():
            words = tokens(key)
            if ("lora" in words and words[-1] in ("rank", "r")) or _key(key) in ("lora_rank", "lora_r"):
                if isinstance(entry.value, (int, float)) and not isinstance(entry.value, bool) and entry.value > 0:
                    return True
            if _key(key) in ("use_peft", "use_lora") and entry.value is True:
                return True
        return False


class LaunchRuns:
    """The RL runs of a YAML or shell launch config (`rllint.runner.ConfigFile`)."""

    def __init__(self, file) -> None:
        groups: Dict[object, List[ConfigEntry]] = {}
        for entry in file.fact(LaunchConfig).rl_entries:
            groups.setdefault(entry.invocation, []).append(entry)
        self.runs = [Run(entries, file.text, _script_trains_lora(file, entries)) for entries in groups.values()]

    def __iter__(self) -> Iterable[Run]:
        return iter(self.runs)


_LORA_BUILDERS = ("LoraConfig(", "get_peft_model(", "create_lora_training_client(")


_REWARD_MODEL_CLASS = re.compile(r"Reward\w*(?:Model|Head|Net)|SequenceClassification")


def builds_reward_model(file) -> bool:
    """A Python file that builds a learned reward model: an instance of a reward-model class
    (`AutoModelForSequenceClassification`, `...WithRewardHead`, `RewardHead(...)`), or a name for one
    (`reward_model`, `self.rm`) assigned a model made from weights (`from_pretrained`)."""
    nodes = file.fact(AstNodes)
    for call in nodes.of(ast.Call):
        if _REWARD_MODEL_CLASS.search(_call_name(call)):
            return True
    for node in nodes.of(ast.Assign):
        names = {w for target in node.targets for w in tokens(ast.unparse(target))}
        if names & {"reward", "rm"} and any(isinstance(n, ast.Call) and _call_name(n).endswith("from_pretrained")
                                            for n in ast.walk(node.value)):
            return True
    return False


def constructor_default(value) -> bool:
    """A value that is the default of an `__init__` parameter: a placeholder whoever builds the object sets."""
    return value.origin.startswith("default of parameter") and value.origin.endswith("of __init__()")


_PARAMETER_DEFAULT = re.compile(r"default of parameter `(\w+)` of (\w+)\(\)$")


def default_replaced_by_callers(file, origin: str) -> bool:
    """A parameter's default (`origin` "default of parameter `n` of f()") that a call of `f` in the file
    replaces, by keyword or by position: the callers set the value, the default is a placeholder."""
    match = _PARAMETER_DEFAULT.match(origin)
    if match is None:
        return False
    param, function = match.groups()
    nodes = file.fact(AstNodes)
    defs = [d for d in nodes.of(ast.FunctionDef, ast.AsyncFunctionDef) if d.name == function]
    if len(defs) != 1:
        return False
    names = [a.arg for a in defs[0].args.posonlyargs + defs[0].args.args]
    for call in nodes.of(ast.Call):
        if _call_name(call).rsplit(".", 1)[-1] != function:
            continue
        if any(k.arg == param for k in call.keywords):
            return True
        if param in names:
            bound = isinstance(call.func, ast.Attribute) and names[0] in ("self", "cls")
            index = names.index(param) - (1 if bound else 0)
            given = call.args[:index + 1]
            if len(given) == index + 1 and not any(isinstance(a, ast.Starred) for a in given):
                return True
    return False


def _call_name(call: ast.Call) -> str:
    """`AutoModelForSequenceClassification.from_pretrained`, `RewardHead`: the dotted name called."""
    parts = []
    func = call.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def _script_trains_lora(file, entries: List[ConfigEntry]) -> bool:
    """The Python script a shell command runs (`python scripts/train_ppo.py --lr 8e-5`) builds LoRA adapters:
    its learning rate is a LoRA rate. The script is looked for beside the launcher and in the folders above
    it (launchers are run from the project root or from their own folder)."""
    command = next((e.command for e in entries if e.command), None)
    if not command or not command.endswith(".py") or os.path.isabs(command):
        return False
    folder = os.path.dirname(os.path.abspath(file.path))
    for _ in range(4):
        path = os.path.join(folder, command)
        if os.path.isfile(path):
            try:
                data = read_source(path)
            except (OSError, SourceError):
                return False
            file.dependencies[path] = content_hash(data)
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            return any(builder in text for builder in _LORA_BUILDERS)
        file.dependencies[path] = ""
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return False
