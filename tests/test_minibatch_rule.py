"""RL211: advantages normalised over a small minibatch inside the update loop, with the minibatch's size read
from every layer of configuration, and the look-alikes that must stay quiet."""
import textwrap

from rllint.runner import lint_files, lint_text
from rllint.settings import Settings

LOOP = """
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM

policy = AutoModelForCausalLM.from_pretrained("gpt2")
optimizer = torch.optim.SGD(policy.parameters(), lr=1e-6)


def logps(ids):
    return F.log_softmax(policy(ids).logits, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


def step(ids, old, adv, size, group=4):
    for s in range(0, len(ids), size):
        part = adv[s:s + size]
        part = (part - part.mean()) / (part.std() + 1e-8)
        ratio = torch.exp(logps(ids[s:s + size]) - old[s:s + size])
        (-(ratio * part.unsqueeze(-1)).mean()).backward()
        optimizer.step()
"""


def lint(tmp_path, files, main="train.py", **options):
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = lint_files([str(tmp_path / name) for name in files if name.endswith(".py")],
                        Settings(select=["RL211"], options=options))
    return [(d.line, d.message.split(" on every pass")[0]) for d in result.diagnostics
            if d.path.endswith(main)] + [(d.path, d.line) for d in result.diagnostics if not d.path.endswith(main)]


def text_findings(source, **options):
    result = lint_text(textwrap.dedent(source), "train.py", Settings(select=["RL211"], options=options))
    return [(d.line, d.message.split(" on every pass")[0]) for d in result.diagnostics]


def test_a_size_passed_as_a_literal_by_keyword_and_the_threshold_option():
    source = LOOP + "\nstep(ids=None, old=None, adv=None, size=3)\n"
    assert text_findings(source) == [
        (17, "`(part - part.mean())` normalises advantages over a minibatch of 3 samples (literal)")]
    assert text_findings(source, **{"min-advantage-batch": 3}) == []  # 3 is no longer below the bound
    assert text_findings(LOOP + "\nstep(None, None, None, 8)\n") == []  # 8 samples: enough


def test_a_size_that_is_not_known_is_silent():
    assert text_findings(LOOP) == []


def test_a_size_from_a_yaml_file(tmp_path):
    files = {"config.yaml": "ppo:\n  mini_batch_size: 2\n",
             "train.py": LOOP + """
import yaml
with open("config.yaml") as handle:
    config = yaml.safe_load(handle)
step(None, None, None, config["ppo"]["mini_batch_size"])
"""}
    ((line, message),) = lint(tmp_path, files)
    assert line == 17 and "2 samples (ppo.mini_batch_size in config.yaml)" in message


def test_a_launch_flag_sets_the_size_that_the_argparse_default_would_not(tmp_path):
    script = LOOP + """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--mini_batch_size", type=int, default=64)
args = parser.parse_args()
step(None, None, None, args.mini_batch_size)
"""
    assert lint(tmp_path, {"train.py": script}) == []  # 64 by default
    found = lint(tmp_path, {"train.py": script, "run.sh": "python train.py --mini_batch_size 1\n"})
    assert [line for line, _ in found] == [17] and "1 sample " in found[0][1]


def test_a_whitening_helper_of_another_module_is_reported_at_its_call(tmp_path):
    files = {
        "normalize.py": """
        def standardize(x, eps=1e-6):
            centred = x - x.mean()
            return centred / (x.std() + eps)
        """,
        "train.py": """
        import torch
        import torch.nn.functional as F
        from transformers import AutoModelForCausalLM
        from normalize import standardize

        class Learner:
            def __init__(self):
                self.policy = AutoModelForCausalLM.from_pretrained("gpt2")
                self.optimizer = torch.optim.SGD(self.policy.parameters(), lr=1e-6)

            def learn(self, ids, old, adv):
                perm = torch.randperm(len(ids))
                for i in range(len(ids) // 2):
                    idx = perm[i * 2:(i + 1) * 2]
                    weights = standardize(adv[idx])
                    logits = self.policy(ids[idx]).logits
                    new = F.log_softmax(logits, dim=-1).gather(-1, ids[idx].unsqueeze(-1)).squeeze(-1)
                    loss = -(torch.exp(new - old[idx]) * weights.unsqueeze(-1)).mean()
                    loss.backward()
                    self.optimizer.step()
        """}
    assert lint(tmp_path, files) == [(16, "`standardize(adv[idx])` normalises advantages over a minibatch of 2 "
                                          "samples (literal)")]


def test_a_dataloader_without_a_batch_size_and_not_one_row_per_pass():
    source = """
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader
    from transformers import AutoModelForCausalLM

    policy = AutoModelForCausalLM.from_pretrained("gpt2")

    def per_sample(ids, old, adv):
        for i in range(len(ids)):
            a = adv[i]
            a = (a - a.mean()) / (a.std() + 1e-8)
            new = F.log_softmax(policy(ids[i]).logits, dim=-1).gather(-1, ids[i].unsqueeze(-1)).squeeze(-1)
            (-(torch.exp(new - old[i]) * a).mean()).backward()

    def per_batch(rollout):
        for batch in DataLoader(rollout):
            a = batch["advantages"]
            a = a - a.mean()
            new = F.log_softmax(policy(batch["ids"]).logits, dim=-1).gather(-1, batch["ids"].unsqueeze(-1))
            (-(torch.exp(new.squeeze(-1) - batch["old"]) * a).mean()).backward()
    """
    assert [(line, message.split(" normalises")[0]) for line, message in text_findings(source)] == [
        (19, "`a - a.mean()`")]  # a row (line 12) may hold a prompt's whole group: its size is not known


def test_parts_of_rows_laid_out_in_groups_may_be_groups_and_are_not_reported():
    source = LOOP.replace("part = adv[s:s + size]", "part = adv.repeat_interleave(group)[s:s + size]") + \
        "\nstep(None, None, None, 4)\n"
    assert text_findings(source.replace("adv.repeat_interleave(group)", "adv")) != []
    assert text_findings(source) == []


def test_a_loop_that_takes_no_step_computes_advantages_and_is_not_reported():
    source = LOOP.replace("        (-(ratio * part.unsqueeze(-1)).mean()).backward()\n", "") + \
        "\nstep(None, None, None, 2)\n"
    assert text_findings(source) == []


TRAINER = """
import argparse
import torch
import torch.nn.functional as F
from trl import GRPOConfig, GRPOTrainer

parser = argparse.ArgumentParser()
parser.add_argument("--per_device_batch", type=int, default=4)
args = parser.parse_args()


class Rewhitened(GRPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        ids = inputs["completion_ids"]
        logps = F.log_softmax(model(ids).logits[:, :-1], dim=-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
        adv = inputs["advantages"]
        adv = adv - adv.mean()
        return -(torch.exp(logps - inputs["old_per_token_logps"][:, 1:]) * adv[:, None]).mean()


CONFIG
"""


def test_a_trl_trainer_s_compute_loss_gets_its_per_device_batch_from_each_construction():
    built = "Rewhitened(model='m', reward_funcs=[], args=GRPOConfig(output_dir='o', {}))"
    flagged = text_findings(TRAINER.replace("CONFIG", built.format("per_device_train_batch_size=args.per_device_batch")))
    assert flagged == [(17, "`adv - adv.mean()` normalises advantages over a minibatch of 4 samples "
                            "(per_device_train_batch_size, default of --per_device_batch)")]
    assert text_findings(TRAINER.replace("CONFIG", built.format(""))) == []  # GRPOConfig's default: 8
    twice = built.format("per_device_train_batch_size=2") + "\n" + built.format("per_device_train_batch_size=32")
    assert text_findings(TRAINER.replace("CONFIG", twice)) == []  # two runs that disagree: not known
