"""RL5xx on real code: a model is a model by what the code does with it, a policy only exists in RL code,
and what runs under no_grad or trains on purpose is not reported (issue 9)."""
import textwrap

from rllint.runner import lint_text
from rllint.settings import Settings


def found(source: str, codes, path: str = "train.py"):
    result = lint_text(textwrap.dedent(source), path, Settings(select=list(codes)))
    return [(d.line, d.code) for d in result.diagnostics]


def marked(source: str, code: str):
    """The lines marked `# reported` in `source`, as findings of `code`."""
    return [(number, code) for number, line in enumerate(textwrap.dedent(source).splitlines(), 1)
            if line.endswith("# reported")]


# A GRPO step, so that the files below are RL code by what they do.
_GRPO = """
import copy
import torch
import torch.nn.functional as F


def grpo_step(policy, ref_model, batch, optimizer, beta=0.04):
    logps = policy(batch["input_ids"]).logits.log_softmax(-1)
    with torch.no_grad():
        ref_logps = ref_model(batch["input_ids"]).logits.log_softmax(-1)
    ratio = torch.exp(logps - batch["old_logps"])
    pg_loss = -(ratio * batch["advantages"]).mean()
    loss = pg_loss + beta * (ref_logps - logps).mean()
    loss.backward()
    optimizer.step()
"""


def test_callables_named_like_models_are_not_model_forwards():
    source = _GRPO + """
class Scorer:
    def __init__(self, reward_model, url):
        self.reward_model = reward_model
        self.url = url

    def monitor_reward_model(self, scores):
        return sum(scores) / len(scores)

    def rewards(self, texts, query_reward_model, reference):
        scores = [float(s) for s in self.reward_model(texts)]
        self.monitor_reward_model(scores)
        remote = query_reward_model(self.url, texts)
        anchor = reference()
        return scores, remote, anchor
"""
    assert found(source, ["RL502"]) == []


def test_a_model_used_as_one_is_still_reported():
    source = _GRPO + """
class Scorer:
    def __init__(self, reward_model, ref_model):
        self.reward_model = reward_model
        self.ref_model = ref_model

    def rewards(self, encoded):
        return self.reward_model(**encoded).logits[:, 0]  # reported

    def reference(self, sequences):
        out = self.ref_model(sequences)  # reported
        return out

    def texts(self, texts):
        self.reward_model.eval()
        return self.reward_model(texts)  # reported
"""
    assert found(source, ["RL502"]) == marked(source, "RL502")


def test_a_helper_that_runs_its_model_under_no_grad_is_not_reported_at_its_call_sites():
    source = _GRPO + """
def score(samples, reward_model, tokenizer):
    input_ids = tokenizer(samples, return_tensors="pt").input_ids
    with torch.no_grad():
        return reward_model(input_ids=input_ids).logits[:, 0]


def ref_logps(ref_model, input_ids):
    return ref_model(input_ids).logits.log_softmax(-1)


def run(samples, reward_model, ref_model, tokenizer, input_ids):
    return score(samples, reward_model, tokenizer), ref_logps(ref_model, input_ids)  # reported
"""
    assert found(source, ["RL502"]) == marked(source, "RL502")


def test_a_forward_wrapper_called_only_under_no_grad_is_not_reported():
    source = _GRPO + """
class Trainer:
    def __init__(self, ref_model):
        self.ref_model = ref_model

    def ref_model_forward(self, input_ids):
        return self.ref_model(input_ids=input_ids)

    @torch.no_grad()
    def make_experience(self, input_ids):
        return self.ref_model_forward(input_ids)

    def compute_loss(self, model, input_ids):
        ref = self.ref_model(input_ids=input_ids).logits  # reported
        return (model(input_ids).logits - ref).mean()

    def evaluate(self, model, input_ids):
        with torch.no_grad():
            return self.compute_loss(model, input_ids)
"""
    # a framework calls `compute_loss` with gradient, whatever the evaluation step does
    assert found(source, ["RL502"]) == marked(source, "RL502")


def test_reward_model_training_is_not_reported():
    source = """
import torch
import torch.nn.functional as F


def train_reward_model(reward_model, loader, accelerator):
    for batch in loader:
        chosen = reward_model(batch["chosen_ids"])
        rejected = reward_model(batch["rejected_ids"])
        loss = -F.logsigmoid(chosen - rejected).mean()
        accelerator.backward(loss)
"""
    assert found(source, ["RL502"]) == []
    rl_loop = _GRPO + """
def rollout_step(policy, reward_model, batch, optimizer):
    rewards = reward_model(batch["input_ids"]).logits[:, 0]  # reported
    advantages = rewards - rewards.mean()
    logps = policy(batch["input_ids"]).logits.log_softmax(-1)
    loss = -(logps * advantages).mean()
    loss.backward()
"""
    assert found(rl_loop, ["RL502"]) == marked(rl_loop, "RL502")


def test_mlx_code_gets_no_torch_gradient_advice():
    source = """
import mlx.core as mx
import mlx.nn as nn


def grpo_loss(policy, ref_model, input_ids, advantages, old_logps):
    logps = nn.log_softmax(policy(input_ids), axis=-1)
    ref_logps = nn.log_softmax(ref_model(input_ids), axis=-1)
    ratio = mx.exp(logps - old_logps)
    logps[0] = 0.0
    return -(ratio * advantages).mean() + (ref_logps - logps).mean()
"""
    assert found(source, ["RL502", "RL504"]) == []


def test_a_detection_transformer_has_no_policy():
    source = """
import torch
from torch import nn


class DetrForObjectDetection(nn.Module):
    def forward(self, pixel_values, labels=None):
        outputs = self.model(pixel_values=pixel_values)
        reference_before_sigmoid = outputs.reference_points
        tmp = self.bbox_predictor(outputs[0])
        tmp[..., :2] += reference_before_sigmoid
        logits = self.class_labels_classifier(outputs[0])
        logits[:, :, 0] = torch.finfo(logits.dtype).min
        loss = self.loss_function(logits, labels)
        loss.backward()
        return loss
"""
    assert found(source, ["RL5"], path="src/transformers/models/detr/modeling_detr.py") == []


def test_scaling_a_fresh_forward_output_in_place_is_not_reported():
    source = _GRPO + """
def sample_logps(policy, input_ids, mask, temperature):
    logits = policy(input_ids).logits[:, :-1]
    logits.div_(temperature)
    logps = logits.log_softmax(-1)
    kl = (logps.exp() * logps).sum(-1)
    kl.masked_fill_(mask, 0.0)
    logps.masked_fill_(mask, 0.0)  # reported
    scaled = logits.log_softmax(-1)
    logits.mul_(2.0)  # reported
    return logps, kl, scaled
"""
    # `logps` is saved by `exp` above; `logits` was used by `log_softmax` before the second in-place op
    assert found(source, ["RL504"]) == marked(source, "RL504")


def test_metrics_returned_next_to_the_loss_are_not_in_the_loss():
    source = _GRPO + """
def grpo_loss(logps, old_logps, advantages, kl, beta):
    ratio = torch.exp(logps - old_logps)
    policy_loss = -(ratio * advantages).mean()
    kl_penalty = beta * kl.mean()
    loss = policy_loss + kl_penalty
    return loss, policy_loss.item(), kl_penalty.item()


def bad_loss(logps, advantages):
    scale = logps.mean().item()  # reported
    return -(logps * advantages).mean() * scale, scale
"""
    assert found(source, ["RL503"]) == marked(source, "RL503")


def test_a_copy_only_run_under_no_grad_is_not_reported_unfrozen():
    source = _GRPO + """
class GRPO:
    def __init__(self, model):
        self.model = model
        self.ref_model = copy.deepcopy(model).eval()

    def ratios(self, input_ids):
        logits = self.model(input_ids=input_ids).logits
        with torch.no_grad():
            ref_logits = self.ref_model(input_ids=input_ids).logits
        return (logits.log_softmax(-1) - ref_logits.log_softmax(-1)).exp()
"""
    assert found(source, ["RL501"]) == []
    source = _GRPO + """
class GRPO:
    def __init__(self, model):
        self.model = model
        self.ref_model = copy.deepcopy(model).eval()  # reported

    def kl(self, input_ids):
        return self.ref_model(input_ids=input_ids).logits
"""
    assert found(source, ["RL501"]) == marked(source, "RL501")


def test_gradients_taken_with_autograd_grad_are_plain_tensors():
    source = _GRPO + """
def guide(policy, input_ids, x, timesteps):
    with torch.enable_grad():
        y = policy(input_ids).logits.sum()
        grad = torch.autograd.grad([y], [x])[0]
        grad[timesteps < 2] = 0
        second = torch.autograd.grad([y], [x], create_graph=True)[0]
        second[timesteps < 2] = 0  # reported
    return grad, second
"""
    assert found(source, ["RL504"]) == marked(source, "RL504")
