"""RL311's explicit form: a mask of sampled ids compared unequal to the EOS id (`excludes_eos`), reported where it
weights per-token terms of the policy's log-probs in a policy-gradient loss."""
import textwrap

from engine import Engine
from rllint.runner import lint_text
from rllint.settings import Settings

HEADER = '''
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
lm = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
'''


def lines(source: str, path: str = "rollout.py"):
    result = lint_text(textwrap.dedent(source), path, Settings(select=["RL311"]))
    return [d.line for d in result.diagnostics]


def excluded(source: str, code: str):
    return Engine(HEADER + source).value(code).facts.get("excludes_eos") is not None


# ---- facts ----

def test_the_eos_id_of_a_tokenizer_or_of_a_models_configs():
    engine = Engine(HEADER + '''
a = tok.eos_token_id
b = lm.config.eos_token_id
c = lm.generation_config.eos_token_id
d = tok.pad_token_id
''')
    assert [engine.value(x).facts.get("special") for x in "abcd"] == ["eos", "eos", "eos", None]


def test_sampled_ids_unequal_to_eos_exclude_it_through_casts_slices_and_products_of_masks_not_ids_shifted_back():
    source = '''
def masks(prompt):
    out = lm.generate(prompt, do_sample=True)
    ids = out[:, prompt.shape[1]:]
    eos = tok.eos_token_id
    m1 = ids.ne(eos).long()
    m2 = (ids != tok.eos_token_id) & (ids != 7)
    m3 = torch.ne(ids, eos).to(torch.float32)[:, 1:]
    m4 = (ids != eos) | (ids == 3)
    m5 = (prompt != eos).float()
    m6 = (ids == eos).float()
    states = out[:, prompt.shape[1] - 1:-1]
    m7 = states.ne(eos) & states.ne(tok.pad_token_id)
'''
    assert [excluded(source, f"m{i}") for i in range(1, 8)] == [True, True, True, False, False, False, False]


def test_sampled_ids_padded_by_a_new_tensor_are_still_sampled():
    engine = Engine(HEADER + '''
def padded(prompt, width):
    out = lm.generate(prompt, do_sample=True)
    out = torch.cat([out, torch.full((out.size(0), width), tok.pad_token_id)], dim=1)
    other = torch.cat([out, prompt], dim=1)
''')
    assert engine.value("out").facts.get("sampled") and not engine.value("other").facts.get("sampled")


def test_elements_written_into_a_list_attribute_are_its_elements():
    engine = Engine('''
import torch

class Buffer:
    def __init__(self, n):
        self.slots = [None] * n

    def put(self, i):
        self.slots[i % 4] = {"mask": torch.zeros(3, 4) > 0}

    def each(self):
        for slot in self.slots:
            got = slot["mask"]
''')
    assert engine.value("got").facts.get("content") == "mask"


# ---- the rule ----

def test_a_function_with_the_eos_id_of_the_model_config_is_reported():
    assert lines(HEADER + '''
opt = torch.optim.AdamW(lm.parameters(), lr=1e-6)


def update(prompt, rewards):
    with torch.no_grad():
        seqs = lm.generate(prompt, do_sample=True, max_new_tokens=1024)
    gen = seqs[:, prompt.size(1):]
    live = gen != lm.config.eos_token_id
    logp = torch.log_softmax(lm(seqs).logits[:, prompt.size(1) - 1:-1], -1).gather(-1, gen[..., None])[..., 0]
    pg = -logp * (rewards - rewards.mean())[:, None]
    (pg * live.float()).mean().backward()
    opt.step()
''') == [15]


def test_the_terms_a_mask_selects_are_reported():
    assert lines(HEADER + '''
class Learner:
    def __init__(self, policy, opt):
        self.policy, self.opt = policy, opt

    def learn(self, prompt, adv):
        with torch.no_grad():
            seqs = self.policy.generate(input_ids=prompt, do_sample=True, max_new_tokens=1024)
        gen = seqs[:, prompt.shape[1]:]
        logits = self.policy(seqs).logits[:, prompt.shape[1] - 1:-1]
        logp = logits.log_softmax(-1).gather(-1, gen.unsqueeze(-1)).squeeze(-1)
        terms = -logp * adv.unsqueeze(-1)
        terms[(gen != tok.eos_token_id).bool()].mean().backward()
        self.opt.step()


Learner(lm, torch.optim.AdamW(lm.parameters(), lr=1e-6)).learn(torch.ones(1, 4, dtype=torch.long), torch.ones(1))
''') == [19]


def test_a_mask_handed_to_a_loss_helper_in_another_module_is_reported(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "losses.py").write_text(textwrap.dedent('''
        def masked_pg(logps, adv, weights):
            per_token = -logps * adv.unsqueeze(-1)
            return (per_token * weights).sum() / weights.sum()
    '''))
    source = textwrap.dedent(HEADER + '''
from losses import masked_pg


def step(prompt, scores, opt):
    with torch.no_grad():
        rollout = lm.generate(input_ids=prompt, do_sample=True, max_new_tokens=1024)
    actions = rollout[:, prompt.shape[1]:]
    weights = actions.ne(tok.eos_token_id) * actions.ne(tok.pad_token_id)
    logps = torch.log_softmax(lm(rollout).logits[:, prompt.shape[1] - 1:-1], -1)
    logps = logps.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    loss = masked_pg(logps, scores - scores.mean(), weights=weights.float())
    loss.backward()
    opt.step()
''')
    (tmp_path / "train.py").write_text(source)
    result = lint_text(source, str(tmp_path / "train.py"), Settings(select=["RL311"]))
    assert [d.line for d in result.diagnostics] == [15]


LOOP = HEADER + '''
opt = torch.optim.AdamW(lm.parameters(), lr=1e-6)


def update(prompt, rewards, values, returns):
    with torch.no_grad():
        seqs = lm.generate(prompt, do_sample=True, max_new_tokens=1024)
    gen = seqs[:, prompt.size(1):]
    logp = torch.log_softmax(lm(seqs).logits[:, prompt.size(1) - 1:-1], -1).gather(-1, gen[..., None])[..., 0]
    adv = (rewards - rewards.mean())[:, None]
'''


def test_a_mask_used_for_a_reward_a_value_loss_or_a_metric_is_not_reported():
    assert lines(LOOP + '''
    body = (gen != tok.eos_token_id).float()
    bonus = rewards - 0.01 * body.sum(-1)
    critic = ((values - returns) ** 2 * body).mean()
    print("tokens", body.sum().item(), bonus.mean().item())
    loss = -(logp * adv).mean() + critic
    loss.backward()
    opt.step()
''') == []


def test_a_first_eos_mask_a_distinct_pad_and_a_prompt_mask_are_not_reported():
    assert lines(LOOP + '''
    upto = (gen == tok.eos_token_id).int().cumsum(-1)
    keep = ((upto == 0) | ((upto == 1) & (gen == tok.eos_token_id))).float()
    real = (gen != tok.pad_token_id).float()
    asked = (prompt != tok.eos_token_id).float()
    loss = -(logp * adv * keep * real * asked[:, :1]).sum() / keep.sum()
    loss.backward()
    opt.step()
''') == []


def test_an_sft_script_that_drops_eos_from_its_labels_is_not_rl_code():
    assert lines(HEADER + '''
opt = torch.optim.AdamW(lm.parameters(), lr=1e-5)


def sft_step(batch):
    labels = batch["input_ids"].clone()
    labels[labels == tok.eos_token_id] = -100
    keep = (batch["input_ids"] != tok.eos_token_id).float()
    out = lm(input_ids=batch["input_ids"], labels=labels)
    nll = torch.nn.functional.cross_entropy(out.logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), reduction="none")
    (nll * keep[:, 1:].flatten()).mean().backward()
    opt.step()
''', "train_sft.py") == []
