"""Which optimizer or trainer a learning rate reaches (rllint.analysis.rates), and RL601 asking it."""
import textwrap

from rllint.runner import lint_text
from rllint.settings import Settings

HEAD = "import torch\nfrom trl import GRPOConfig, GRPOTrainer\n"


def rl601(body: str, path: str = "train.py"):
    text = HEAD + textwrap.dedent(body).lstrip("\n") + "\ntrainer = GRPOTrainer(model=None, args=None)\ntrainer.train()\n"
    return [d.line for d in lint_text(text, path, Settings(select=["RL601"])).diagnostics]


def test_policy_optimizer_and_rl_config_reach_the_policy():
    assert rl601("""
        LR = 3e-5
        def build(policy):
            return torch.optim.AdamW(policy.parameters(), lr=LR)
    """) == [3]
    assert rl601("cfg = GRPOConfig(output_dir='o', learning_rate=2e-5)\n") == [3]


def test_sgd_critic_and_bare_tensor_optimizers_are_elsewhere():
    assert rl601("""
        LR = 2e-5
        ALPHA_LR = 3e-4
        def build(policy, critic, log_alpha, args):
            sgd = torch.optim.SGD(policy.parameters(), lr=LR)
            value = torch.optim.AdamW(critic.parameters(), lr=1e-4)
            temperature = torch.optim.Adam([log_alpha], lr=ALPHA_LR)
            scalar = torch.optim.Adam([self_scale], lr=1e-2)
            return sgd, value, temperature, scalar
    """) == []


def test_a_rate_used_by_the_policy_and_elsewhere_counts():
    assert rl601("""
        LR = 2e-5
        def build(policy):
            return torch.optim.SGD(policy.parameters(), lr=LR), torch.optim.AdamW(policy.parameters(), lr=LR)
    """) == [3]


def test_metrics_and_saved_trainer_state_are_records():
    assert rl601("""
        def log(wandb, step, loss):
            wandb.log({"learning_rate": 3e-5, "loss": loss})
            trainer_state = {"log_history": [{"step": step, "learning_rate": 4e-5}]}
            metrics = {"lr": 5e-5}
            return trainer_state, metrics
    """) == []
    assert rl601("settings = {'actor': {'optim': {'lr': 3e-5}}}\n") == [3]  # a config dict still counts


def test_a_parameter_default_counts_only_where_it_reaches_the_policy():
    assert rl601("""
        class Algorithm(Base):
            def __init__(self, policy, learning_rate=3e-4):
                super().__init__(policy, learning_rate=learning_rate)
    """) == []
    assert rl601("""
        def make(policy, lr=3e-5):
            return torch.optim.AdamW(policy.parameters(), lr=lr)
    """) == [3]


def test_a_shell_launch_of_a_script_that_builds_lora_is_judged_by_the_lora_limit(tmp_path):
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "train_ppo.py"
    launcher = tmp_path / "launch" / "run_ppo.sh"
    launcher.parent.mkdir()
    launcher.write_text("python scripts/train_ppo.py --learning_rate 8e-5\n")

    def findings():
        result = lint_text(launcher.read_text(), str(launcher), Settings(select=["RL601"]))
        return [d.line for d in result.diagnostics]

    script.write_text("from trl import PPOTrainer\nmodel = load()\n")
    assert findings() == [1]
    script.write_text("from peft import LoraConfig\nfrom trl import PPOTrainer\npeft = LoraConfig(r=16)\n")
    assert findings() == []
    launcher.write_text("python scripts/train_ppo.py --learning_rate 8e-5 --lora_rank 0\n")
    assert findings() == [1]  # the launcher switches LoRA off


def test_a_network_trained_from_scratch_is_not_a_pretrained_policy():
    body = """
        import torch.nn as nn
        class PolicyNet(nn.Module):
            pass
        def main():
            policy = PolicyNet().to("cpu")
            return torch.optim.Adam(policy.parameters(), lr=3e-4)
    """
    assert rl601(body) == []
    loaded = body.replace("return torch", "policy.load_state_dict(torch.load('ckpt.pt'))\n            return torch")
    assert rl601(loaded) == [9]  # pretrained weights are loaded

