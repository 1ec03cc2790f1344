"""RL309: the engine, not a name, proves that log-probs are taken over a model's logits (issue 22)."""
import textwrap

from rllint.analysis.facts import LOGITS
from rllint.runner import lint_text
from rllint.settings import Settings

from tests.engine import Engine

_SAMPLES = """
    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    policy = AutoModelForCausalLM.from_pretrained("gpt2")

    def rollout(enc):
        return policy.generate(**enc, do_sample=True, temperature=0.6)
"""


def findings(source: str, named: bool = False):
    """RL309's lines in `source` after a rollout sampled at 0.6: by default, or with the rule named."""
    settings = Settings(select=["RL309"]) if named else Settings()
    text = textwrap.dedent(_SAMPLES) + textwrap.dedent(source)
    offset = textwrap.dedent(_SAMPLES).count("\n")
    return [d.line - offset for d in lint_text(text, "train_rl.py", settings).diagnostics if d.code == "RL309"]


def test_a_reward_tensor_named_like_logits_is_not_reported_by_default():
    source = """
        def score(texts, judge):
            logits_score = torch.tensor([judge(t) for t in texts])
            return torch.log_softmax(logits_score, dim=0)
    """
    assert findings(source) == []


def test_a_reward_models_classifier_head_is_not_a_policys_logits():
    source = """
        rm = AutoModelForSequenceClassification.from_pretrained("reward")

        def preference(ids):
            head = rm(input_ids=ids).logits
            return F.log_softmax(head, dim=-1)
    """
    assert findings(source) == []


def test_a_tensor_followed_to_no_logits_counts_by_its_name_only_when_the_rule_is_named():
    source = """
        def weights(values):
            logits_like = torch.stack(values).float()
            return logits_like.log_softmax(-1)
    """
    assert findings(source) == []
    assert findings(source, named=True) == [4]


def test_rows_of_the_policys_logits_handed_to_a_helper_are_reported():
    source = """
        def per_row(scores, ids):
            out = []
            for i, (row, tok) in enumerate(zip(scores, ids)):
                out.append(torch.gather(row.log_softmax(dim=-1), 1, tok.unsqueeze(1)))
            return out

        def step(ids):
            return per_row(policy(input_ids=ids).logits[:, :-1], ids[:, 1:])
    """
    assert findings(source) == [5]


def test_the_output_of_a_project_models_forward_is_its_logits():
    source = """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.head = torch.nn.Linear(8, 100)

            def forward(self, h):
                return self.head(h)

        net = Net()

        def logps(h):
            return F.log_softmax(net(h).float(), dim=-1)

        def logps_by_forward(h):
            return torch.log_softmax(net.forward(h)[:, :-1], -1)
    """
    assert findings(source) == [13, 16]


def test_a_row_of_logits_is_logits_at_their_temperature():
    engine = Engine("""
        import torch
        from transformers import AutoModelForCausalLM
        lm = AutoModelForCausalLM.from_pretrained("gpt2")

        def rows(ids):
            for r in lm(ids).logits:
                first = r
            return first
    """)
    row = engine.value("first")
    assert row.facts.get("content") == LOGITS and row.facts.get("dist") == 1 and row.facts.get("rank") == 2
    assert row.facts.get("temperature")[0].facts.get("number") == 1.0


def test_a_row_along_the_distribution_is_not_the_distribution():
    engine = Engine("""
        import torch
        from transformers import AutoModelForCausalLM
        lm = AutoModelForCausalLM.from_pretrained("gpt2")

        def columns(ids):
            for c in lm(ids).logits.transpose(0, 2):
                first = c
            return first
    """)
    assert engine.value("first").facts.get("content") is None


def test_what_a_model_returns_as_a_tensor_is_its_own_output_through_views():
    engine = Engine("""
        import torch

        class Tower(torch.nn.Module):
            def forward(self, x):
                return x * 2

        tower = Tower()
        y = tower.forward(torch.ones(2, 3)).float()[0]
        z = torch.ones(2, 3).float()
    """)
    assert engine.value("y").facts.get("forward_output") is not None
    assert engine.value("z").facts.get("forward_output") is None
