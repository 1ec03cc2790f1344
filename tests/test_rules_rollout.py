"""RL316 (generate on right-padded prompts) and RL317 (dropout active in rollouts) on shapes of real code:
every positive, and every look-alike RULES.md says must stay silent."""
import textwrap

from rllint.runner import lint_files, lint_text
from rllint.settings import Settings

# What makes a script an RL run: a clipped policy-gradient update.
UPDATE = """
    ratio = torch.exp(new_lp - old_lp)
    adv = (scores - scores.mean()) / (scores.std() + 1e-6)
    loss = -torch.min(ratio * adv, torch.clamp(ratio, 0.8, 1.2) * adv).mean()
    loss.backward()
    optim.step()
"""


def lines(code: str, source: str, path: str = "rl_loop.py"):
    result = lint_text(textwrap.dedent(source), path, Settings(select=[code]))
    assert result.errors == []
    return sorted(d.line for d in result.diagnostics)


# ---------------------------------------------------------------- RL316

SCRIPT = """
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

tk = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-Math-1.5B"{tokenizer_kw})
actor = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-Math-1.5B")
optim = torch.optim.AdamW(actor.parameters(), lr=1e-6)
{setup}
for rows in loader:
    questions = [f"Question: {{r['q']}}\\nAnswer:" for r in rows]
    batch = tk(questions, return_tensors="pt", padding=True{call_kw})
    with torch.no_grad():
        seqs = actor.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask, do_sample=True)
    new_lp = actor(seqs).logits.log_softmax(-1)
    old_lp = new_lp.detach()
""" + textwrap.dedent(UPDATE).replace("\n", "\n    ")


def script(tokenizer_kw: str = "", setup: str = "", call_kw: str = "") -> str:
    return SCRIPT.format(tokenizer_kw=tokenizer_kw, setup=setup, call_kw=call_kw)


def test_rl316_a_qwen_tokenizer_never_set_left_pads_the_generation_batch_on_the_right():
    assert lines("RL316", script()) == [11]


def test_rl316_left_padding_on_the_constructor_the_attribute_or_the_call_is_silent():
    assert lines("RL316", script(tokenizer_kw=', padding_side="left"')) == []
    assert lines("RL316", script(setup='tk.padding_side = "left"')) == []
    assert lines("RL316", script(call_kw=', padding_side="left"')) == []


def test_rl316_a_side_the_file_computes_is_silent():
    assert lines("RL316", script(setup="tk.padding_side = cfg.pad_side")) == []


def test_rl316_right_padding_set_explicitly_is_reported_whatever_the_family():
    source = script(setup='tk.padding_side = "right"').replace("Qwen/Qwen2.5-Math-1.5B", "some/checkpoint")
    assert lines("RL316", source) == [11]


CLASS_STYLE = '''
from transformers import AutoModelForCausalLM, AutoTokenizer


class Sampler:
    def __init__(self, path="openai-community/gpt2"):
        self.tok = AutoTokenizer.from_pretrained(path)
        self.policy = AutoModelForCausalLM.from_pretrained(path)

    def encode(self, prompts):
        return self.tok(prompts, padding="longest", return_tensors="pt")

    def rollouts(self, prompts):
        enc = self.encode(prompts)
        return self.policy.generate(**enc, max_new_tokens=256, do_sample=True)


def reinforce_loss(logps, advantages):
    return -(logps * advantages).mean()
'''


def test_rl316_ids_returned_by_a_helper_and_generated_in_a_method_are_followed():
    assert lines("RL316", CLASS_STYLE) == [11]


def test_rl316_one_prompt_is_not_a_batch():
    source = CLASS_STYLE.replace("enc = self.encode(prompts)", "enc = self.encode(prompts[0])").replace(
        "self.tok(prompts,", "self.tok(f'Q: {prompts}',")
    assert lines("RL316", source) == []


def test_rl316_encoder_decoder_models_are_silent():
    source = CLASS_STYLE.replace("openai-community/gpt2", "google/flan-t5-large").replace(
        "AutoModelForCausalLM", "AutoModelForSeq2SeqLM")
    assert lines("RL316", source) == []


def test_rl316_a_tokenizer_the_function_is_given_is_silent():
    source = '''
    MODEL = "Qwen/Qwen2.5-0.5B-Instruct"

    def rollouts(policy, tokenizer, prompts):
        enc = tokenizer(prompts, padding=True, return_tensors="pt")
        return policy.generate(**enc, do_sample=True)

    def pg_loss(logps, advantages):
        return -(logps * advantages).mean()
    '''
    assert lines("RL316", source) == []


def test_rl316_vllm_given_unpadded_prompts_and_padding_for_a_reward_model_are_silent():
    source = '''
    from transformers import AutoTokenizer
    from vllm import LLM, SamplingParams

    tk = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-7B-Instruct")
    llm = LLM(model="Qwen/Qwen2.5-7B-Instruct")

    def rollouts(prompts):
        outs = llm.generate(prompts, SamplingParams(temperature=1.0))
        return [o.outputs[0].text for o in outs]

    def score(reward_model, prompts, completions):
        enc = tk([p + c for p, c in zip(prompts, completions)], padding=True, return_tensors="pt")
        return reward_model(**enc).logits[:, 0]

    def pg_loss(logps, advantages):
        return -(logps * advantages).mean()
    '''
    assert lines("RL316", source) == []


def test_rl316_test_code_is_silent():
    assert lines("RL316", script(), path="tests/test_loop.py") == []


# A script whose prompts are padded by a DataLoader's collate function and sampled by a trainer class of another
# module, one row at a time (thomasjhuang/cs224r-llm-rl-finetuning's shape).
COLLATED = """
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer

from rloo import RLOOTrainer


def main(rows, path="Qwen/Qwen2.5-0.5B-Instruct"):
    tokenizer = AutoTokenizer.from_pretrained(path)
    {setup}
    model = AutoModelForCausalLM.from_pretrained(path)

    def collate_fn(batch):
        texts = [item["prompt"] for item in batch]
        enc = tokenizer(texts, return_tensors="pt", padding=True{call_kw})
        return enc["input_ids"], enc["attention_mask"], texts

    loader = {loader}
    trainer = RLOOTrainer(model, tokenizer, torch.optim.AdamW(model.parameters(), lr=1e-6))
    for step, (ids, mask, texts) in enumerate(tqdm(loader)):
        trainer.step(ids, mask, texts)
"""

REINFORCE = """
import torch


class RLOOTrainer:
    def __init__(self, model, tokenizer, optimizer):
        self.model, self.tokenizer, self.optimizer = model, tokenizer, optimizer

    def sample(self, prompt_ids, prompt_mask, texts):
        rows = []
        for i in range(prompt_ids.size(0)):
            rows.append(self.model.generate(prompt_ids[i:i + 1], attention_mask=prompt_mask[i:i + 1],
                                            max_new_tokens=1024, do_sample=True))
        return rows

    def step(self, prompt_ids, prompt_mask, texts):
        rows = self.sample(prompt_ids, prompt_mask, texts)
        logps = [torch.log_softmax(self.model(r).logits, -1).max(-1).values.sum() for r in rows]
        rewards = torch.tensor([float(len(r)) for r in rows])
        loss = -(torch.stack(logps) * (rewards - rewards.mean())).mean()
        loss.backward()
        self.optimizer.step()
"""


def collated(tmp_path, setup="", call_kw="", loader="DataLoader(rows, batch_size=8, collate_fn=collate_fn)",
             reinforce=REINFORCE):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "rloo.py").write_text(textwrap.dedent(reinforce))
    (tmp_path / "train.py").write_text(COLLATED.format(setup=setup, call_kw=call_kw, loader=loader))
    result = lint_files([str(tmp_path / "train.py")], Settings(select=["RL316"], root=tmp_path), isolated=False)
    return sorted(d.line for d in result.diagnostics)


def test_rl316_prompts_a_collate_function_pads_reach_the_generate_of_another_module(tmp_path):
    assert collated(tmp_path) == [17]


def test_rl316_is_reported_once_where_the_padding_is_chosen_not_at_each_generate(tmp_path):
    """One cause, reported where it is fixed (RULES.md): the padding call, whose side decides every sampled row;
    the module whose two `generate` calls sample from it reports nothing of its own."""
    drafts = REINFORCE.replace(
        "            rows.append(self.model.generate(prompt_ids[i:i + 1], attention_mask=prompt_mask[i:i + 1],\n"
        "                                            max_new_tokens=1024, do_sample=True))",
        "            if len(texts[i]) > 200:\n"
        "                out = self.model.generate(input_ids=prompt_ids[i:i + 1], max_new_tokens=2048, do_sample=True)\n"
        "            else:\n"
        "                out = self.model.generate(prompt_ids[i:i + 1], attention_mask=prompt_mask[i:i + 1],\n"
        "                                          max_new_tokens=1024, do_sample=True)\n"
        "            rows.append(out)")
    assert drafts != REINFORCE
    assert collated(tmp_path, reinforce=drafts) == [17]
    from rllint.runner import lint_files

    whole = lint_files([str(tmp_path / "train.py"), str(tmp_path / "rloo.py")],
                       Settings(select=["RL316"], root=tmp_path), isolated=False)
    assert [(d.path.rsplit("/", 1)[-1], d.line) for d in whole.diagnostics] == [("train.py", 17)]


def test_rl316_left_padding_set_on_the_tokenizer_or_the_collate_call_is_silent(tmp_path):
    assert collated(tmp_path, setup='tokenizer.padding_side = "left"') == []
    assert collated(tmp_path, call_kw=', padding_side="left"') == []


def test_rl316_prompts_re_tokenized_with_left_padding_for_generation_are_another_encoding(tmp_path):
    left = REINFORCE.replace(
        "rows = self.sample(prompt_ids, prompt_mask, texts)",
        'enc = self.tokenizer(texts, padding=True, padding_side="left", return_tensors="pt")\n'
        '        rows = self.sample(enc.input_ids, enc.attention_mask, texts)')
    assert collated(tmp_path, reinforce=left) == []
    # batches of a loader the engine cannot see into: the texts may come from the padded ids too (mixed)
    assert collated(tmp_path, reinforce=left, loader="accelerator.prepare(DataLoader(rows, collate_fn=collate_fn))") == []


def test_rl316_padded_ids_that_only_train_are_not_sampled_from(tmp_path):
    scored = REINFORCE.replace("rows = self.sample(prompt_ids, prompt_mask, texts)",
                               "rows = [prompt_ids]")
    assert collated(tmp_path, reinforce=scored) == []


# ---------------------------------------------------------------- RL317

LORA_LOOP = """
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

net = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
net = get_peft_model(net, LoraConfig(r=8, lora_alpha=16, lora_dropout={dropout}))
optim = torch.optim.AdamW(net.parameters(), lr=1e-5)


def seq_logps(m, ids):
    return torch.log_softmax(m(ids).logits[:, :-1], -1).gather(-1, ids[:, 1:, None]).squeeze(-1)


{before}
for prompts, scores in loader:
{top}
    with torch.no_grad():
        ids = net.generate(**prompts, do_sample=True)
        old_lp = seq_logps(net, ids)
    net.train()
    new_lp = seq_logps(net, ids)
""" + textwrap.dedent(UPDATE).replace("\n", "\n    ")


def lora_loop(dropout: str = "0.05", before: str = "", top: str = "") -> str:
    return LORA_LOOP.format(dropout=dropout, before=before, top=top)


def test_rl317_lora_dropout_and_a_train_call_late_in_the_loop_reach_the_next_rollout():
    assert lines("RL317", lora_loop()) == [19]  # once: the old-log-prob pass has the same cause


def test_rl317_eval_around_sampling_is_silent():
    assert lines("RL317", lora_loop(top="    net.eval()")) == []
    assert lines("RL317", lora_loop(top="    net.train(False)")) == []


def test_rl317_zero_dropout_or_disabled_dropout_is_silent():
    assert lines("RL317", lora_loop(dropout="0.0")) == []
    assert lines("RL317", lora_loop(before="disable_dropout_in_model(net)")) == []


def test_rl317_a_dropout_the_file_computes_is_silent():
    assert lines("RL317", lora_loop(dropout="cfg.lora_dropout")) == []


def test_rl317_no_train_call_leaves_a_pretrained_model_in_eval_mode():
    source = lora_loop().replace("    net.train()\n", "")
    assert lines("RL317", source) == []


def test_rl317_the_model_handed_to_outside_code_in_between_is_silent():
    assert lines("RL317", lora_loop(top="    evaluate_on_dev(net)")) == []


def test_rl317_train_mode_without_any_dropout_evidence_is_silent():
    source = lora_loop().replace(
        "net = get_peft_model(net, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05))\n", "")
    assert lines("RL317", source) == []


ACTOR_CRITIC = '''
import torch
from transformers import GPT2LMHeadModel


class PPOLearner:
    def __init__(self):
        self.actor = GPT2LMHeadModel.from_pretrained("gpt2")
        self.opt = torch.optim.Adam(self.actor.parameters(), lr=1e-5)

    def collect(self, queries):
        with torch.no_grad():
            return self.actor.generate(queries, do_sample=True, max_new_tokens=48)

    def update(self, seqs, old_lp, adv):
        self.actor.train()
        logp = torch.log_softmax(self.actor(seqs).logits, -1)
        ratio = torch.exp(logp - old_lp)
        loss = -torch.min(ratio * adv, torch.clamp(ratio, 0.8, 1.2) * adv).mean()
        loss.backward()
        self.opt.step()

    def fit(self, loader):
        for queries, old_lp, adv in loader:
            seqs = self.collect(queries)
            self.update(seqs, old_lp, adv)
'''


def test_rl317_a_gpt2_actor_left_in_train_mode_by_the_update_method_samples_in_it():
    assert lines("RL317", ACTOR_CRITIC) == [13]


def test_rl317_an_eval_call_in_the_sampling_method_is_silent():
    source = ACTOR_CRITIC.replace("        with torch.no_grad():\n            return",
                                  "        self.actor.eval()\n        with torch.no_grad():\n            return")
    assert lines("RL317", source) == []


OLD_LOGP_STEP = '''
import torch
from transformers import AutoModelForCausalLM

policy = AutoModelForCausalLM.from_pretrained("facebook/opt-350m")
opt = torch.optim.AdamW(policy.parameters(), lr=1e-6)

def step(seqs, adv):
    policy.train()
    with torch.no_grad():
        old_logp = torch.log_softmax(policy(seqs).logits, -1)
    logp = torch.log_softmax(policy(seqs).logits, -1)
    ratio = torch.exp(logp - old_logp)
    loss = -torch.min(ratio * adv, torch.clamp(ratio, 0.8, 1.2) * adv).mean()
    loss.backward()
    opt.step()
'''


def test_rl317_an_old_log_prob_pass_after_train_in_the_same_function():
    assert lines("RL317", OLD_LOGP_STEP) == [11]


def test_rl317_an_old_log_prob_pass_of_a_model_not_known_to_train_is_not_the_policys_by_its_name():
    """The same pass on a `policy` the file is handed from out of sight (no optimizer of the file receives it):
    its name does not make it the trained policy."""
    handed = OLD_LOGP_STEP.replace("policy = AutoModelForCausalLM", "AutoModelForCausalLM").replace(
        "opt = torch.optim.AdamW(policy.parameters(), lr=1e-6)\n", "").replace(
        "def step(seqs, adv):", "def step(policy, seqs, adv):").replace("    opt.step()\n", "")
    assert "policy.parameters" not in handed and "def step(policy," in handed
    assert lines("RL317", handed) == []


def test_rl316_padding_to_max_length_pads_even_one_prompt():
    source = CLASS_STYLE.replace('self.tok(prompts, padding="longest",',
                                 "self.tok(f'Q: {prompts}', padding=\"max_length\", max_length=256,")
    assert lines("RL316", source) == [11]


def test_rl316_an_sglang_engine_given_unpadded_token_ids_is_silent():
    source = '''
    import sglang as sgl
    from transformers import AutoTokenizer

    tk = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-3B-Instruct")
    engine = sgl.Engine(model_path="Qwen/Qwen2.5-3B-Instruct")

    def rollouts(prompts):
        ids = tk(prompts, padding=False).input_ids
        return engine.generate(input_ids=ids, sampling_params={"temperature": 1.0})

    def pg_loss(logps, advantages):
        return -(logps * advantages).mean()
    '''
    assert lines("RL316", source) == []
    assert lines("RL316", source.replace("padding=False", "padding=True")) == []  # an engine, not a HF model


# ---- RL317 through a wrapper class of another module, its LoRA dropout read from the run's YAML ----

WRAPPER = """\
    import torch
    import torch.nn.functional as F
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM


    class LM:
        def __init__(self, name, use_lora=False, lora=None):
            self.model = AutoModelForCausalLM.from_pretrained(name)
            if use_lora:
                settings = LoraConfig(r=lora["r"], LORA_DROPOUT target_modules=["q_proj", "v_proj"])
                self.model = get_peft_model(self.model, settings)

        def sample(self, ids):
            with torch.no_grad():
                return self.model.generate(ids, do_sample=True, max_new_tokens=256)

        def token_logps(self, ids):
            logits = self.model.forward(input_ids=ids).logits[:, :-1]
            return F.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
"""

TRAIN = """\
    import torch
    import yaml

    from lm import LM

    with open("run.yml") as handle:
        config = yaml.safe_load(handle)

    llm = LM(config["model"], use_lora=config["use_lora"], lora=config.get("lora") if config["use_lora"] else None)
    ref = LM(config["model"])
    ref.model.eval()
    llm.model.train()
    optimizer = torch.optim.AdamW(llm.model.parameters(), lr=1e-6)

    for prompts, scores in batches:
        BEFORE
        ids = SAMPLE
        with torch.no_grad():
            old = llm.token_logps(ids)
            base = ref.token_logps(ids)
        AFTER
        new = llm.token_logps(ids)
        ratio = torch.exp(new - old)
        adv = ((scores - scores.mean()) / (scores.std() + 1e-6))[:, None]
        loss = -torch.min(ratio * adv, torch.clamp(ratio, 0.8, 1.2) * adv).mean() + 0.05 * (new - base).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def wrapped(tmp_path, dropout="0.1", lora_dropout='lora_dropout=lora["dropout"],', before="pass", after="pass",
            sample="llm.sample(prompts)"):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "lm.py").write_text(textwrap.dedent(WRAPPER).replace("LORA_DROPOUT", lora_dropout))
    (tmp_path / "run.yml").write_text(f"model: Qwen/Qwen2.5-1.5B-Instruct\nuse_lora: true\nlora:\n  r: 8\n"
                                      f"  dropout: {dropout}\n")
    train = textwrap.dedent(TRAIN).replace("BEFORE", before).replace("AFTER", after).replace("SAMPLE", sample)
    (tmp_path / "train.py").write_text(train)
    result = lint_files([str(tmp_path / "train.py")], Settings(select=["RL317"], root=tmp_path))
    return [(d.line, d.message) for d in result.diagnostics]


def test_rl317_a_wrapper_of_another_module_samples_with_the_lora_policy_in_train_mode(tmp_path):
    (line, message), = wrapped(tmp_path)
    assert line == 17 and "samples rollouts with `llm.model` in train mode" in message
    assert "lora_dropout=0.1, lora.dropout in run.yml" in message


def test_rl317_the_old_log_prob_pass_of_a_wrapper_under_no_grad(tmp_path):
    (line, message), = wrapped(tmp_path, sample="vllm_engine.generate(prompts)")
    assert line == 19 and "computes old log-probs with `llm.model`" in message


def test_rl317_wrapper_look_alikes(tmp_path):
    assert wrapped(tmp_path, dropout="0.0") == []  # no dropout
    assert wrapped(tmp_path, lora_dropout="") == []  # PEFT's default dropout is 0
    assert wrapped(tmp_path, before="llm.model.eval()", after="llm.model.train()") == []  # eval around both passes
    # the reference's pass in eval mode, the policy's sampled elsewhere
    assert wrapped(tmp_path, sample="vllm_engine.generate(prompts)", before="llm.model.eval()",
                   after="llm.model.train()") == []


# A trainer class of one module given a tokenizer another module loads (the side is a fact of the object, set where
# it is loaded or configured; ShashankChandgude/RLHF's shape, here with a helper and positional arguments).
GIVEN_TRAINER = """
import torch
from transformers import AutoModelForCausalLM


class Sampler:
    def __init__(self, tok, path="EleutherAI/gpt-neo-125M"):
        self.tok = tok
        self.lm = AutoModelForCausalLM.from_pretrained(path)

    def encode(self, questions):
        return self.tok([q.strip() for q in questions], padding=True, return_tensors="pt")

    def rollout(self, questions):
        enc = self.encode(questions)
        return self.lm.generate(enc["input_ids"], attention_mask=enc["attention_mask"], do_sample=True)
"""

GIVEN_DRIVER = """
from transformers import AutoTokenizer

from sampler import Sampler


def main(name):
    tk = AutoTokenizer.from_pretrained(name{kw})
    tk.pad_token = tk.eos_token
    {setup}
    Sampler(tk).rollout(["a", "bb"])
"""


def given(tmp_path, kw="", setup=""):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "sampler.py").write_text(GIVEN_TRAINER)
    (tmp_path / "driver.py").write_text(GIVEN_DRIVER.format(kw=kw, setup=setup))
    result = lint_files([str(tmp_path / "sampler.py")], Settings(select=["RL316"], root=tmp_path), isolated=False)
    return sorted(d.line for d in result.diagnostics)


def test_rl316_a_tokenizer_another_module_loads_with_no_side_pads_on_its_models_default(tmp_path):
    assert given(tmp_path) == [12]


def test_rl316_a_given_tokenizer_set_left_where_it_is_loaded_or_configured_is_silent(tmp_path):
    assert given(tmp_path, kw=', padding_side="left"') == []
    assert given(tmp_path, setup='tk.padding_side = "left"') == []
    assert given(tmp_path, setup="tk.padding_side = side") == []  # a side the code computes


def test_rl316_a_given_tokenizer_handed_first_to_a_library_call_may_be_configured_there(tmp_path):
    assert given(tmp_path, setup="configure_tokenizer(tk)") == []
    assert given(tmp_path, kw=", **tokenizer_kwargs") == []


def test_rl317_a_model_the_engine_does_not_know_is_trained_is_not_the_policy_by_its_name():
    """`policy` is a parameter no caller in sight gives: the engine does not know it is a trained model, so its
    name does not make it the policy whose rollouts are sampled in train mode. Handed the trained `net`, it is."""
    helper = '''

def sample_with(policy, prompts):
    policy.train()
    return policy.generate(**prompts, do_sample=True)
'''
    source = lora_loop(top="    net.eval()") + helper
    assert lines("RL317", source) == []
    called = source + "\n\nsample_with(net, {})\n"
    assert lines("RL317", called) == [called.splitlines().index("    return policy.generate(**prompts, do_sample=True)") + 1]
