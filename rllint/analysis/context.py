"""How much a file speaks RL, which RL frameworks it uses, whether it trains LoRA adapters.

`rllint.analysis.purpose` decides what a file is for from what it does; this module gives
it the file's vocabulary: whether it imports an RL trainer or config, and the weight of the
RL words of its own identifiers. Comments, docstrings and prose strings do not count, and
neither does a single weak word: a reward-model trainer says `reward` and `chosen`.
"""
from __future__ import annotations

import ast
import functools
import re
from typing import FrozenSet, Iterator, Optional, Set, Tuple

from rllint.analysis.imports import Imports
from rllint.analysis.nodes import AstNodes
from rllint.analysis.values import Values
from rllint.options import Option

RL_CONTEXT = Option(
    "rl-context", str, "auto",
    'Which files the RL-only rules (RL306, RL6xx) treat as RL training code: "auto" decides per file '
    "from its imports and vocabulary; \"always\" treats every file as RL code.",
    choices=("auto", "always"),
)

FRAMEWORKS = ("trl", "openrlhf", "verl", "tinker", "tinker_cookbook")

# Names that only RL post-training imports: trainers, configs and helpers of the
# policy-optimisation methods (not SFT, reward-model or process-reward-model training).
_RL_NAME = re.compile(
    r"(?<![A-Z])(?:GRPO|PPO|RLOO|DPO|KTO|ORPO|CPO|XPO|BCO|GKD|SimPO)|NashMD|Reinforce|"
    r"ValueHead|create_reference_model|AdaptiveKLController|FixedKLController|"
    r"(?:^|[._])(?:grpo|ppo|rloo|dpo|kto|orpo|cpo|xpo|nash_md|bco|gkd|rl|reinforce)(?:$|[._])"
)
# Framework modules or names that are about supervised or reward-model training.
_NON_RL_NAME = re.compile(r"sft|SFT|Sft|supervised|reward_model|RewardModel|RewardTrainer|RewardConfig|PRM|prm|train_rm|"
                          r"(?:^|[._])(?:rm|sl)(?:$|[._])")

# Vocabulary tokens (from identifiers split at `_`, `.`, `-` and camel case) and how
# strongly each says "RL". A file is RL code from a total weight of 4, counting each
# concept once, so one weak word never decides.
_CONCEPTS = {
    "advantage": (3, {"advantage", "advantages", "adv", "advs", "gae", "whiten"}),
    "algorithm": (3, {"grpo", "ppo", "rloo", "dpo", "kto", "orpo", "simpo", "reinforce", "rlhf", "dapo", "gspo"}),
    "rollout": (2, {"rollout", "rollouts"}),
    "group": (2, {"num_generations", "n_samples_per_prompt", "samples_per_prompt", "generations_per_prompt"}),
    "clip": (2, {"clip_ratio", "cliprange", "clip_range", "eps_clip", "clip_eps", "clip_epsilon", "clip_coef"}),
    "old_policy": (2, {"old_logps", "old_logp", "old_log_probs", "old_logprobs", "old_per_token_logps",
                       "old_log_prob", "behavior_logprobs", "old_policy"}),
    "reference": (2, {"ref_model", "reference_model", "ref_logps", "ref_logp", "ref_log_probs", "ref_logprobs",
                      "ref_per_token_logps", "ref_log_prob", "ref_policy", "reference_logps"}),
    "policy_loss": (2, {"policy_loss", "pg_loss", "pg_losses", "policy_gradient", "surrogate"}),
    "kl": (1, {"kl", "kl_coef", "kl_loss", "kl_penalty", "init_kl_coef", "kl_ctl"}),
    "reward": (1, {"reward", "rewards", "reward_funcs", "reward_fn"}),
    "actor_critic": (1, {"actor", "critic"}),
    "policy": (2, {"policy", "policies"}),
    "logprobs": (1, {"logps", "logprobs", "log_probs", "logp", "log_prob"}),
    "episode": (2, {"episode", "episodes", "trajectory", "trajectories"}),
    "baseline": (1, {"baseline"}),
    "sampling": (1, {"completions", "generations"}),
}
_FRAMEWORK_WEIGHT = 2
_TOKEN = {token: concept for concept, (_, tokens) in _CONCEPTS.items() for token in tokens}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IDENTIFIER_LIKE = re.compile(r"-{0,2}[A-Za-z_][A-Za-z0-9_.\-]*")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# A single digit between words reads "to" / "for": `id2std`, `uid2mean`, `word2vec` (not `l2norm`, `fp16`).
_DIGIT_INFIX = re.compile(r"(?<=[a-z]{2})\d(?=[a-z]{2})")


class RLContext:
    """`frameworks`, `imports_rl_trainer`, `vocabulary` and `uses_lora` of one file (see the module docstring)."""

    def __init__(self, file) -> None:
        self._file = file
        imports = file.fact(Imports)
        self._imported = list(imports.modules) + list(imports.aliases.values())
        self.frameworks: FrozenSet[str] = frozenset(
            f for f in FRAMEWORKS if any(name == f or name.startswith(f + ".") for name in self._imported))
        # An RL trainer, config or module imported; a framework imported for something else than SFT or RMs.
        self.imports_rl_trainer, self._imports_framework = _imports_rl(self._imported)
        # Every word of the text, comments and docstrings included, bounds the vocabulary from above:
        # most files that are not RL code are settled without a walk of their tree.
        self._text_words = set(_WORD.findall(file.text))
        self._code_words: Optional[Set[str]] = None
        self._uses_lora: Optional[bool] = None

    @functools.cached_property
    def vocabulary(self) -> int:
        """The weight of the RL vocabulary of the file's code (each concept once; comments and prose do not
        count), plus a framework's weight when it imports an RL framework for something else than SFT.
        Computed once: rules ask it for every call they judge."""
        bonus = _FRAMEWORK_WEIGHT if self._imports_framework else 0
        if _vocabulary_weight(self._text_words) == 0:
            return bonus
        return _vocabulary_weight(self._words()) + bonus

    @property
    def uses_lora(self) -> bool:
        """The run trains LoRA adapters (see `_trains_lora`)."""
        if self._uses_lora is None:
            self._uses_lora = _trains_lora(self._file, self._words, self.frameworks)
        return self._uses_lora

    def _words(self) -> Set[str]:
        """Identifiers, attribute, keyword and parameter names, identifier-like strings: not comments or prose."""
        if self._code_words is None:
            self._code_words = set(_identifiers(self._file.fact(AstNodes)))
        return self._code_words

    def __repr__(self) -> str:
        return f"RLContext(vocabulary={self.vocabulary}, frameworks={sorted(self.frameworks)}, uses_lora={self.uses_lora})"


def _imports_rl(imported) -> Tuple[bool, bool]:
    """(imports an RL trainer, config or module; imports an RL framework for something else, not SFT/RM)."""
    ours = [name for name in imported if name.split(".")[0] in FRAMEWORKS]
    if any(_RL_NAME.search(name) for name in ours):
        return True, False
    return False, bool(ours) and not any(_NON_RL_NAME.search(name) for name in ours)


def _identifiers(nodes: AstNodes) -> Iterator[str]:
    """Identifiers, attribute and keyword names, and identifier-like string keys; no docstrings or prose."""
    docstrings = set()
    for node in nodes.of(ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef):
        first = node.body[0] if node.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            docstrings.add(id(first.value))
    for node in nodes.of(ast.Name, ast.Attribute, ast.keyword, ast.arg, ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef, ast.alias, ast.Constant):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg
        elif isinstance(node, ast.arg):
            yield node.arg
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, ast.alias):
            yield (node.asname or node.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if _IDENTIFIER_LIKE.fullmatch(node.value):
                yield node.value.lstrip("-").replace("-", "_")


@functools.lru_cache(maxsize=65536)
def tokens(name: str) -> Tuple[str, ...]:
    """The lower-case words of an identifier or dotted key: `actorLR.optim_lr` -> actor, lr, optim, lr;
    `id2std` -> id, std."""
    return tuple(t for t in re.split(r"[_.\-\s]+", _DIGIT_INFIX.sub("_", _CAMEL.sub("_", name).lower())) if t)


def _vocabulary_weight(words: Set[str]) -> int:
    concepts = set()
    for word in words:
        lowered = word.lower()
        if _SYSTEMS_POLICY.search(lowered):
            continue  # FSDP's `auto_wrap_policy`: a rule of the training system, not an RL policy
        for part in lowered.split("."):
            if part in _TOKEN:
                concepts.add(_TOKEN[part])
        for token in tokens(word):
            if token in _TOKEN:
                concepts.add(_TOKEN[token])
        for compound, concept in _COMPOUNDS:
            if compound in lowered:
                concepts.add(concept)
    return sum(_CONCEPTS[c][0] for c in concepts)


# Policies of the training system (how modules are wrapped, sharded, cast, checkpointed or retried).
_SYSTEMS_POLICY = re.compile(r"(wrap|shard\w*|precision|checkpoint\w*|retry|eviction)_?polic(y|ies)")
# Multi-token vocabulary matched inside longer identifiers (`ref_per_token_logps_chunk`).
_COMPOUNDS = tuple((token, concept) for token, concept in _TOKEN.items() if "_" in token)


def _trains_lora(file, words, frameworks: FrozenSet[str]) -> bool:
    """LoraConfig / get_peft_model / a peft_config or use_peft=True given / a LoRA rank > 0 / tinker (whose
    training clients train LoRA adapters). `words` gives the file's code words when called."""
    if frameworks & {"tinker", "tinker_cookbook"}:
        return True
    text = file.text
    if not any(w in text for w in _LORA_NAMES | set(_LORA_SWITCHES)):
        return False
    words = words()
    if words & _LORA_NAMES:
        return True
    if not words & set(_LORA_SWITCHES):
        return False
    values = file.fact(Values)
    for node in ast.walk(file.tree):
        if isinstance(node, ast.keyword) and node.arg in _LORA_SWITCHES:
            given = node.value
            if isinstance(given, ast.Constant):
                if given.value not in (None, False, 0, ""):
                    return True
            elif node.arg == "peft_config":
                return True
            else:
                name = given.attr if isinstance(given, ast.Attribute) else given.id if isinstance(given, ast.Name) else None
                if name and any(_positive(values.value_of(d)) for d in values.declarations(name)):
                    return True
    return any(_positive(values.value_of(d)) for name in _LORA_SWITCHES for d in values.declarations(name))


_LORA_NAMES = {"LoraConfig", "get_peft_model", "create_lora_training_client", "LoraModel", "PeftModel"}
# Keywords and declarations that switch LoRA on when given a true / positive value (verl's
# default `lora_rank: 0` means full fine-tuning).
_LORA_SWITCHES = ("peft_config", "use_peft", "lora_rank", "lora_r", "use_lora")


def _positive(value) -> bool:
    return value is not None and value.number > 0
