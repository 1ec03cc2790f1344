"""RLContext: the RL vocabulary of a file, which frameworks it uses, whether it trains LoRA."""
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
    found = context("""
        from peft import LoraConfig
        from trl import GRPOConfig, GRPOTrainer

        trainer = GRPOTrainer(model="m", args=GRPOConfig(output_dir="o"), peft_config=LoraConfig(r=8))
    """)
    assert (found.imports_rl_trainer, found.frameworks, found.uses_lora) == (True, frozenset({"trl"}), True)


@pytest.mark.parametrize("source, weight", [
    ("def f(advantages, old_logps):\n    return advantages * old_logps\n", 6),
    ("# advantages of the policy\nx = 1\n", 0),  # comments do not count
    ("HELP = 'advantages of the rollout policy'\n", 0),  # neither does prose
    ("from verl.utils import hf_tokenizer\n", 2),  # a framework imported for something else than SFT
    ("from trl import SFTTrainer\n", 0),
])
def test_vocabulary_weighs_code_words_once_per_concept(source, weight):
    assert context(source).vocabulary == weight


def test_tokens_split_identifiers_and_keys():
    assert tokens("actorLR.optim_lr") == ("actor", "lr", "optim", "lr")
    assert tokens("GRPOConfig") == ("grpo", "config")
    assert tokens("--learning-rate") == ("learning", "rate")


def test_tokens_split_a_digit_between_words():
    assert tokens("q2sd") == ("q2sd",)  # one letter-pair short: not a word
    assert tokens("qid2sd") == ("qid", "sd")
    assert tokens("prompt2score_table") == ("prompt", "score", "table")
    assert tokens("l2norm") == ("l2norm",) and tokens("fp16") == ("fp16",) and tokens("gpt2_model") == ("gpt2", "model")
