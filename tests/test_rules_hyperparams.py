"""RL601 options and wording, beyond what the fixtures show."""
import os
import textwrap

from rllint.diagnostic import Severity
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
    assert [line for line, _, _ in findings(GRPO, **{"max-learning-rate": 4e-5})] == [4]
    assert findings(GRPO, **{"max-learning-rate": 5e-5}) == []  # the limit itself is not reported
    lora = GRPO.replace("from trl import GRPOConfig", "from trl import GRPOConfig\nfrom peft import LoraConfig")
    assert findings(lora) == []
    assert [line for line, _, _ in findings(lora, **{"lora-lr-multiplier": 4.0})] == [5]


def test_the_message_names_the_value_where_it_is_declared_and_where_it_is_used():
    assert findings(GRPO) == [(4, "RL601", "learning rate 5e-05 (constant LR, used as `learning_rate` of GRPOConfig on "
                                          "line 7) is SFT-scale: RL post-training at this rate usually collapses; "
                                          "use <= 1e-06..5e-06")]


# ---- the vocabulary of rllint.analysis.hparams ------------------------------------------

from rllint.analysis.hparams import (  # noqa: E402
    grouped_estimator, is_clip_range, is_group_size, is_kl_coefficient, is_learning_rate, is_rl_hyperparameter,
)


def test_kl_coefficient_names_and_beta_only_for_grouped_configs():
    named = ["kl_coef", "init_kl_coef", "algorithm.kl_ctrl.kl_coef", "actor.kl_loss_coef", "KL_COEF", "klcoef"]
    assert all(is_kl_coefficient(n) for n in named)
    assert not any(is_kl_coefficient(n) for n in ["target_kl", "kl_target", "use_kl_loss", "kl_horizon", "beta"])
    assert is_kl_coefficient("beta", owner="GRPOConfig") and is_kl_coefficient("beta", grouped_config=True)
    assert not is_kl_coefficient("beta", owner="DPOConfig")


def test_clip_range_names_exclude_value_upper_dual_and_other_clips():
    assert all(is_clip_range(n) for n in ["cliprange", "eps_clip", "--actor.eps_clip", "clip_ratio_low",
                                          "actor_rollout_ref.actor.clip_ratio", "clip_eps", "clip_range"])
    assert not any(is_clip_range(n) for n in [
        "cliprange_value", "value_clip", "clip_ratio_high", "clip_ratio_c", "grad_clip", "max_grad_norm",
        "policy_loss.clip_cov_ratio", "reward.clip_range", "critic.value_clip", "epsilon", "epsilon_high"])
    assert is_clip_range("epsilon", owner="GRPOConfig") and not is_clip_range("epsilon_high", owner="GRPOConfig")


def test_group_size_names_exclude_evaluation_counts():
    assert all(is_group_size(n) for n in ["num_generations", "--n_samples_per_prompt", "rollout.n_samples_per_prompt",
                                          "actor_rollout_ref.rollout.n", "group_size", "rloo_k"])
    assert not any(is_group_size(n) for n in ["actor_rollout_ref.rollout.val_kwargs.n", "eval.n_samples_per_prompt",
                                              "num_return_sequences", "num_samples", "eval_num_generations"])
    assert is_group_size("num_samples", owner="sample")


def test_estimators_that_normalize_within_groups():
    assert [grouped_estimator(v) for v in ["grpo", "rloo", "group_norm", "reinforce_baseline", "gae",
                                           "reinforce_plus_plus", "remax", "", 3]] == \
        [True, True, True, True, False, False, False, None, None]


def test_learning_rates_and_watched_hyperparameters():
    assert is_learning_rate("actor.adam.lr") and not is_learning_rate("lr_warmup_steps_ratio")
    assert all(is_rl_hyperparameter(n) for n in ["temperature", "max_completion_length", "kl_weight_beta",
                                                 "policy_clip_epsilon", "generate_max_len", "num_generations"])
    assert not any(is_rl_hyperparameter(n) for n in ["seed", "top_k", "output_dir", "logging_steps", "adam_epsilon",
                                                     "eval_temperature", "eval.max_new_tokens"])


# ---- RL601 over launch configs -------------------------------------------------------------

def config_findings(text, path, select, **options):
    result = lint_text(textwrap.dedent(text), path, Settings(select=[select], options=options))
    return [(d.line, d.code, d.severity.value if hasattr(d.severity, "value") else d.severity, d.message)
            for d in result.diagnostics]


VERL_LR = """\
    algorithm:
      adv_estimator: grpo
    actor_rollout_ref:
      model:
        lora_rank: {rank}
      actor:
        optim:
          lr: 5e-5
"""


def test_rl601_in_yaml_says_which_key_and_lora_rank_raises_the_limit():
    assert config_findings(VERL_LR.format(rank=0), "grpo.yaml", "RL601") == [
        (8, "RL601", "warning", "learning rate 5e-05 (`actor_rollout_ref.actor.optim.lr`) is SFT-scale: RL "
                                "post-training at this rate usually collapses; use <= 1e-06..5e-06")]
    assert config_findings(VERL_LR.format(rank=32), "grpo.yaml", "RL601") == []


def test_rl601_hydra_config_group_of_a_critic_is_the_critics():
    text = "optim:\n  lr: 2e-5\nppo_epochs: 1\nkl_loss_coef: 0.001\n"
    assert config_findings(text, "config/critic/critic.yaml", "RL601") == []
    assert [f[:2] for f in config_findings(text, "config/actor/actor.yaml", "RL601")] == [(2, "RL601")]


def test_sft_and_reward_model_commands_are_not_rl():
    script = """\
        deepspeed --module openrlhf.cli.train_sft --learning_rate 2e-5 --max_len 4096
        deepspeed --module openrlhf.cli.train_rm --learning_rate 9e-6 --max_len 4096
    """
    assert config_findings(script, "run.sh", "RL6") == []


# ---- RL602 / RL603 options ---------------------------------------------------------------

GRPO_KL_CLIP = textwrap.dedent("""
    from trl import GRPOConfig

    args = GRPOConfig(output_dir="o", beta=0.3, epsilon=0.15, num_generations=8, learning_rate=1e-6)
""")


def test_kl_and_clip_thresholds_are_options():
    assert lint_text(GRPO_KL_CLIP, "train.py", Settings(select=["RL602", "RL603"])).diagnostics == []
    result = lint_text(GRPO_KL_CLIP, "train.py", Settings(select=["RL602", "RL603"],
                                                          options={"max-kl-coef": 0.2, "min-clip-range": 0.18}))
    assert [(d.line, d.code, d.message) for d in result.diagnostics] == [
        (4, "RL602", "KL coefficient 0.3 is above 0.2: the penalty outweighs the reward and the policy cannot "
                     "move; use 0.001..0.1"),
        (4, "RL603", "clip range 0.15 is below 0.18: almost every token is clipped and the policy barely learns; "
                     "use about 0.2")]


def test_on_policy_distillation_kl_to_the_teacher_is_the_objective():
    text = textwrap.dedent("""
        from dataclasses import dataclass
        import tinker

        @dataclass
        class Config:
            teacher_model: str = "Qwen/Qwen3-8B"
            kl_penalty_coef: float = 1.0  # on-policy distillation: the KL to the teacher is the reward
    """)
    assert lint_text(text, "distill.py", Settings(select=["RL602"])).diagnostics == []
    plain = text.replace("teacher_model", "reference_model").replace("distillation: the KL to the teacher", "x")
    assert [d.line for d in lint_text(plain, "rl.py", Settings(select=["RL602"])).diagnostics] == [8]


KD_AND_GRPO = textwrap.dedent("""
    import torch
    import torch.nn.functional as F
    from trl import GRPOConfig

    args = GRPOConfig(output_dir="o", beta=0.04, num_generations=8, learning_rate=1e-6)


    class Steps:
        def match(self, student, optimizer, ids, labels, soft_logits, kl_coef=2.0, temperature=2.0):
            logits = student(ids).logits
            ce = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
            if kl_coef > 0:
                kd = F.kl_div((logits / temperature).log_softmax(-1), (soft_logits / temperature).softmax(-1),
                              reduction="batchmean")
                total = ce + kl_coef * kd
            total.backward()
            optimizer.step()

        def grpo(self, policy, optimizer, ids, ref_logps, advantages, kl_coef=2.0):
            logps = policy(ids).logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
            penalty = kl_coef * (logps - ref_logps)
            loss = -(logps * advantages).mean() + penalty.mean()
            loss.backward()
            optimizer.step()


    def kl_penalty(logps, ref_logps, kl_coef=2.0):
        return kl_coef * (logps - ref_logps)
""")


def test_a_kl_weight_of_a_loss_without_policy_gradient_is_not_an_rl_penalty():
    """The matching step's loss (cross-entropy plus a KL to given logits) has no advantage in it; the GRPO
    step's has, and a weight returned to callers out of sight is unknown, so stays reported."""
    result = lint_text(KD_AND_GRPO, "train.py", Settings(select=["RL602"]))
    assert [d.line for d in result.diagnostics] == [20, 28]


# ---- RL604 --------------------------------------------------------------------------------

def test_rl604_needs_a_group_estimator_and_says_why():
    yaml = "algorithm:\n  adv_estimator: {}\nactor_rollout_ref:\n  rollout:\n    n: 1\n"
    assert config_findings(yaml.format("gae"), "ppo.yaml", "RL604") == []
    assert config_findings(yaml.format("rloo"), "rloo.yaml", "RL604") == [
        (5, "RL604", "error", "group size 1 (`actor_rollout_ref.rollout.n`): verl scores a group of one by its raw "
                              "reward (mean 0, std 1): there is no baseline and the advantage is the reward itself; "
                              "use >= 4")]
    openrlhf = "python -m openrlhf.cli.train_ppo_ray --advantage_estimator group_norm --n_samples_per_prompt 1\n"
    assert config_findings(openrlhf, "run.sh", "RL604") == [
        (1, "RL604", "error", "group size 1 (`n_samples_per_prompt` of openrlhf.cli.train_ppo_ray): with one "
                              "sample per prompt the group baseline is the sample itself and the advantage is "
                              "always zero; use >= 4")]
    assert [f[:3] for f in config_findings(yaml.format("grpo").replace("n: 1", "n: 2"), "g.yaml", "RL604")] == [
        (5, "RL604", "warning")]
    # two samples are sound with a leave-one-out or a mean-only baseline
    assert config_findings(yaml.format("rloo").replace("n: 1", "n: 2"), "r.yaml", "RL604") == []
    assert config_findings(openrlhf.replace("group_norm", "reinforce_baseline").replace(" 1", " 2"), "b.sh",
                           "RL604") == []
    python = "from trl import GRPOConfig\nargs = GRPOConfig(num_generations=2)\n"
    assert [(d.line, d.severity) for d in lint_text(python, "t.py", Settings(select=["RL604"])).diagnostics] == [
        (2, Severity.WARNING)]
    no_estimator = "actor_rollout_ref:\n  rollout:\n    n: 1\n"  # verl's default estimator is GAE
    assert config_findings(no_estimator, "ppo.yaml", "RL604") == []


def test_rl604_a_group_size_passed_through_a_command_built_in_variables_and_run_by_eval():
    script = """\
        NUM_GENERATIONS_GRPO=2
        CMD_ARGS=""
        CMD_ARGS="${CMD_ARGS} --num_generations ${NUM_GENERATIONS_GRPO}"
        FULL_CMD="python3 ${SCRIPT_DIR}/train_grpo.py ${CMD_ARGS}"
        timeout 7200 eval "${FULL_CMD}" || exit 1
    """
    assert [f[:3] for f in config_findings(script, "run.sh", "RL604")] == [(1, "RL604", "warning")]
    # the same chain into an evaluation entry point, or never run, sets no run's group size
    assert config_findings(script.replace("train_grpo.py", "evaluate.py"), "run.sh", "RL604") == []
    assert config_findings(script.replace('timeout 7200 eval "${FULL_CMD}"', 'echo "${FULL_CMD}"'), "run.sh",
                           "RL604") == []
    # one sample per prompt for PPO with a critic (OpenRLHF's default estimator) is no group
    ppo = """\
        ARGS="--n_samples_per_prompt ${N:-1}"
        CMD="python3 -m openrlhf.cli.train_ppo_ray $ARGS"
        eval $CMD
    """
    assert config_findings(ppo, "ppo.sh", "RL604") == []
    assert [f[:3] for f in config_findings(ppo.replace('${N:-1}"', '${N:-1} --advantage_estimator group_norm"'),
                                           "grpo.sh", "RL604")] == [(1, "RL604", "error")]


def test_rl604_bare_group_size_keywords_and_framework_defaults_are_silent():
    text = textwrap.dedent("""
        from dataclasses import dataclass
        from trl import GRPOTrainer

        @dataclass
        class RLOOConfig:
            num_generations: int = 2

        def test_builder(Builder):
            return Builder(group_size=1), GRPOTrainer
    """)
    assert lint_text(text, "rloo_config.py", Settings(select=["RL604"])).diagnostics == []


# ---- RL605 --------------------------------------------------------------------------------

def test_rl605_shell_variables_and_one_kl_per_run():
    script = """\
        python3 -m verl.trainer.main_ppo algorithm.use_kl_in_reward=True actor_rollout_ref.actor.use_kl_loss=True
        python3 -m verl.trainer.main_ppo algorithm.use_kl_in_reward=False actor_rollout_ref.actor.use_kl_loss=True
    """
    assert [f[:2] for f in config_findings(script, "run.sh", "RL605")] == [(1, "RL605")]


# ---- RL606 --------------------------------------------------------------------------------

def test_rl606_config_modules_and_forwarded_arguments_are_silent():
    module = textwrap.dedent("""
        import argparse
        from dataclasses import dataclass
        from trl import GRPOConfig

        @dataclass
        class Recipe:
            temperature: float = 0.7
            beta: float = 0.04

        def parse():
            parser = argparse.ArgumentParser()
            parser.add_argument("--kl_coef", type=float, default=0.05)
            parser.add_argument("--seed", type=int, default=0)
            return parser.parse_args()

        def main():
            args = parse()
            return GRPOConfig(**vars(args))
    """)
    assert lint_text(module, "recipe.py", Settings(select=["RL606"])).diagnostics == []
    unforwarded = module.replace("GRPOConfig(**vars(args))", "GRPOConfig(seed=args.seed)")
    assert [(d.line, d.message) for d in lint_text(unforwarded, "recipe.py", Settings(select=["RL606"])).diagnostics] \
        == [(13, "`kl_coef` (default of --kl_coef) is declared but never read: the run silently uses another value")]


def test_rl606_a_value_overwritten_before_any_use():
    text = textwrap.dedent("""
        import argparse
        from trl import GRPOConfig

        def build():
            parser = argparse.ArgumentParser()
            parser.add_argument("--kl_beta", type=float, default=0.04)
            parser.add_argument("--temperature", type=float, default=0.9)
            args = parser.parse_args()
            beta = args.kl_beta
            print(beta)
            beta = 0.0
            temperature = args.temperature
            temperature = 1.0
            return GRPOConfig(beta=beta, temperature=temperature)
    """)
    result = lint_text(text, "t.py", Settings(select=["RL606"]))
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (14, 19, "`temperature` is read from `temperature` and then overwritten by the literal 1.0: the run "
                 "silently uses another value")]


def test_test_and_smoke_launchers_are_no_runs():
    script = "python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.lr=5e-5 data.max_response_length=32\n"
    assert [f[1] for f in config_findings(script, "scripts/run_grpo.sh", "RL6")] == ["RL601"]
    for path in ("tests/e2e/run_ray_trainer.sh", "scripts/smoke_grpo.sh", "debug/run.sh"):
        assert config_findings(script, path, "RL6") == [] and config_findings(script, path, "RL306") == []


def test_the_advice_never_holds_the_reported_value_when_the_limit_is_lowered():
    (finding,) = findings(GRPO.replace("5e-5", "8e-7"), **{"max-learning-rate": 5e-7})
    assert finding[2].endswith("RL post-training at this rate usually collapses; use < 5e-07")
    (default,) = findings(GRPO)
    assert default[2].endswith("use <= 1e-06..5e-06")


def test_sequence_level_settings_are_gspo_modes():
    from rllint.analysis.hparams import is_sequence_level
    assert is_sequence_level("importance_sampling_level", "sequence")
    assert is_sequence_level("actor_rollout_ref.actor.policy_loss.loss_mode", "gspo")
    assert not is_sequence_level("importance_sampling_level", "token")
    assert not is_sequence_level("dataset_name", "sequence")
    assert not is_sequence_level("loss_type", "grpo")


def test_rl606_counts_reads_in_other_modules_of_the_project(tmp_path):
    from rllint.runner import lint_files
    config = tmp_path / "config.py"
    config.write_text(textwrap.dedent("""
        import argparse
        from trl import GRPOConfig, GRPOTrainer

        def parse():
            parser = argparse.ArgumentParser()
            parser.add_argument("--beta", type=float, default=0.04)
            parser.add_argument("--clip_range", type=float, default=0.2)
            parser.add_argument("--seed", type=int, default=0)
            args = parser.parse_args()
            print(args.seed)
            return args
    """))
    (tmp_path / "trainer.py").write_text("class Trainer:\n    def __init__(self, args):\n        self.args = args\n"
                                         "    def step(self):\n        return self.args.beta\n")

    def lines():
        result = lint_files([str(config)], Settings(select=["RL606"]))
        return [(d.line, d.message.split("`")[1]) for d in result.diagnostics]

    assert lines() == [(8, "clip_range")]  # `beta` is read as `self.args.beta` in trainer.py
    (tmp_path / "loss.py").write_text("def loss(cfg):\n    return cfg.training.clip_range\n")
    assert lines() == []


HAND_WRITTEN_LOOP = """
import torch

SAMPLES_PER_PROMPT = {size}


def advantages(scores):
    table = scores.view(-1, SAMPLES_PER_PROMPT)
    return ((table - table.mean(1, keepdim=True)) / (table.std(1, keepdim=True) + 1e-6)).flatten()


def step(policy, optimizer, scores, logps, mask):
    adv = advantages(scores)
    loss = -((logps * adv[:, None]) * mask).sum() / mask.sum()
    loss.backward()
    optimizer.step()
"""


def test_rl604_a_constant_that_groups_std_normalized_rewards_in_a_hand_written_loop():
    def found(size, body=HAND_WRITTEN_LOOP):
        result = lint_text(body.format(size=size), "train.py", Settings(select=["RL604"]))
        return [(d.line, d.code, d.severity) for d in result.diagnostics]

    assert found(1) == [(4, "RL604", Severity.ERROR)]
    assert found(2) == [(4, "RL604", Severity.WARNING)]
    assert found(4) == []
    mean_only = HAND_WRITTEN_LOOP.replace(" / (table.std(1, keepdim=True) + 1e-6)", "")
    assert found(1, mean_only) == [(4, "RL604", Severity.ERROR)] and found(2, mean_only) == []
    unused = HAND_WRITTEN_LOOP.replace("view(-1, SAMPLES_PER_PROMPT)", "view(-1, 8)")
    assert found(1, unused) == []
    per_call = HAND_WRITTEN_LOOP + "\n\ndef turn(engine, ids):\n    return engine.rollout(ids, SAMPLES_PER_PROMPT=1)\n"
    assert found(4, per_call) == []  # one sample per call of a multi-turn loop is not the group size


def test_rl402_reads_a_group_size_written_in_upper_case():
    source = """
import torch

NUM_GENERATIONS = 4


def exact_reward(completions, answer, **kwargs):
    return [float(c.strip() == a) for c, a in zip(completions, answer, strict=True)]
"""
    result = lint_text(source, "train.py", Settings(select=["RL402"]))
    assert [(d.line, d.code) for d in result.diagnostics] == [(7, "RL402")]


def test_hyperparameter_keys_match_whatever_their_case():
    from rllint.analysis.hparams import is_estimator_key, is_std_switch
    assert is_group_size("NUM_GENERATIONS") and is_group_size("cfg.GROUP_SIZE")
    assert is_estimator_key("ADV_ESTIMATOR") and is_std_switch("SCALE_REWARDS")
    assert not is_group_size("VAL_KWARGS.N") and not is_estimator_key("ESTIMATOR_NAME")


def test_rl606_the_fields_of_an_sft_or_reward_model_config_beside_an_rl_one_are_not_the_run_s():
    """dx-dtran/LearnRLHF: SFTConfig.lr and RMConfig.lr of a skeleton whose SFT and RM scripts are stubs."""
    module = textwrap.dedent("""
        from dataclasses import dataclass
        from trl import PPOTrainer

        @dataclass
        class SFTConfig:
            block_size: int = 1024
            lr: float = 3e-5

        @dataclass
        class RMConfig:
            block_size: int = 1024
            lr: float = 1e-5

        @dataclass
        class PPOConfig:
            learning_rate: float = 1e-6
            kl_coef: float = 0.02

        def train(cfg: PPOConfig, sft: SFTConfig, rm: RMConfig):
            return PPOTrainer(learning_rate=cfg.learning_rate, block_size=sft.block_size + rm.block_size)
    """)
    found = [(d.line, d.message) for d in lint_text(module, "config.py", Settings(select=["RL606"])).diagnostics]
    assert found == [(18, "`kl_coef` (default of PPOConfig.kl_coef) is declared but never read: the run silently "
                          "uses another value")]


SETTINGS_FILE_SCRIPT = """
import torch
import wandb
import yaml
from transformers import AutoModelForCausalLM


def read_settings(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def grpo_step(policy, optimizer, logps, old_logps, advantages):
    ratio = torch.exp(logps - old_logps)
    loss = -torch.min(ratio * advantages, torch.clamp(ratio, 0.8, 1.2) * advantages).mean()
    loss.backward()
    optimizer.step()


if __name__ == "__main__":
    settings = read_settings("{path}")
    print("settings:", settings)
    wandb.init(project="grpo", config=settings)
    {change}
    optim = settings["optim"]
    policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-1.5B")
    optimizer = torch.optim.AdamW(policy.parameters(), lr={lr})
"""


def _settings_project(tmp_path, path="configs/grpo.yaml", change="", rate="2e-5", comment="",
                      lr='float(optim["lr"])'):
    (tmp_path / "configs").mkdir(parents=True)
    (tmp_path / "configs" / "grpo.yaml").write_text(f"seed: 1\noptim:\n  lr: {rate}{comment}\n  betas: [0.9, 0.95]\n")
    script = tmp_path / "train_grpo.py"
    script.write_text(textwrap.dedent(SETTINGS_FILE_SCRIPT.format(path=path, change=change, lr=lr)))
    return script


def _settings_findings(script, select=("ALL",)):
    from rllint.runner import lint_files
    result = lint_files([str(script)], Settings(select=list(select)))
    assert result.errors == []
    return [(d.path.rsplit("/", 1)[-1], d.line, d.code) for d in result.diagnostics]


def test_rl601_a_rate_in_a_settings_file_the_script_reads_is_reported_in_that_file(tmp_path):
    """The YAML says `lr: 2e-5` (a string to YAML, which `float()` reads) two levels down; printing and
    logging the settings change nothing; the path is the author's absolute one, whose tail is the project's."""
    assert _settings_findings(_settings_project(tmp_path)) == [("grpo.yaml", 3, "RL601")]
    absolute = _settings_project(tmp_path / "other", path="/home/author/work/repo/configs/grpo.yaml")
    assert _settings_findings(absolute) == [("grpo.yaml", 3, "RL601")]


def test_rl601_look_alikes_of_a_settings_file_rate(tmp_path):
    # a helper out of sight that is handed the settings may change them
    assert _settings_findings(_settings_project(tmp_path / "a", change="apply_overrides(settings)")) == []
    assert _settings_findings(_settings_project(tmp_path / "b", rate="1e-6")) == []
    assert _settings_findings(_settings_project(tmp_path / "c", path="configs/missing.yaml")) == []
    assert _settings_findings(_settings_project(tmp_path / "d", comment="  # noqa: RL601")) == []
    # the file's rate is only logged; the optimizer gets another
    logged = _settings_project(tmp_path / "e", change='print("lr", settings["optim"]["lr"])', lr="1e-6")
    assert _settings_findings(logged) == []


def test_rl601_named_reports_a_settings_file_rate_once(tmp_path):
    """Named, RL601 also judges the YAML file itself (its broad form): one finding for the one place."""
    from rllint.runner import lint_files
    script = _settings_project(tmp_path)
    (tmp_path / "configs" / "grpo.yaml").write_text("num_generations: 8\noptim:\n  lr: 2e-5\n")
    result = lint_files([str(script), str(tmp_path / "configs" / "grpo.yaml")], Settings(select=["RL601"]))
    assert [(d.path.rsplit("/", 1)[-1], d.line) for d in result.diagnostics] == [("grpo.yaml", 3)]


_WORKER = """
    import torch
    from vllm import SamplingParams

    class PolicyWorker:
        def __init__(self, policy, budget=4096):
            self.policy = policy
            self.budget = budget

        def collect(self, prompts):
            params = SamplingParams(temperature=1.0, max_tokens=self.budget)
            return self.policy.generate(prompts, params)

        def update(self, logps, adv, opt):
            (-(logps * adv).mean()).backward()
            opt.step()
"""


def _worker_project(tmp_path, launcher: str):
    from rllint.analysis import summaries
    from rllint.runner import lint_files

    summaries.clear_cache()
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "worker.py").write_text(textwrap.dedent(_WORKER))
    (tmp_path / "launch.py").write_text(textwrap.dedent(launcher))
    result = lint_files([str(tmp_path / "worker.py")], Settings(select=["RL306"]))
    return [(os.path.basename(d.path), d.line, d.code) for d in result.diagnostics]


def test_rl306_a_limit_stored_by_a_constructor_is_what_the_constructing_module_passes(tmp_path):
    launcher = """
        import argparse
        from worker import PolicyWorker

        def main():
            cli = argparse.ArgumentParser()
            cli.add_argument("--gen-tokens", type=int, default={tokens})
            opts = cli.parse_args()
            return PolicyWorker(None, budget=opts.gen_tokens)

        main()
    """
    assert _worker_project(tmp_path, launcher.format(tokens=192)) == [("launch.py", 7, "RL306")]
    assert _worker_project(tmp_path, launcher.format(tokens=2048)) == []
    assert _worker_project(tmp_path, "from worker import PolicyWorker\nPolicyWorker(None)\n") == []
