"""RL314 (decoded completions re-tokenized for training) and RL315 (generation prompts cut on the right), on
shapes of real code beyond the fixtures: each look-alike of RULES.md has its own test."""
import textwrap

import pytest

from rllint.runner import lint_text
from rllint.settings import Settings


def lines(code: str, source: str, path: str = "train_rl.py"):
    result = lint_text(textwrap.dedent(source), path, Settings(select=[code]))
    assert result.errors == []
    return sorted(d.line for d in result.diagnostics)


# ---------------------------------------------------------------- RL314

HEAD = """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    actor = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B-Instruct")
    judge = AutoModelForCausalLM.from_pretrained("my-org/judge-8b")
    tok = AutoTokenizer.from_pretrained("meta-llama/Llama-3.2-1B-Instruct")


    def seq_logp(logits, ids):
        return torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None]).squeeze(-1).sum(-1)
"""


def test_rl314_decoded_text_encoded_one_by_one_into_a_list_that_trains():
    source = HEAD + """
    def update(batch_ids, questions, grade):
        sampled = actor.generate(batch_ids, do_sample=True)
        answers = [tok.decode(row, skip_special_tokens=True) for row in sampled]
        encoded = []
        for q, a in zip(questions, answers, strict=True):
            encoded.append(tok.encode(q + "\\n" + a, return_tensors="pt"))
        advantages = torch.tensor([grade(a) for a in answers]) - 0.5
        objective = 0.0
        for ids, adv in zip(encoded, advantages, strict=True):
            logp = seq_logp(actor(ids).logits, ids)
            objective = objective - logp * adv
        objective.backward()
    """
    assert lines("RL314", source) == [18]


def test_rl314_a_helper_that_builds_the_batch_is_followed_into_its_caller():
    source = HEAD + """
    def to_batch(questions, replies):
        joined = [f"{q}{r}" for q, r in zip(questions, replies, strict=True)]
        return tok(joined, return_tensors="pt", padding=True)


    def update(batch_ids, questions, rewards_of):
        sampled = actor.generate(batch_ids, do_sample=True)
        replies = tok.batch_decode(sampled[:, batch_ids.shape[1]:], skip_special_tokens=True)
        batch = to_batch(questions, replies)
        adv = torch.tensor(rewards_of(replies))
        out = actor(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        (-(seq_logp(out.logits, batch["input_ids"]) * adv).mean()).backward()
    """
    assert lines("RL314", source) == [15]


def test_rl314_re_tokenizing_for_a_judge_is_not_reported():
    source = HEAD + """
    def update(batch_ids, questions):
        sampled = actor.generate(batch_ids, do_sample=True)
        replies = tok.batch_decode(sampled[:, batch_ids.shape[1]:], skip_special_tokens=True)
        graded = tok([q + r for q, r in zip(questions, replies, strict=True)], return_tensors="pt", padding=True)
        with torch.no_grad():
            adv = judge(**graded).logits[:, -1, 0]
        (-(seq_logp(actor(sampled).logits, sampled) * adv).mean()).backward()
    """
    assert lines("RL314", source) == []


def test_rl314_decoding_that_keeps_special_tokens_is_not_this_rule():
    source = HEAD + """
    def update(batch_ids, grade):
        sampled = actor.generate(batch_ids, do_sample=True)
        replies = tok.batch_decode(sampled)
        batch = tok(replies, return_tensors="pt", padding=True, add_special_tokens=False)
        adv = torch.tensor([grade(r) for r in replies])
        (-(seq_logp(actor(**batch).logits, batch.input_ids) * adv).mean()).backward()
    """
    assert lines("RL314", source) == []


def test_rl314_supervised_training_on_decoded_samples_is_not_a_policy_gradient():
    """Rejection-sampling fine-tuning keeps text samples and trains them with cross-entropy."""
    source = HEAD + """
    def sft_on_best(batch_ids):
        sampled = actor.generate(batch_ids, do_sample=True)
        replies = tok.batch_decode(sampled, skip_special_tokens=True)
        batch = tok(replies, return_tensors="pt", padding=True)
        out = actor(**batch, labels=batch.input_ids)
        out.loss.backward()
    """
    assert lines("RL314", source) == []


# ---------------------------------------------------------------- RL315

RENDER = """
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-3B-Instruct")
    lm = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-3B-Instruct")
    LIMIT = 512


    def render(question):
        chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": question}]
        return tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
"""


def test_rl315_a_render_helper_and_a_separate_encoder_are_followed():
    source = RENDER + """

    def encode(text):
        return tokenizer(text, truncation="longest_first", max_length=LIMIT, return_tensors="pt")


    def answer(question):
        ids = encode(render(question)).input_ids
        return lm.generate(ids, max_new_tokens=256)
    """
    assert lines("RL315", source) == [16]


@pytest.mark.parametrize("setting", [
    'tokenizer.truncation_side = "left"',
    'tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-3B-Instruct", truncation_side="left")',
    "tokenizer.truncation_side = side",
])
def test_rl315_a_tokenizer_set_to_a_side_is_not_reported(setting):
    source = RENDER + f"""

    {setting}


    def answer(question):
        enc = tokenizer(render(question), truncation=True, max_length=LIMIT, return_tensors="pt")
        return lm.generate(**enc, max_new_tokens=256)
    """
    assert lines("RL315", source) == []


def test_rl315_prompts_measured_against_the_limit_are_not_reported():
    source = RENDER + """

    def answer(questions):
        kept = [q for q in questions if len(tokenizer(render(q)).input_ids) < LIMIT]
        enc = tokenizer([render(q) for q in kept], truncation=True, max_length=LIMIT, return_tensors="pt", padding=True)
        return lm.generate(**enc, max_new_tokens=256)
    """
    assert lines("RL315", source) == []


@pytest.mark.parametrize("call", [
    "tokenizer(render(question), truncation=False, max_length=LIMIT, return_tensors='pt')",
    "tokenizer(render(question), return_tensors='pt')",
    "tokenizer(render(question), truncation=True, max_length=LIMIT, truncation_side='left', return_tensors='pt')",
])
def test_rl315_prompts_that_are_not_cut_on_the_right(call):
    source = RENDER + f"""

    def answer(question):
        enc = {call}
        return lm.generate(**enc, max_new_tokens=256)
    """
    assert lines("RL315", source) == []


def test_rl315_text_that_is_not_a_generation_prompt_or_not_generated_from():
    source = RENDER + """

    def encode_dialogue(chat):
        text = tokenizer.apply_chat_template(chat, tokenize=False)
        enc = tokenizer(text, truncation=True, max_length=LIMIT, return_tensors="pt")
        return lm.generate(**enc, max_new_tokens=256)


    def text_features(question, encoder):
        enc = tokenizer(render(question), truncation=True, max_length=LIMIT, return_tensors="pt")
        return encoder(**enc).last_hidden_state
    """
    assert lines("RL315", source) == []


def test_rl315_prompt_encoders_outside_rl_code_are_not_reported():
    """An image pipeline's text encoder renders and cuts prompts too; it trains no policy on them."""
    source = RENDER.replace("from trl import GRPOConfig", "") + """

    def upsample(question):
        enc = tokenizer(render(question), truncation=True, max_length=LIMIT, return_tensors="pt")
        return lm.generate(**enc, max_new_tokens=256)
    """
    assert lines("RL315", source, "pipelines/flux/encoders.py") == []


def test_rl315_the_right_side_chosen_explicitly_is_still_right():
    source = RENDER + """

    tokenizer.truncation_side = "right"


    def answer(question):
        enc = tokenizer(render(question), truncation=True, max_length=LIMIT, truncation_side="right")
        return lm.generate(**enc, max_new_tokens=256)
    """
    assert lines("RL315", source) == [19]


LEARNER = """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from objectives import Objective


    class Learner:
        def __init__(self, name):
            self.policy = AutoModelForCausalLM.from_pretrained(name)
            self.tok = AutoTokenizer.from_pretrained(name)
            self.objective = Objective(0.2)
            self.opt = torch.optim.AdamW(self.policy.parameters(), lr=1e-6)

        def sample(self, prompt_ids):
            with torch.no_grad():
                rows = self.policy.generate(prompt_ids, do_sample=True, max_new_tokens=256)
            return self.tok.batch_decode(rows[:, prompt_ids.shape[1]:], skip_special_tokens=True)

        def step(self, prompt_ids, score):
            replies = self.sample(prompt_ids)
            weights = torch.tensor([score(r) for r in replies])
            enc = self.tok(text=replies, return_tensors="pt", padding=True)
            with torch.no_grad():
                before = self.policy(enc.input_ids).logits
            after = self.policy(enc.input_ids).logits
            loss = self.objective.value(after, before, enc.input_ids, weights)
            loss.backward()
            self.opt.step()
"""


def _project(tmp_path, objective):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "objectives.py").write_text(textwrap.dedent(objective))
    (tmp_path / "learner.py").write_text(textwrap.dedent(LEARNER))
    from rllint.runner import lint_files
    result = lint_files([str(tmp_path / "learner.py")], Settings(select=["RL314"], root=tmp_path), isolated=False)
    return sorted(d.line for d in result.diagnostics)


def test_rl314_the_policy_gradient_loss_of_another_module_proves_the_forward_trains(tmp_path):
    objective = """
        import torch


        class Objective:
            def __init__(self, eps):
                self.eps = eps

            def value(self, logits, old_logits, ids, weights):
                new = torch.log_softmax(logits, -1).gather(-1, ids[..., None]).squeeze(-1)
                old = torch.log_softmax(old_logits, -1).gather(-1, ids[..., None]).squeeze(-1)
                ratio = torch.exp(new - old)
                clipped = torch.clamp(ratio, 1 - self.eps, 1 + self.eps)
                return -torch.min(ratio * weights[:, None], clipped * weights[:, None]).mean()
    """
    assert _project(tmp_path, objective) == [23]


def test_rl314_a_loss_of_another_module_that_weights_nothing_is_not_a_policy_gradient(tmp_path):
    objective = """
        import torch


        class Objective:
            def __init__(self, eps):
                self.eps = eps

            def value(self, logits, old_logits, ids, weights):
                return torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
    """
    assert _project(tmp_path, objective) == []


# A collate function renders and encodes the prompts of a batch; a trainer of another module samples from them.
PROMPTED = """
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig

from sampler import RolloutWorker

tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-1.5B-Instruct", padding_side="left")
policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-1.5B-Instruct")


def collate(batch):
    chats = [[{{"role": "user", "content": b["question"]}}] for b in batch]
    prompts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt={generation}) for c in chats]
    enc = tokenizer(prompts, truncation=True, max_length=256, padding=True, return_tensors="pt")
    return {{"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "answers": [b["answer"] for b in batch]}}


def train(rows):
    worker = RolloutWorker(policy)
    for batch in DataLoader(rows, batch_size=8, collate_fn=collate):
        worker.{use}(batch["input_ids"], batch["attention_mask"])
"""

WORKER = """
import torch


class RolloutWorker:
    def __init__(self, model):
        self.model = model

    def rollouts(self, ids, mask):
        with torch.no_grad():
            return self.model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=1024, do_sample=True)

    def score(self, ids, mask):
        return self.model(input_ids=ids, attention_mask=mask).logits
"""


def prompted(tmp_path, generation="True", use="rollouts"):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "sampler.py").write_text(WORKER)
    (tmp_path / "train.py").write_text(PROMPTED.format(generation=generation, use=use))
    result = lint_files([str(tmp_path / "train.py")], Settings(select=["RL315"], root=tmp_path), isolated=False)
    return sorted(d.line for d in result.diagnostics)


def test_rl315_prompts_a_collate_function_cuts_reach_the_generate_of_another_module(tmp_path):
    assert prompted(tmp_path) == [15]


def test_rl315_a_collate_function_that_cuts_text_that_is_not_sampled_from(tmp_path):
    assert prompted(tmp_path, generation="False") == []  # a whole conversation, not a generation prompt
    assert prompted(tmp_path, use="score") == []  # the cut prompts are scored, never sampled from


HANDED_TOKENIZER = """
    import torch


    def respond(model, tok, messages, limit=192):
        def run():
            prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            enc = tok(prompt, return_tensors="pt", truncation=True, max_length=limit)
            with torch.no_grad():
                return model.generate(**enc, max_new_tokens=256, do_sample=True)
        return run()
"""


@pytest.mark.parametrize("caller, reported", [
    ("", False),  # only other modules call it: their tokenizer, whose truncation side this file does not show
    ("\n\nrespond(AutoModelForCausalLM.from_pretrained('Qwen/Qwen2.5-3B-Instruct'),\n"
     "        AutoTokenizer.from_pretrained('Qwen/Qwen2.5-3B-Instruct'), [])\n", True),
])
def test_rl315_a_tokenizer_handed_in_from_out_of_sight_truncates_as_its_builder_set(caller, reported):
    source = ("from transformers import AutoModelForCausalLM, AutoTokenizer\nfrom trl import GRPOConfig\n"
              + textwrap.dedent(HANDED_TOKENIZER) + caller)
    assert lines("RL315", source) == ([10] if reported else [])


# ---------------------------------------------------------------- RL314 across functions (engine facts)

def test_rl314_text_stored_on_the_instance_and_encoded_in_another_method():
    """The decode is in one method, its text kept on `self`, the re-tokenization and the loss in another."""
    source = HEAD + """
    class Loop:
        def __init__(self, opt):
            self.opt = opt
            self.replies = []

        def roll(self, prompt_ids):
            drawn = actor.generate(input_ids=prompt_ids, do_sample=True)
            self.replies = tok.batch_decode(drawn[:, prompt_ids.shape[1]:], skip_special_tokens=True)

        def learn(self, advantages):
            enc = tok(text=self.replies, return_tensors="pt", padding=True)
            logp = seq_logp(actor(enc.input_ids).logits, enc.input_ids)
            (-(logp * advantages).mean()).backward()
            self.opt.step()


    def main(batches, opt, scorer):
        loop = Loop(opt)
        for ids in batches:
            loop.roll(ids)
            loop.learn(torch.tensor(scorer(loop.replies)))
    """
    assert lines("RL314", source) == [23]


def test_rl314_sampled_ids_joined_with_an_unknown_sampler_still_hold_the_sampled_path():
    source = HEAD + """
    def fast_sample(model, ids):
        return model.custom_decode(ids)


    def update(prompt_ids, fast, grade):
        out = fast_sample(actor, prompt_ids) if fast else actor.generate(prompt_ids, do_sample=True)
        texts = [tok.decode(row, skip_special_tokens=True) for row in out]
        enc = tok(texts, return_tensors="pt", padding=True)
        adv = torch.tensor([grade(t) for t in texts])
        (-(seq_logp(actor(enc.input_ids).logits, enc.input_ids) * adv).mean()).backward()
    """
    assert lines("RL314", source) == [20]


VLLM = """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from vllm import LLM, SamplingParams

    policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
    grader = AutoModelForCausalLM.from_pretrained("my-org/grader")
    tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
    engine = LLM(model="Qwen/Qwen2.5-0.5B")


    def logps_of(logits, ids):
        return torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None]).squeeze(-1).sum(-1)


    def rollout(prompts, params):
        results = engine.generate(prompts, params)
        return [r.outputs[0].text for r in results]
"""


def test_rl314_the_text_of_a_vllm_completion_re_tokenized_for_the_policy():
    source = VLLM + """

    def step(prompts, rewards_of):
        completions = rollout(prompts, SamplingParams(temperature=1.0, max_tokens=512))
        batch = tokenizer([p + c for p, c in zip(prompts, completions, strict=True)], return_tensors="pt", padding=True)
        adv = torch.tensor(rewards_of(completions))
        (-(logps_of(policy(**batch).logits, batch.input_ids) * adv).mean()).backward()
    """
    assert lines("RL314", source) == [23]


@pytest.mark.parametrize("params", [
    "SamplingParams(max_tokens=512, include_stop_str_in_output=True, skip_special_tokens=False)",
    "settings",  # parameters the engine does not see: whether the EOS is kept is not known
])
def test_rl314_vllm_text_that_keeps_its_eos_or_of_unknown_settings_is_not_reported(params):
    source = VLLM + f"""

    def step(prompts, rewards_of, settings):
        completions = rollout(prompts, {params})
        batch = tokenizer([p + c for p, c in zip(prompts, completions, strict=True)], return_tensors="pt", padding=True)
        adv = torch.tensor(rewards_of(completions))
        (-(logps_of(policy(**batch).logits, batch.input_ids) * adv).mean()).backward()
    """
    assert lines("RL314", source) == []


def test_rl314_vllm_text_re_tokenized_only_for_a_grader_is_not_reported():
    source = VLLM + """

    def step(prompts, prompt_ids, sampled_ids):
        completions = rollout(prompts, SamplingParams(max_tokens=512))
        graded = tokenizer(completions, return_tensors="pt", padding=True)
        with torch.no_grad():
            adv = grader(**graded).logits[:, -1, 0]
        (-(logps_of(policy(sampled_ids).logits, sampled_ids) * adv).mean()).backward()
    """
    assert lines("RL314", source) == []
