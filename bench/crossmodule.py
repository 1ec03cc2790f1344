"""What cross-module value resolution costs: lint N generated scripts that import a shared config module,
with `cross-module-values` on and off, and print both times and their ratio.

    python bench/crossmodule.py [--files 500] [--repeat 3] [--jobs N] [--select RL] [--clean]

The target (issue "Hyperparameters wherever they are written") is a ratio of at most 1.5. Each run is
a fresh `python -m rllint --no-cache` process, so interpreter start-up, astroid's import and the
per-process module cache are all counted; on and off alternate so that machine noise hits both.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

SHARED = '''\
"""Hyperparameters shared by every launch script."""
import os
from dataclasses import dataclass, field

BASE_LR = {base_lr}
LEARNING_RATE = BASE_LR * 3  # 3e-05 by default: SFT-scale, reported from every importer (once after dedupe)
CRITIC_LR = 1e-5
KL_COEF = 0.04
CLIP_EPS = float(os.environ.get("CLIP_EPS", "0.2"))
NUM_GENERATIONS = int(os.environ.get("NUM_GENERATIONS", 8))
MAX_NEW_TOKENS = 1024


@dataclass
class BaseConfig:
    learning_rate: float = field(default=LEARNING_RATE)
    beta: float = KL_COEF
    epsilon: float = 0.2
    temperature: float = 1.0
    max_completion_length: int = MAX_NEW_TOKENS
'''

CONFIG = '''\
from dataclasses import dataclass

from .shared import BaseConfig


@dataclass
class GRPORunConfig(BaseConfig):
    num_generations: int = 8
'''

SCRIPT = '''\
"""Launch script {index}: GRPO on a math dataset."""
import torch
import torch.nn.functional as F
from datasets import load_dataset
from trl import GRPOConfig, GRPOTrainer

import configs.shared as shared
from configs.grpo import GRPORunConfig
from configs.shared import CLIP_EPS, KL_COEF, LEARNING_RATE, NUM_GENERATIONS


def reward_{index}(completions, answer, **kwargs):
    return [1.0 if str(a) in c else 0.0 for c, a in zip(completions, answer)]


def sequence_log_probs(logits, ids, mask):
    logp = F.log_softmax(logits.float(), dim=-1)
    token_logp = torch.gather(logp, -1, ids.unsqueeze(-1)).squeeze(-1)
    return (token_logp * mask).sum(-1) / mask.sum(-1).clamp(min=1)


class Runner:
    def __init__(self, config: GRPORunConfig, steps={steps}):
        self.config = config
        self.lr = config.learning_rate
        self.steps = steps

    def optimizer(self, model):
        return torch.optim.AdamW(model.parameters(), lr=self.lr, weight_decay=0.0)


def main(cfg: GRPORunConfig):
    dataset = load_dataset("gsm8k", "main", split="train")
    args = GRPOConfig(
        output_dir="out/{index}",
        learning_rate=LEARNING_RATE,
        beta=KL_COEF,
        epsilon=CLIP_EPS,
        num_generations=NUM_GENERATIONS,
        max_completion_length=shared.MAX_NEW_TOKENS,
        temperature=cfg.temperature,
    )
    trainer = GRPOTrainer(model="Qwen/Qwen2.5-0.5B", args=args, reward_funcs=[reward_{index}],
                          train_dataset=dataset)
    trainer.train()


if __name__ == "__main__":
    main(GRPORunConfig())
'''


def generate(root: Path, files: int, base_lr: str = "1e-5") -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
    (root / "configs").mkdir()
    (root / "configs" / "__init__.py").write_text("")
    (root / "configs" / "shared.py").write_text(SHARED.format(base_lr=base_lr))
    (root / "configs" / "grpo.py").write_text(CONFIG)
    scripts = root / "scripts"
    scripts.mkdir()
    for index in range(files):
        (scripts / f"train_{index:03d}.py").write_text(SCRIPT.format(index=index, steps=100 + index))
    for switch in ("true", "false"):
        (root / f"{switch}.toml").write_text(f"cross-module-values = {switch}\n")
    return root


def run(root: Path, switch: str, jobs: int, select: str, folders=("scripts", "configs")) -> Tuple[float, float, int]:
    """Wall time, CPU time of rllint and its workers (less sensitive to other load), findings."""
    command = [sys.executable, "-m", "rllint", "--no-cache", "--exit-zero", "--output-format", "json",
               "--config", str(root / f"{switch}.toml"), *folders]
    if jobs:
        command += ["--jobs", str(jobs)]
    if select:
        command += ["--select", select]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"rllint failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, cpu, done.stdout.count('"code"')


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=0, help="rllint --jobs (default: rllint's own)")
    parser.add_argument("--select", default="", help="rllint --select (default: the default rules)")
    parser.add_argument("--clean", action="store_true",
                        help="shared values within every limit: no importer has a finding to word")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rllint-crossmodule-") as folder:
        root = generate(Path(folder), options.files, "1e-7" if options.clean else "1e-5")
        times = {"true": [], "false": []}
        cpus = {"true": [], "false": []}
        findings = {}
        run(root, "true", options.jobs, options.select, ("configs",))  # warm the .pyc files of rllint and astroid
        for _ in range(options.repeat):
            for switch in ("false", "true"):
                elapsed, cpu, count = run(root, switch, options.jobs, options.select)
                times[switch].append(elapsed)
                cpus[switch].append(cpu)
                findings[switch] = count
    print(f"{options.files} files, {os.cpu_count()} cores, jobs={options.jobs or 'default'}, "
          f"select={options.select or 'default'}, clean={options.clean}, {options.repeat} runs each (median)")
    for switch in ("false", "true"):
        print(f"cross-module-values = {switch:5}: wall {statistics.median(times[switch]):7.2f} s, "
              f"cpu {statistics.median(cpus[switch]):7.2f} s, {findings[switch]} findings; wall of each run: "
              + " ".join(f"{t:.2f}" for t in times[switch]))
    for what, table in (("wall", times), ("cpu", cpus)):
        ratio = statistics.median(table["true"]) / statistics.median(table["false"])
        print(f"ratio on/off ({what}): {ratio:.2f} (target <= 1.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
