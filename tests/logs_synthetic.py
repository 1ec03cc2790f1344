"""Synthetic GRPO runs with known faults at known steps, logged as TRL logs them.

A healthy run drifts as real ones do (KL rises and saturates, entropy and reward move a
little) under noise of the size real logs show; each fault changes one or more metrics
from its onset on. `records()` gives TRL `log_history` entries.
"""
from __future__ import annotations

import math
import random
from typing import Dict, List, Optional

HEALTHY = "healthy"


def records(steps: int = 300, seed: int = 0, every: int = 1, faults: Optional[Dict[str, int]] = None,
            eval_every: int = 0) -> List[dict]:
    """Log entries for steps every..steps; `faults` maps a fault name (see `FAULTS`) to its onset step."""
    rng = random.Random(seed)
    faults = faults or {}
    entries = []
    for step in range(every, steps + 1, every):
        progress = step / steps
        kl = (0.002 + 0.03 * (1 - math.exp(-step / 60))) * math.exp(rng.gauss(0, 0.25))
        entry = {
            "step": step,
            "epoch": round(progress, 4),
            "loss": rng.gauss(0.01, 0.01),
            "kl": kl,
            "entropy": 0.6 - 0.1 * progress + rng.gauss(0, 0.03),
            "clip_ratio/region_mean": abs(rng.gauss(0.05, 0.015)),
            "reward": 0.3 + 0.2 * progress + rng.gauss(0, 0.08),
            "reward_std": abs(rng.gauss(0.3, 0.03)),
            "completions/mean_length": 200 + 20 * progress + rng.gauss(0, 15),
            "completions/clipped_ratio": abs(rng.gauss(0.02, 0.01)),
            "frac_reward_zero_std": min(1.0, abs(rng.gauss(0.2, 0.06))),
        }
        for fault, onset in faults.items():
            if step >= onset:
                FAULTS[fault](entry, step - onset, rng)
        entries.append(entry)
        if eval_every and step % eval_every == 0:
            held_out = 0.5 + 0.1 * progress + rng.gauss(0, 0.003)
            if "reward_hacking" in faults and step >= faults["reward_hacking"]:
                held_out -= 0.004 * (step - faults["reward_hacking"])
            entries.append({"step": step, "epoch": entry["epoch"], "eval_accuracy": held_out})
    return entries


def _explode(entry, t, rng):
    entry["kl"] = 1.5 * math.exp(0.02 * t) * math.exp(rng.gauss(0, 0.2))


def _grow(entry, t, rng):
    entry["kl"] *= 1.12 ** t


def _stall(entry, t, rng):
    entry["kl"] = abs(rng.gauss(2e-6, 1e-6))
    entry["reward"] = 0.3 + rng.gauss(0, 0.08)


def _collapse_entropy(entry, t, rng):
    entry["entropy"] = 0.05 + abs(rng.gauss(0, 0.01))


def _clip(entry, t, rng):
    entry["clip_ratio/region_mean"] = 0.4 + rng.gauss(0, 0.03)


def _short(entry, t, rng):
    entry["completions/mean_length"] = 60 + rng.gauss(0, 8)


def _long(entry, t, rng):
    entry["completions/mean_length"] = 520 + rng.gauss(0, 20)


def _truncate(entry, t, rng):
    entry["completions/clipped_ratio"] = 0.3 + abs(rng.gauss(0, 0.03))


def _zero_std(entry, t, rng):
    entry["frac_reward_zero_std"] = min(1.0, 0.75 + rng.gauss(0, 0.05))


def _hack(entry, t, rng):
    entry["reward"] += 0.003 * t


def _pad(entry, t, rng):
    entry["reward"] += 0.006 * t
    entry["completions/mean_length"] += 2.0 * t
    entry["entropy"] -= 0.002 * t


FAULTS = {
    "kl_explosion": _explode,
    "kl_growth": _grow,
    "kl_stall": _stall,
    "entropy_collapse": _collapse_entropy,
    "clip_fraction": _clip,
    "length_collapse": _short,
    "length_explosion": _long,
    "truncation": _truncate,
    "zero_variance": _zero_std,
    "reward_hacking": _hack,
    "length_padding": _pad,
}
