"""Models known by their use: an object whose origin is out of sight is a model because the code uses it as one,
and where no code of the project runs the function that receives it, nothing in the project freezes it or runs
it under no_grad, so its forward records a graph where gradient is on (PyTorch's defaults)."""
import ast

import libcst as cst

from engine import Engine
from rllint.analysis.flow import Flow
from rllint.runner import FileContext
from rllint.settings import Settings


def grad(engine: Engine, code: str):
    return engine.facts(code, "grad")["grad"]


def test_a_received_model_of_a_function_nobody_runs_records_a_graph_positional_or_keyword():
    engine = Engine("""
    import torch

    def step(policy, ids, mask, adv):
        by_keyword = policy(input_ids=ids, attention_mask=mask).logits.log_softmax(-1)
        by_position = policy(ids).logits.log_softmax(-1)
        (-(by_keyword.sum(-1) * adv).mean() - by_position.mean()).backward()
    """)
    assert grad(engine, "by_keyword") == "graph"
    assert grad(engine, "by_position") == "graph"


def test_an_attribute_stored_from_the_constructor_of_a_class_nobody_builds_forward_method():
    engine = Engine("""
    import torch

    class Learner:
        def __init__(self, actor, optimizer):
            self.actor, self.optimizer = actor, optimizer

        def update(self, ids, adv):
            logps = self.actor.forward(ids).logits.log_softmax(-1)
            (-(logps.sum(-1) * adv).mean()).backward()
            self.optimizer.step()
    """)
    assert grad(engine, "logps") == "graph"


def test_what_its_callers_do_decides_instead():
    engine = Engine("""
    import torch

    def logps_of(model, ids):
        return model(input_ids=ids).logits.log_softmax(-1)

    def scored(model, ids):
        return model(input_ids=ids).logits

    def step(policy, reference, ids, adv):
        with torch.no_grad():
            old = logps_of(policy, ids)
            ref = scored(reference, ids)
        new = logps_of(policy, ids)
        (-(new.sum(-1) * adv).mean() + ref.mean()).backward()
    """)
    assert grad(engine, "old") == "no_grad" and grad(engine, "new") == "graph"
    assert engine.flow.entry_mode(engine.flow.ir.functions["scored"]) is False  # its one caller runs it under no_grad


def test_a_model_the_project_freezes_or_hands_to_code_out_of_sight_is_not_known_to_record_a_graph():
    engine = Engine("""
    import torch
    from somewhere import freeze

    def with_frozen(reference, ids):
        reference.requires_grad_(False)
        ref = reference(input_ids=ids).logits
        ref.sum().backward()

    def with_handed(reference, ids):
        alias = reference
        freeze(alias)
        handed = reference(input_ids=ids).logits
        handed.sum().backward()

    def frozen_by_a_helper(model, batches):
        for ids in batches:
            train_on(model, ids)

    def train_on(policy, ids):
        policy.requires_grad_(False)
        under_another_name = policy(input_ids=ids).logits
        under_another_name.sum().backward()
    """)
    assert grad(engine, "ref") != "graph"
    assert grad(engine, "handed") is None
    assert grad(engine, "under_another_name") != "graph"


def test_callables_that_are_not_models_stay_unknown():
    engine = Engine("""
    import torch

    def step(policy, client, reward_fn, monitor_reward_model, seqs, adv):
        logps = policy(seqs).logits.log_softmax(-1)
        reply = client(seqs)
        rewards = reward_fn(seqs)
        watched = monitor_reward_model(adv)
        (-(logps.sum(-1) * (rewards - watched)).mean()).backward()
    """)
    for code in ("reply", "rewards", "watched"):
        value = engine.value(code)
        assert value.facts.get("type") != "model" and value.facts.get("grad") is None, code


def test_a_value_model_is_one_fitted_by_a_regression_on_the_token_ids_the_policy_takes():
    engine = Engine("""
    import torch
    import torch.nn.functional as F

    def actor_critic_loss(actor, critic, ids, actions, returns):
        logps = F.log_softmax(actor(ids).logits, dim=-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        values = critic(ids)[:, :-1]
        return -(logps * (returns - values.detach())).mean() + F.mse_loss(values, returns)

    def scored(actor, scorer, ids, actions, returns):
        logps = F.log_softmax(actor(ids).logits, dim=-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        scores = scorer(ids)[:, :-1]
        return -(logps * (returns - scores)).mean()
    """)
    assert grad(engine, "values") == "graph"
    assert grad(engine, "scores") is None  # called on token ids, fitted by nothing: a reward function may be


def test_a_policy_loss_nobody_in_the_project_calls_runs_with_gradient_a_log_prob_helper_may_not():
    engine = Engine("""
    import torch

    def policy_loss(policy, ids, adv):
        logps = policy(input_ids=ids).logits.log_softmax(-1).sum(-1)
        return -(logps * adv).mean()

    def token_logps(model, ids):
        return model(input_ids=ids).logits.log_softmax(-1)
    """)
    modes = {f.qualname: engine.flow.entry_mode(f) for f in engine.flow.ir.all_functions()}
    assert modes["policy_loss"] is True and modes["token_logps"] is None
    assert {f.name for f in engine.flow.policy_losses} == {"policy_loss"}


def test_mlx_code_keeps_no_gradient_facts():
    engine = Engine("""
    import mlx.core as mx

    def step(policy, ids, adv):
        logps = policy(input_ids=ids).logits
        return -(logps.sum(-1) * adv).mean()
    """)
    assert grad(engine, "logps") is None
    assert not engine.flow.policy_losses


def _flow(tmp_path, files, linted):
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    text = files[linted]
    file = FileContext(str(tmp_path / linted), text, cst.parse_module(text), ast.parse(text), Settings(root=tmp_path))
    flow = file.fact(Flow)
    flow.analyze_all()
    return flow


def _grad_of(flow, name):
    return next(v for n, v in flow.values.items() if isinstance(n, cst.Name) and n.value == name).facts.get("grad")


HELPER = "def token_logps(model, ids):\n    return model(ids).logits.log_softmax(-1)\n"
STEP = ("import torch\n"
        "from helpers import token_logps\n"
        "def step(policy, ids, adv):\n"
        "    logps = token_logps(policy, ids)\n"
        "    (-(logps.sum(-1) * adv).mean()).backward()\n")


def test_through_a_helper_of_another_module(tmp_path):
    flow = _flow(tmp_path, {"helpers.py": HELPER, "train.py": STEP}, "train.py")
    assert _grad_of(flow, "logps") == "graph"


def test_a_module_another_file_imports_is_run_by_the_project(tmp_path):
    flow = _flow(tmp_path, {"helpers.py": HELPER, "train.py": STEP,
                            "main.py": "from train import step\nstep(load(), ids, adv)\n"}, "train.py")
    assert _grad_of(flow, "logps") is None
