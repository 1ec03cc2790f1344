"""RLContext: which files are RL training code, which frameworks they use, whether they train LoRA."""
import ast
import textwrap

import libcst as cst
import pytest

from rllint.analysis.context import RLContext, tokens
from rllint.runner import FileContext
from rllint.settings import Settings


def context(source: str, **options) -> RLContext:
    text = textwrap.dedent(source)
    file = FileContext("example.py", text, cst.parse_module(text), ast.parse(text), Settings(options=options))
    return file.fact(RLContext)


def facts(source: str, **options):
    found = context(source, **options)
    return found.is_rl, found.frameworks, found.uses_lora


RL_SOURCES = {
    "trl trainer": """
        from trl import GRPOConfig, GRPOTrainer
        config = GRPOConfig(output_dir="out")
    """,
    "trl submodule": """
        from trl.trainer.dpo_trainer import DPOTrainer
    """,
    "trl attribute": """
        import trl
        trainer = trl.PPOTrainer(config)
    """,
    "openrlhf": """
        from openrlhf.trainer.ppo_trainer import BasePPOTrainer
    """,
    "verl": """
        from verl.trainer.ppo.ray_trainer import RayPPOTrainer
    """,
    "tinker cookbook rl": """
        from tinker_cookbook.rl import train
    """,
    "hand-written loop": """
        import torch

        def step(policy, ref_model, batch):
            logps = policy(batch)
            with torch.no_grad():
                ref_logps = ref_model(batch)
            advantages = batch["rewards"] - batch["rewards"].mean()
            return -(advantages * logps).mean() + 0.05 * (logps - ref_logps).mean()
    """,
    "dataclass config": """
        from dataclasses import dataclass

        @dataclass
        class Config:
            num_generations: int = 8
            clip_ratio: float = 0.2
    """,
    "string keys": """
        def losses(batch):
            return batch["advantages"] * batch["old_logps"]
    """,
}

NOT_RL_SOURCES = {
    "sft script": '''
        """SFT before the RL stage; rewards, advantages and the reference model come later."""
        from trl import SFTConfig, SFTTrainer

        config = SFTConfig(output_dir="out", learning_rate=2e-5)  # not a rollout: no advantages here
    ''',
    "reward model trainer": """
        from trl import RewardConfig, RewardTrainer

        def train(model, data):
            reward = RewardTrainer(model=model, args=RewardConfig(output_dir="rm"), train_dataset=data)
            return reward.train()
    """,
    "one weak word": """
        def score(reward, chosen, rejected):
            return reward(chosen) - reward(rejected)
    """,
    "prose strings": """
        HELP = "advantages of the rollout policy with a reference model and a KL penalty"
        print(HELP)
    """,
    "framework utilities only": """
        from verl.utils import hf_tokenizer

        tokenizer = hf_tokenizer("Qwen/Qwen2.5-0.5B")
    """,
    "tinker supervised": """
        import tinker
        from tinker_cookbook.supervised import train
    """,
    "classifier": """
        import torch.nn.functional as F

        def loss(logits, labels):
            return F.cross_entropy(logits, labels)
    """,
}


@pytest.mark.parametrize("name", sorted(RL_SOURCES))
def test_rl_sources(name):
    assert context(RL_SOURCES[name]).is_rl is True


@pytest.mark.parametrize("name", sorted(NOT_RL_SOURCES))
def test_sources_that_are_not_rl(name):
    assert context(NOT_RL_SOURCES[name]).is_rl is False


@pytest.mark.parametrize("name", sorted(NOT_RL_SOURCES))
def test_rl_context_always_makes_every_file_rl(name):
    assert context(NOT_RL_SOURCES[name], **{"rl-context": "always"}).is_rl is True


def test_frameworks_are_the_imported_ones():
    found = context("""
        import tinker
        from trl import SFTTrainer
        from openrlhf.utils import get_tokenizer
        import torch
    """)
    assert found.frameworks == frozenset({"tinker", "trl", "openrlhf"})
    assert context("import torch\n").frameworks == frozenset()


@pytest.mark.parametrize("source, expected", [
    ("from peft import LoraConfig\nconfig = LoraConfig(r=16)\n", True),
    ("from peft import get_peft_model\nmodel = get_peft_model(base, config)\n", True),
    ("trainer = GRPOTrainer(model=m, args=a, peft_config=get_peft_config(model_args))\n", True),
    ("trainer = GRPOTrainer(model=m, args=a, peft_config=None)\n", False),
    ("config = ModelConfig(use_peft=True)\n", True),
    ("config = ModelConfig(use_peft=False)\n", False),
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--lora_rank', type=int, default=0)\n"
     "run(lora_rank=p.parse_args().lora_rank)\n", False),
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--lora_rank', type=int, default=32)\n", True),
    ("from dataclasses import dataclass\n@dataclass\nclass C:\n    lora_rank: int = 0\n", False),
    ("from dataclasses import dataclass\n@dataclass\nclass C:\n    use_peft: bool = True\n", True),
    ("import tinker\nclient = tinker.ServiceClient().create_lora_training_client(base_model='m', rank=32)\n", True),
    ("# LoraConfig would be another option\nimport torch\n", False),
    ("import torch\nmodel = torch.nn.Linear(2, 2)\n", False),
])
def test_lora_detection(source, expected):
    assert context(source).uses_lora is expected


def test_facts_of_a_trl_lora_script():
    assert facts("""
        from peft import LoraConfig
        from trl import GRPOConfig, GRPOTrainer

        trainer = GRPOTrainer(model="m", args=GRPOConfig(output_dir="o"), peft_config=LoraConfig(r=8))
    """) == (True, frozenset({"trl"}), True)


def test_tokens_split_identifiers_and_keys():
    assert tokens("actorLR.optim_lr") == ("actor", "lr", "optim", "lr")
    assert tokens("GRPOConfig") == ("grpo", "config")
    assert tokens("--learning-rate") == ("learning", "rate")
