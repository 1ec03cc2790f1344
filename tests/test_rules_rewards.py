"""RL403 and RL404: a reward function is one by its signature and use; per-function lists are not per-completion."""
import textwrap

from rllint.runner import lint_text
from rllint.settings import Settings


def codes(source: str, select: str):
    result = lint_text(textwrap.dedent(source), "rewards.py", Settings(select=[select]))
    return [(d.line, d.code) for d in result.diagnostics]


def test_a_function_named_reward_that_takes_no_completions_is_not_a_reward_function():
    source = """
        def compute_rewards(scores, kl_penalties):
            rewards = []
            for score, kl in zip(scores, kl_penalties, strict=True):
                if score is not None:
                    rewards.append(score - kl)
            return rewards
    """
    assert codes(source, "RL403") == []


def test_a_function_named_reward_that_takes_completions_is_one():
    source = """
        def compute_rewards(responses, references):
            rewards = []
            for response, reference in zip(responses, references, strict=True):
                if response == reference:
                    rewards.append(1.0)
            return rewards
    """
    assert codes(source, "RL403") == [(6, "RL403")]


def test_a_registered_reward_function_is_one_whatever_its_parameters():
    source = """
        from trl import GRPOTrainer

        def graded(items, **kwargs):
            out = []
            for item in items:
                if item:
                    out.append(1.0)
            return out

        trainer = GRPOTrainer(model="m", reward_funcs=[graded])
    """
    assert codes(source, "RL403") == [(8, "RL403")]


_TRAINER = """
    from trl import GRPOTrainer

    class Trainer(GRPOTrainer):
        def score(self, prompts, completions):
            out = []
            for reward_func, reward_processing_class in zip(self.reward_funcs, self.reward_processing_classes):
                out.append(reward_func(prompts=prompts, completions=completions))
            return out
"""


def test_reward_functions_zipped_with_their_processing_classes_are_not_reported():
    assert codes(_TRAINER, "RL404") == []


def test_reward_functions_zipped_with_their_weights_are_reported():
    source = _TRAINER.replace("self.reward_processing_classes", "self.reward_weights")
    assert codes(source, "RL404") == [(7, "RL404")]


_BINARY = """
    import re

    def equation_reward(completion, target):
        return 1.0 if completion.strip() == target else 0.0

    def format_reward(completion):
        return 0.5 if re.search("<answer>", completion) else 0.0
"""


def test_a_binary_reward_with_a_small_group_is_reported():
    source = _BINARY + """
    GROUP = 4

    def score(completion, target):
        return equation_reward(completion, target)

    collect(group_size=GROUP)
    """
    assert codes(source, "RL402") == [(4, "RL402"), (7, "RL402")]


def test_a_binary_reward_summed_with_another_one_is_shaped():
    source = _BINARY + """
    GROUP = 4

    def score(completion, target):
        accuracy = equation_reward(completion, target)
        return format_reward(completion) + accuracy

    collect(group_size=GROUP)
    """
    assert codes(source, "RL402") == []


def test_one_sample_per_call_is_not_the_group_size():
    source = _BINARY + """
    from vllm import SamplingParams

    def score(completion, target):
        return equation_reward(completion, target)

    params = SamplingParams(n=1, temperature=0.9)
    """
    assert codes(source, "RL402") == []
