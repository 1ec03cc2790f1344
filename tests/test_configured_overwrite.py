"""RL606: a setting the run's launch or settings file gives, overwritten by a literal after parsing; and the
launches of an entry file that calls a function of another module, which are that module's command line."""
import textwrap

from rllint.runner import lint_files
from rllint.settings import Settings

RECIPE = """
from transformers import HfArgumentParser
from trl import GRPOConfig, GRPOTrainer


def run():
    (config,) = HfArgumentParser((GRPOConfig,)).parse_args_into_dataclasses()
    config.beta = 0.0
    GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=config).train()
"""
CLI = """
from recipes import grpo

if __name__ == "__main__":
    grpo.run()
"""
LAUNCH = "torchrun --nproc_per_node 2 cli.py --output_dir out --beta 0.1\n"


def _lint(tmp_path, files, select=("RL606",)):
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = lint_files([str(tmp_path / n) for n in files if n.endswith(".py")], Settings(select=list(select)))
    return sorted((d.path.rsplit("/", 1)[-1], d.line, d.code, d.message) for d in result.diagnostics)


def test_a_flag_the_entry_file_s_launch_gives_and_the_module_overwrites(tmp_path):
    found = _lint(tmp_path, {"recipes/__init__.py": "", "recipes/grpo.py": RECIPE, "cli.py": CLI,
                             "launch.sh": LAUNCH})
    assert found == [("grpo.py", 8, "RL606", "`config.beta` is set to 0.1 by --beta in launch.sh and then "
                                             "overwritten by the literal 0.0: the run silently uses another value")]


def test_a_settings_file_key_overwritten_after_trl_s_parser_reads_it(tmp_path):
    script = """
    from trl import GRPOConfig, GRPOTrainer, ModelConfig, TrlParser

    class Job:
        def start(self):
            model_args, training_args = TrlParser((ModelConfig, GRPOConfig)).parse_args_and_config()
            training_args.temperature = 1.0
            training_args.save_steps = 10
            return GRPOTrainer(model=model_args.model_name_or_path, reward_funcs=[], args=training_args)

    def main():
        Job().start()

    if __name__ == "__main__":
        main()
    """
    files = {"job.py": script, "recipe.yaml": "temperature: 0.7\nsave_steps: 500\nbeta: 0.04\n",
             "go.sh": "accelerate launch job.py --config recipe.yaml\n"}
    assert [f[:3] for f in _lint(tmp_path, files)] == [("job.py", 7, "RL606")]


def test_look_alikes_of_an_overwritten_setting(tmp_path):
    same = RECIPE.replace("config.beta = 0.0", "config.beta = 0.1")
    guarded = RECIPE.replace("    config.beta = 0.0", "    if config.beta > 1:\n        config.beta = 0.0")
    computed = RECIPE.replace("config.beta = 0.0", "config.beta = config.beta / 2")
    base = {"recipes/__init__.py": "", "cli.py": CLI, "launch.sh": LAUNCH}
    for recipe in (same, guarded, computed):
        assert _lint(tmp_path, {**base, "recipes/grpo.py": recipe}) == []
    # no launch gives beta: the literal replaces TRL's default, which nobody configured
    assert _lint(tmp_path, {**base, "recipes/grpo.py": RECIPE,
                            "launch.sh": "torchrun cli.py --output_dir out\n"}) == []
    # an entry file that imports the module but calls nothing of it does not run it
    assert _lint(tmp_path, {**base, "recipes/grpo.py": RECIPE, "launch.sh": LAUNCH,
                            "cli.py": "from recipes import grpo\nprint(grpo.__name__)\n"}) == []


def test_an_entry_file_s_launch_sets_the_flags_of_the_module_it_runs(tmp_path):
    """The argparse defaults of a module the entry file runs are replaced by the entry file's launch."""
    trainer = """
    import argparse
    from trl import GRPOConfig, GRPOTrainer

    def train():
        parser = argparse.ArgumentParser()
        parser.add_argument("--learning_rate", type=float, default=5e-5)
        args = parser.parse_args()
        config = GRPOConfig(output_dir="out", learning_rate=args.learning_rate)
        GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=config).train()
    """
    entry = "from trainer import train as go\n\ngo()\n"
    files = {"trainer.py": trainer, "entry.py": entry}
    assert [f[:3] for f in _lint(tmp_path, {**files, "run.sh": "python entry.py --learning_rate 1e-6\n"},
                                 select=("ALL",)) if f[2] == "RL601"] == []
    assert [f[:3] for f in _lint(tmp_path, {**files, "run.sh": "python entry.py --seed 1\n"},
                                 select=("ALL",)) if f[2] == "RL601"] == [("trainer.py", 7, "RL601")]


def test_a_launch_flag_of_an_argparse_script_overwritten_at_its_top_level(tmp_path):
    script = """
    import argparse
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--kl-coef", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args()
    opts.kl_coef = 0
    opts.seed = 1


    def ppo_loss(logps, old_logps, ref_logps, advantages):
        ratio = torch.exp(logps - old_logps)
        clipped = torch.clamp(ratio, 0.8, 1.2)
        kl = logps - ref_logps
        return -torch.min(ratio * advantages, clipped * advantages).mean() + opts.kl_coef * kl.mean()
    """
    files = {"ppo_step.py": script, "sweep.sh": "for s in 1 2; do\n  python ppo_step.py --kl-coef 0.1 --seed $s\ndone\n"}
    assert [f[:3] for f in _lint(tmp_path, files)] == [("ppo_step.py", 9, "RL606")]
    # the launch leaves the flag at its default: the literal replaces a default, not a configured value
    assert _lint(tmp_path, {**files, "sweep.sh": "python ppo_step.py --seed 3\n"}) == []


def test_a_settings_file_key_overwritten_in_the_loaded_dict(tmp_path):
    script = """
    import yaml
    from trl import GRPOConfig

    def load():
        with open("configs/ppo.yaml") as handle:
            settings = yaml.safe_load(handle)
        settings["rollout"]["temperature"] = 1.0
        settings["rollout"]["seed"] = 0
        return GRPOConfig(output_dir="out", **settings["rollout"])
    """
    files = {"train.py": script, "configs/ppo.yaml": "rollout:\n  temperature: 0.6\n  seed: 7\n"}
    assert [f[:3] for f in _lint(tmp_path, files)] == [("train.py", 8, "RL606")]
    assert _lint(tmp_path, {**files, "configs/ppo.yaml": "rollout:\n  temperature: 1.0\n"}) == []
