"""The facts RL607 asks: which loops take a policy-gradient step (`Flow.training_loops`), which metrics a file
logs."""
import ast
import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from rllint.analysis.logged import LoggedMetrics, watched_metric
from rllint.analysis.flow import Flow
from rllint.runner import FileContext
from rllint.settings import Settings


def file_of(source):
    text = textwrap.dedent(source)
    module = cst.parse_module(text)
    return FileContext("example.py", text, module, ast.parse(text), Settings()), module


def loop_lines(source):
    file, module = file_of(source)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    flow = file.fact(Flow)
    flow.analyze_all()
    return [positions[loop].start.line for loop in flow.training_loops()]


HELPERS = """
import torch
import torch.nn.functional as F

def logps_of(model, ids):
    return model(ids).logits.log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
"""


def test_a_policy_gradient_loop_directly_and_through_helpers_once_at_the_outermost_loop():
    assert loop_lines(HELPERS + """
def train(policy, loader, optimizer, epochs):
    for epoch in range(epochs):
        for batch in loader:
            logps = logps_of(policy, batch["ids"])
            loss = -(logps * batch["advantages"]).mean()
            loss.backward()

def update(policy, batch, optimizer):
    for minibatch in batch.split(4):
        ratio = torch.exp(logps_of(policy, minibatch["ids"]) - minibatch["old_logps"])
        loss = -ratio.mul(minibatch["adv"]).mean()
        loss.backward()

def main(policy, loader, optimizer):
    step = 0
    while step < 100:
        update(policy, next(loader), optimizer)
        step += 1
""") == [9, 23]


@pytest.mark.parametrize("loss", [
    'F.cross_entropy(policy(batch["ids"]).logits.flatten(0, 1), batch["labels"].flatten())',  # SFT
    '-F.logsigmoid(0.1 * (logps_of(policy, batch["chosen"]) - logps_of(policy, batch["rejected"]))).mean()',  # DPO
    '(logps_of(policy, batch["ids"]) * (batch["ids"] != 0)).sum()',  # a masked sum, no weight
    '((critic(batch["ids"]) - batch["returns"]) ** 2).mean()',  # a critic
    '-(logps_of(policy, batch["ids"]).detach() * batch["rewards"]).mean()',  # no gradient reaches the policy
])
def test_losses_that_are_not_policy_gradient_make_no_training_loop(loss):
    assert loop_lines(HELPERS + f"""
def train(policy, critic, loader):
    for batch in loader:
        loss = {loss}
        loss.backward()
""") == []


def test_a_value_model_advantage_is_a_weight():
    assert loop_lines(HELPERS + """
def train(policy, critic, loader):
    for batch in loader:
        values = critic(batch["ids"])
        logps = logps_of(policy, batch["ids"])
        loss = -(logps * (batch["returns"] - values).detach()).mean()
        loss.backward()
""") == [9]


@pytest.mark.parametrize("name,metric", [
    ("kl", "kl"), ("train/approx_kl", "kl"), ("objective/kl", "kl"), ("policy/entropy_avg", "entropy"),
    ("actor/pg_clipfrac", "clip_fraction"), ("clip_ratio/region_mean", "clip_fraction"),
    ("clip_fraction", "clip_fraction"), ("kl_coef", None), ("init_kl_coef", None), ("ent_coef", None),
    ("loss", None), ("clip_range", None),
])
def test_watched_metric_names(name, metric):
    assert watched_metric(name) == metric


@pytest.mark.parametrize("source,reported,opaque", [
    ('wandb.log({"loss": loss.item(), "reward": r})', set(), False),
    ('wandb.log({"train/kl": kl.item()})', {"kl"}, False),
    ('stats["entropy"] = ent.mean().item()', {"entropy"}, False),
    ('print(f"step {step} kl={kl:.3f}")', {"kl"}, False),
    ('print(f"step {step} loss={loss:.3f} {approx_kl}")', {"kl"}, False),
    ('logger.info("clipfrac %.3f", value)', {"clip_fraction"}, False),
    ('pbar.set_postfix(loss=loss.item(), entropy=e)', {"entropy"}, False),
    ('writer.add_scalar("policy/clip_fraction", c, step)', {"clip_fraction"}, False),
    ('kl = (logp - ref).mean()\nprint(loss)', set(), False),  # computed, never shown
    ('parser.add_argument("--kl_coef", type=float)', set(), False),
    ('stats = compute_stats(batch)\nwandb.log(stats)', set(), True),
    ('wandb.log({**extra, "loss": 1.0})', set(), True),
    ('stats = {"loss": 1.0}\nwandb.log(stats)', set(), False),
    ('print(metrics)', set(), True),
])
def test_logged_metrics(source, reported, opaque):
    file, _ = file_of(source)
    logged = file.fact(LoggedMetrics)
    assert (set(logged.reported), logged.opaque) == (reported, opaque)
