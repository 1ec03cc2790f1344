"""Which logged key holds which metric, per framework, and the user's own mapping.

The checks read a few metrics by a name of their own (`kl`, `entropy`, ...). Each framework
logs them under its own keys; `CANDIDATES` lists them in order of preference (the first
that a run logs wins). A key written as a glob (`val-core/*/acc/mean@*`) matches several
keys; the first in sorted order is read. A leading `train/` or `train_` (W&B, TensorBoard,
HF `report_to`) is ignored when matching. `--metric NAME=KEY` and the `log-metrics` option
put the user's key first. The README's table is this one, and a test keeps them equal.
"""
from __future__ import annotations

import fnmatch
import functools
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

# metric -> what it is, for messages and the README
METRICS: Dict[str, str] = {
    "kl": "KL divergence of the policy to the reference, mean per token",
    "entropy": "mean token entropy of the policy",
    "clip_fraction": "fraction of tokens whose ratio was clipped",
    "reward": "mean reward of the batch",
    "response_length": "mean length of the responses, in tokens",
    "truncated_fraction": "fraction of responses cut at the length limit",
    "zero_std_fraction": "fraction of groups whose rewards are all equal",
    "held_out": "a held-out or accuracy metric, higher is better",
    "repetition": "a repetition rate of the responses",
}

# metric -> (framework, key) in order of preference.
CANDIDATES: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "kl": (("TRL GRPO", "kl"), ("TRL PPO/RLOO", "objective/kl"), ("verl", "actor/kl_loss"),
           ("verl", "actor/reward_kl_penalty"), ("OpenRLHF", "kl")),
    "entropy": (("TRL GRPO", "entropy"), ("TRL PPO/RLOO", "objective/entropy"), ("TRL PPO/RLOO", "policy/entropy_avg"),
                ("verl", "actor/entropy"), ("OpenRLHF", "entropy_loss")),
    "clip_fraction": (("TRL GRPO", "clip_ratio/region_mean"), ("TRL GRPO (older)", "clip_ratio"),
                      ("TRL PPO/RLOO", "policy/clipfrac_avg"), ("verl", "actor/pg_clipfrac"),
                      ("OpenRLHF", "ppo_clip_ratio")),
    "reward": (("TRL GRPO", "reward"), ("TRL PPO/RLOO", "objective/scores"), ("verl", "critic/score/mean"),
               ("OpenRLHF", "reward")),
    "response_length": (("TRL GRPO", "completions/mean_length"), ("verl", "response_length/mean"),
                        ("OpenRLHF", "response_length")),
    "truncated_fraction": (("TRL GRPO", "completions/clipped_ratio"), ("verl", "response_length/clip_ratio")),
    "zero_std_fraction": (("TRL GRPO", "frac_reward_zero_std"),),
    "held_out": (("TRL", "eval_accuracy"), ("TRL", "eval_reward"), ("W&B", "eval/accuracy"), ("W&B", "eval/reward"),
                 ("verl", "val-core/*/acc/mean@*"), ("verl", "val-core/*/reward/mean@*"), ("verl", "val/test_score/*")),
    "repetition": (("any", "repetition"), ("any", "completions/repetition_rate")),
}

# Metrics logged at evaluations only, far apart: judged on a window of this many points.
SPARSE = frozenset({"held_out"})
SPARSE_WINDOW = 3

# Keys whose KL is summed over the sequence, not averaged per token: the per-token bound does not apply.
SEQUENCE_LEVEL = frozenset({"objective/kl"})

_PREFIXES = ("train/", "train_")


class MappingError(ValueError):
    """A `NAME=KEY` entry that names no metric or no key."""


def parse_mapping(entries: Iterable[str]) -> Dict[str, str]:
    """`["kl=my/kl"]` -> {"kl": "my/kl"}; raises MappingError naming the bad entry."""
    mapping: Dict[str, str] = {}
    for entry in entries:
        name, equals, key = entry.partition("=")
        name, key = name.strip(), key.strip()
        if not equals or not key:
            raise MappingError(f"{entry!r} is not NAME=KEY")
        if name not in METRICS:
            raise MappingError(f"{entry!r}: unknown metric {name!r}; one of {', '.join(METRICS)}")
        mapping[name] = key
    return mapping


def check_mapping(entries: Sequence[str]) -> Optional[str]:
    """The problem with a `log-metrics` value, for config validation; None when it is fine."""
    try:
        parse_mapping(entries)
    except MappingError as error:
        return str(error)
    return None


def bare(key: str) -> str:
    """`train/kl` -> `kl`: the key without a logger's train prefix."""
    for prefix in _PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def wanted(user: Dict[str, str]) -> Callable[[str], bool]:
    """Whether a logged key can hold a metric that the checks read (one `resolve` could pick, with the
    user's mapping): readers keep the values of these keys only, so that a log's other columns cost nothing."""
    patterns = [key for candidates in CANDIDATES.values() for _, key in candidates] + list(user.values())
    exact = {pattern for pattern in patterns if not _is_glob(pattern)}
    globs = [pattern for pattern in patterns if _is_glob(pattern)]

    @functools.lru_cache(maxsize=1024)  # a log repeats its keys on every row
    def wants(key: str) -> bool:
        return any(name in exact or any(fnmatch.fnmatchcase(name, glob) for glob in globs)
                   for name in (key, bare(key)))

    return wants


def resolve(keys: Iterable[str], user: Dict[str, str]) -> Dict[str, str]:
    """metric -> the key of this run that holds it, for every metric the run logs."""
    by_bare: Dict[str, List[str]] = {}
    for key in sorted(keys):
        by_bare.setdefault(bare(key), []).append(key)
        by_bare.setdefault(key, []).append(key)
    found: Dict[str, str] = {}
    for metric, candidates in CANDIDATES.items():
        patterns = ([user[metric]] if metric in user else []) + [key for _, key in candidates]
        for pattern in patterns:
            match = _first_match(pattern, by_bare)
            if match is not None:
                found[metric] = match
                break
    return found


def _is_glob(pattern: str) -> bool:
    return any(char in pattern for char in "*?[")


def _first_match(pattern: str, by_bare: Dict[str, List[str]]) -> Optional[str]:
    if not _is_glob(pattern):
        keys = by_bare.get(pattern)
        return keys[0] if keys else None
    matches = sorted(name for name in by_bare if fnmatch.fnmatchcase(name, pattern))
    return by_bare[matches[0]][0] if matches else None
