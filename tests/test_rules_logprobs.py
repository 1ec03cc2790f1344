"""RL1xx and RL202-RL207: messages name the expression and the consequence; defaults."""
import textwrap

from rllint.registry import load_rules
from rllint.runner import lint_text
from rllint.settings import Settings


def findings(source: str, select=("RL",)):
    settings = Settings(select=list(select) if select is not None else None)
    result = lint_text(textwrap.dedent(source), "snippet.py", settings)
    return [(d.line, d.code, d.message) for d in result.diagnostics]


def test_reversed_ratio_message_names_the_expression_and_the_consequence():
    (line, code, message), = findings("""
        import torch
        def loss(logps, old_logps):
            return torch.exp(old_logps - logps)
    """)
    assert (line, code) == (4, "RL101")
    assert message.startswith("`torch.exp(old_logps - logps)` is old/new: the PPO ratio is inverted")


def test_group_layout_message_says_which_layout():
    (line, code, message), = findings("""
        def adv(prompt_ids, rewards, G):
            ids = prompt_ids.repeat_interleave(G, dim=0)
            return ids, rewards.view(G, -1)
    """)
    assert (line, code) == (4, "RL202")
    assert "contiguous" in message and "`.view(-1, G)`" in message


def test_std_and_length_normalisation_are_off_by_default():
    rules = load_rules()
    assert not rules["RL204"].default_enabled and not rules["RL205"].default_enabled
    source = """
        def adv(rewards, G):
            std = rewards.view(-1, G).std(dim=1).repeat_interleave(G)
            return rewards / (std + 1e-6)
    """
    assert findings(source, select=None) == []  # the default selection
    assert [c for _, c, _ in findings(source)] == ["RL204"]


def test_files_without_trigger_words_are_not_reported():
    assert findings("def f(x):\n    return x.sum() / x.numel()\n") == []
