"""GradFlow: no-grad regions, gradient taint, helper summaries and the events the gradient rules report."""
import ast
import textwrap

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rllint.analysis.grad import ADVANTAGE, GRAD, PARAM, RUN, STOPPED, VALUE_GRAD, GradFlow
from rllint.analysis.roles import ModelRoles
from rllint.runner import FileContext
from rllint.settings import Settings


class Facts:
    def __init__(self, source: str) -> None:
        text = textwrap.dedent(source)
        self.module = cst.parse_module(text)
        # toy snippets: the flow is tested here, whether a file is RL code in test_purpose
        file = FileContext("example.py", text, self.module, ast.parse(text), Settings(options={"rl-context": "always"}))
        self.grad = file.fact(GradFlow)
        self.roles = file.fact(ModelRoles)
        self.positions = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)

    def code(self, node) -> str:
        return " ".join(self.module.code_for_node(node).split())

    def line(self, node) -> int:
        return self.positions[node].start.line

    def returns(self, function: str):
        """The kinds of what a function returns, as its summary says: {(kind, text)}."""
        summary = self.grad.summary(self.roles.functions[function])
        return {(tag.kind, tag.text) for tag in summary.returns}

    def kinds(self, function: str):
        """The kinds of tags returned, without the parameters the value depends on."""
        return {kind for kind, _ in self.returns(function) if kind != PARAM}


def test_no_grad_regions_in_every_spelling():
    facts = Facts("""
        import torch
        import torch as th
        from torch import no_grad as ng, inference_mode

        def f(model, x):
            with torch.no_grad():
                a = model(x)
            with th.inference_mode():
                b = model(x)
            with ng():
                c = model(x)
            with torch.autograd.no_grad():
                d = model(x)
            with torch.set_grad_enabled(False):
                e = model(x)
                with torch.enable_grad():
                    g = model(x)
            torch.set_grad_enabled(False)
            h = model(x)
            torch.set_grad_enabled(True)
            i = model(x)
            return a, b, c, d, e, g, h, i

        @inference_mode()
        def decorated(model, x):
            return model(x)

        @torch.no_grad
        def bare_decorator(model, x):
            return model(x)
    """)
    under = sorted(facts.code(s) for s in facts.grad.no_grad_statements)
    assert under == ["a = model(x)", "b = model(x)", "c = model(x)", "d = model(x)", "e = model(x)",
                     "h = model(x)", "return model(x)", "return model(x)", "torch.set_grad_enabled(True)",
                     "with torch.enable_grad(): g = model(x)"]
    assert sorted(f.name.value for f in facts.grad.no_grad_functions) == ["bare_decorator", "decorated"]


def test_functions_called_only_under_no_grad_are_no_grad():
    facts = Facts("""
        import torch

        def _ref_logps(ref_model, x):
            return _inner(ref_model, x)

        def _inner(ref_model, x):
            return ref_model(x).logits

        def _also_with_grad(ref_model, x):
            return ref_model(x).logits

        def public(ref_model, x):
            return ref_model(x).logits

        def step(ref_model, x):
            def nested(y):
                return ref_model(y).logits

            with torch.no_grad():
                a = _ref_logps(ref_model, x)
                b = _also_with_grad(ref_model, x)
                c = public(ref_model, x)
                d = nested(x)
            return a, b, c, d, _also_with_grad(ref_model, x)
    """)
    # public functions may be called from elsewhere (a trainer calls `compute_loss`): their call sites do not decide
    assert sorted(f.name.value for f in facts.grad.no_grad_functions) == ["_inner", "_ref_logps", "nested"]


def test_helper_summaries_and_the_role_of_the_model_they_are_given():
    facts = Facts("""
        import torch
        import torch.nn.functional as F

        def get_per_token_logps(model, input_ids, attention_mask):
            logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]
            return F.log_softmax(logits, dim=-1).gather(-1, input_ids[:, 1:, None]).squeeze(-1)

        class Trainer:
            def policy_logps(self, batch):
                return get_per_token_logps(self.model, batch["input_ids"], batch["attention_mask"])

            def reference_logps(self, batch):
                with torch.no_grad():
                    return get_per_token_logps(self.ref_model, batch["input_ids"], batch["attention_mask"])

            def old_logps(self, batch):
                with torch.no_grad():
                    return get_per_token_logps(self.model, batch["input_ids"], batch["attention_mask"])
    """)
    # its own forward: gradient by the parameter's name, and RUN, which lets each call site's argument decide
    assert facts.kinds("get_per_token_logps") == {RUN, GRAD}
    assert ("param", "input_ids") in facts.returns("get_per_token_logps")
    assert facts.kinds("policy_logps") == {GRAD}
    assert facts.kinds("reference_logps") == set()
    assert facts.kinds("old_logps") == {STOPPED}
    forwards = [(facts.code(f.node), f.role, f.model, f.no_grad) for f in facts.grad.reported_forwards()]
    assert forwards == [
        ('get_per_token_logps(self.model, batch["input_ids"], batch["attention_mask"])', "policy", "self.model", False),
        ('get_per_token_logps(self.ref_model, batch["input_ids"], batch["attention_mask"])', "reference",
         "self.ref_model", True),
        ('get_per_token_logps(self.model, batch["input_ids"], batch["attention_mask"])', "policy", "self.model", True),
    ]


def test_propagation_and_stopping():
    facts = Facts("""
        import numpy as np
        import torch

        def unpacked(policy, batch):
            logits, labels = policy(batch["input_ids"]).logits, batch["labels"]
            return labels

        def through_ops(policy, batch):
            logits, _ = policy(batch["input_ids"])
            logps = torch.log_softmax(logits.float(), -1)[:, :-1]
            ratio = (logps.sum(-1) - batch["old"]).exp() * 2
            return ratio.clamp(0.8, 1.2)

        def through_lists(policy, batches):
            losses = []
            for batch in batches:
                losses.append(policy(batch).loss)
            return sum(l for l in losses)

        def detached(policy, batch):
            return policy(batch).logits.detach()

        def item(policy, batch):
            return policy(batch).loss.item()

        def numpy(policy, batch):
            return np.asarray(policy(batch).logits.cpu())

        def data_named(policy, batch):
            input_ids = policy(batch).logits.argmax(-1)
            attention_mask = policy(batch).logits
            return input_ids, attention_mask

        def compared(policy, batch):
            return policy(batch).logits > 0
    """)
    assert facts.kinds("unpacked") == set()
    assert facts.kinds("through_ops") == {GRAD, RUN}
    assert facts.kinds("through_lists") == {GRAD, RUN}
    assert facts.returns("detached") == {(STOPPED, "`.detach()` on a policy output")}
    assert facts.kinds("item") == set()
    assert facts.kinds("numpy") == set()
    assert facts.kinds("data_named") == set()
    assert facts.kinds("compared") == set()
    stoppers = [(facts.code(s.node), s.origin.text) for s in facts.grad.stoppers]
    assert stoppers == [("policy(batch).loss.item()", "policy forward `policy(batch)`"),
                        ("np.asarray(policy(batch).logits.cpu())", "policy forward `policy(batch)`")]


def test_self_attributes_flow_across_methods():
    facts = Facts("""
        class Trainer:
            def __init__(self, model):
                self.model = model

            def forward_pass(self, batch):
                self.logits = self.model(batch).logits
                self.labels = batch["labels"]

            def loss(self):
                return (self.logits * 2).sum()

            def targets(self):
                return self.labels
    """)
    assert facts.kinds("loss") == {GRAD}
    assert facts.kinds("targets") == set()


def test_no_grad_and_adapter_disabled_forwards_carry_no_gradient():
    facts = Facts("""
        import torch

        def ref_via_adapter(model, batch):
            with model.disable_adapter():
                return model(batch).logits

        def under_no_grad(model, batch):
            with torch.no_grad():
                out = model(batch).logits
            return out
    """)
    assert facts.kinds("ref_via_adapter") == {RUN}  # the caller's argument decides; no gradient of its own
    assert facts.kinds("under_no_grad") == {RUN, STOPPED}
    assert [(f.adapter_off, f.no_grad) for f in facts.grad.forwards] == [(True, False), (False, True)]


def test_loss_helpers_take_log_probs_with_gradient():
    facts = Facts("""
        import torch

        def policy_loss(logps, old_logps, advantages):
            ratio = torch.exp(logps - old_logps)
            return -(ratio * advantages).mean()

        def other_helper(logps):
            return logps * 2
    """)
    assert (GRAD, "parameter `logps`") in facts.returns("policy_loss")
    assert (GRAD, "parameter `old_logps`") not in facts.returns("policy_loss")
    assert facts.returns("other_helper") == {(PARAM, "logps")}


def test_in_place_events():
    facts = Facts("""
        import torch

        def step(model, batch, mask):
            logits = model(batch).logits
            logits.div_(0.7)
            logits[mask] = 0.0
            logits[mask] *= 2
            outputs = {}
            outputs["logits"] = logits
            out = model(batch)
            out["logits"] = out.logits.float()
            labels = batch["labels"].clone()
            labels[labels == 0] = -100
            frozen = logits.detach()
            frozen.mul_(2)
            with torch.no_grad():
                logits.zero_()
    """)
    events = [(facts.line(e.node), e.target, e.origin.text) for e in facts.grad.inplace]
    # line 6 scales the fresh forward output before anything uses it: nothing saved for backward is overwritten
    assert events == [(7, "logits", "policy forward `model(batch)`"), (8, "logits", "policy forward `model(batch)`")]


def test_value_model_advantages_meeting_the_policy_gradient():
    facts = Facts("""
        def update(actor, critic, batch):
            values = critic(batch["obs"])
            advantages = batch["returns"] - values
            logps = actor(batch["obs"]).log_softmax(-1)
            value_loss = ((values - batch["returns"]) ** 2).mean()
            detached = batch["returns"] - values.detach()
            return -(logps * advantages).mean() + value_loss + (logps * detached).mean()
    """)
    found = [(facts.code(node), tag.kind) for node, tag in facts.grad.advantages.items()]
    assert found == [('batch["returns"] - values', GRAD)]
    assert VALUE_GRAD in facts.kinds("update") and ADVANTAGE in facts.kinds("update")


def test_values_of_an_actor_critic_policy():
    facts = Facts("""
        def update(model, batch):
            logits, _, values = model(batch["obs"])
            top, _ = logits.topk(2)
            advantages = batch["returns"] - values
            margin = logits - top
            return (logits * advantages).mean() + (logits * margin).mean()
    """)
    assert [facts.code(node) for node in facts.grad.advantages] == ['batch["returns"] - values']
