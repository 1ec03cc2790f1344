"""A module's facts do not depend on which file the run read first. A launcher that constructs a runner of
another module is read (to find the runner's callers) while the runner is being analysed, or the other way
round; either way the runner's constructor receives what the launcher passes. Answers read while the function
that gives them is still being interpreted, or whose own run read provisional answers, are provisional: the
reader runs again once they are known."""
import os
import textwrap

import pytest

from rllint.analysis import summaries
from rllint.analysis.flow import Flow
from rllint.settings import Settings

SETTINGS = """
    from dataclasses import dataclass


    @dataclass
    class RunSettings:
        temperature: float = 0.7
        samples: int = 4
        clip: float = 1.0
        lr: float = 1e-6
"""

LOADING = """
    from transformers import AutoModelForCausalLM


    def build(settings: RunSettings):
        policy = AutoModelForCausalLM.from_pretrained(settings.name)
        return policy, None
"""

SCORING = """
    class Scorer:
        def __init__(self, settings):
            self.settings = settings
"""

# Both runner classes are built alike, as in the repository this test comes from.
RUNNER_INIT = """
        def __init__(self, policy, settings: RunSettings, scorer: Scorer, optimizer):
            self.policy = policy
            self.settings = settings
            self.scorer = scorer
            self.optimizer = optimizer
            self.sampler = Sampler(policy, settings)
"""

RUNNERS = """
    import torch

    from pkg.config import RunSettings
    from pkg.scoring import Scorer
    from pkg.sampler import Sampler


    class PlainRunner:{init}
        def step(self, prompt):
            drawn = [self.sampler.draw(prompt) for _ in range(self.settings.samples)]
            losses = [self.scorer.logp(self.policy, d) for d in drawn]
            loss = -torch.stack(losses).mean()
            self.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.settings.clip)
            self.optimizer.step()
            return {"loss": loss.item()}

        def epoch(self, prompts):
            return [self.step(p) for p in prompts]


    class TreeRunner:{init}
        def step(self, prompt):
            root, leaves = self.sampler.grow(prompt)
            loss = self.scorer.tree_loss(self.policy, root, leaves)
            self.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.settings.clip)
            self.optimizer.step()
            return {"loss": loss.item()}
""".replace("{init}", RUNNER_INIT)

LAUNCH = """
    import torch

    from pkg.config import RunSettings
    from pkg.loading import build
    from pkg.scoring import Scorer
    from pkg.runners import PlainRunner, TreeRunner


    def run_plain(settings: RunSettings, prompts):
        policy, _ = build(settings)
        optimizer = torch.optim.AdamW(policy.parameters(), lr=settings.lr)
        runner = PlainRunner(policy=policy, settings=settings, scorer=Scorer(settings), optimizer=optimizer)
        for _ in range(2):
            runner.epoch(prompts)


    def run_tree(settings: RunSettings, prompts):
        policy, _ = build(settings)
        optimizer = torch.optim.AdamW(policy.parameters(), lr=settings.lr)
        runner = TreeRunner(policy=policy, settings=settings, scorer=Scorer(settings), optimizer=optimizer)
        for prompt in prompts:
            runner.step(prompt)


    def main():
        settings = RunSettings(samples=8)
        run_plain(settings, ["a"])
        run_tree(settings, ["b"])


    if __name__ == "__main__":
        main()
"""

PACKAGE = """
    from pkg.config import RunSettings
    from pkg.loading import build
"""


def _project(root):
    files = {"pkg/__init__.py": PACKAGE, "pkg/config.py": SETTINGS, "pkg/loading.py": LOADING,
             "pkg/scoring.py": SCORING, "pkg/runners.py": RUNNERS, "scripts/launch.py": LAUNCH}
    (root / "pyproject.toml").write_text("")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))


def _received(root, first_read):
    """What each runner's constructor receives as `settings`, after `first_read` (files of the project) were
    analysed whole."""
    settings = Settings(root=root)
    for name in first_read + ["pkg/runners.py"]:
        _, module = summaries.load(os.path.abspath(root / name), settings)
        flow = module.fact(Flow)
        flow.analyze_all()
    return [value.facts.get("type") for node, value in flow.values.items()
            if module.module.code_for_node(node) == "settings"]


@pytest.mark.parametrize("first_read", [[], ["scripts/launch.py"]], ids=["runners-alone", "launcher-first"])
def test_a_constructor_receives_what_the_launcher_passes_whichever_file_is_read_first(tmp_path, first_read):
    _project(tmp_path)
    received = _received(tmp_path, first_read)
    assert len(received) == 4 and all(kind == "instance" for kind in received), received
