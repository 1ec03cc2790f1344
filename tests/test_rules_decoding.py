"""RL301, RL303, RL305 and RL310 on shapes of real code, beyond what the fixtures show."""
import textwrap

import pytest

from rllint.runner import lint_text
from rllint.settings import Settings


# A reward function makes the file RL code for the rules that ask.
REWARD = textwrap.dedent("""
    def format_reward(completions, **kwargs):
        return [1.0 for _ in completions]
""")


def lines(code: str, text: str, path: str = "rewards.py"):
    result = lint_text(textwrap.dedent(text), path, Settings(select=[code]))
    assert result.errors == []
    return sorted(d.line for d in result.diagnostics)


# ---------------------------------------------------------------- RL301

def test_rl301_a_split_guarded_by_the_closing_marker_is_not_fragile():
    source = """
        def parse(text):
            if "</think>" in text:
                text = text.split("</think>")[-1].strip()
            else:
                text = ""
            return text

        def tails(turns):
            return [t.split("</think>", 1)[-1] if "</think>" in t else t for t in turns]
    """
    assert lines("RL301", source) == []


def test_rl301_an_unguarded_split_is_still_reported():
    source = """
        def remove_thinking(text):
            text = text.split("</think>")[-1]
            return text.strip()
    """
    assert lines("RL301", source) == [3]


def test_rl301_a_slice_from_a_position_held_by_a_name_and_the_position_checks():
    # An unchecked `find` starts the slice inside the reasoning; `index` raises instead; a compared position is
    # a check.
    source = """
        def answer_part(text):
            close = text.rfind("</think>")
            return text[close + len("</think>"):text.find("<answer>")]

        def strict_part(text):
            return text[text.index("</think>") + 8:text.rfind("<answer>")]

        def checked_part(text):
            close = text.find("</think>")
            if close < 0:
                return ""
            return text[close + 8:]
    """
    result = lint_text(textwrap.dedent(source), "rewards.py", Settings(select=["RL301"]))
    assert [(d.line, d.message.rsplit(": ", 1)[-1]) for d in result.diagnostics] == [
        (4, "a completion cut off inside its reasoning is scored on that reasoning"),
        (7, "a completion without the marker raises ValueError")]


# ---------------------------------------------------------------- RL303

def test_rl303_decoding_in_code_that_is_not_rl_is_silent():
    source = """
        class Autoencoder:
            def forward(self, sample):
                z = self.encode(sample).latent_dist.sample()
                dec = self.decode(z).sample
                return dec
    """
    assert lines("RL303", source, "autoencoder.py") == []


def test_rl303_decoding_completions_for_a_reward_is_reported():
    source = """
        def rollout(policy, tokenizer, batch, reward_fn):
            sequences = policy.generate(**batch, do_sample=True)
            texts = tokenizer.batch_decode(sequences)
            return reward_fn(texts)
    """
    assert lines("RL303", source, "grpo.py") == [4]


def test_rl303_a_project_tokenizer_whose_decode_takes_no_skip_keyword_is_not_hugging_faces():
    source = """
        import tiktoken

        class Codec:
            def __init__(self, name):
                self.enc = tiktoken.get_encoding(name)
                self.eos_token_id = self.enc.eot_token

            def decode(self, tokens):
                return self.enc.decode(tokens)

        class Sampler:
            def __init__(self, policy):
                self.policy = policy
                self.tok = Codec("cl100k_base")

            def rollout(self, batch, reward_fn):
                sequences = self.policy.generate(**batch, do_sample=True, eos_token_id=self.tok.eos_token_id)
                return reward_fn([self.tok.decode(row) for row in sequences])
    """
    assert lines("RL303", source, "grpo.py") == []


def test_rl303_a_project_tokenizer_that_is_hugging_faces_or_takes_the_keyword_is_reported():
    source = """
        from transformers import PreTrainedTokenizerFast

        class Chat(PreTrainedTokenizerFast):
            pass

        class Wrapped:
            def __init__(self, inner):
                self.inner = inner

            def decode(self, ids, skip_special_tokens=False):
                return self.inner.decode(ids, skip_special_tokens=skip_special_tokens)

        def rollout(policy, batch, reward_fn):
            chat, wrapped = Chat(tokenizer_file="t.json"), Wrapped(None)
            sequences = policy.generate(**batch, do_sample=True)
            return reward_fn([chat.decode(row) for row in sequences] + [wrapped.decode(row) for row in sequences])
    """
    assert lines("RL303", source, "grpo.py") == [17, 17]


def test_rl303_a_tokenizer_out_of_sight_counts_when_it_is_used_as_hugging_faces():
    source = """
        def rollout(policy, tokenizer, prompts, reward_fn):
            batch = tokenizer(prompts, return_tensors="pt", padding=True)
            sequences = policy.generate(**batch, do_sample=True)
            return reward_fn([tokenizer.decode(row) for row in sequences])

        def rollout_unknown(policy, codec, batch, reward_fn):
            sequences = policy.generate(**batch, do_sample=True)
            return reward_fn([codec.decode(row) for row in sequences])
    """
    assert lines("RL303", source, "grpo.py") == [5]

CONSUMERS = """
    class Rollout:
        def __init__(self, scorers):
            self.scorers = scorers

        def run(self, policy, tokenizer, batch):
            sequences = policy.generate(**batch, do_sample=True)
            texts = tokenizer.batch_decode(sequences, skip_special_tokens=False)
            return self.score(texts)

        def score(self, completions):
            totals = []
            for i, text in enumerate(completions):
                totals.append(sum(scorer(text) for scorer in self.scorers))
            return totals


    def answer_reward(text):
        {body}


    rollout = Rollout([answer_reward])
"""


def test_rl303_text_a_scorer_cuts_at_the_end_token_is_not_reported():
    """The special tokens are kept on purpose: the scorer the text reaches cuts it at the end of the turn."""
    body = 'reply = text.rpartition("<|im_start|>assistant\\n")[2].partition("<|im_end|>")[0]\n        return float(reply.strip() == "42")'
    assert lines("RL303", CONSUMERS.replace("{body}", body), "grpo.py") == []


def test_rl303_text_no_scorer_cuts_at_an_end_token_is_reported():
    for body in ('return 1.0 - len(text) / 1000',
                 'return float(text.split("<|im_start|>assistant")[-1].strip().endswith("42"))'):
        assert lines("RL303", CONSUMERS.replace("{body}", body), "grpo.py") == [8]


def test_rl303_a_reward_function_of_another_module_that_cuts_at_eos(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "rewards.py").write_text(textwrap.dedent("""
        def exact(completion, answer):
            if "</s>" in completion:
                completion = completion[:completion.index("</s>")]
            return float(completion.strip() == answer)
    """))
    source = textwrap.dedent("""
        from rewards import exact

        def step(policy, tokenizer, batch, answers):
            out = policy.generate(**batch, do_sample=True)
            decoded = tokenizer.batch_decode(out)
            return [exact(c, a) for c, a in zip(decoded, answers)]
    """)
    (tmp_path / "train.py").write_text(source)
    result = lint_text(source, str(tmp_path / "train.py"), Settings(select=["RL303"]))
    assert [d.line for d in result.diagnostics] == []


# ---------------------------------------------------------------- RL305

def test_rl305_a_cut_chosen_by_a_setting_is_not_reported():
    source = """
        def record(completions, i, config):
            return dict(completion=completions[i] if config.log_full else completions[i][:500])

        def tail_letters(completion):
            tail = completion[-100:] if len(completion) > 100 else completion
            return [c for c in tail if c.isupper()]
    """
    assert lines("RL305", source) == []


def test_rl305_a_preview_variable_that_is_only_shown_is_not_reported():
    source = """
        def show(tokenizer, completion_ids, completions, table):
            for pos in range(len(completion_ids)):
                tok_text = tokenizer.decode(completion_ids[pos])[:12]
                print(f"{pos:<6} {tok_text!r:<15}")
            table.add_data(completions[0][:200])
    """
    assert lines("RL305", source) == []


def test_rl305_a_cut_variable_that_reaches_a_scorer_is_reported():
    source = """
        def judge_reward(completions, judge, **kwargs):
            scores = []
            for completion in completions:
                cut = completion[:3000]
                print(f"judging {cut}")
                scores.append(judge.score(cut))
            return scores
    """
    assert lines("RL305", source) == [5]


def test_rl305_a_preview_built_from_two_cuts_that_is_only_shown_is_not_reported():
    source = """
        def sample(model, tokenizer, batch, judge):
            out = model.generate(**batch, do_sample=True)
            reply = tokenizer.decode(out[0], skip_special_tokens=True)
            if len(reply) > 600:
                shown = reply[:300].rstrip() + " [... cut ...] " + reply[-300:]
            else:
                shown = reply
            print("reply:", shown)
            return judge(reply)
    """
    assert lines("RL305", source) == []


def test_rl305_the_same_two_cuts_given_to_a_judge_are_reported():
    source = """
        def sample(model, tokenizer, batch, judge):
            out = model.generate(**batch, do_sample=True)
            reply = tokenizer.decode(out[0], skip_special_tokens=True)
            kept = reply[:300].rstrip() + " [... cut ...] " + reply[-300:]
            print("reply:", kept)
            return judge(kept)
    """
    assert lines("RL305", source) == [5, 5]


@pytest.mark.parametrize("use, reported", [
    ("print(json.dumps({\"step\": step, \"samples\": kept}), flush=True)", False),  # a preview, dumped to the log
    ("return judge.score_all(kept)", True),  # the cut texts are what the judge scores
])
def test_rl305_cuts_gathered_in_a_list(use, reported):
    """Cuts written as the items of a list are held by the name the list is bound to: shown only, a preview;
    handed to a scorer, truncated completions."""
    source = f"""
        import json

        def rollout(model, tokenizer, batch, judge, step):
            out = model.generate(**batch, do_sample=True)
            texts = tokenizer.batch_decode(out, skip_special_tokens=True)
            kept = [texts[0][:200], texts[1][:200]] if len(texts) > 1 else [texts[0][:200]]
            {use}
    """
    assert lines("RL305", source) == ([7, 7, 7] if reported else [])


def test_rl305_decoded_training_labels_and_prompts_are_not_completions():
    source = """
        def label_spans(tokenizer, example, rows):
            ids, labels = example["input_ids"], example["labels"]
            spans, begin = [], 0
            for j in range(1, len(labels)):
                if (labels[j] == -100) != (labels[begin] == -100):
                    spans.append(tokenizer.decode(ids[begin:j])[:60])
                    begin = j
            rows.append({"span": tokenizer.decode(ids[begin:])[:60]})
            return spans

        def cap(tokenizer, question, limit):
            ids = tokenizer.encode(question)[:limit]
            text = tokenizer.decode(ids)
            return text[:4000]
    """
    assert lines("RL305", source) == []


def test_rl305_decoded_generated_ids_cut_before_saving_are_reported():
    source = """
        def rollouts(model, tokenizer, batch, rows):
            n = batch["input_ids"].shape[1]
            seqs = model.generate(**batch, do_sample=True)
            for row in seqs:
                rows.append({"completion": tokenizer.decode(row[n:])[:1000]})
            return rows
    """
    assert lines("RL305", source) == [6]


EVALUATION = """
    import json

    def evaluate(model, tokenizer, batches, grade, judge, out_path):
        rows = []
        for batch, gold in batches:
            n = batch["input_ids"].shape[1]
            seqs = model.generate(**batch, do_sample=False)
            text = tokenizer.decode(seqs[0][n:], skip_special_tokens=True)
            ok = grade(text, gold)
            kept = text[:300]
            rows.append({"gold": gold, "correct": ok, "head": kept, "tail": text[-200:]})
            rows.append(judge({"response": text[:1000]}))
            rows.append(grade(text[-200:], gold))
        with open(out_path, "w") as f:
            json.dump(rows, f)
"""


def project_lines(tmp_path, source, path, others=()):
    """Lines of RL305 findings in `path` of a project in `tmp_path` that also holds `others` (path, text)."""
    (tmp_path / "pyproject.toml").write_text("")
    for other, text in others:
        (tmp_path / other).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / other).write_text(textwrap.dedent(text))
    text = textwrap.dedent(source)
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text(text)
    result = lint_text(text, str(tmp_path / path), Settings(select=["RL305"]))
    assert result.errors == []
    return sorted(d.line for d in result.diagnostics)


def test_rl305_a_result_record_of_a_standalone_evaluation_script_is_not_reported(tmp_path):
    # kept beside the whole text's grade for people to read; the grader's and the judge's cuts are reported
    test = ("tests/test_eval.py", "from eval_math import evaluate\n")
    assert project_lines(tmp_path, EVALUATION, "eval_math.py", [test]) == [13, 14]


def test_rl305_a_record_of_an_evaluation_script_without_the_grade_is_reported(tmp_path):
    # the text is graded whole, but this record keeps only the cut: it may be data, not a result
    source = EVALUATION.replace('rows.append(judge({"response": text[:1000]}))', 'rows.append({"text": text[:800]})')
    assert project_lines(tmp_path, source, "eval_math.py") == [13, 14]


def test_rl305_the_same_record_in_a_test_is_not_reported(tmp_path):
    assert project_lines(tmp_path, EVALUATION, "tests/compare_models.py") == [13, 14]


def test_rl305_records_of_a_rollout_module_that_a_trainer_imports_are_reported(tmp_path):
    trainer = ("train.py", "from eval_math import evaluate\n\nevaluate(None, None, [], len, len, 'out.json')\n")
    assert project_lines(tmp_path, EVALUATION, "eval_math.py", [trainer]) == [11, 12, 13, 14]


def test_rl305_a_record_of_a_completion_never_scored_whole_is_reported(tmp_path):
    source = """
        import json

        def sample(model, tokenizer, prompts, path):
            with open(path, "w") as f:
                for batch in prompts:
                    seqs = model.generate(**batch, do_sample=True)
                    text = tokenizer.decode(seqs[0], skip_special_tokens=True)
                    f.write(json.dumps({"completion": text[:2048]}) + "\\n")
    """
    assert project_lines(tmp_path, source, "make_data.py") == [9]


# ---------------------------------------------------------------- RL310

def test_rl310_the_text_after_the_first_prose_header_is_a_response_not_an_answer():
    source = """
        def after_answer(response):
            return response.split("Answer:")[1].strip()
    """
    assert lines("RL310", textwrap.dedent(source) + REWARD) == []


def test_rl310_the_first_tag_split_is_reported_as_raising():
    source = """
        def tagged(text):
            return text.split("<answer>")[1].split("</answer>")[0]

        def format_reward(completions, **kwargs):
            return [float(bool(tagged(c))) for c in completions]
    """
    result = lint_text(textwrap.dedent(source), "rewards.py", Settings(select=["RL310"]))
    assert [(d.line, d.message.rsplit(": ", 1)[-1]) for d in result.diagnostics] == [
        (3, "a completion without the answer marker raises IndexError")]


def test_rl310_gold_answers_traced_through_columns_helpers_and_matches():
    source = """
        import re

        def load(dataset):
            return [{"Q": q, "A": a.split("####")[-1].strip()} for q, a in zip(dataset["question"], dataset["answer"])]

        def extract_boxed(solution):
            matches = re.findall(r"\\\\boxed\\{([^}]*)\\}", solution)
            if matches:
                return matches[-1]
            return solution.strip()

        def rows(ds):
            return [extract_boxed(item["solution"]) for item in ds]

        def extract_solution(solution_str):
            found = re.search("#### (\\\\-?[0-9\\\\.\\\\,]+)", solution_str)
            final = found.group(0)
            final = final.split("#### ")[-1].replace(",", "")
            return final

        def process(example):
            return extract_solution(example.pop("answer"))
    """
    assert lines("RL310", textwrap.dedent(source) + REWARD) == []


def test_rl310_a_helper_called_with_completions_is_still_reported():
    source = """
        import re

        def extract_boxed(text):
            matches = re.findall(r"\\\\boxed\\{([^}]*)\\}", text)
            if matches:
                return matches[-1]
            return text.strip()

        def accuracy_reward(completions, solution, **kwargs):
            return [float(extract_boxed(c[0]["content"]) == s) for c, s in zip(completions, solution)]

        def gold(ds):
            return [extract_boxed(row["solution"]) for row in ds]
    """
    assert lines("RL310", source) == [8]


def test_rl310_a_membership_check_before_the_search_is_a_check():
    source = """
        import re

        def first_answer(resp):
            if "<answer>" not in resp or "</answer>" not in resp:
                return resp
            match = re.search(r"<answer>.*?</answer>", resp, re.DOTALL)
            if not match:
                return resp
            return resp[:match.end()]
    """
    assert lines("RL310", textwrap.dedent(source) + REWARD) == []


EXTRACTOR = """
    def extract(pred):
        return pred.split("####")[-1].strip()
"""


def test_rl310_a_lenient_extractor_in_code_that_is_not_rl_is_silent():
    assert lines("RL310", EXTRACTOR, "eval/utils/equal.py") == []


def test_rl310_an_extractor_next_to_a_reward_function_is_reported():
    reward = """
        def accuracy_reward(completions, solution, **kwargs):
            return [float(extract(c) == s) for c, s in zip(completions, solution)]
    """
    assert lines("RL310", EXTRACTOR + reward, "rewards/math.py") == [3]


# ---------------------------------------------------------------- issue 10: shapes by structure

def test_rl301_a_not_in_guard_on_the_closing_marker_is_a_check():
    source = """
        CLOSE = "</reasoning>"

        def visible(reply):
            if CLOSE not in reply:
                return ""
            pieces = reply.split(CLOSE)
            return pieces[-1].strip()

        def visible_inline(reply):
            return reply.rpartition("</reasoning>")[2] if "</reasoning>" in reply else ""
    """
    assert lines("RL301", source) == []


def test_rl305_a_negated_constant_bound_resolves_through_the_constant():
    source = """
        KEEP_CHARS = 1200

        def grade(data_source, solution_str, ground_truth, extra_info=None):
            window = solution_str[-KEEP_CHARS:]
            return float(ground_truth in window)
    """
    assert lines("RL305", source) == [5]


def test_rl305_completion_text_through_a_local_helper_and_a_split_piece():
    source = """
        def final_part(reply):
            reply = reply.strip()
            return reply.rpartition("</think>")[2]

        def judge_reward(prompts, completions, grader, **kwargs):
            scores = []
            for p, c in zip(prompts, completions, strict=True):
                scores.append(grader(p, final_part(c)[:1500]))
                scores.append(grader(p, c.split("Final:")[1][:800]))
            return scores

        def prompt_cut(prompts, completions, **kwargs):
            return [final_part(p)[:100] == c for p, c in zip(prompts, completions, strict=True)]
    """
    assert lines("RL305", source) == [9, 10]


def test_rl310_a_last_number_fallback_after_the_marker_is_reported():
    source = """
        import re

        def parse(resp):
            if "####" in resp:
                return resp.split("####")[-1].strip()
            tokens = re.findall(r"-?[0-9][0-9,.]*", resp)
            return tokens[-1] if tokens else None

        def score(resp, target):
            return float(parse(resp) == target)

        def correctness(completions, target, **kwargs):
            return [score(c, t) for c, t in zip(completions, target, strict=True)]
    """
    assert lines("RL310", source) == [8]


def test_rl310_a_last_number_fallback_that_no_reward_runs_is_evaluation():
    source = """
        import re

        def parse(resp):
            if "####" in resp:
                return resp.split("####")[-1].strip()
            tokens = re.findall(r"-?[0-9][0-9,.]*", resp)
            return tokens[-1] if tokens else None

        def accuracy(outputs, targets):
            return sum(parse(o) == t for o, t in zip(outputs, targets, strict=True)) / len(targets)
    """
    assert lines("RL310", textwrap.dedent(source) + REWARD) == []


def test_rl310_numbers_without_an_answer_marker_and_gold_numbers_are_not_a_fallback():
    source = """
        import re

        def only_numbers(resp):
            found = re.findall(r"\\\\d+", resp)
            return found[-1] if found else None

        def gold_value(row):
            ref = row["solution"]
            if "####" in ref:
                return ref.split("####")[-1]
            found = re.findall(r"\\\\d+", ref)
            return found[-1]
    """
    assert lines("RL310", textwrap.dedent(source) + REWARD) == []


def test_rl310_a_position_search_whose_miss_returns_the_whole_text():
    source = """
        def after_tag(resp):
            start = resp.find("<answer>")
            if start == -1:
                return resp.strip()
            return resp[start + len("<answer>"):]

        def after_tag_empty(resp):
            start = resp.find("<answer>")
            if start == -1:
                return ""
            return resp[start + len("<answer>"):]

        def after_tag_checked(resp):
            if "<answer>" not in resp:
                return resp
            start = resp.index("<answer>")
            return resp[start + 8:]
    """
    assert lines("RL310", textwrap.dedent(source) + REWARD) == [5]


def test_rl310_a_slice_from_an_unchecked_find_starts_near_the_top_of_the_text():
    # `find` gives -1 when the marker is missing, so `-1 + len(marker)` starts the slice a few characters in:
    # inline, with an upper bound, in a method, and through a name bound to the position.
    source = """
        def tagged(completion):
            return completion[completion.find("<answer>") + 8 : completion.find("</answer>")].strip()

        class Parser:
            def boxed(self, text):
                begin = text.rfind("\\\\boxed{") + len("\\\\boxed{")
                return text[begin:text.rfind("}")]
    """
    assert lines("RL310", textwrap.dedent(source) + REWARD) == [3, 8]


def test_rl310_a_find_whose_result_is_compared_or_a_raising_index_is_not_a_fallback():
    source = """
        def compared(text):
            at = text.find("####")
            return text[at + 4:] if at >= 0 else ""

        def compared_with_a_length(reply):
            begin = reply.find("<answer>") + len("<answer>")
            end = reply.find("</answer>")
            if begin < len("<answer>") or end == -1:
                raise ValueError(reply)
            return reply[begin:end]

        def compared_inline(text):
            if text.rfind("<answer>") < 0:
                return None
            return text[text.rfind("<answer>") + 8:]

        def membership(text):
            if "<answer>" not in text:
                return ""
            return text[text.find("<answer>") + 8:text.find("</answer>")]

        def raising(text):
            return text[text.index("<answer>") + 8:]

        def not_a_marker(text):
            return text[text.find("Question") + 8:]

        def gold_side(row):
            return row["answer"][row["answer"].find("####") + 4:]
    """
    assert lines("RL310", textwrap.dedent(source) + REWARD) == []


def test_rl310_a_fallback_kept_in_a_name_inside_the_reward_function():
    """`answer = m.group(1) if m else content` scores the whole completion as the return form does; the gold's own
    `sol_match.group(1) if sol_match else sol` and a fallback to "" are not reported."""
    source = """
        import re

        def accuracy_reward(completions, solution, **kwargs):
            rewards = []
            for completion, sol in zip(completions, solution):
                content = completion[0]["content"]
                sol_match = re.search(r"<answer>(.*?)</answer>", sol)
                truth = sol_match.group(1).strip() if sol_match else sol.strip()
                found = re.search(r"<answer>(.*?)</answer>", content)
                guess = found.group(1).strip() if found else content.strip()
                strict = found.group(1).strip() if found else ""
                rewards.append(float(truth in guess) + float(truth == strict))
            return rewards
    """
    result = lint_text(textwrap.dedent(source), "rewards.py", Settings(select=["RL310"]))
    assert [d.line for d in result.diagnostics] == [11]
