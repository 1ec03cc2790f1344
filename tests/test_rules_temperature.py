"""RL309: the sampling temperature must be the rollouts', with evidence, before log-probs are blamed."""
import textwrap

from rllint.runner import lint_text
from rllint.settings import Settings


def codes(source: str):
    """Findings of `source` followed by a log-prob helper that never divides by a temperature."""
    result = lint_text(textwrap.dedent(source) + textwrap.dedent(_LOGPS), "train_grpo.py", Settings(select=["RL309"]))
    return [(d.line, d.code) for d in result.diagnostics]


def sampled_with(setting: str, default: float, built: str = "") -> str:
    """A rollout whose `setting` comes from a config class's field (`default`), built with `built`."""
    return f"""
        import torch
        from dataclasses import dataclass

        @dataclass
        class Sampling:
            {setting}: float = {default}

        def rollout(policy, enc, cfg):
            return policy.generate(**enc, do_sample=True, {setting}=cfg.{setting})

        rollout(None, None, Sampling({built}))
    """


_LOGPS = """
    def token_logps(policy, ids):
        logits = policy(ids).logits
        return torch.log_softmax(logits, dim=-1)
"""


def test_rollouts_at_a_temperature_other_than_one_are_reported():
    source = """
        import torch

        def rollout(policy, enc):
            return policy.generate(**enc, do_sample=True, temperature=0.7)
    """
    assert codes(source) == [(9, "RL309")]


def test_rollouts_at_one_beside_an_evaluation_at_another_temperature_are_mixed_evidence():
    source = """
        import torch

        def rollout(policy, enc):
            return policy.generate(**enc, do_sample=True, temperature=1.0)

        def evaluate(policy, enc):
            return policy.generate(**enc, max_new_tokens=512, temperature=0.7)
    """
    assert codes(source) == []


def test_a_constructor_default_is_no_evidence_of_the_sampling_temperature():
    source = """
        import torch

        class SelfPlay:
            def __init__(self, policy, temperature=0.7):
                self.policy = policy
                self.temperature = temperature

            def rollout(self, enc):
                return self.policy.generate(**enc, do_sample=True, temperature=self.temperature)
    """
    assert codes(source) == []


def test_a_method_default_is_the_sampling_temperature():
    source = """
        import torch

        class Engine:
            def rollout(self, policy, enc, temperature=0.8):
                return policy.generate(**enc, do_sample=True, temperature=temperature)
    """
    assert codes(source) == [(10, "RL309")]


def _project(tmp_path, files):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = lint_files([str(tmp_path / "train.py")], Settings(select=["RL309"]))
    return [(d.line, d.code) for d in result.diagnostics]


_TRL_LOOP = """
    import torch
    from trl import GRPOConfig

    config = GRPOConfig(output_dir="out")

    def token_logps(policy, ids):
        logits = policy(ids).logits
        return torch.log_softmax(logits, dim=-1)
"""


def test_the_framework_default_temperature_of_the_pinned_release_is_the_sampling_temperature(tmp_path):
    """TRL 0.14's GRPOConfig samples at 0.9 when nobody sets `temperature` (misses.toml: custom 0.14-era trainers)."""
    found = _project(tmp_path, {"requirements.txt": "trl==0.14.0\n", "train.py": _TRL_LOOP})
    assert found == [(9, "RL309")]


def test_a_release_whose_default_is_one_or_no_pin_at_all_says_nothing(tmp_path):
    assert _project(tmp_path, {"requirements.txt": "trl==0.19.0\n", "train.py": _TRL_LOOP}) == []
    (tmp_path / "requirements.txt").unlink()
    assert _project(tmp_path, {"train.py": _TRL_LOOP}) == []  # 0.9 until 0.17, 1.0 since: not known


def test_a_config_built_with_another_temperature_than_its_field_default_is_read_as_built():
    source = sampled_with("temperature", 0.7, "temperature=1.0")
    assert codes(source) == []


# ---- RL325: sampled from a truncated distribution, scored under the full one ----

def rl325(source: str):
    result = lint_text(textwrap.dedent(source) + textwrap.dedent(_LOGPS), "train_grpo.py", Settings(select=["RL325"]))
    return [(d.line, d.code) for d in result.diagnostics]


def test_top_p_rollouts_scored_by_the_full_softmax_are_reported_through_a_config_field():
    source = sampled_with("top_p", 0.9)
    assert rl325(source) == [(16, "RL325")]


def test_a_sampler_of_the_whole_distribution_beside_a_truncated_one_is_mixed_evidence():
    source = """
        import torch

        def rollout(policy, enc):
            return policy.generate(**enc, do_sample=True, top_p=1.0)

        def preview(policy, enc):
            return policy.generate(**enc, do_sample=True, top_k=50)
    """
    assert rl325(source) == []


def test_a_config_built_to_sample_the_whole_distribution_is_not_truncated():
    source = sampled_with("top_p", 0.9, "top_p=1.0")
    assert rl325(source) == []


_LAUNCHED = """
    import argparse
    from dataclasses import dataclass

    import torch

    @dataclass
    class TrainConfig:
        temperature: float = 0.6

    def rollout(policy, enc, config):
        return policy.generate(**enc, do_sample=True, temperature=config.temperature)

    def token_logps(policy, ids):
        logits = policy(ids).logits
        return torch.log_softmax(logits, dim=-1)

    parser = argparse.ArgumentParser()
    parser.add_argument("--temperature", type=float, default=1.0)
    args = parser.parse_args()
    rollout(None, None, TrainConfig(temperature=args.temperature))
"""


def test_the_temperature_the_launch_scripts_pass_is_the_sampling_temperature(tmp_path):
    """A field's default that the only construction replaces with a flag says nothing; the launches decide."""
    assert _project(tmp_path, {"train.py": _LAUNCHED, "run.sh": "t=1.0\npython train.py --temperature $t\n"}) == []
    (tmp_path / "run.sh").write_text("t=0.6\npython train.py --temperature $t\n")
    assert _project(tmp_path, {"train.py": _LAUNCHED}) == [(16, "RL309")]
