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
        from transformers import AutoModelForCausalLM

        policy = AutoModelForCausalLM.from_pretrained("gpt2")

        def rollout(enc):
            return policy.generate(**enc, do_sample=True, temperature=0.7)
    """
    assert codes(source) == [(12, "RL309")]


def test_a_generate_of_an_object_the_engine_does_not_know_as_a_model_is_no_sampler():
    """A temperature given to `generate` is the rollouts' only when the engine knows what samples: a model or a
    sampling engine, or a call that turns sampling on itself (`do_sample=True`). A parameter no caller gives, or
    a project class's `generate`, is not evidence."""
    unknown = """
        import torch

        def rollout(policy, enc):
            return policy.generate(**enc, temperature=0.7)
    """
    assert codes(unknown) == []
    assert codes(unknown.replace("**enc,", "**enc, do_sample=True,")) == [(9, "RL309")]
    judge = """
        import torch

        class Judge:
            def generate(self, prompt, temperature=1.0):
                return prompt

        def grade(prompt):
            return Judge().generate(prompt, temperature=0.7)
    """
    assert codes(judge) == []
    given = """
        import torch
        from transformers import AutoModelForCausalLM

        def rollout(policy, enc):
            return policy.generate(**enc, do_sample=True, temperature=0.7)

        def main(enc):
            rollout(AutoModelForCausalLM.from_pretrained("gpt2"), enc)
    """
    assert codes(given) == [(13, "RL309")]  # the caller hands it a model: its `generate` samples


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
        from transformers import AutoModelForCausalLM

        class Engine:
            def __init__(self, policy):
                self.policy = policy

            def rollout(self, enc, temperature=0.8):
                return self.policy.generate(**enc, do_sample=True, temperature=temperature)

        engine = Engine(AutoModelForCausalLM.from_pretrained("gpt2"))
    """
    assert codes(source) == [(16, "RL309")]


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


def test_a_truncation_whose_number_is_not_known_is_no_evidence_and_no_crash():
    """`top_p=max(0.5, p)`, `p` 0.8 or 0.95 by the call, is a number whose value is not one: neither truncated nor whole."""
    source = """
        import torch

        def rollout(policy, enc, p):
            return policy.generate(**enc, do_sample=True, top_p=max(0.5, p))

        def both(policy, enc):
            return rollout(policy, enc, 0.8), rollout(policy, enc, 0.95)
    """
    result = lint_text(textwrap.dedent(source) + textwrap.dedent(_LOGPS), "train_grpo.py", Settings(select=["RL"]))
    assert result.errors == []
    assert [d.code for d in result.diagnostics if d.code == "RL325"] == []


_BUILT_CONFIG = """
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    class Policy:
        def __init__(self, name):
            self.model = AutoModelForCausalLM.from_pretrained(name)

        def sample(self, enc, sampling=True, top_k=40):
            params = {{"max_new_tokens": 256}}
            if sampling:
                params["top_k"] = {top_k}
            config = GenerationConfig(**params)
            return self.model.generate(**enc, generation_config=config)

        def scores(self, ids, keep):
            mask = ids != 0
            positions = mask.long().cumsum(-1) - 1
            logits = self.model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
            {filtered}
            return torch.log_softmax(logits, dim=-1)
"""


def test_truncation_given_by_the_items_of_a_dict_a_generation_config_is_built_with():
    """Minimal-GRPO: `top_p` (here `top_k`) goes into a dict of settings by subscript, the config is built with
    `**params` and handed to `generate`; a `cumsum` of the attention mask is no top-k filter of the logits."""
    found = lint_text(textwrap.dedent(_BUILT_CONFIG.format(top_k="top_k", filtered="")), "policy.py",
                      Settings(select=["RL325"]))
    assert [(d.line, d.code) for d in found.diagnostics] == [(21, "RL325")]
    assert "top_k" in found.diagnostics[0].message


def test_a_dict_of_settings_that_does_not_truncate_or_filtered_logits_are_not_reported():
    for top_k, filtered in (("0", ""), ("top_k", "logits = torch.where(keep, logits, -1e9)"),
                            ("top_k", "logits = logits.masked_fill(~keep, float('-inf'))")):
        found = lint_text(textwrap.dedent(_BUILT_CONFIG.format(top_k=top_k, filtered=filtered)), "policy.py",
                          Settings(select=["RL325"]))
        assert found.diagnostics == [], (top_k, filtered)


def test_settings_of_a_dict_the_engine_cannot_read_are_no_evidence():
    source = """
        import torch

        def rollout(policy, enc, overrides):
            return policy.generate(**enc, do_sample=True, **overrides)
    """
    assert rl325(source) == []


_LAUNCHED = """
    import argparse
    from dataclasses import dataclass

    import torch
    from transformers import AutoModelForCausalLM

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
    rollout(AutoModelForCausalLM.from_pretrained("gpt2"), None, TrainConfig(temperature=args.temperature))
"""


def test_the_temperature_the_launch_scripts_pass_is_the_sampling_temperature(tmp_path):
    """A field's default that the only construction replaces with a flag says nothing; the launches decide."""
    assert _project(tmp_path, {"train.py": _LAUNCHED, "run.sh": "t=1.0\npython train.py --temperature $t\n"}) == []
    (tmp_path / "run.sh").write_text("t=0.6\npython train.py --temperature $t\n")
    assert _project(tmp_path, {"train.py": _LAUNCHED}) == [(17, "RL309")]


def _trainer_project(tmp_path, launch: str, recipe: str = ""):
    """A TRL-era custom trainer (trainer.py) built by train.py from TRL's parser, launched by run.sh."""
    files = {
        "trainer.py": """
            import torch
            from trl import GRPOConfig
            from vllm import SamplingParams

            class MyTrainer:
                def __init__(self, model, args: GRPOConfig = None):
                    if args is None:
                        args = GRPOConfig("out")
                    self.model = model
                    self.sampling_params = SamplingParams(n=8, temperature=args.temperature)

                def token_logps(self, ids):
                    logits = self.model(ids).logits
                    return torch.log_softmax(logits, dim=-1)
        """,
        "train.py": """
            from trl import GRPOConfig, TrlParser
            from trainer import MyTrainer

            parser = TrlParser((GRPOConfig,))
            (training_args,) = parser.parse_args_and_config()
            trainer = MyTrainer(None, args=training_args)
        """,
        "run.sh": launch,
    }
    if recipe:
        files["recipe.yaml"] = recipe
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    from rllint.runner import lint_files

    result = lint_files([str(tmp_path / "trainer.py")], Settings(select=["RL309"]))
    return [(d.line, d.code, d.message) for d in result.diagnostics]


def test_the_release_a_launch_flag_exists_in_decides_the_framework_default(tmp_path):
    """`--vllm_device` is a GRPOConfig flag of TRL 0.14-0.17 only, whose default temperature is 0.9: the
    trainer, constructed in another module with the parsed config, samples at 0.9 (misses.toml: mini-r1-zero)."""
    found = _trainer_project(tmp_path, "python train.py --vllm_device cuda:1 --learning_rate 1e-6\n")
    assert [(line, code) for line, code, _ in found] == [(15, "RL309")]
    assert "0.14.0-0.17.0" in found[0][2] and "vllm_device" in found[0][2]


def test_flags_that_every_release_has_leave_an_unpinned_default_unknown(tmp_path):
    assert _trainer_project(tmp_path, "python train.py --learning_rate 1e-6\n") == []


def test_a_launch_that_sets_the_temperature_to_one_is_not_reported(tmp_path):
    assert _trainer_project(tmp_path, "python train.py --vllm_device cuda:1 --temperature 1.0\n") == []


def test_the_temperature_of_the_recipe_a_launch_names_is_the_sampling_temperature(tmp_path):
    found = _trainer_project(tmp_path, "python train.py --config recipe.yaml\n", "learning_rate: 1.0e-6\ntemperature: 0.7\n")
    assert [(line, code) for line, code, _ in found] == [(15, "RL309")]
    assert "temperature in recipe.yaml" in found[0][2]
    assert _trainer_project(tmp_path, "python train.py --config recipe.yaml\n", "temperature: 1.0\n") == []


def test_a_key_of_the_recipe_does_not_narrow_the_release_trl_ignores_unknown_keys(tmp_path):
    assert _trainer_project(tmp_path, "python train.py --config recipe.yaml\n", "vllm_device: auto\n") == []


_CONSTRUCTED = {
    "rloo.py": """
        import torch

        class Reinforce:
            def __init__(self, model, temperature=0.7):
                self.model = model
                self.temperature = temperature

            def rollout(self, enc):
                return self.model.generate(**enc, do_sample=True, temperature=self.temperature)

            def logps(self, ids):
                logits = self.model(ids).logits
                return torch.log_softmax(logits, dim=-1)
    """,
}


def _constructed(tmp_path, main: str):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    for name, text in dict(_CONSTRUCTED, **{"main.py": main}).items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = lint_files([str(tmp_path / "rloo.py")], Settings(select=["RL309"]))
    return [(d.line, d.code) for d in result.diagnostics]


def test_a_class_constructed_in_another_module_gets_what_that_module_passes(tmp_path):
    main = """
        import argparse
        from rloo import Reinforce
        from transformers import AutoModelForCausalLM

        parser = argparse.ArgumentParser()
        parser.add_argument("--temperature", type=float, default=0.8)
        args = parser.parse_args()
        trainer = Reinforce(AutoModelForCausalLM.from_pretrained("gpt2"), temperature=args.temperature)
    """
    assert _constructed(tmp_path, main) == [(14, "RL309")]
    assert _constructed(tmp_path, main.replace("default=0.8", "default=1.0")) == []


def test_a_class_subclassed_in_another_module_has_callers_out_of_sight(tmp_path):
    main = """
        from rloo import Reinforce

        class Tuned(Reinforce):
            def __init__(self, model):
                super().__init__(model, temperature=1.0)

        trainer = Reinforce(None, temperature=0.8)
    """
    assert _constructed(tmp_path, main) == []


def _hand_written(draw: str, logps: str = "torch.log_softmax(logits, dim=-1)", default: str = "0.8") -> str:
    return f"""
        import torch

        def sample(model, ids, steps, temperature={default}):
            for _ in range(steps):
                logits = model(ids)[:, -1]
                {draw}
                ids = torch.cat([ids, token], dim=-1)
            return ids

        def sequence_logprob(model, ids):
            logits = model(ids)
            return {logps}

        def train(model, ids):
            rollout = sample(model, ids, 16)
            return sequence_logprob(model, rollout)
    """


def _lint_plain(source: str):
    result = lint_text(textwrap.dedent(source), "train_grpo.py", Settings(select=["RL309"]))
    return [(d.line, d.code) for d in result.diagnostics]


def test_a_hand_written_sampler_draws_at_the_temperature_it_divides_the_logits_by():
    draw = "token = torch.multinomial(torch.softmax(logits / temperature, dim=-1), num_samples=1)"
    assert _lint_plain(_hand_written(draw)) == [(13, "RL309")]


def test_a_hand_written_sampler_through_names_and_a_filter():
    draw = ("scaled = logits / temperature; probs = torch.softmax(scaled, dim=-1); "
            "token = torch.multinomial(probs, num_samples=1)")
    assert _lint_plain(_hand_written(draw)) == [(13, "RL309")]


def test_hand_written_look_alikes_are_not_reported():
    draw = "token = torch.multinomial(torch.softmax(logits / temperature, dim=-1), num_samples=1)"
    # at temperature 1 by default; log-probs divided by the same temperature; greedy decoding
    assert _lint_plain(_hand_written(draw, default="1.0")) == []
    assert _lint_plain(_hand_written(draw, logps="torch.log_softmax(logits / 0.8, dim=-1)")) == []
    greedy = "token = torch.argmax(logits / temperature, dim=-1, keepdim=True)"
    assert _lint_plain(_hand_written(greedy)) == []


def test_logits_divided_by_a_helper_of_another_module_are_tempered(tmp_path):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "helpers.py").write_text("def tempered(logits, temperature=1.0):\n    return logits / temperature\n")
    train = textwrap.dedent("""
        import torch
        from helpers import tempered
        from transformers import AutoModelForCausalLM

        def rollout(enc):
            return AutoModelForCausalLM.from_pretrained("gpt2").generate(**enc, do_sample=True, temperature=0.7)

        def token_logps(policy, ids, temperature):
            logits = tempered(policy(ids).logits, {given})
            return torch.log_softmax(logits, dim=-1)
    """)
    for given, expected in (("temperature", []), ("0.7", []), ("1.0", [(11, "RL309")])):
        (tmp_path / "train.py").write_text(train.format(given=given))
        found = lint_files([str(tmp_path / "train.py")], Settings(select=["RL309"])).diagnostics
        assert [(d.line, d.code) for d in found] == expected, given


_SETTINGS_PROJECT = {
    "pg/__init__.py": "",
    "pg/config.py": """
        from dataclasses import dataclass

        import yaml

        @dataclass
        class Config:
            temperature: float = 1.0
            lr: float = 1e-6

        def load_config(path):
            with open(path) as f:
                raw = yaml.safe_load(f)
            {update}
            return Config(**raw)
    """,
    "pg/rollout.py": """
        from transformers import GenerationConfig

        from .utils import compute_log_probs

        class RolloutEngine:
            def __init__(self, cfg):
                self.generation_config = GenerationConfig(do_sample=True, temperature=cfg.temperature)

            def experience(self, model, prompts):
                ids = model.generate(prompts, generation_config=self.generation_config)
                return ids, compute_log_probs(model, ids)
    """,
    "pg/utils.py": """
        import torch.nn.functional as F

        def compute_log_probs(model, ids):
            logits = model(input_ids=ids).logits
            return F.log_softmax(logits, dim=-1)
    """,
    "pg/train.py": """
        import argparse

        from .config import load_config
        from .rollout import RolloutEngine
        from .utils import compute_log_probs

        def main(cfg):
            engine = RolloutEngine(cfg)
            return compute_log_probs(None, None)

        parser = argparse.ArgumentParser()
        parser.add_argument("--config", required=True)
        main(load_config(parser.parse_args().config))
    """,
    "scripts/run_all.sh": """
        cd "$(dirname "$0")/.."
        python -m pg.train --config pg/configs/grpo.yaml
        python -m pg.train --config pg/configs/rloo.yaml
    """,
}


def _settings_project(tmp_path, grpo: str, rloo: str, update: str = "pass"):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    files = dict(_SETTINGS_PROJECT, **{"pg/configs/grpo.yaml": grpo, "pg/configs/rloo.yaml": rloo})
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text).replace("{update}", update))
    result = lint_files([str(tmp_path / "pg" / "utils.py")], Settings(select=["RL309"]))
    return [(d.line, d.code, d.message) for d in result.diagnostics]


def test_the_temperature_every_config_file_of_the_launches_sets_is_followed_to_another_module(tmp_path):
    """The rlhf-book shape: `python -m pkg.train --config X.yaml` per algorithm, the YAML read into a dataclass
    with `Config(**yaml.safe_load(f))`, the sampler in rollout.py, the log-probs in utils.py."""
    found = _settings_project(tmp_path, "temperature: 0.6\nlr: 1.0e-6\n", "temperature: 0.6\n")
    assert [(line, code) for line, code, _ in found] == [(6, "RL309")]
    assert "grpo.yaml" in found[0][2] and "rloo.yaml" in found[0][2] and "rollout.py" in found[0][2]


def test_config_files_that_disagree_or_leave_the_default_are_mixed_evidence(tmp_path):
    assert _settings_project(tmp_path, "temperature: 0.6\n", "temperature: 1.0\n") == []
    assert _settings_project(tmp_path, "temperature: 0.6\n", "lr: 1.0e-6\n") == []  # the field's default 1.0


def test_settings_changed_after_they_were_read_are_not_known(tmp_path):
    found = _settings_project(tmp_path, "temperature: 0.6\n", "temperature: 0.6\n", "raw.update(OVERRIDES)")
    assert found == []


def test_a_keyword_only_some_releases_accept_narrows_the_framework_default(tmp_path):
    """`GRPOConfig(vllm_device=...)` runs on TRL 0.14-0.17 only (a keyword the release lacks is refused)."""
    narrowed = _TRL_LOOP.replace('GRPOConfig(output_dir="out")', 'GRPOConfig(output_dir="out", vllm_device="cuda:1")')
    assert _project(tmp_path, {"train.py": narrowed}) == [(9, "RL309")]


def test_evaluation_sampling_beside_rollouts_of_a_config_at_one_is_not_the_rollout_temperature():
    source = """
        import torch
        from trl import GRPOConfig
        from vllm import SamplingParams

        config = GRPOConfig(output_dir="out", temperature=1.0)
        EVAL_SAMPLING = SamplingParams(temperature=0.7, max_tokens=2048)
    """
    assert codes(source) == []
    assert codes(source.replace("temperature=1.0", "temperature=0.7")) == [(11, "RL309")]


def test_negated_per_token_cross_entropy_reshaped_before_the_sign_is_log_probs():
    source = """
        import torch
        import torch.nn.functional as F
        from transformers import AutoModelForCausalLM

        policy = AutoModelForCausalLM.from_pretrained("gpt2")

        def rollout(enc):
            return policy.generate(**enc, do_sample=True, temperature=0.5)

        def scored(policy, ids):
            out = policy(ids).logits[:, :-1]
            return -F.cross_entropy(out.flatten(0, 1), ids[:, 1:].flatten(), reduction="none").reshape(ids.shape[0], -1)

        def scored_tempered(policy, ids):
            out = policy(ids).logits[:, :-1] / 0.5
            return -F.cross_entropy(out.flatten(0, 1), ids[:, 1:].flatten(), reduction="none").reshape(ids.shape[0], -1)
    """
    assert _lint_plain(source) == [(13, "RL309")]


def test_a_temperature_in_a_nested_settings_class_built_by_a_default_factory_is_followed():
    source = """
        import torch
        from dataclasses import dataclass, field
        from transformers import AutoModelForCausalLM

        @dataclass
        class Knobs:
            temperature: float = {temperature}

        @dataclass
        class Setup:
            knobs: Knobs = field(default_factory=Knobs)

        class Worker:
            def __init__(self, policy):
                self.policy = policy
                self.setup = Setup()

            def rollout(self, enc):
                return self.policy.generate(**enc, do_sample=True, temperature=self.setup.knobs.temperature)

            def logps(self, ids):
                return torch.log_softmax(self.policy(ids).logits, dim=-1)

        worker = Worker(AutoModelForCausalLM.from_pretrained("gpt2"))
    """
    assert _lint_plain(source.format(temperature=0.8)) == [(23, "RL309")]
    assert _lint_plain(source.format(temperature=1.0)) == []


_LABELLED = """
    import torch
    from transformers import AutoModelForCausalLM

    policy = AutoModelForCausalLM.from_pretrained("gpt2")
    reference = AutoModelForCausalLM.from_pretrained("gpt2")
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-6)

    def sample(enc):
        return policy.generate(**enc, do_sample=True, temperature={temperature})

    def reinforce(enc, reward):
        seq = sample(enc)
        out = policy(input_ids=seq, labels=seq)
        {scored}
        ({update}).backward()
        opt.step()
"""


def test_minus_the_loss_of_the_policy_given_labels_is_a_log_prob_of_the_raw_logits():
    source = _LABELLED.format(temperature=0.9, scored="logp = -out.loss * seq.shape[1]", update="-logp * reward")
    assert _lint_plain(source) == [(15, "RL309")]


def test_labelled_losses_that_are_not_the_sampled_policy_s_log_probs_are_left_alone():
    at_one = _LABELLED.format(temperature=1.0, scored="logp = -out.loss", update="-logp * reward")
    not_negated = _LABELLED.format(temperature=0.9, scored="nll = out.loss", update="nll * reward.mean()")
    with_no_graph = _LABELLED.format(temperature=0.9, scored="logp = -reference(input_ids=seq, labels=seq).loss",
                                     update="-logp * reward").replace("        logp =", "        with torch.no_grad():\n"
                                                                          "            logp =")
    unlabelled = _LABELLED.format(temperature=0.9, scored="logp = -policy(input_ids=seq).loss", update="-logp * reward")
    assert [_lint_plain(s) for s in (at_one, not_negated, with_no_graph, unlabelled)] == [[], [], [], []]


# ---- samplers of other modules: a Gumbel-max draw at the temperature each call passes ----

_GUMBEL_PROJECT = {
    "sampling.py": """
        import torch
        import torch.nn.functional as F
        from transformers import AutoModel

        def add_gumbel_noise(logits, temperature):
            if temperature == 0:
                return logits
            noise = torch.rand_like(logits, dtype=torch.float64)
            return logits.exp() / (-torch.log(noise)) ** temperature

        def generate(model, prompt, steps=64, temperature=0.0):
            x = prompt
            for _ in range(steps):
                logits = model(x).logits
                x0 = torch.argmax(add_gumbel_noise(logits, temperature=temperature), dim=-1)
                confidence = F.log_softmax(logits, dim=-1).gather(-1, x0.unsqueeze(-1))
                x = torch.cat([x, x0[:, -1:]], dim=-1)
            return x, confidence

        def main():
            model = AutoModel.from_pretrained("GSAI-ML/LLaDA-8B-Instruct", trust_remote_code=True)
            print(generate(model, torch.zeros(1, 4, dtype=torch.long), temperature=0.6))
    """,
    "losses.py": """
        import torch.nn.functional as F

        def reinforce_loss(model, ids, advantages, temperature=1.):
            logits = model(ids).logits / temperature
            token_logps = F.log_softmax(logits, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
            (-(token_logps.sum(-1) * advantages)).mean().backward()
    """,
    "train.py": """
        import argparse

        from transformers import AutoModel

        from losses import reinforce_loss
        from sampling import generate

        def train(args):
            model = AutoModel.from_pretrained("GSAI-ML/LLaDA-8B-Instruct", trust_remote_code=True)
            for prompt, advantages in []:
                ids, _ = generate(model, prompt, {sampled})
                reinforce_loss(model, ids, advantages{scored})

        parser = argparse.ArgumentParser()
        parser.add_argument("--temperature", type=float, default=1.0)
        train(parser.parse_args())
    """,
    "run.sh": "accelerate launch train.py --temperature {launched}\n",
}


def _gumbel(tmp_path, sampled="temperature=args.temperature", scored="", launched="0.6"):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    for name, text in _GUMBEL_PROJECT.items():
        (tmp_path / name).write_text(textwrap.dedent(text).format(sampled=sampled, scored=scored, launched=launched))
    result = lint_files([str(tmp_path / "train.py")], Settings(select=["RL309"]))
    return [(d.line, d.code) for d in result.diagnostics]


def test_a_gumbel_max_sampler_of_another_module_draws_at_the_temperature_the_call_passes(tmp_path):
    """duterscmy/JustGRPO: rollouts drawn at the launcher's 0.6 by a helper two modules away, and a loss helper
    that backpropagates log-probs at its default temperature 1."""
    assert _gumbel(tmp_path) == [(13, "RL309")]
    assert _gumbel(tmp_path, sampled="64, args.temperature") == [(13, "RL309")]  # by position


def test_gumbel_max_look_alikes_are_not_reported(tmp_path):
    assert _gumbel(tmp_path, launched="1.0") == []  # drawn at 1
    assert _gumbel(tmp_path, sampled="") == []  # at the sampler's default 0: greedy, nothing drawn
    assert _gumbel(tmp_path, scored=", temperature=args.temperature") == []  # the loss is told the temperature
    assert _gumbel(tmp_path, scored=", args.temperature") == []


def test_a_hand_written_gumbel_max_sampler_in_the_file(tmp_path):
    source = """
        import torch
        from transformers import AutoModelForCausalLM

        def sample(model, ids, temperature={t}):
            logits = model(ids).logits[:, -1]
            gumbel = -torch.log(-torch.log(torch.rand_like(logits)))
            return torch.argmax(logits / temperature + gumbel, dim=-1)

        def logps(model, ids):
            return torch.log_softmax(model(ids).logits, dim=-1)

        policy = AutoModelForCausalLM.from_pretrained("gpt2")
        logps(policy, sample(policy, None))
    """
    assert _lint_plain(source.format(t="0.7")) == [(11, "RL309")]
    assert _lint_plain(source.format(t="1.0")) == []


# ---- mlx_lm's `make_sampler(temp, ...)`: the temperature is the first argument ----

_MLX = """
    import argparse
    from dataclasses import dataclass

    import mlx.nn as nn
    from mlx_lm import generate
    from mlx_lm.sample_utils import make_sampler

    @dataclass
    class Config:
        temperature: float = 0.7

    def update(cfg, settings):
        for key, held in settings.items():
            setattr(cfg, key, held)
        return cfg

    def rollout(model, tokenizer, prompt, cfg, args):
        sampler = make_sampler({temp}, top_p=0.95)
        greedy = make_sampler(0.0, top_p=1.0)
        return generate(model, tokenizer, prompt=prompt, sampler=sampler), greedy

    def logps(model, ids):
        logits = model(ids)
        return nn.log_softmax(logits, axis=-1)

    parser = argparse.ArgumentParser()
    parser.add_argument("--temp", type=float, default=0.6)
    args = parser.parse_args()
    rollout(None, None, "", {config}, args)
"""


def test_an_mlx_sampler_samples_at_its_first_argument():
    assert _lint_plain(_MLX.format(temp="0.8", config="Config()")) == [(25, "RL309")]
    assert _lint_plain(_MLX.format(temp="temp=args.temp", config="Config()")) == [(25, "RL309")]
    assert _lint_plain(_MLX.format(temp="cfg.temperature", config="Config()")) == [(25, "RL309")]


def test_mlx_sampler_look_alikes_are_not_reported():
    assert _lint_plain(_MLX.format(temp="1.0", config="Config()")) == []
    assert _lint_plain(_MLX.format(temp="temp=1.0", config="Config()")) == []
    # a config whose fields a file of settings sets by name: its default is no evidence
    assert _lint_plain(_MLX.format(temp="cfg.temperature", config="update(Config(), vars(args))")) == []


# ---- an mlx_lm model: `load` gives (model, tokenizer), and the model's call returns its logits itself ----

_MLX_LOADED = """
    import mlx.nn as nn
    from mlx_lm import generate, load
    from mlx_lm.sample_utils import make_sampler


    def scores(model, ids):
        if isinstance(model, dict) and "model" in model:
            out = model["model"](ids)
        elif isinstance(model, nn.Module):
            out = model(ids)
        else:
            raise ValueError("unexpected model")
        return nn.log_softmax(out, axis=-1)


    class Trainer:
        def __init__(self, model, tokenizer):
            self.model = model
            self.tokenizer = tokenizer
            if isinstance(model, dict):
                self.old = model["model"]

        def step(self, prompt, ids):
            text = generate(self.model, self.tokenizer, prompt=prompt, sampler=make_sampler(0.7))
            return scores(self.model, ids), text


    {made}
    Trainer(model, tokenizer).step("2 + 2 =", None)
"""


def test_the_logits_of_an_mlx_lm_model_are_known_by_what_made_the_model():
    """No name says logits here: the model is mlx_lm's (loaded or built from `mlx_lm.models`), its call returns
    logits, and a branch for a dict-wrapped model is dead for every caller (a model is no dict): the helper's
    log-probs score the raw logits of rollouts sampled at 0.7."""
    loaded = _MLX_LOADED.format(made='model, tokenizer = load("mlx-community/Qwen2.5-0.5B-Instruct-4bit")')
    assert _lint_plain(loaded) == [(14, "RL309")]
    built = _MLX_LOADED.format(made='from mlx_lm.models import qwen2\n    from mlx_lm.tokenizer_utils import load_tokenizer'
                                    '\n    model, tokenizer = qwen2.Model(qwen2.ModelArgs()), load_tokenizer("q")')
    assert _lint_plain(built) == [(14, "RL309")]


def test_a_model_mlx_lm_does_not_make_is_not_known_to_give_logits():
    """The same code given a model from out of sight (a parameter), or from `load(..., return_config=True)`
    (a third item), or in a helper some caller gives a dict: what its call returns is not known."""
    unknown = _MLX_LOADED.format(made="from my_models import load_elsewhere\n    model, tokenizer = load_elsewhere()")
    assert _lint_plain(unknown) == []
    with_config = _MLX_LOADED.format(made='model, tokenizer, config = load("q", return_config=True)')
    assert _lint_plain(with_config) == []
    wrapped = _MLX_LOADED.format(made='model, tokenizer = load("q")\n    scores({"model": model}, None)')
    assert _lint_plain(wrapped) == []


def test_by_default_a_name_is_no_evidence_of_logits():
    """A parameter no caller in sight gives is not known to hold logits: `logits` in its name makes it count
    only when the rule is named; the model mlx_lm loads makes it count by default."""
    unknown = _MLX.format(temp="0.8", config="Config()")
    default = lint_text(textwrap.dedent(unknown), "train_grpo.py", Settings())
    assert [d.code for d in default.diagnostics if d.code == "RL309"] == []
    assert _lint_plain(unknown) == [(25, "RL309")]
    loaded = _MLX_LOADED.format(made='model, tokenizer = load("q")')
    default = lint_text(textwrap.dedent(loaded), "train_grpo.py", Settings())
    assert [(d.line, d.code) for d in default.diagnostics if d.code == "RL309"] == [(14, "RL309")]


# ---- a log_softmax written out: logits minus their log-normaliser over the vocabulary ----

_WRITTEN_OUT = """
    import torch
    from transformers import AutoModelForCausalLM

    TEMPERATURE = 0.7
    POLICY = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")


    def rollout(model, prompt_ids):
        return model.generate(prompt_ids, do_sample=True, temperature=TEMPERATURE, max_new_tokens=64)


    def token_logps(model, ids):
        logits = model(input_ids=ids).logits[:, :-1, :]
        {logits}
        picked = logits.gather(dim=-1, index=ids[:, 1:].unsqueeze(-1)).squeeze(-1)
        {normaliser}
        return {result}


    token_logps(POLICY, rollout(POLICY, None))
"""


def written_out(logits="pass", normaliser="lse = torch.stack([torch.logsumexp(row, dim=-1) for row in logits])",
                result="picked - lse"):
    return _WRITTEN_OUT.format(logits=logits, normaliser=normaliser, result=result)


def test_a_log_softmax_written_out_from_raw_logits_is_reported():
    """`gather(logits) - logsumexp(logits)`, the normaliser row by row or whole: the log-probs of the untempered
    distribution, by default too (the engine proves the logits and the axis)."""
    assert _lint_plain(written_out()) == [(18, "RL309")]
    assert _lint_plain(written_out(normaliser="lse = logits.logsumexp(-1)")) == [(18, "RL309")]
    assert _lint_plain(written_out(normaliser="lse = logits.logsumexp(dim=-1, keepdim=True)",
                                   result="logits - lse")) == [(18, "RL309")]
    default = lint_text(textwrap.dedent(written_out()), "train_grpo.py", Settings())
    assert [(d.line, d.code) for d in default.diagnostics if d.code == "RL309"] == [(18, "RL309")]


def test_written_out_look_alikes_are_not_reported():
    # the logits divided by the sampling temperature first
    assert _lint_plain(written_out(logits="logits = logits / TEMPERATURE")) == []
    # a normaliser over the time axis, not the vocabulary
    assert _lint_plain(written_out(normaliser="lse = logits.logsumexp(dim=1)")) == []
    # a z-loss: the normaliser squared, nothing subtracted from it
    assert _lint_plain(written_out(normaliser="lse = logits.logsumexp(-1)", result="(lse ** 2).mean()")) == []
    # sampled at temperature 1
    assert _lint_plain(written_out().replace("TEMPERATURE = 0.7", "TEMPERATURE = 1.0")) == []


# ---- a sampler object built by a trainer of another module, the loss a third module's class ----

_TREE_PROJECT = {
    "cfg.py": """
        from dataclasses import dataclass

        @dataclass
        class Config:
            temperature: float = 0.8
            steps: int = 8
    """,
    "noise.py": """
        import torch

        def add_gumbel_noise(logits, temperature):
            if temperature == 0:
                return logits
            noise = torch.rand_like(logits, dtype=torch.float64)
            return (logits.exp() + 1e-10) / ((-torch.log(noise + 1e-10)) ** temperature + 1e-10)
    """,
    "builder.py": """
        import torch

        from noise import add_gumbel_noise

        class Builder:
            def __init__(self, model, config):
                self.model = model
                self.config = config

            def rollout(self, state):
                steps = []
                for _ in range(self.config.steps):
                    logits = self.model(state, attention_mask=state != 0).logits[0]
                    child = torch.argmax(add_gumbel_noise(logits, self.config.temperature), dim=-1)
                    steps.append((state, child))
                    state = child
                return steps
    """,
    "loss.py": """
        import torch.nn.functional as F

        class TreeLoss:
            def _transition_logp(self, model, parent, child):
                logits = model(parent.unsqueeze(0)).logits[0]{tempered}
                return F.log_softmax(logits, dim=-1).gather(-1, child.unsqueeze(-1)).sum()

            def trajectory_logp(self, model, steps):
                return sum(self._transition_logp(model, p, c) for p, c in steps)

            def entropy_report(self, model, ids):
                return F.log_softmax(model(ids).logits, dim=-1).mean()
    """,
    "trainer.py": """
        from builder import Builder
        from loss import TreeLoss

        class Trainer:
            def __init__(self, model, config):
                self.model = model
                self.builder = Builder(model, config)
                self.loss = TreeLoss()

            def step(self, prompt, advantage):
                steps = self.builder.rollout(prompt)
                (-advantage * self.loss.trajectory_logp(self.model, steps)).backward()
    """,
    "run.py": """
        import torch
        from transformers import AutoModel

        from cfg import Config
        from trainer import Trainer

        def main():
            model = AutoModel.from_pretrained("GSAI-ML/LLaDA-8B-Instruct", trust_remote_code=True)
            trainer = Trainer(model, {config})
            trainer.step(torch.zeros(1, 8, dtype=torch.long), 1.0)

        main()
    """,
}


def _tree(tmp_path, config="Config()", tempered=""):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    for name, text in _TREE_PROJECT.items():
        (tmp_path / name).write_text(textwrap.dedent(text).format(config=config, tempered=tempered))
    result = lint_files([str(tmp_path / "loss.py")], Settings(select=["RL309"]))
    return [(d.line, d.code) for d in result.diagnostics]


def test_a_loss_method_a_trainer_reaches_scores_what_the_sampler_object_it_built_drew(tmp_path):
    """ScottBiggs2/EntropyTree-GRPO-Dev: the builder draws at its config's 0.8 (a Gumbel-max helper); the trainer
    that builds it hands the draws to a loss class of another module, whose private method scores them at 1.
    The loss's `entropy_report`, which no sampling module reaches, is not reported."""
    assert _tree(tmp_path) == [(7, "RL309")]


def test_a_sampler_object_at_one_or_a_tempered_loss_is_not_reported(tmp_path):
    assert _tree(tmp_path, config="Config(temperature=1.0)") == []
    assert _tree(tmp_path, tempered=" / 0.8") == []


# ---- generate's own scores: processed at the temperature that drew the tokens ----

_SCORES = """
    import torch
    from transformers import AutoModelForCausalLM

    def rollout(model, ids, params):
        out = model.generate(ids, do_sample=True, temperature=params.temperature, output_scores=True,
                             output_logits=True, return_dict_in_generate=True)
        step_logits = torch.stack([step[0] for step in out.{field}])
        return out.sequences, step_logits.log_softmax(dim=-1)

    class Params:
        def __init__(self, temperature=0.7):
            self.temperature = temperature

    policy = AutoModelForCausalLM.from_pretrained("gpt2")
    rollout(policy, None, Params(temperature=0.8))
"""


def test_the_scores_generate_returns_are_at_the_temperature_that_drew_the_tokens():
    """RobotSail/mini-grpo: `output_scores` are the processed logits, already divided by the temperature."""
    assert _lint_plain(_SCORES.format(field="scores")) == []


def test_the_raw_logits_generate_returns_are_not():
    assert _lint_plain(_SCORES.replace("params.temperature", "0.7").format(field="logits")) == [(9, "RL309")]


def test_a_sampler_module_this_one_imports_but_never_calls_to_draw_says_nothing(tmp_path):
    """What the modules a file imports draw, its own calls of them show; their demos are not its rollouts."""
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "helpers.py").write_text(textwrap.dedent("""
        import torch
        from transformers import AutoModelForCausalLM

        def pad_id(tokenizer):
            return tokenizer.pad_token_id

        def sample(model, ids, temperature=1.0):
            logits = model(ids).logits[:, -1]
            return torch.multinomial(torch.softmax(logits / temperature, dim=-1), 1)

        def main():
            sample(AutoModelForCausalLM.from_pretrained("gpt2"), None, temperature=0.6)
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        from helpers import pad_id

        def token_logps(policy, ids, tokenizer):
            logits = policy(ids).logits
            return torch.log_softmax(logits, dim=-1), pad_id(tokenizer)
    """))
    assert lint_files([str(tmp_path / "train.py")], Settings(select=["RL309"])).diagnostics == []


def test_a_declaration_that_only_shares_the_attribute_s_name_is_no_evidence():
    """`self.opts.temperature` of an object the engine cannot follow is not the `temperature` field some class of
    the file declares: a name is never the proof of the sampling temperature."""
    source = """
        import torch
        from dataclasses import dataclass

        @dataclass
        class EvalSettings:
            temperature: float = 0.6

        class Worker:
            def __init__(self, opts):
                self.opts = opts.sampling

            def rollout(self, policy, enc):
                return policy.generate(**enc, do_sample=True, temperature=self.opts.temperature)
    """
    assert codes(source) == []


def _subclassed_trainer(tmp_path, init: str, reads: str, config: str = "GRPOConfig"):
    """A transformers `Trainer` subclass (trainer.py) whose constructor hands TRL's parsed config (or the project's
    subclass of it, configs.py) to the base class and reads fields from it; built by train.py, launched by
    run.sh with flags every release has: only what the code reads can tell the release."""
    files = {
        "configs.py": """
            from dataclasses import dataclass
            import trl

            @dataclass
            class LocalConfig(trl.GRPOConfig):
                vllm_device: str = "cuda:1"
        """,
        "trainer.py": f"""
            import torch
            import transformers
            from vllm import SamplingParams

            class MyTrainer(transformers.Trainer):
                def __init__(self, model, args=None):
                    {init}
                    {reads}
                    self.params = SamplingParams(n=8, temperature=args.temperature)

                def token_logps(self, model, ids):
                    return torch.log_softmax(model(ids).logits, dim=-1)
        """,
        "train.py": f"""
            from trl import GRPOConfig, TrlParser
            from configs import LocalConfig
            from trainer import MyTrainer

            (training_args,) = TrlParser(({config},)).parse_args_and_config()
            MyTrainer(None, args=training_args)
        """,
        "run.sh": "python train.py --learning_rate 1e-6\n",
        "pyproject.toml": "",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    from rllint.runner import lint_files

    result = lint_files([str(tmp_path / "trainer.py")], Settings(select=["RL309"]))
    return [(d.line, d.code, d.message) for d in result.diagnostics]


def test_the_fields_a_trainer_reads_from_its_config_decide_the_framework_default(tmp_path):
    """`self.args` of a `Trainer` is the config its constructor was given; `vllm_device` exists in TRL 0.14-0.17
    only, where GRPO samples at 0.9 (misses.toml: X-R1, a git-pinned TRL)."""
    found = _subclassed_trainer(tmp_path, "super().__init__(model, args=args)",
                                "self.device_name = self.args.vllm_device")
    assert [(line, code) for line, code, _ in found] == [(13, "RL309")]
    assert "0.14.0-0.17.0" in found[0][2] and "GRPOConfig.vllm_device" in found[0][2]
    found = _subclassed_trainer(tmp_path, "transformers.Trainer.__init__(self, model=model, args=args)",
                                "self.device_name = args.vllm_device")
    assert [(line, code) for line, code, _ in found] == [(13, "RL309")]


def test_reads_that_do_not_tell_the_release_leave_the_framework_default_unknown(tmp_path):
    # fields every release has
    assert _subclassed_trainer(tmp_path, "super().__init__(model, args=args)", "self.lr = self.args.learning_rate") == []
    # a field the project's own subclass declares
    assert _subclassed_trainer(tmp_path, "super().__init__(model, args=args)",
                               "self.device_name = args.vllm_device", config="LocalConfig") == []
    # a field written, not read
    assert _subclassed_trainer(tmp_path, "super().__init__(model, args=args)", "args.vllm_device = None") == []
    # `self.args` of a base class that is no trainer is not the config
    assert _subclassed_trainer(tmp_path, "self.args = None", "self.device_name = self.args.vllm_device") == []


def test_a_generation_config_built_out_of_sight_beside_a_truncated_sampler_is_mixed_evidence():
    source = """
        import torch

        def rollout(policy, enc):
            return policy.generate(**enc, generation_config=policy.generation_config)

        def preview(policy, enc):
            return policy.generate(**enc, do_sample=True, top_p=0.9)
    """
    assert rl325(source) == []
    assert rl325(source.replace("generation_config=policy.generation_config", "do_sample=True, top_k=20")) == \
        [(12, "RL325")]


def test_log_probs_divided_by_the_sampling_temperature_but_not_by_another_number():
    """The sampler's processed scores are already tempered: dividing their log-probs by the sampling temperature
    again is reported; a contrastive loss dividing tempered log-probs by its own temperature is not."""
    source = """
        import torch
        import torch.nn.functional as F
        from transformers import AutoModelForCausalLM

        def rollout(model, enc, temperature=0.7, contrast_temperature=0.1):
            out = model.generate(**enc, do_sample=True, temperature=temperature, output_scores=True,
                                 return_dict_in_generate=True)
            logps = torch.stack(out.scores, dim=1).log_softmax(-1)
            twice = logps / temperature
            seq_logps = logps.max(-1).values.sum(-1)
            scores = torch.stack([seq_logps / contrast_temperature, -seq_logps / contrast_temperature], -1)
            contrast = F.cross_entropy(scores, torch.zeros(len(seq_logps)).long())
            return twice, contrast

        rollout(AutoModelForCausalLM.from_pretrained("gpt2"), {})
    """
    result = lint_text(textwrap.dedent(source), "train_grpo.py", Settings(select=["RL309"]))
    assert [(d.line, d.code) for d in result.diagnostics] == [(10, "RL309")]


_TOML_PROJECT = {
    "runcfg.py": """
        import os
        import tomllib
        from dataclasses import dataclass, field


        @dataclass
        class RunSettings:
            model: str = "gpt2"
            temperature: float = field(default=0.8)


        def settings_table(path):
            with open(path, "rb") as handle:
                return tomllib.load(handle)


        def overlay(target, table):
            for name, setting in table.items():
                {guard}setattr(target, name, setting)
            return target


        def with_overrides(target, pairs):
            for item in pairs:
                key, text = item.split("=")
                setattr(target, key, float(text))
            return target
    """,
    "train.py": """
        import argparse
        import os

        import torch
        from vllm import LLM, SamplingParams

        from runcfg import RunSettings, overlay, settings_table, with_overrides


        def token_logps(policy, ids):
            return torch.log_softmax(policy(ids).logits, dim=-1)


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--settings", default=os.getenv("RUN_SETTINGS", "{path}"))
            parser.add_argument("--override", action="append", default=[])
            opts = parser.parse_args()
            run = RunSettings()
            if os.path.isfile(opts.settings):
                run = overlay(run, settings_table(opts.settings){table})
            else:
                print("no settings file; defaults")
            run = with_overrides(run, opts.override)
            engine = LLM(model=run.model)
            return engine.generate(["q"], SamplingParams(temperature=run.temperature, n=8))


        if __name__ == "__main__":
            main()
    """,
}


def _toml_project(tmp_path, toml: str, path="conf/run.toml", guard="if hasattr(target, name):\n                    ",
                  table="", launch=None):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    files = dict(_TOML_PROJECT, **{"conf/run.toml": toml})
    if launch is not None:
        files["run.sh"] = launch
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(text).replace("{guard}", guard).replace("{path}", path).replace("{table}", table)
        (tmp_path / name).write_text(text)
    result = lint_files([str(tmp_path / "train.py")], Settings(select=["RL309"]))
    return [(d.line, d.code, d.message) for d in result.diagnostics]


def test_the_temperature_a_toml_file_sets_through_a_setattr_loop_is_followed(tmp_path):
    """The TOML file the code names (an environment default of an argparse default) is read with `tomllib.load`
    in a helper of another module and laid over a dataclass by `setattr` in a loop over its items, behind a
    test that the file is there: the rollouts sample at the file's temperature, not the field's default."""
    found = _toml_project(tmp_path, 'model = "gpt2"\ntemperature = 0.6  # sampling\n\n[lora]\nrank = 8\n')
    assert [(line, code) for line, code, _ in found] == [(12, "RL309")]
    assert "0.6 (temperature in conf/run.toml)" in found[0][2]
    found = _toml_project(tmp_path, '[sampling]\ntemperature = 0.6\n', guard="", table='["sampling"]')
    assert [(line, code) for line, code, _ in found] == [(12, "RL309")]  # a table of it, laid over unguarded


def test_look_alikes_of_a_toml_temperature(tmp_path):
    assert _toml_project(tmp_path, "temperature = 1.0\n") == []  # the file samples at 1
    assert _toml_project(tmp_path, "temperature = 1\n", guard="") == []
    # the file the code names is not in the project: it is not read, and whether the run has one is not known
    assert _toml_project(tmp_path, "temperature = 0.6\n", path="conf/other.toml") == []
    # a launch that overrides settings by name: which ones it sets is not known
    assert _toml_project(tmp_path, "temperature = 0.6\n", launch="python train.py --override temperature=1.0\n") == []
    assert _toml_project(tmp_path, "[[runs]]\ntemperature = 0.6\n") == []  # an array of tables: not read here


_NESTED = {
    "settings.py": """
        from dataclasses import dataclass, field

        @dataclass
        class Decoding:
            temperature: float = 0.8
            do_sample: bool = True

        @dataclass
        class Run:
            decoding: Decoding = field(default_factory=Decoding)
    """,
    "main.py": """
        import os

        from settings import Run
        from trainer import Trainer

        def main():
            run = Run()
            Trainer(run).step([])
    """,
    "trainer.py": """
        import torch.nn.functional as F
        from transformers import AutoModelForCausalLM

        class Trainer:
            def __init__(self, run):
                self.run = run
                self.policy = AutoModelForCausalLM.from_pretrained("gpt2")

            def step(self, enc):
                kwargs = {"max_new_tokens": 64}
                if getattr(self.run.decoding, "do_sample", False):
                    kwargs["temperature"] = getattr(self.run.decoding, "temperature", 1.0)
                ids = self.policy.generate(**enc, **kwargs)
                return self.score(ids)

            def score(self, ids):
                logits = self.policy(ids).logits
                return {logps}
    """,
}


def _nested(tmp_path, **changes):
    from rllint.runner import lint_files

    (tmp_path / "pyproject.toml").write_text("")
    files = dict(_NESTED)
    files["trainer.py"] = files["trainer.py"].replace("{logps}", changes.pop("logps", "F.log_softmax(logits, -1)"))
    for name, (old, new) in changes.items():
        files[name + ".py"] = files[name + ".py"].replace(old, new)
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = lint_files([str(tmp_path / "trainer.py")], Settings(select=["RL309"]))
    return [(d.line, d.code) for d in result.diagnostics]


def test_a_temperature_read_by_getattr_of_a_nested_config_and_given_through_a_dict_of_settings(tmp_path):
    assert _nested(tmp_path) == [(19, "RL309")]


def test_logits_a_helper_divides_by_the_temperature_are_tempered_whatever_path_holds_it(tmp_path):
    logps = "F.log_softmax(self.tempered(logits), -1)\n\n            def tempered(self, logits):\n" \
            "                return logits / getattr(self.run.decoding, 'temperature', 1.0)"
    assert _nested(tmp_path, logps=logps) == []


def test_a_nested_config_that_samples_at_one_or_at_a_number_not_known_says_nothing(tmp_path):
    assert _nested(tmp_path, settings=("temperature: float = 0.8", "temperature: float = 1.0")) == []
    # at least 0.7, perhaps 1.0: the launch's value is not known
    unknown = ("run = Run()", "run = Run()\n    run.decoding.temperature = max(0.7, float(os.environ['T']))")
    assert _nested(tmp_path, main=unknown) == []
