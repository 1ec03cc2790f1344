"""LossSlice: backward sinks, the statements that reach them, and losses that carry no gradient."""
import ast
import textwrap

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rllint.analysis.loss import LossSlice
from rllint.runner import FileContext
from rllint.settings import Settings


class Facts:
    def __init__(self, source: str) -> None:
        text = textwrap.dedent(source)
        self.module = cst.parse_module(text)
        file = FileContext("example.py", text, self.module, ast.parse(text), Settings())
        self.loss = file.fact(LossSlice)
        self.positions = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)

    def code(self, node) -> str:
        return " ".join(self.module.code_for_node(node).split())

    def line(self, node) -> int:
        return self.positions[node].start.line

    def sinks(self):
        return [(self.code(root), sink.backward) for sink in self.loss.sinks for root in sink.roots]

    def slice_lines(self):
        return sorted(self.line(stmt) for stmt in self.loss.slice)


def test_every_kind_of_sink():
    facts = Facts("""
        import torch

        def step(loss, scaler, accelerator, engine, model, opt):
            loss.backward()
            loss.sum().backward(retain_graph=True)
            scaler.scale(loss).backward()
            accelerator.backward(loss)
            engine.backward(loss)
            model.backward(loss)
            torch.autograd.backward(loss)

        def compute_loss(self, model, inputs, return_outputs=False):
            return (loss, outputs) if return_outputs else loss

        def dpo_loss(chosen, rejected):
            return -(chosen - rejected).mean(), chosen.detach()

        def kl_loss_fn(p, q):
            return (p - q).sum()

        def compute_metrics(p):
            return p.mean()

        class PolicyLoss:
            def forward(self, log_probs, old_log_probs, advantages):
                return -(torch.exp(log_probs - old_log_probs) * advantages).mean()

        class Actor:
            def forward(self, input_ids):
                return self.model(input_ids)
    """)
    assert facts.sinks() == [
        ("loss", True), ("loss.sum()", True), ("scaler.scale(loss)", True), ("loss", True), ("loss", True),
        ("loss", True), ("loss", True),
        ("loss", False), ("loss", False),
        ("-(chosen - rejected).mean()", False),
        ("(p - q).sum()", False),
        ("-(torch.exp(log_probs - old_log_probs) * advantages).mean()", False),
    ]


def test_the_slice_follows_definitions_not_logging():
    facts = Facts("""
        def train(policy, batch, optimizer, log):
            logits = policy(batch["input_ids"]).logits
            logps = logits.log_softmax(-1)
            stats = {"mean": logps.mean().item()}
            losses = []
            for chunk in logps.split(2):
                losses.append(-chunk.sum())
            total = sum(losses)
            total += 0.1 * logits.pow(2).mean()
            log(stats)
            total.backward()
            optimizer.step()
            print(total.item())
    """)
    assert facts.slice_lines() == [3, 4, 6, 7, 8, 9, 10]
    # the first way found: `total += ... logits ...` reads `logits` directly
    assert facts.loss.path(next(s for s in facts.loss.slice if facts.line(s) == 3)) == ["total", "logits"]
    assert facts.loss.path(next(s for s in facts.loss.slice if facts.line(s) == 7)) == ["total", "losses", "chunk"]


def test_the_slice_enters_local_helpers_and_keeps_tuple_positions():
    facts = Facts("""
        class Trainer:
            def get_batch_loss_metrics(self, model, batch):
                logps = model(batch).logits
                metrics = {"logps": logps.mean().item()}
                return -logps.mean(), metrics

            def compute_loss(self, model, inputs):
                loss, metrics = self.get_batch_loss_metrics(model, inputs)
                self.store(metrics)
                return loss
    """)
    assert facts.slice_lines() == [4, 6, 9]
    ret = next(s for s in facts.loss.slice if facts.line(s) == 6)
    assert facts.loss.describe(ret, facts.line) == (
        "the return of `compute_loss` (line 11) -> `loss` -> `get_batch_loss_metrics()`")


def test_losses_without_gradient():
    facts = Facts("""
        import torch

        def token_logps(model, ids):
            return model(ids).logits.log_softmax(-1)

        def cut(policy, ids, adv, optimizer):
            with torch.no_grad():
                old = token_logps(policy, ids)
                new = token_logps(policy, ids)
            loss = -(torch.exp(new - old) * adv).mean()
            loss.backward()

        def fine(policy, ids, adv, optimizer):
            with torch.no_grad():
                old = token_logps(policy, ids)
            new = token_logps(policy, ids)
            loss = -(torch.exp(new - old) * adv).mean()
            loss.backward()

        def opaque(policy, ids, loss_fn):
            logps = token_logps(policy, ids).detach()
            loss = loss_fn(policy, logps)
            loss.backward()

        def cut_loss(policy, ids, adv):
            with torch.no_grad():
                new = token_logps(policy, ids)
            return -(new * adv).mean()

        def probe(model, head, ids, labels):
            with torch.no_grad():
                features = model(ids).last_hidden_state
            loss = torch.nn.functional.cross_entropy(head(features), labels)
            loss.backward()
    """)
    found = [(facts.line(sink.node), sorted((facts.line(t.node), t.text) for t in tags))
             for sink, tags in facts.loss.gradless_losses()]
    assert found == [(12, [(10, "policy forward `token_logps(policy, ids)` under no_grad")]),
                     (29, [(28, "policy forward `token_logps(policy, ids)` under no_grad")])]
