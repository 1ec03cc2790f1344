"""What a `from_pretrained` load says of its weights (`loads`: checkpoint, revision, dtype, quantization, as the
engine resolves each argument), which models a KL anchors the policy to (`Flow.anchors`), and RL509 on them."""
import textwrap

from rllint.analysis.domains.models import differences
from rllint.runner import lint_files, lint_text
from rllint.settings import Settings
from engine import Engine


def settings(engine, code):
    """The load settings of the model an expression holds, by key."""
    return {key: held.facts["setting"] for key, held in engine.value(code).facts.get("loads") or ()}


# ---- load facts ----

def test_keywords_and_a_dict_of_known_keys_give_the_same_settings():
    engine = Engine("""
    import torch
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig
    kwargs = {"torch_dtype": torch.bfloat16, "revision": "v1"}
    a = AutoModelForCausalLM.from_pretrained("org/m", torch_dtype=torch.bfloat16, revision="v1")
    b = AutoModelForCausalLM.from_pretrained(pretrained_model_name_or_path="org/m", **kwargs)
    c = AutoModelForCausalLM.from_pretrained("org/m/", dtype="bfloat16", load_in_8bit=True)
    d = AutoModelForCausalLM.from_pretrained("org/m", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    e = AutoModelForCausalLM.from_pretrained("org/m", quantization_config=None, load_in_4bit=False)
    """)
    assert settings(engine, "a") == {"checkpoint": "org/m", "revision": "v1", "dtype": "bfloat16", "quantization": 0}
    # keys the mapping does not show are not known: it may hold more than the engine sees
    assert settings(engine, "b") == {"checkpoint": "org/m", "revision": "v1", "dtype": "bfloat16"}
    assert settings(engine, "c") == {"checkpoint": "org/m", "revision": "main", "dtype": "bfloat16", "quantization": 8}
    assert settings(engine, "d")["quantization"] == 4
    assert settings(engine, "e")["quantization"] == 0


def test_the_checkpoint_comes_from_an_argparse_default_and_a_dataclass_field():
    engine = Engine("""
    import argparse
    from dataclasses import dataclass
    from transformers import AutoModelForCausalLM

    @dataclass
    class Config:
        ref_path: str = "org/base"

    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=str, default="org/sft")
    args = parser.parse_args()
    policy = AutoModelForCausalLM.from_pretrained(args.model)
    reference = AutoModelForCausalLM.from_pretrained(Config().ref_path)
    """)
    policy, reference = engine.value("policy"), engine.value("reference")
    assert settings(engine, "policy")["checkpoint"] == "org/sft"
    assert dict(policy.facts["loads"])["checkpoint"].facts["origin"] == "default of --model"
    assert settings(engine, "reference")["checkpoint"] == "org/base"
    assert [key for key, _, _ in differences(policy, reference)] == ["checkpoint"]


def test_the_checkpoint_comes_from_a_yaml_file_and_a_launch_flag(tmp_path):
    (tmp_path / "config.yaml").write_text("model:\n  path: org/sft\n  ref_path: org/sft\n")
    (tmp_path / "run.sh").write_text("python train.py --ref org/base\n")
    engine = Engine.project(tmp_path, {"train.py": """
    import argparse
    import yaml
    from transformers import AutoModelForCausalLM
    parser = argparse.ArgumentParser()
    parser.add_argument("--ref", default="org/sft")
    args = parser.parse_args()
    config = yaml.safe_load(open("config.yaml"))
    policy = AutoModelForCausalLM.from_pretrained(config["model"]["path"])
    same = AutoModelForCausalLM.from_pretrained(config["model"]["ref_path"])
    launched = AutoModelForCausalLM.from_pretrained(args.ref)
    """}, "train.py")
    assert settings(engine, "policy")["checkpoint"] == "org/sft"
    assert settings(engine, "same")["checkpoint"] == "org/sft"
    assert settings(engine, "launched")["checkpoint"] == "org/base"  # the launch's flag, not the default


def test_an_unknown_argument_is_no_setting_and_casts_change_the_dtype():
    engine = Engine("""
    import torch
    from transformers import AutoModelForCausalLM

    def load(path, **extra):
        return AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32, **extra)

    def main(device):
        m = AutoModelForCausalLM.from_pretrained("org/m", torch_dtype=torch.float32).half().to("cuda")
        n = AutoModelForCausalLM.from_pretrained("org/m", torch_dtype=torch.float32).to(device)
        k = AutoModelForCausalLM.from_pretrained("org/m").to(torch.bfloat16)
    """)
    assert "checkpoint" not in settings(engine, "AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32, **extra)")
    assert "quantization" not in settings(engine, "AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32, **extra)")
    assert settings(engine, "m")["dtype"] == "float16"
    assert "dtype" not in settings(engine, "n")  # `.to(x)` of a value the engine does not know may cast
    assert settings(engine, "k")["dtype"] == "bfloat16"


# ---- which model the KL anchors to ----

def test_a_trainer_anchors_its_model_to_its_ref_model_and_a_kl_to_the_fixed_side():
    engine = Engine("""
    import torch
    from transformers import AutoModelForCausalLM
    from trl import DPOTrainer

    def logps(model, ids):
        return model(ids).logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)

    def dpo():
        policy = AutoModelForCausalLM.from_pretrained("org/a")
        DPOTrainer(model=policy, ref_model=AutoModelForCausalLM.from_pretrained("org/b"))

    def loop(batches):
        actor = AutoModelForCausalLM.from_pretrained("org/a")
        anchor = AutoModelForCausalLM.from_pretrained("org/c")
        judge = AutoModelForCausalLM.from_pretrained("org/d")
        opt = torch.optim.Adam(actor.parameters())
        for ids, adv in batches:
            with torch.no_grad():
                fixed = logps(anchor, ids)
                old = logps(actor, ids)
                score = judge(ids).logits[:, -1, 0]
            new = logps(actor, ids)
            loss = (-(new - old).exp() * adv * score + (new - fixed)).mean()
            loss.backward()
    """)
    pairs = sorted((settings_of(p), settings_of(r)) for _, p, r in engine.flow.anchors())
    assert pairs == [("org/a", "org/b"), ("org/a", "org/c")]  # not the old policy (the same model), not the judge


def settings_of(model):
    return dict(model.facts["loads"])["checkpoint"].facts["setting"]


# ---- RL509 ----

SELECT = Settings(select=["ALL"], options={"rl-context": "always"})


def rl509(source, settings=SELECT):
    result = lint_text(textwrap.dedent(source), "train.py", settings)
    return [(d.line, d.message) for d in result.diagnostics if d.code == "RL509"]


def test_a_quantized_reference_beside_a_full_precision_policy_and_the_reverse():
    found = rl509("""
    import torch
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig
    from trl import DPOTrainer
    NAME = "org/sft"
    policy = AutoModelForCausalLM.from_pretrained(NAME, load_in_4bit=True)
    reference = AutoModelForCausalLM.from_pretrained(NAME)
    DPOTrainer(model=policy, ref_model=reference)
    """)
    assert [line for line, _ in found] == [7]
    assert "not quantized while the policy is quantized to 4 bits" in found[0][1]


def test_a_helper_of_another_module_that_loads_both_from_two_settings(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "models.py").write_text(textwrap.dedent("""
    from transformers import AutoModelForCausalLM

    def load(path, quantized=False):
        return AutoModelForCausalLM.from_pretrained(path, load_in_8bit=quantized)
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
    import torch
    from models import load

    class Loop:
        def __init__(self, path):
            self.policy = load(path)
            self.ref = load(path, quantized=True)
            self.same = load(path)
            self.opt = torch.optim.AdamW(self.policy.parameters())

        def logps(self, model, ids):
            return model(ids).logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)

        def step(self, ids, adv):
            with torch.no_grad():
                ref = self.logps(self.ref, ids)
                same = self.logps(self.same, ids)
            logp = self.logps(self.policy, ids)
            loss = (-logp * adv + (logp - ref) + 0.1 * (logp - same)).mean()
            loss.backward()

    Loop("org/sft")
    """))
    result = lint_files([str(tmp_path / "train.py")], SELECT)
    found = [(d.line, d.message) for d in result.diagnostics if d.code == "RL509"]
    assert [line for line, _ in found] == [8]  # the call that loads it quantized; not the same load twice
    assert "quantized to 8 bits" in found[0][1]


def test_look_alikes_are_silent():
    assert rl509("""
    import copy
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification
    from trl import DPOTrainer, PPOTrainer, create_reference_model

    SFT = "runs/sft"

    def load(path):
        return AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.bfloat16)

    def same_through_a_helper():
        DPOTrainer(model=load(SFT), ref_model=load(SFT))

    def copies():
        policy = AutoModelForCausalLM.from_pretrained(SFT, load_in_8bit=False)
        DPOTrainer(model=policy, ref_model=copy.deepcopy(policy))
        PPOTrainer(model=policy, ref_model=create_reference_model(policy),
                   reward_model=AutoModelForSequenceClassification.from_pretrained("runs/rm", load_in_8bit=True),
                   value_model=AutoModelForSequenceClassification.from_pretrained("runs/rm", load_in_4bit=True))

    def peft_and_none():
        policy = AutoModelForCausalLM.from_pretrained(SFT)
        DPOTrainer(model=policy, ref_model=None, peft_config=LoraConfig(r=8))

    def unknown(reference_path, **loading):
        policy = AutoModelForCausalLM.from_pretrained(SFT)
        DPOTrainer(model=policy, ref_model=AutoModelForCausalLM.from_pretrained(reference_path))
        DPOTrainer(model=policy, ref_model=AutoModelForCausalLM.from_pretrained(SFT, **loading))
    """) == []


def test_dtypes_alone_are_reported_only_when_the_rule_is_named():
    source = """
    import torch
    from transformers import AutoModelForCausalLM
    from trl import DPOTrainer
    policy = AutoModelForCausalLM.from_pretrained("org/sft", torch_dtype=torch.bfloat16)
    reference = AutoModelForCausalLM.from_pretrained("org/sft", torch_dtype=torch.float16)
    DPOTrainer(model=policy, ref_model=reference)
    """
    assert rl509(source) == []
    named = rl509(source, Settings(select=["RL509"], options={"rl-context": "always"}))
    assert [line for line, _ in named] == [6]
    assert "in dtype `float16` while the policy is in dtype `bfloat16`" in named[0][1]


def test_trl_s_older_rloo_trainer_anchors_its_policy_to_its_ref_policy():
    found = rl509("""
    from transformers import AutoModelForCausalLM
    from trl import RLOOConfig, RLOOTrainer
    policy = AutoModelForCausalLM.from_pretrained("runs/sft")
    ref_policy = AutoModelForCausalLM.from_pretrained("runs/sft", revision="step-100")
    RLOOTrainer(config=RLOOConfig(output_dir="out"), policy=policy, ref_policy=ref_policy, reward_model=policy)
    """)
    assert [line for line, _ in found] == [5]


def test_only_the_loaders_of_transformers_and_trl_have_known_settings():
    """unsloth's `FastLanguageModel.from_pretrained` loads in 4 bits unless told otherwise, and a project's own
    `from_pretrained` means what it says: neither has the defaults of transformers."""
    engine = Engine("""
    from unsloth import FastLanguageModel
    from trl import AutoModelForCausalLMWithValueHead
    from mymodels import AutoModelForCausalLM
    fast = FastLanguageModel.from_pretrained(model_name="org/m")
    own = AutoModelForCausalLM.from_pretrained("org/m")
    head = AutoModelForCausalLMWithValueHead.from_pretrained("org/m", load_in_8bit=True)
    """)
    assert settings(engine, "fast") == {} and settings(engine, "own") == {}
    assert settings(engine, "head")["quantization"] == 8


# ---- a project's model class, loaded by the loader it inherits ----------------------------------------------

_PROJECT_MODELS = """
    import torch
    from torch import nn
    from transformers import PreTrainedModel


    class Policy(PreTrainedModel):
        def forward(self, input_ids):
            return self.lm_head(input_ids)


    class Scorer(nn.Module):
        def forward(self, x):
            return x


    class Cached(PreTrainedModel):
        @classmethod
        def from_pretrained(cls, path):
            return {"path": path}
"""


def test_a_project_model_class_loaded_by_its_inherited_from_pretrained_is_a_model_that_generates():
    engine = Engine(_PROJECT_MODELS + """
    policy = Policy.from_pretrained("org/m")
    out = policy.generate(torch.zeros(1, 4, dtype=torch.long), do_sample=True)
    """)
    assert engine.facts("policy", "type", "pretrained") == {"type": "model", "pretrained": True}
    assert engine.value("policy").facts["cls"].name == "Policy"
    assert [engine.code(event.node) for event in engine.flow.generations] == [
        "policy.generate(torch.zeros(1, 4, dtype=torch.long), do_sample=True)"]


def test_look_alikes_of_an_inherited_loader_and_generate():
    """A class that defines its own `from_pretrained` returns what its body does; a plain `nn.Module` subclass has
    no `generate` of transformers (one it calls is its own or unknown)."""
    engine = Engine(_PROJECT_MODELS + """
    cached = Cached.from_pretrained("org/m")
    scorer = Scorer()
    scored = scorer.generate(torch.zeros(1, 4))
    """)
    assert engine.value("cached").facts.get("type") != "model"  # its own loader: not the library's
    assert engine.facts("scorer", "type") == {"type": "model"}
    assert engine.flow.generations == []


def test_a_model_class_of_another_module_loaded_by_its_inherited_from_pretrained(tmp_path):
    engine = Engine.project(tmp_path, {"pkg/__init__.py": "", "pkg/model.py": _PROJECT_MODELS, "train.py": """
    from pkg.model import Policy

    def rollout(enc):
        policy = Policy.from_pretrained("org/m")
        return policy.generate(**enc, do_sample=True)
    """}, "train.py")
    assert engine.facts("policy", "type") == {"type": "model"}
    assert len(engine.flow.generations) == 1
