"""RL601 options and wording, beyond what the fixtures show."""
import textwrap

from rllint.runner import lint_text
from rllint.settings import Settings

PLAIN = textwrap.dedent("""
    import torch

    def build(model):
        return torch.optim.AdamW(model.parameters(), lr=2e-5)
""")
GRPO = textwrap.dedent("""
    from trl import GRPOConfig

    LR = 5e-5

    def config():
        return GRPOConfig(output_dir="out", learning_rate=LR)
""")


def findings(text, **options):
    result = lint_text(text, "train.py", Settings(select=["RL601"], options=options))
    return [(d.line, d.code, d.message) for d in result.diagnostics]


def test_a_file_that_is_not_rl_code_is_silent_unless_rl_context_is_always():
    assert findings(PLAIN) == []
    assert [(line, code) for line, code, _ in findings(PLAIN, **{"rl-context": "always"})] == [(5, "RL601")]


def test_the_limit_and_the_lora_multiplier_are_options():
    assert findings(GRPO, **{"max-learning-rate": 1e-4}) == []
    assert [line for line, _, _ in findings(GRPO, **{"max-learning-rate": 5e-5})] == [4]
    lora = GRPO.replace("from trl import GRPOConfig", "from trl import GRPOConfig\nfrom peft import LoraConfig")
    assert findings(lora) == []
    assert [line for line, _, _ in findings(lora, **{"lora-lr-multiplier": 5.0})] == [5]


def test_the_message_names_the_value_where_it_is_declared_and_where_it_is_used():
    assert findings(GRPO) == [(4, "RL601", "learning rate 5e-05 (constant LR, used as `learning_rate` of GRPOConfig on "
                                          "line 7) is SFT-scale: RL post-training at this rate usually collapses; "
                                          "use <= 1e-06..5e-06")]
