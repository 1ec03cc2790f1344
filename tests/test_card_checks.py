"""The design card's checks with default settings (issue 23): each reports its canonical shape, written
several ways (keywords or positions, methods or functions, a helper in another module), and stays silent
on its look-alikes. `# here` marks each line that must be reported; every other line is a look-alike."""
import textwrap

import pytest

from rllint.runner import lint_text
from rllint.settings import Settings

CAUSAL = """\
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-6)
"""

TRL = """\
import torch
from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer
"""


def findings(tmp_path, code, source, helpers=None, settings=None):
    """(line, code) of the findings of rule `code` in `source`, linted with default settings from a project in
    `tmp_path` whose other modules are `helpers` (name -> text)."""
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in (helpers or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    path = tmp_path / "train.py"
    text = textwrap.dedent(source)
    path.write_text(text)
    result = lint_text(text, str(path), settings or Settings())
    assert result.errors == []
    return {(d.line, d.code) for d in result.diagnostics if d.code == code and d.path == str(path)}


def marked(code, source):
    return {(number, code) for number, line in enumerate(textwrap.dedent(source).splitlines(), start=1)
            if "# here" in line}


# ---------------------------------------------------------------- RL105

RL105 = {
    "positional dim, function": CAUSAL + """
def logps_of(sequences, n):
    logps = F.log_softmax(policy(sequences).logits[:, -n - 1 : -1], dim=-1)
    return torch.gather(logps, 1, sequences[:, -n:].unsqueeze(-1)).squeeze(-1)  # here

logps = logps_of(tokenizer(["q"], return_tensors="pt")["input_ids"], 4)
""",
    "keyword dim, method of a trainer": TRL + """
class T(GRPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        lp = model(input_ids=inputs["input_ids"]).logits[:, :-1].log_softmax(-1)
        picked = lp.gather(dim=1, index=inputs["input_ids"][:, 1:, None]).squeeze(-1)  # here
        return -(picked * inputs["advantages"][:, None]).mean()

T(model=AutoModelForCausalLM.from_pretrained("m"), reward_funcs=[], args=GRPOConfig(output_dir="o")).train()
""",
    "a model id given to a TRL trainer, which loads a causal LM": TRL + """
class T(GRPOTrainer):
    def _logps(self, model, ids, n):
        logits = model(input_ids=ids, attention_mask=ids.ne(0)).logits
        return torch.gather(logits[:, -n - 1 : -1].log_softmax(-1), 1, ids[:, -n:, None]).squeeze(-1)  # here

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        picked = self._logps(model, inputs["input_ids"], inputs["completion_mask"].size(1))
        return -(picked * inputs["advantages"][:, None]).mean()

T(model="Qwen/Qwen2.5-0.5B-Instruct", reward_funcs=[], args=GRPOConfig(output_dir="o")).train()
""",
    "take_along_dim on probabilities, softmax of gathered log-probs": CAUSAL + """
def step(ids):
    probs = policy(ids).logits.softmax(-1)
    picked = torch.take_along_dim(probs, ids[..., None], dim=0)  # here
    tok = policy(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
    weights = torch.softmax(tok, dim=-1)  # here
    (picked.sum() + weights.sum()).backward()

step(tokenizer(["q"], return_tensors="pt")["input_ids"])
""",
    "look-alikes": CAUSAL + """
def look_alikes(ids, values, mask):
    one = policy(ids[:1]).logits.squeeze(0).log_softmax(-1)
    a = one.gather(1, ids[0, :, None])
    row = policy(ids).logits[0].log_softmax(-1)
    b = torch.gather(row, 1, ids[0][:, None])
    logits = policy(ids).logits
    flat = logits.view(-1, logits.size(-1)).log_softmax(-1)
    c = flat.gather(1, ids.view(-1, 1))
    over_time = policy(ids).logits.softmax(dim=1)
    d = over_time.gather(1, ids[..., None])
    e = values.gather(1, (mask.sum(1, keepdim=True) - 1).long())
    f = policy(ids).logits.log_softmax(-1).gather(-1, ids[..., None])
    g = policy(ids).logits.log_softmax(-1).gather(2, ids[..., None])
    return a, b, c, d, e, f, g


def by_name_only(logits, response_ids):
    return logits.log_softmax(-1).gather(1, response_ids[:, 1:].unsqueeze(-1))

look_alikes(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.zeros(1, 4), torch.ones(1, 4))
""",
}

RL105_HELPER = {"logprobs.py": """
import torch

def gather_tokens(logps, ids):
    return torch.gather(logps, 1, ids.unsqueeze(-1)).squeeze(-1)
"""}


@pytest.mark.parametrize("case", sorted(RL105))
def test_rl105(tmp_path, case):
    assert findings(tmp_path, "RL105", RL105[case]) == marked("RL105", RL105[case])


def test_rl105_helper_in_another_module(tmp_path):
    source = CAUSAL + """
from logprobs import gather_tokens

ids = tokenizer(["q"], return_tensors="pt")["input_ids"]
logps = gather_tokens(policy(ids).logits.log_softmax(-1), ids)
"""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "logprobs.py").write_text(textwrap.dedent(RL105_HELPER["logprobs.py"]))
    (tmp_path / "train.py").write_text(source)
    text = (tmp_path / "logprobs.py").read_text()
    result = lint_text(text, str(tmp_path / "logprobs.py"), Settings())
    assert {(d.line, d.code) for d in result.diagnostics if d.code == "RL105"} == {(5, "RL105")}


def test_rl105_softmax_of_token_logps_a_helper_of_another_module_gathered(tmp_path):
    """The file that normalises per-token log-probs over time never writes `gather`: the helper of another
    module does, and the engine follows its result."""
    helpers = {"scoring.py": """
import torch

def sequence_scores(model, ids):
    logps = torch.log_softmax(model(input_ids=ids).logits[:, :-1], dim=-1)
    return torch.take_along_dim(logps, ids[:, 1:, None], dim=-1)[..., 0]
"""}
    source = CAUSAL + """
import scoring

class Penalty:
    def __init__(self, model):
        self.model = model

    def divergence(self, ids, ref_scores):
        scores = scoring.sequence_scores(self.model, ids)
        mixed = torch.softmax(scores, dim=1)  # here
        over_vocab = policy(input_ids=ids).logits.softmax(dim=-1)
        group = torch.softmax(ref_scores.sum(-1), 0)
        return mixed, over_vocab, group

Penalty(policy).divergence(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.zeros(2, 3))
"""
    assert findings(tmp_path, "RL105", source, helpers) == marked("RL105", source)


def test_rl105_by_names_only_when_selected(tmp_path):
    source = """
import torch

def flat_logps(logits, response_ids):
    return logits.log_softmax(-1).gather(1, response_ids[:, 1:].unsqueeze(-1))
"""
    assert findings(tmp_path, "RL105", source) == set()
    assert findings(tmp_path, "RL105", source, settings=Settings(select=["RL105"])) == {(5, "RL105")}


# ---------------------------------------------------------------- RL503

RL503 = {
    "item and float in the loss, function": CAUSAL + """
def step(ids, advantages):
    logps = policy(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
    kl = float((logps ** 2).mean())  # here
    loss = -(logps.sum(-1) * advantages).mean() + 0.1 * kl
    loss.backward()
    print(loss.item(), logps.mean().item())

step(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.ones(1))
""",
    "dict keys followed into the caller": CAUSAL + """
def losses(logps, advantages):
    pg = -(logps.sum(-1) * advantages).mean()
    entropy = -(logps.exp() * logps).sum(-1).mean()
    return {"loss": pg - 0.01 * entropy.item(), "pg": pg.item(), "entropy": float(entropy)}  # here

def step(ids, advantages):
    out = losses(policy(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1), advantages)
    out["loss"].backward()
    print(out["pg"], out["entropy"])

step(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.ones(1))
""",
    "tolist and numpy, tuple returned": CAUSAL + """
import numpy as np

def terms(logps):
    return (logps ** 2).mean(), logps.mean().item()

def step(ids, advantages):
    logps = policy(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
    kl, mean_logp = terms(logps)
    scale = np.mean(logps.detach().cpu().numpy())
    bonus = torch.tensor(np.sum(logps.sum(-1).tolist()))  # here
    loss = -(logps.sum(-1) * advantages).mean() + kl + bonus * 0.1 + kl.cpu().numpy().sum() * 0  # here
    loss.backward()
    print(mean_logp, scale)

step(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.ones(1))
""",
    "compute_loss of a trainer": TRL + """
class T(GRPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        logps = model(input_ids=inputs["input_ids"]).logits.log_softmax(-1).sum(-1)
        kl = (logps ** 2).mean()
        self._metrics["train"]["kl"].append(kl.item())
        return -(logps * inputs["advantages"][:, None]).mean() + 0.04 * kl.item()  # here

T(model=AutoModelForCausalLM.from_pretrained("m"), reward_funcs=[], args=GRPOConfig(output_dir="o")).train()
""",
}


@pytest.mark.parametrize("case", sorted(RL503))
def test_rl503(tmp_path, case):
    assert findings(tmp_path, "RL503", RL503[case]) == marked("RL503", RL503[case])


def test_rl503_loss_helper_in_another_module(tmp_path):
    helper = {"losses.py": """
def pg_loss(logps, advantages):
    loss = -(logps.sum(-1) * advantages).mean()
    return {"loss": loss, "loss_value": loss.item(), "kl": float((logps ** 2).mean())}

def kl_loss(logps):
    return float((logps ** 2).mean())
"""}
    source = CAUSAL + """
from losses import kl_loss, pg_loss

def step(ids, advantages):
    logps = policy(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
    out = pg_loss(logps, advantages)
    loss = out["loss"] + 0.1 * kl_loss(logps)  # here
    loss.backward()
    print(out["loss_value"], out["kl"])

step(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.ones(1))
"""
    assert findings(tmp_path, "RL503", source, helper) == marked("RL503", source)


# ---------------------------------------------------------------- RL504

RL504 = {
    "saved by exp / softmax, masked by index and by method": CAUSAL + """
def step(ids, old, mask, advantages):
    logps = policy(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
    ratio = torch.exp(logps - old)
    ratio[mask == 0] = 0.0  # here
    probs = F.softmax(policy(ids).logits, dim=-1)
    probs.masked_fill_(mask[..., None] == 0, 0.0)  # here
    loss = -(ratio * advantages[:, None]).mean() - (probs * probs.clamp_min(1e-9).log()).sum(-1).mean()
    loss.backward()

step(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.zeros(1, 4), torch.ones(1, 4), torch.ones(1))
""",
    "an alias read later": CAUSAL + """
def step(ids, mask, advantages):
    logps = policy(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
    batch = {"logps": logps}
    logps.mul_(mask)  # here
    loss = -(logps.sum(-1) * advantages).mean()
    loss.backward()
    return batch["logps"]

step(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.ones(1, 4), torch.ones(1))
""",
    "method of a trainer": TRL + """
class T(GRPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        logps = model(input_ids=inputs["input_ids"]).logits.log_softmax(-1).gather(
            -1, inputs["input_ids"][..., None]).squeeze(-1)
        coef = torch.exp(logps - logps.detach())
        coef.masked_fill_(inputs["mask"] == 0, 0.0)  # here
        return -(coef * inputs["advantages"][:, None]).mean()

T(model=AutoModelForCausalLM.from_pretrained("m"), reward_funcs=[], args=GRPOConfig(output_dir="o")).train()
""",
    "look-alikes": CAUSAL + """
def labels_of(ids, pad):
    labels = ids.clone()
    labels[labels == pad] = -100
    return labels

def step(ids, mask, advantages):
    labels = labels_of(ids, 0)
    ids[ids == 0] = 1
    logps = policy(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
    logps.masked_fill_(mask == 0, 0.0)
    baseline = logps.detach().clone()
    baseline[mask == 0] = 0.0
    loss = -(logps.sum(-1) * advantages).mean() + baseline.sum() * 0
    loss.backward()
    return labels

@torch.no_grad()
def rollout(ids, mask):
    probs = policy(ids).logits.softmax(-1)
    probs[mask == 0] = 0.0
    return probs

def old_logps(ids, mask):
    logps = policy(ids).logits.log_softmax(-1).exp()
    logps[mask == 0] = 0.0
    return logps

ids = tokenizer(["q"], return_tensors="pt")["input_ids"]
step(ids, torch.ones(1, 4), torch.ones(1))
rollout(ids, torch.ones(1, 4))
with torch.no_grad():
    old = old_logps(ids, torch.ones(1, 4))
""",
}


@pytest.mark.parametrize("case", sorted(RL504))
def test_rl504(tmp_path, case):
    assert findings(tmp_path, "RL504", RL504[case]) == marked("RL504", RL504[case])


def test_rl504_pedantic_form_only_when_selected(tmp_path):
    source = RL504["look-alikes"]
    assert findings(tmp_path, "RL504", source) == set()
    lines = textwrap.dedent(source).splitlines()
    masked = next(n for n, line in enumerate(lines, start=1) if "logps.masked_fill_(" in line)
    assert (masked, "RL504") in findings(tmp_path, "RL504", source, settings=Settings(select=["RL504"]))


# ---------------------------------------------------------------- RL502

RL502 = {
    "direct forward, keyword ids": CAUSAL + """
reference = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")

def step(ids, advantages):
    logps = policy(input_ids=ids).logits.log_softmax(-1).sum(-1)
    ref = reference(input_ids=ids).logits.log_softmax(-1).sum(-1)  # here
    loss = -(logps * advantages[:, None]).mean() + (logps - ref).mean()
    loss.backward()

step(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.ones(1))
""",
    "through a helper, positional": CAUSAL + """
old_policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")

def logps_of(model, ids):
    return model(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)

def step(ids, advantages):
    new = logps_of(policy, ids)
    old = logps_of(old_policy, ids)  # here
    loss = -(torch.exp(new - old) * advantages[:, None]).mean()
    loss.backward()

step(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.ones(1))
""",
    "attribute of a trainer class": CAUSAL + """
class Learner:
    def __init__(self, ref):
        self.ref = ref

    def update(self, ids, advantages):
        logps = policy(ids).logits.log_softmax(-1).sum(-1)
        ref = self.ref.forward(ids).logits.log_softmax(-1).sum(-1)  # here
        (-(logps * advantages[:, None]).mean() + (logps - ref).mean()).backward()

Learner(AutoModelForCausalLM.from_pretrained("m")).update(tokenizer(["q"], return_tensors="pt")["input_ids"],
                                                           torch.ones(1))
""",
    "look-alikes": CAUSAL + """
frozen = AutoModelForCausalLM.from_pretrained("m").requires_grad_(False)
reference = AutoModelForCausalLM.from_pretrained("m")
critic = AutoModelForCausalLM.from_pretrained("m")
critic_optimizer = torch.optim.AdamW(critic.parameters(), lr=1e-5)

@torch.no_grad()
def ref_logps(model, ids):
    return model(ids).logits.log_softmax(-1).sum(-1)

def no_grad_inside(model, ids):
    with torch.no_grad():
        return model(ids).logits.log_softmax(-1).sum(-1)

def step(ids, advantages):
    logps = policy(ids).logits.log_softmax(-1).sum(-1)
    a = frozen(ids).logits.log_softmax(-1).sum(-1)
    b = ref_logps(reference, ids)
    c = no_grad_inside(reference, ids)
    d = reference(ids).logits.detach()
    with torch.inference_mode():
        e = reference(ids).logits
    values = critic(ids).logits[..., 0]
    loss = -(logps * advantages[:, None]).mean() + (logps - a - b - c).mean() + values.mean() + 0 * (d + e).sum()
    loss.backward()

step(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.ones(1))
""",
    "reward-model training": """
import torch
import torch.nn.functional as F
from transformers import AutoModelForSequenceClassification

reward_model = AutoModelForSequenceClassification.from_pretrained("m", num_labels=1)
optimizer = torch.optim.AdamW(reward_model.parameters(), lr=1e-5)

def step(chosen_ids, rejected_ids):
    loss = -F.logsigmoid(reward_model(chosen_ids).logits - reward_model(rejected_ids).logits).mean()
    loss.backward()
    optimizer.step()

step(torch.ones(1, 4, dtype=torch.long), torch.ones(1, 4, dtype=torch.long))
""",
    "TRL trainer with its own reference": TRL + """
class T(GRPOTrainer):
    def __init__(self, *args, anchor=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.anchor = anchor

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        logps = model(input_ids=inputs["input_ids"]).logits.log_softmax(-1).sum(-1)
        ref = self.anchor(input_ids=inputs["input_ids"]).logits.log_softmax(-1).sum(-1)  # here
        return -(logps * inputs["advantages"][:, None]).mean() + (logps - ref).mean()

T(model=AutoModelForCausalLM.from_pretrained("m"), anchor=AutoModelForCausalLM.from_pretrained("m"),
  reward_funcs=[], args=GRPOConfig(output_dir="o")).train()
""",
    "TRL trainer given a model id, reference through a helper method": TRL + """
class T(GRPOTrainer):
    def __init__(self, *args, reference=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.reference = reference

    def _logps(self, model, ids):
        return model(input_ids=ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        logps = self._logps(model, inputs["input_ids"])
        ref = self._logps(self.reference, inputs["input_ids"])  # here
        return -(logps * inputs["advantages"][:, None]).mean() + (logps - ref).mean()

T(model="Qwen/Qwen2.5-0.5B-Instruct", reference=AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct"),
  reward_funcs=[], args=GRPOConfig(output_dir="o")).train()
""",
}


@pytest.mark.parametrize("case", sorted(RL502))
def test_rl502(tmp_path, case):
    assert findings(tmp_path, "RL502", RL502[case]) == marked("RL502", RL502[case])


def test_rl502_helper_in_another_module(tmp_path):
    helper = {"scoring.py": """
import torch

def token_logps(model, ids):
    return model(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)

@torch.no_grad()
def frozen_logps(model, ids):
    return model(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
"""}
    source = CAUSAL + """
from scoring import frozen_logps, token_logps

reference = AutoModelForCausalLM.from_pretrained("m")

def step(ids, advantages):
    logps = token_logps(policy, ids)
    ref = token_logps(reference, ids)  # here
    also = frozen_logps(reference, ids)
    loss = -(logps * advantages[:, None]).mean() + (logps - ref - also).mean()
    loss.backward()

step(tokenizer(["q"], return_tensors="pt")["input_ids"], torch.ones(1))
"""
    assert findings(tmp_path, "RL502", source, helper) == marked("RL502", source)


def test_rl502_frozen_reference_only_when_selected(tmp_path):
    source = RL502["look-alikes"]
    lines = textwrap.dedent(source).splitlines()
    frozen = next(n for n, line in enumerate(lines, start=1) if "a = frozen(ids)" in line)
    assert findings(tmp_path, "RL502", source) == set()
    assert findings(tmp_path, "RL502", source, settings=Settings(select=["RL502"])) == {(frozen, "RL502")}


# ---------------------------------------------------------------- RL601

RL601 = {
    "optimizer keyword and positional, module constant": CAUSAL + """
LR = 3e-5  # here: reported where it is written

adam = torch.optim.AdamW(policy.parameters(), lr=LR)
adam2 = torch.optim.Adam(policy.parameters(), 2e-5)  # here
sgd = torch.optim.SGD(policy.parameters(), lr=1e-2)
exact = torch.optim.AdamW(policy.parameters(), lr=1e-5)

def step(ids, advantages):
    logps = policy(ids).logits.log_softmax(-1).sum(-1)
    (-(logps * advantages[:, None]).mean()).backward()
    adam.step()
""",
    "TRL config through argparse": TRL + """
import argparse

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=5e-5)  # here
    args = parser.parse_args()
    config = GRPOConfig(output_dir="o", learning_rate=args.lr)
    GRPOTrainer(model="Qwen/Qwen2.5-0.5B-Instruct", reward_funcs=[], args=config).train()
""",
    "look-alikes: critic, scalar, LoRA, SFT": """
import torch
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification
from trl import GRPOConfig, GRPOTrainer

critic = AutoModelForSequenceClassification.from_pretrained("m", num_labels=1)
critic_optimizer = torch.optim.AdamW(critic.parameters(), lr=1e-4)
log_alpha = torch.zeros(1, requires_grad=True)
alpha_optimizer = torch.optim.Adam([log_alpha], lr=3e-4)
GRPOTrainer(model="m", reward_funcs=[], args=GRPOConfig(output_dir="o", learning_rate=5e-5),
            peft_config=LoraConfig(r=16)).train()
""",
}


@pytest.mark.parametrize("case", sorted(RL601))
def test_rl601(tmp_path, case):
    assert findings(tmp_path, "RL601", RL601[case]) == marked("RL601", RL601[case])


def test_rl601_sft_script_is_silent(tmp_path):
    source = """
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("m")
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)

def step(batch):
    loss = model(**batch, labels=batch["input_ids"]).loss
    loss.backward()
    optimizer.step()
"""
    assert findings(tmp_path, "RL601", source) == set()


def test_rl601_rate_from_another_module(tmp_path):
    helper = {"hparams.py": """
ACTOR_LR = 4e-5
"""}
    source = CAUSAL + """
from hparams import ACTOR_LR

actor_optimizer = torch.optim.AdamW(policy.parameters(), lr=ACTOR_LR)

def step(ids, advantages):
    logps = policy(ids).logits.log_softmax(-1).sum(-1)
    (-(logps * advantages[:, None]).mean()).backward()
    actor_optimizer.step()
"""
    assert findings(tmp_path, "RL601", source, helper) == set()  # not in this file: where it is written
    result = lint_text(textwrap.dedent(source), str(tmp_path / "train.py"), Settings())
    assert [(d.path, d.line) for d in result.diagnostics if d.code == "RL601"] == [(str(tmp_path / "hparams.py"), 2)]
    used = next(n for n, line in enumerate(textwrap.dedent(source).splitlines(), start=1) if "lr=ACTOR_LR" in line)
    assert f"on line {used} of" in result.diagnostics[0].message


# ---------------------------------------------------------------- RL305

RL305 = {
    "decoded completions, a local and a helper": CAUSAL + """
import json
import logging

logger = logging.getLogger(__name__)

def verify(text, answer):
    return float(answer in text)

def tail(text):
    return text[-300:]  # here

def preview(text):
    return text[:200]

def rollout(prompt, answer, out):
    enc = tokenizer([prompt] * 4, return_tensors="pt")
    n = enc["input_ids"].size(1)
    seqs = policy.generate(**enc, do_sample=True, max_new_tokens=1024)
    texts = tokenizer.batch_decode(seqs[:, n:], skip_special_tokens=True)
    scores = []
    for text in texts:
        cut = text[:2000]  # here
        scores.append(verify(cut, answer))
        scores.append(verify(tail(text), answer))
        out.write(json.dumps({"completion": text[:4096]}))  # here
        shown = text[:200]
        logger.info("completion %s", shown)
        logger.info("again %s", preview(text))
        print(f"{text[:80]}")
        ids = seqs[:, :n]
    return scores, prompt[:100], ids
""",
    "reward function with keyword completions": """
def judge_reward(prompts, completions, **kwargs):
    return [kwargs["judge"](p, c[:3000]) for p, c in zip(prompts, completions)]  # here

def starts_with_think(completions, **kwargs):
    return [float(c[:7] == "<think>") for c in completions]
""",
    "verl compute_score": """
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    solution_str = solution_str[-300:]  # here
    return float(solution_str.strip().endswith(ground_truth))
""",
}


@pytest.mark.parametrize("case", sorted(RL305))
def test_rl305(tmp_path, case):
    assert findings(tmp_path, "RL305", RL305[case]) == marked("RL305", RL305[case])


def test_rl601_test_code_is_silent(tmp_path):
    source = RL601["optimizer keyword and positional, module constant"]
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "tests").mkdir()
    path = tmp_path / "tests" / "test_step.py"
    text = textwrap.dedent(source)
    path.write_text(text)
    assert [d for d in lint_text(text, str(path), Settings()).diagnostics if d.code == "RL601"] == []
