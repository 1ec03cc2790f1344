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


def test_a_group_size_default_counts_where_the_file_builds_the_class_or_calls_the_function():
    """A default declared here and used elsewhere, or never (a logging callback's, a config nobody builds in the
    file), is of unknown use; built or called here without the argument, it is the run's."""
    declared = _BINARY + """
    from dataclasses import dataclass

    def score(completion, target):
        return equation_reward(completion, target)

    @dataclass
    class Settings:
        group_size: int = 4

    class Logger:
        def __init__(self, group_size=4):
            self.group_size = group_size

    def rollouts(prompts, num_generations=4):
        return [p for p in prompts for _ in range(num_generations)]
    """
    assert codes(declared, "RL402") == []
    assert codes(declared + "\n    settings = Settings()\n", "RL402") == [(4, "RL402"), (7, "RL402")]
    assert codes(declared + "\n    batch = rollouts(['q'])\n", "RL402") == [(4, "RL402"), (7, "RL402")]


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


# ---------------------------------------------------------------- RL407 lenient-answer-match

def test_rl407_the_gold_looked_for_anywhere_in_the_completion_is_reported():
    source = """
        def exact_match_reward(prompts, completions, reference, **kwargs):
            rewards = []
            for text, ref in zip(completions, reference, strict=True):
                rewards.append(2.0 if ref in text else -1.0)
            return rewards
    """
    assert codes(source, "RL407") == [(5, "RL407")]


def test_rl407_a_comprehension_that_reuses_the_gold_parameters_name_does_not_hide_it():
    # `{label for label in labels}` binds `label` inside the set only; the parameter `label` outside is the column
    source = """
        def label_reward(completions, label, **kwargs):
            out = []
            for text, want in zip(completions, label, strict=True):
                names = {label.lower() for label in text.split()}
                out.append(1.0 if want in text.strip() else 0.1 * len(names))
            return out
    """
    assert codes(source, "RL407") == [(6, "RL407")]


def test_rl407_a_loop_variable_is_what_its_loop_gives_it_whatever_the_function_binds_the_name_to_later():
    source = r"""
        import re

        class Judge:
            def score(self, completions, solution, **kwargs):
                marks = []
                for text, sol in zip(completions, solution, strict=True):
                    best = 0.0
                    for pred in re.findall(r"\[(.*?)\]", text):
                        best = max(best, 1.0 if sol in pred else 0.0)
                    marks.append(best)
                for k in range(len(marks)):
                    pred = solution[k]
                    print(pred, marks[k])
                return marks
    """
    assert codes(source, "RL407") == [(10, "RL407")]


def test_rl407_a_loop_variable_rebound_inside_its_loop_is_not_taken_from_the_loop():
    source = r"""
        def score(completions, solution, **kwargs):
            marks = []
            for text, sol in zip(completions, solution, strict=True):
                for pred in text.split():
                    pred = sol
                    marks.append(1.0 if sol in pred else 0.0)
            return marks
    """
    assert codes(source, "RL407") == []


def test_rl407_every_gold_word_found_among_the_models_words_is_reported():
    source = """
        def words_reward(completions, reference, **kwargs):
            scores = []
            for completion, ref in zip(completions, reference, strict=True):
                said = frozenset(w.strip(".,") for w in completion.lower().split())
                needed = ref.lower().split()
                scores.append(float(all(word in said for word in needed)))
            return scores
    """
    assert codes(source, "RL407") == [(7, "RL407")]


def test_rl407_a_token_overlap_count_word_set_equality_and_a_prediction_among_accepted_answers_are_not_reported():
    source = """
        def f1_reward(completions, reference, aliases, **kwargs):
            scores = []
            for completion, ref, accepted in zip(completions, reference, aliases, strict=True):
                said = list(completion.lower().split())
                needed = ref.lower().split()
                hits = sum(word in said for word in needed)
                precision = sum([word in needed for word in said]) / max(len(said), 1)
                recall = hits / max(len(needed), 1)
                same = set(said) == set(needed)
                listed = completion.strip() in set(accepted)
                scores.append(float(same or listed) + 2 * precision * recall / max(precision + recall, 1e-9))
            return scores
    """
    assert codes(source, "RL407") == []


def test_rl407_a_comprehension_variable_named_like_a_column_is_judged_by_what_it_iterates():
    source = """
        def kw_reward(completions, solution, keywords, **kwargs):
            return [float(any(solution in c for solution in kws)) for c, kws in zip(completions, keywords, strict=True)]
    """
    assert codes(source, "RL407") == []


def test_rl407_a_position_lookup_or_count_of_the_gold_in_a_helper_the_reward_calls_is_reported():
    source = """
        def _tail(s):
            return s[-300:]

        def _found(body, expected):
            return body.rfind(expected) >= 0

        def math_score(data_source, solution_str, ground_truth, extra_info=None):
            body = _tail(solution_str)
            if body.count(ground_truth) == 0:
                return 0.0
            return 1.0 if _found(solution_str, ground_truth) else 0.5
    """
    assert codes(source, "RL407") == [(6, "RL407"), (10, "RL407")]


def test_rl407_the_models_answer_looked_for_in_a_string_gold_is_reported():
    source = r"""
        import re

        def qa_reward(completions, gold, **kwargs):
            found = [re.findall(r"\\d+", c) for c in completions]
            return [1.0 if nums and nums[-1] in str(g) else 0.0 for nums, g in zip(found, gold, strict=True)]
    """
    assert codes(source, "RL407") == [(6, "RL407")]


def test_rl407_equality_verifiers_membership_in_accepted_answers_and_format_checks_are_not_reported():
    source = r"""
        import re
        from sympy import simplify, sympify
        from math_verify import parse, verify

        def _norm(x):
            return re.sub(r"[\s,$]", "", str(x)).lower()

        def correct_reward(completions, solution, aliases, **kwargs):
            out = []
            for c, s, ok in zip(completions, solution, aliases, strict=True):
                m = re.search(r"<answer>(.*?)</answer>", c, re.DOTALL)
                guess = m.group(1) if m else ""
                if _norm(guess) == _norm(s) or guess.strip() in ok:
                    out.append(1.0)
                elif verify(parse(s), parse(c)) or simplify(sympify(guess) - sympify(s)) == 0:
                    out.append(1.0)
                else:
                    out.append(0.5 if "<answer>" in c else 0.0)
            return out
    """
    assert codes(source, "RL407") == []


def test_rl407_containment_outside_rewards_and_of_non_reference_columns_is_not_reported():
    source = """
        def evaluate(model_outputs, answers):
            return sum(a in o for o, a in zip(model_outputs, answers, strict=True)) / len(answers)

        def keyword_reward(completions, required_terms, **kwargs):
            return [sum(t in c for t in terms) for c, terms in zip(completions, required_terms, strict=True)]
    """
    assert codes(source, "RL407") == []


def test_rl407_an_answer_cleaned_of_spaces_compared_with_a_gold_only_lowered_is_reported():
    source = """
        def unit_free_reward(completions, gold_value, **kwargs):
            scores = []
            for text, want in zip(completions, gold_value, strict=True):
                said = text.rsplit("Final:", 1)[-1]
                said = said.strip().lower().replace(" ", "")
                scores.append(1.0 if said == want.strip().lower() else 0.0)
            return scores
    """
    assert codes(source, "RL407") == [(7, "RL407")]


def test_rl407_a_file_normaliser_on_one_side_and_a_strip_on_the_other_in_a_verl_module_is_reported():
    source = r"""
        import re

        def _compact(s):
            return re.sub(r"[,\s]", "", s)

        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            m = re.search(r"\\boxed\{([^}]*)\}", solution_str)
            if m is None:
                return 0.0
            return float(_compact(m.group(1)) == str(ground_truth).strip())
    """
    assert codes(source, "RL407") == [(11, "RL407")]


def test_rl407_a_gold_cleaned_of_dollars_beside_a_regex_group_that_can_hold_one_is_reported():
    source = r"""
        import re

        def price_reward(completions, target, **kwargs):
            out = []
            for c, t in zip(completions, target, strict=True):
                hits = re.findall(r"answer:\s*(\S+)", c[0]["content"])
                if not hits or hits[-1] != t.replace("$", "").strip():
                    out.append(0.0)
                else:
                    out.append(1.0)
            return out
    """
    assert codes(source, "RL407") == [(8, "RL407")]


def test_rl407_a_gold_cleaned_of_commas_beside_a_piece_of_the_completion_in_a_helper_is_reported():
    source = """
        def _same(reply, expected):
            return reply.partition("####")[2].strip() == expected.replace(",", "").strip()

        def gsm_reward(prompts, completions, answer, **kwargs):
            return [1.0 if _same(c, a) else 0.0 for c, a in zip(completions, answer, strict=True)]
    """
    assert codes(source, "RL407") == [(3, "RL407")]


def test_rl407_one_normaliser_on_both_sides_and_a_prediction_cleaned_beside_a_raw_gold_are_not_reported():
    source = r"""
        import re

        def _canon(x):
            return x.replace(",", "").replace("$", "").strip().lower()

        def extract(text):
            found = re.search(r"####\s*(.*)", text)
            return found.group(1).replace(",", "") if found else None

        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            pred = extract(solution_str)
            if pred is not None and pred == ground_truth:
                return 1.0
            if _canon(solution_str) == _canon(ground_truth):
                return 1.0
            return 1.0 if solution_str.replace(" ", "").strip() == ground_truth.replace(" ", "").strip() else 0.0
    """
    assert codes(source, "RL407") == []


def test_rl407_numbers_digit_only_groups_verifiers_and_format_checks_are_not_reported():
    source = r"""
        import re
        from math_verify import parse, verify

        def numeric_reward(completions, answer, **kwargs):
            out = []
            for c, a in zip(completions, answer, strict=True):
                m = re.search(r"(-?\d+(?:\.\d+)?)\s*$", c)
                if m and m.group(1) == a.replace(",", ""):
                    out.append(1.0)
                elif float(c.split()[-1]) == float(a.replace(",", "")):
                    out.append(1.0)
                elif verify(parse(a.replace(",", "")), parse(c)):
                    out.append(1.0)
                else:
                    out.append(0.2 if c.strip().lower().replace(" ", "") == "<answer></answer>" else 0.0)
            return out
    """
    assert codes(source, "RL407") == []


def test_rl407_a_sympy_equivalence_of_a_cleaned_gold_is_not_reported():
    source = """
        from sympy import simplify, sympify

        def symbolic_reward(completions, solution, **kwargs):
            scores = []
            for text, gold in zip(completions, solution, strict=True):
                said = text.split("Answer:")[-1].strip()
                same = simplify(sympify(said) - sympify(gold.replace(",", ""))) == 0
                scores.append(1.0 if same or sympify(said) == sympify(gold.replace(",", "")) else 0.0)
            return scores
    """
    assert codes(source, "RL407") == []


def test_rl407_a_one_sided_comparison_in_an_evaluation_harness_is_not_reported():
    source = """
        def accuracy(model_outputs, dataset):
            hits = [o.split("####")[-1].strip() == row["answer"].replace(",", "")  # one-sided, but scores nothing
                    for o, row in zip(model_outputs, dataset, strict=True)]
            return sum(hits) / len(hits)
    """
    assert codes(source, "RL407") == []


# ---------------------------------------------------------------- RL403: appends in an inner loop

def test_rl403_an_append_in_an_inner_loop_without_break_is_reported_at_the_append():
    source = """
        def step_reward(completions, **kwargs):
            scores = []
            for idx, completion in enumerate(completions):
                for step in completion.split("Step"):
                    if step.strip():
                        scores.append(0.2)
            return scores
    """
    assert codes(source, "RL403") == [(7, "RL403")]


def test_rl403_an_inner_loop_that_breaks_after_its_append_is_not_reported():
    source = """
        import re

        def pattern_reward(completions, patterns, **kwargs):
            scores = []
            for completion in completions:
                for pattern in patterns:
                    if re.search(pattern, completion):
                        scores.append(1.0)
                        break
                else:
                    scores.append(0.0)
            return scores
    """
    assert codes(source, "RL403") == []


def test_rl403_a_flag_that_records_the_append_lets_the_fallback_count_and_an_unbroken_inner_loop_is_reported():
    source = """
        class Scorer:
            def grade(self, completions, expected, **kwargs):
                out = []
                for completion, want in zip(completions, expected, strict=True):
                    if not completion:
                        out.append(-1.0)
                        continue
                    scored = False
                    if want.isdigit():
                        for line in completion.splitlines():
                            if line.strip() == want:
                                out.append(1.0)
                                scored = True
                    else:
                        for line in completion.splitlines():
                            if line.strip().lower() == want.lower():
                                out.append(0.5)
                                scored = True
                                break
                    if not scored:
                        out.append(0.0)
                return out
    """
    assert codes(source, "RL403") == [(13, "RL403")]


def test_rl403_a_flag_with_a_break_after_every_append_is_not_reported():
    source = """
        def grade(completions, expected, **kwargs):
            out = []
            for completion, want in zip(completions, expected, strict=True):
                done = False
                for line in completion.splitlines():
                    if line.strip() == want:
                        out.append(1.0)
                        done = True
                        break
                if done:
                    pass
                else:
                    out.append(0.0)
            return out
    """
    assert codes(source, "RL403") == []


def test_rl403_a_flag_set_apart_from_the_append_is_not_trusted_to_say_whether_it_appended():
    # `seen = True` without an append: a line that holds `want` but is not it leaves this completion with no reward
    source = """
        def grade(completions, expected, **kwargs):
            out = []
            for completion, want in zip(completions, expected, strict=True):
                seen = False
                for line in completion.splitlines():
                    if want in line:
                        seen = True
                    if line.strip() == want:
                        out.append(1.0)
                        break
                if not seen:
                    out.append(0.0)
            return out
    """
    assert codes(source, "RL403") == [(13, "RL403")]


def test_rl403_inner_loops_over_the_completions_of_a_group_or_the_messages_of_one_are_not_reported():
    grouped = """
        def group_reward(prompts, completions, **kwargs):
            scores = []
            for prompt_completions in completions:
                for text in prompt_completions:
                    scores.append(float(len(text) < 500))
            return scores
    """
    by_prompt = """
        def batch_reward(prompts, completions_per_prompt, **kwargs):
            scores = []
            for i, prompt in enumerate(prompts):
                for completion in completions_per_prompt[i]:
                    scores.append(float(prompt in completion))
            return scores
    """
    conversational = """
        def turn_reward(completions, **kwargs):
            scores = []
            for conversation in completions:
                for message in conversation:
                    if message["role"] == "assistant":
                        scores.append(float("?" not in message["content"]))
            return scores
    """
    assert codes(grouped, "RL403") == []
    assert codes(by_prompt, "RL403") == []
    assert codes(conversational, "RL403") == []


def test_rl403_comprehensions_in_the_loop_and_functions_that_score_no_completions_are_not_reported():
    comprehension = """
        def bullet_reward(completions, **kwargs):
            scores = []
            for c in completions:
                lines = [line for line in c.splitlines() if line.startswith("- ")]
                scores.append(min(len(lines), 5) / 5)
            return scores
    """
    not_completions = """
        def shaped_rewards(token_scores, masks):
            rewards = []
            for scores, mask in zip(token_scores, masks, strict=True):
                for s, m in zip(scores, mask, strict=True):
                    rewards.append(s * m)
            return rewards
    """
    assert codes(comprehension, "RL403") == []
    assert codes(not_completions, "RL403") == []


def _project_rl405(tmp_path, files, linted="scoring.py"):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = lint_files([str(tmp_path / linted)], Settings(select=["RL405"]))
    return [(d.line, d.code) for d in result.diagnostics if d.path.endswith(linted)]


_TERMS = """
    def shape_check(prompt, completion, example):
        try:
            return 0.5 if example["pattern"] in completion else -0.5
        except Exception:
            return 0.0

    class Judge:
        @staticmethod
        def parse_only(completion):
            try:
                return float(completion.strip())
            except BaseException:
                return 0.0
"""


def test_rl405_a_helper_whose_result_an_importer_s_reward_function_adds_into_its_score(tmp_path):
    # The reward term is one by use (summed, through a name, by a trainer's reward function in another
    # module), whatever its name.
    train = """
        from scoring import shape_check

        def wordle_reward_func(completions, examples=None, **kwargs):
            totals = []
            for text, ex in zip(completions, examples):
                total = 0.0
                part = shape_check("", text, ex)
                total += part
                totals.append(total)
            return totals
    """
    assert _project_rl405(tmp_path, {"scoring.py": _TERMS, "train.py": train}) == [(5, "RL405")]


def test_rl405_a_helper_that_only_decides_a_branch_or_is_called_outside_rewards_is_not_a_term(tmp_path):
    train = """
        import scoring

        def format_reward(completions, examples=None, **kwargs):
            return [1.0 if scoring.shape_check("", c, e) > 0 else 0.0 for c, e in zip(completions, examples)]

        def evaluate(row):
            return scoring.shape_check("", row["text"], row) + row["bonus"]
    """
    assert _project_rl405(tmp_path, {"scoring.py": _TERMS, "train.py": train}) == []


def test_rl407_a_number_read_without_its_sign_beside_a_cleaned_gold_that_keeps_it():
    # Both sides are numbers, but `[0-9]+` reads `5` of `-5` while the gold, cleaned, keeps its sign.
    source = r"""
        import re

        class Scorer:
            def prediction(self, text):
                found = re.findall("[0-9]+", text)
                return int(found[-1]) if found else None

            def gold(self, reference):
                return int(reference.split("####")[1].strip().replace(",", ""))

            def correctness_reward(self, completions, reference, **kwargs):
                return [float(self.gold(r) == self.prediction(c)) for c, r in zip(completions, reference)]
    """
    assert codes(source, "RL407") == [(13, "RL407")]


def test_rl407_a_signed_number_pattern_or_a_raw_gold_is_not_one_sided_about_the_sign():
    source = r"""
        import re

        def signed(text):
            found = re.findall(r"-?[0-9]+", text)
            return float(found[-1]) if found else None

        def unsigned(text):
            found = re.findall(r"[0-9]+", text)
            return float(found[-1]) if found else None

        def accuracy_reward(completions, answer, **kwargs):
            out = []
            for c, a in zip(completions, answer):
                out.append(float(signed(c) == float(a.replace(",", ""))) + float(unsigned(c) == float(a)))
            return out
    """
    assert codes(source, "RL407") == []
