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


# ---- reward shapes in other styles ------------------------------------------------------

def test_rl401_one_number_through_max_min_a_scalar_name_or_a_float_annotation():
    source = """
        def best_len_reward(completions, **kwargs):
            lens = [len(text) / 512 for text in completions]
            return max(lens)

        def shortest_reward(completions, **kwargs):
            return min(len(text) for text in completions)

        def share_reward(completions, **kwargs):
            hits = sum(1.0 for text in completions if "</answer>" in text)
            share = hits / len(completions)
            return share

        def declared_reward(completions, **kwargs) -> float:
            return grade_all(completions)
    """
    assert codes(source, "RL401") == [(4, "RL401"), (7, "RL401"), (12, "RL401"), (15, "RL401")]


def test_rl401_look_alikes_per_completion_lists_and_single_completion_scores():
    source = """
        def clipped_reward(completions, **kwargs):
            return [min(1.0, len(text) / 512) for text in completions]

        def named_list_reward(completions, **kwargs):
            out = [float("</answer>" in text) for text in completions]
            return out

        def single_reward(completion: str) -> float:
            return max(0.0, 1.0 - len(completion) / 512)

        def longest_reward(completions, **kwargs):
            return max(completions, key=len)

        def declared_list_reward(completions, **kwargs) -> float:
            return [1.0 for _ in completions]
    """
    assert codes(source, "RL401") == []


GROUP_OF_FOUR = """
    from trl import GRPOConfig

    args = GRPOConfig(output_dir="runs", num_generations=4)
"""


def test_rl402_two_values_written_with_and_or_a_string_test():
    source = GROUP_OF_FOUR + """
    def closed_tags_reward(completions, **kwargs):
        return [text.lstrip().startswith("<plan>") and text.rstrip().endswith("</plan>") for text in completions]

    def numeric_reward(completions, **kwargs):
        return [text.strip().isnumeric() for text in completions]

    def bounded_prefix_reward(completion, prefix):
        short = len(completion) < 4096
        return completion.startswith(prefix) and short

    def partial_reward(completions, **kwargs):
        return [len(text) > 8 and len(text) / 64 for text in completions]
    """
    assert codes(source, "RL402") == [(6, "RL402"), (9, "RL402"), (12, "RL402")]


def test_rl403_one_line_suites_are_paths_like_indented_ones():
    source = """
        def parse_reward(completions, golds, **kwargs):
            marks = []
            for text, gold in zip(completions, golds, strict=True):
                try:
                    marks.append(float(text) == float(gold))
                    audit(text)
                except ValueError: marks.append(0.0)
            return marks

        def tagged_reward(completions, **kwargs):
            marks = []
            for text in completions:
                if "<plan>" in text: marks.append(1.0)
            return marks

        def both_reward(completions, **kwargs):
            marks = []
            for text in completions:
                if "<plan>" in text: marks.append(1.0)
                else: marks.append(0.0)
            return marks

        def guarded_reward(completions, **kwargs):
            marks = []
            for text in completions:
                try: marks.append(float(text))
                except ValueError: marks.append(0.0)
            return marks
    """
    assert codes(source, "RL403") == [(8, "RL403"), (14, "RL403")]


def test_rl405_one_line_handlers():
    source = """
        def graded_reward(completions, **kwargs):
            marks = []
            for text in completions:
                try: marks.append(grade(text))
                except Exception: marks.append(0.0)
            return marks

        def narrow_reward(completions, **kwargs):
            marks = []
            for text in completions:
                try: marks.append(grade(text))
                except KeyError: marks.append(0.0)
            return marks
    """
    assert codes(source, "RL405") == [(6, "RL405")]


def test_rl401_a_float_annotation_on_a_function_that_builds_lists_is_the_annotation_s_mistake():
    source = """
        def spread_reward(completions, **kwargs) -> float:
            if not completions:
                return [0.0] * len(completions)
            marks = []
            for text in completions:
                marks.append(len(text) / 512)
            return marks
    """
    assert codes(source, "RL401") == []


def test_a_reward_function_listed_twice_is_reported_at_its_second_listing():
    source = """
        from trl import RLOOTrainer

        def numeric_match(completions, target, **kwargs):
            return [float(c.strip() == t) for c, t in zip(completions, target)]

        def has_steps(completions, **kwargs):
            return [float("Step 1" in c) for c in completions]

        def run(policy):
            return RLOOTrainer(model=policy, reward_funcs=(numeric_match, has_steps,
                                                           numeric_match, has_steps))
    """
    assert codes(source, "RL406") == [(12, "RL406"), (12, "RL406")]


def test_a_reward_list_held_in_a_local_name_is_resolved():
    source = """
        def launch(cfg, make_trainer, rewards_mod):
            fns = [rewards_mod.exact, rewards_mod.fmt, rewards_mod.exact]
            make_trainer(cfg, reward_fns=fns).fit()
    """
    assert codes(source, "RL406") == [(3, "RL406")]


def test_repetitions_with_reward_weights_factories_and_unresolved_lists_are_not_reported():
    weighted = """
        def launch(cfg, trainer_cls, exact, fmt):
            cfg.reward_weights = [1.0, 0.5, 1.0]
            return trainer_cls(cfg, reward_funcs=[exact, fmt, exact])
    """
    factories = """
        def launch(trainer_cls, make_len_reward, exact):
            return trainer_cls(reward_funcs=[exact, make_len_reward(128), make_len_reward(512)])
    """
    reassigned = """
        def launch(trainer_cls, exact, fmt, strict):
            fns = [exact, fmt]
            if strict:
                fns = [exact, exact]
            return trainer_cls(reward_funcs=fns)
    """
    assert codes(weighted, "RL406") == []
    assert codes(factories, "RL406") == []
    assert codes(reassigned, "RL406") == []


def test_a_reward_call_added_twice_is_reported_once_and_other_sums_are_not():
    source = """
        def answer_reward(response, gold):
            return 1.0 if response.endswith(gold) else 0.0

        def total(response, gold, other):
            a = answer_reward(response, gold) + (answer_reward(response, gold) + 1)
            b = answer_reward(response, gold) + answer_reward(other, gold)
            c = answer_reward(response, gold) + 2 * answer_reward(response, gold)
            d = len(response) + len(response)
            return a + b + c + d
    """
    assert codes(source, "RL406") == [(6, "RL406")]
