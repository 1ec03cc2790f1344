"""Purpose: what a file is for, from what it does (RL training, SFT, reward models, distillation,
evaluation, helpers, tests), and the two questions rules ask of it."""
import ast
import textwrap

import libcst as cst
import pytest

from rllint.analysis.purpose import (DISTILLATION, EVALUATION, LIBRARY, REWARD_MODEL, RL, SFT, Purpose,
                                     is_test_path)
from rllint.runner import FileContext
from rllint.settings import Settings


def purpose(source: str, path: str = "train.py", **options) -> Purpose:
    text = textwrap.dedent(source)
    file = FileContext(path, text, cst.parse_module(text), ast.parse(text), Settings(options=options))
    return file.fact(Purpose)


KINDS = {
    "trl trainer built": (RL, """
        from trl import GRPOConfig, GRPOTrainer
        config = GRPOConfig(output_dir="out")
    """),
    "trl trainer imported from a submodule": (RL, """
        from trl.trainer.dpo_trainer import DPOTrainer
    """),
    "trl attribute": (RL, """
        import trl
        trainer = trl.PPOTrainer(config)
    """),
    "openrlhf trainer subclassed": (RL, """
        from openrlhf.trainer.ppo_trainer import BasePPOTrainer
        class MyTrainer(BasePPOTrainer):
            pass
    """),
    "verl": (RL, """
        from verl.trainer.ppo.ray_trainer import RayPPOTrainer
    """),
    "tinker cookbook rl": (RL, """
        from tinker_cookbook.rl import train
    """),
    "hand-written loop that trains": (RL, """
        import torch

        def step(policy, ref_model, batch, optimizer):
            logps = policy(batch)
            with torch.no_grad():
                ref_logps = ref_model(batch)
            advantages = batch["rewards"] - batch["rewards"].mean()
            loss = -(advantages * logps).mean() + 0.05 * (logps - ref_logps).mean()
            loss.backward()
            optimizer.step()
    """),
    "mlx update": (RL, """
        import mlx.nn as nn
        def train(model, policy_loss, advantages, old_logps, optimizer):
            loss, grads = nn.value_and_grad(model, policy_loss)(advantages, old_logps)
            optimizer.update(model, grads)
    """),
    "sft script": (SFT, '''
        """SFT before the RL stage; rewards, advantages and the reference model come later."""
        from trl import SFTConfig, SFTTrainer

        config = SFTConfig(output_dir="out", learning_rate=2e-5)
        SFTTrainer(model="m", args=config).train()
    '''),
    "hand-written supervised loop": (SFT, """
        import torch.nn.functional as F

        def train(model, batches, optimizer):
            for batch in batches:
                loss = F.cross_entropy(model(batch["input_ids"]).logits, batch["labels"])
                loss.backward()
                optimizer.step()
    """),
    "reward model trainer": (REWARD_MODEL, """
        from transformers import AutoModelForSequenceClassification

        def train(data, optimizer, reward_fn):
            model = AutoModelForSequenceClassification.from_pretrained("m", num_labels=1)
            for chosen, rejected in data:
                loss = -(model(**chosen).logits - model(**rejected).logits).sigmoid().log().mean()
                loss.backward()
                optimizer.step()
    """),
    "trl reward trainer": (REWARD_MODEL, """
        from trl import RewardConfig, RewardTrainer

        def train(model, data):
            trainer = RewardTrainer(model=model, args=RewardConfig(output_dir="rm"), train_dataset=data)
            return trainer.train()
    """),
    "on-policy distillation": (DISTILLATION, """
        # distill the teacher into the student with the RL machinery
        def step(student, teacher, rollouts, advantages, optimizer):
            loss = (student(rollouts) - teacher(rollouts)).mean() * advantages
            loss.backward()
            optimizer.step()
    """),
    "evaluation script": (EVALUATION, """
        def evaluate(llm, prompts, reward_fn, sampling_params):
            completions = llm.generate(prompts, sampling_params)
            return [reward_fn(c.outputs[0].text) for c in completions]
    """),
    "losses module": (LIBRARY, """
        def grpo_loss(logps, old_logps, advantages, clip_eps=0.2):
            ratio = (logps - old_logps).exp()
            return -(ratio * advantages).mean()
    """),
    "classifier helpers": (LIBRARY, """
        import torch.nn.functional as F

        def loss(logits, labels):
            return F.cross_entropy(logits, labels)
    """),
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_kind_comes_from_what_the_file_does(name):
    kind, source = KINDS[name]
    assert purpose(source).kind == kind


@pytest.mark.parametrize("name, run, settings, code", [
    ("trl trainer built", True, True, True),
    ("hand-written loop that trains", True, True, True),
    ("losses module", False, True, True),  # an RL module that does not train on its own: its defaults count
    ("evaluation script", False, False, True),  # speaks RL, but its settings are no run's
    ("sft script", False, False, False),
    ("reward model trainer", False, False, False),
    ("on-policy distillation", False, False, False),
    ("classifier helpers", False, False, False),
])
def test_what_rules_ask(name, run, settings, code):
    found = purpose(KINDS[name][1])
    assert (found.rl_run, found.rl_settings, found.rl_code) == (run, settings, code)


def test_a_systems_policy_is_no_rl_vocabulary():
    # FSDP's wrap policy and a masked entropy: ML training utilities, not RL code
    found = purpose("""
        import torch
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

        def wrap(model, layer):
            return FSDP(model, auto_wrap_policy=transformer_auto_wrap_policy(layer))

        def confidence(logits):
            log_probs = torch.log_softmax(logits, dim=-1)
            return -(log_probs.exp() * log_probs).sum(-1)
    """)
    assert not found.rl_code


def test_rl_context_always_makes_every_file_rl_code():
    found = purpose(KINDS["classifier helpers"][1], **{"rl-context": "always"})
    assert found.rl_run and found.rl_settings and found.rl_code


@pytest.mark.parametrize("path", [
    "tests/test_grpo.py", "test_rewards.py", "rewards_test.py", "conftest.py", "pkg/tests/integration/run.sh",
    "tests/fixtures/config.yaml", "configs/local_smoke.yaml", "scripts/debug_rollout.py", "debug/run.sh",
    "src/testing/helpers.py", "accelerate/test_utils/training.py", "transformers/testing_utils.py",
])
def test_test_paths(path):
    assert is_test_path(path)


@pytest.mark.parametrize("path", [
    "train_grpo.py", "attestation.py", "contest_rewards.py", "latest/run.sh", "configs/grpo.yaml",
    "src/debugger_utils_extra/x.py", "smokey.py",
])
def test_paths_that_are_not_tests(path):
    assert not is_test_path(path)


def test_test_files_train_no_run_but_may_hold_rl_code():
    found = purpose(KINDS["trl trainer built"][1], path="tests/test_trainer.py")
    assert found.kind == RL and found.is_test
    assert not found.rl_run and not found.rl_settings and found.rl_code
    assert not found.rl_source and purpose(KINDS["trl trainer built"][1]).rl_source


@pytest.mark.parametrize("imports, library", [
    ("import torch\nimport numpy\n", "torch"), ("import mlx.core as mx\n", "mlx"), ("import jax.numpy as jnp\n", "jax"),
    ("import numpy as np\n", None),
])
def test_array_library(imports, library):
    assert purpose(imports).array_library == library
