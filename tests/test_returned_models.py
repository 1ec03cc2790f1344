"""Models a helper of another module builds and returns: each is its own object (a pair of a policy and its
frozen copy is two models), and one the helper froze is frozen where it is used."""
import textwrap

from engine import Engine

from rllint.runner import lint_files, lint_text
from rllint.settings import Settings

MODELS = """\
    import copy

    import torch
    from torch import nn


    class Policy(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.head = nn.Linear(width, width)

        def forward(self, x):
            return self.head(x)

        def detached_copy(self):
            twin = copy.deepcopy(self)
            twin.eval()
            {freeze}
            return twin


    def make_pair(width):
        actor = Policy(width)
        return actor, {second}
"""

TRAIN = """\
    import torch
    from models import make_pair


    class KLTrainer:
        def __init__(self, policy, ref_policy, beta):
            self.policy = policy
            self.ref_policy = ref_policy
            self.beta = beta


    def main():
        policy, reference = make_pair(8)
        optimizer = torch.optim.Adam({optimized}, lr=1e-5)
        trainer = KLTrainer(policy, ref_policy=reference, beta=0.05)
        return trainer, optimizer
"""

FROZEN = "twin.requires_grad_(False)"


def lint(tmp_path, freeze=FROZEN, second="actor.detached_copy()", optimized="policy.parameters()"):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "models.py").write_text(textwrap.dedent(MODELS).format(freeze=freeze, second=second))
    (tmp_path / "train.py").write_text(textwrap.dedent(TRAIN).replace("{optimized}", optimized))
    settings = Settings(select=["RL501"], root=tmp_path)
    result = lint_files([str(tmp_path / "train.py")], settings, isolated=False)
    return sorted((d.line, d.code, d.message.split(" ")[0]) for d in result.diagnostics)


def test_a_frozen_copy_returned_beside_the_policy_is_a_frozen_reference(tmp_path):
    assert lint(tmp_path) == []


def test_the_policy_returned_twice_is_still_the_policy(tmp_path):
    assert [code for _, code, _ in lint(tmp_path, second="actor")] == ["RL501"]


def test_a_copy_is_not_the_policy_but_its_parameters_may_still_train(tmp_path):
    """An unfrozen copy is another object (not "the policy itself"); handed to the optimizer too, it trains."""
    assert lint(tmp_path, freeze="pass") == []
    optimized = "list(policy.parameters()) + list(reference.parameters())"
    assert [code for _, code, _ in lint(tmp_path, freeze="pass", optimized=optimized)] == ["RL501"]


def test_the_pair_is_two_models_and_the_copy_is_frozen(tmp_path):
    from engine import Engine

    files = {"models.py": textwrap.dedent(MODELS).format(freeze=FROZEN, second="actor.detached_copy()"),
             "train.py": textwrap.dedent(TRAIN).replace("{optimized}", "policy.parameters()")}
    engine = Engine.project(tmp_path, files, "train.py")
    policy, reference = engine.value("policy", 0), engine.value("reference", 0)
    assert policy.facts["model"] is not reference.facts["model"]
    assert engine.flow.frozen(reference) is True and not engine.flow.frozen(policy)


def test_a_helper_of_this_module_called_twice_builds_two_models():
    """`load(path)` twice in one module is two objects, whatever node of the helper built them: the second is not
    the first (RL501 is silent on `model=load(p), ref_model=load(p)`), and training one says nothing of the other;
    a model a helper is given keeps its identity."""
    engine = Engine(SAME_HELPER)
    identity = [engine.value(name).facts["model"] for name in ("policy", "reference", "same")]
    assert identity[0] is not identity[1] and identity[2] is identity[0]
    assert engine.flow.trained(engine.value("policy")) and not engine.flow.trained(engine.value("reference"))
    found = lint_text(textwrap.dedent(SAME_HELPER), "train.py", Settings(select=["RL501"]))
    assert [d.code for d in found.diagnostics] == []


SAME_HELPER = """
import torch
from transformers import AutoModelForCausalLM
from trl import DPOTrainer

def load(path):
    return AutoModelForCausalLM.from_pretrained(path)

def moved(model):
    return model.to("cuda")

policy = load("org/sft")
reference = load("org/sft")
same = moved(policy)
optimizer = torch.optim.AdamW(policy.parameters())
DPOTrainer(model=load("org/sft"), ref_model=load("org/sft"))
"""
