"""A layer a module of the project holds is part of it: where the module trains, what the layer computes carries
the graph, in the module's `forward` and in any other method that runs the layers (`policy.token_logps(ids)`),
in its own file and when another module's trainer holds the policy."""
import textwrap

from engine import Engine

MODEL = """
    import torch
    import torch.nn.functional as F
    from torch import nn


    class TinyLM(nn.Module):
        def __init__(self, vocab, width):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.out = nn.Linear(width, vocab, bias=False)

        def scores(self, ids):
            return self.out(self.embed(ids))

        def forward(self, ids):
            return self.scores(ids)

        def token_logps(self, ids):
            table = F.log_softmax(self.scores(ids), dim=-1)
            return table[:, :-1].gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
"""


def test_a_method_of_a_trained_module_computes_with_its_graph():
    engine = Engine(MODEL + """
    def train(ids):
        policy = TinyLM(100, 16)
        opt = torch.optim.Adam(policy.parameters())
        logps = policy.token_logps(ids)
        loss = -logps.mean()
        loss.backward()
        opt.step()
    """)
    assert engine.facts("logps", "grad") == {"grad": "graph"}


def test_a_module_nothing_trains_or_one_run_under_no_grad_gives_no_graph():
    engine = Engine(MODEL + """
    def score(ids):
        policy = TinyLM(100, 16)
        opt = torch.optim.Adam(policy.parameters())
        with torch.no_grad():
            quiet = policy.token_logps(ids)
        frozen = TinyLM(100, 16).requires_grad_(False)
        still = frozen.token_logps(ids)
        return quiet, still
    """)
    assert engine.facts("quiet", "grad") == {"grad": "no_grad"}
    assert engine.facts("still", "grad")["grad"] != "graph"


def test_a_trainer_of_another_module_that_trains_the_policy_it_holds(tmp_path):
    trainer = """
    import torch


    class Trainer:
        def __init__(self, policy):
            self.policy = policy
            self.opt = torch.optim.AdamW(policy.parameters(), lr=1e-5)

        def step(self, ids):
            logps = self.policy.token_logps(ids)
            loss = -logps.mean()
            loss.backward()
            self.opt.step()
    """
    driver = """
    from lm import TinyLM
    from trainer import Trainer

    Trainer(TinyLM(100, 16)).step(None)
    """
    engine = Engine.project(tmp_path, {"lm.py": textwrap.dedent(MODEL), "trainer.py": trainer, "driver.py": driver},
                            "trainer.py")
    assert engine.facts("logps", "grad") == {"grad": "graph"}
