"""ModelRoles: which names and attributes hold the policy, the reference, the old policy, reward and value models."""
import ast
import textwrap

import libcst as cst
import pytest

from rllint.analysis.roles import OLD_POLICY, POLICY, REFERENCE, REWARD, VALUE, ModelRoles
from rllint.runner import FileContext
from rllint.settings import Settings


def roles_of(source: str, **options) -> ModelRoles:
    text = textwrap.dedent(source)
    file = FileContext("example.py", text, cst.parse_module(text), ast.parse(text), Settings(options=options))
    return file.fact(ModelRoles)


def code(roles: ModelRoles, node: cst.CSTNode) -> str:
    return " ".join(cst.Module([]).code_for_node(node).split())


def function(roles: ModelRoles, name: str) -> cst.FunctionDef:
    return roles.functions[name]


def role_in(roles: ModelRoles, function_name: str, expression: str):
    """The role of `expression` as it is written inside `function_name` (the node itself, found by its code)."""
    fn = function(roles, function_name)
    found = [n for n in _walk(fn) if isinstance(n, (cst.Name, cst.Attribute)) and code(roles, n) == expression]
    assert found, expression
    return roles.role(found[-1], fn)


def _walk(node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


@pytest.mark.parametrize("name, role", [
    ("ref_model", REFERENCE), ("ref_policy", REFERENCE), ("reference", REFERENCE), ("unwrapped_ref_model", REFERENCE),
    ("_ref_model", REFERENCE), ("old_policy", OLD_POLICY), ("behaviour_policy", OLD_POLICY),
    ("reward_model", REWARD), ("rm", REWARD), ("critic", VALUE), ("value_model", VALUE), ("v_head", VALUE),
    ("model", POLICY), ("policy", POLICY), ("actor", POLICY), ("unwrapped_model", POLICY),
    ("ref_logps", None), ("create_reference_model", None), ("get_ref_model", None), ("init_model", None),
    ("reward_fn", None), ("tokenizer", None), ("old_logprobs", None),
])
def test_vocabulary(name, role):
    assert roles_of("x = 1\n").vocabulary_role(name) == role


def test_options_extend_the_vocabularies():
    roles = roles_of("x = 1\n", **{"reference-model-names": ["anchor*"], "policy-model-names": ["pi"]})
    assert roles.vocabulary_role("anchor_net") == REFERENCE
    assert roles.vocabulary_role("pi") == POLICY
    assert roles.vocabulary_role("ref_model") == REFERENCE  # the built-ins stay


def test_roles_from_assignments_keywords_and_self_attributes():
    roles = roles_of("""
        import copy
        from trl import PPOTrainer, create_reference_model

        def build(net, base, lr):
            anchor = create_reference_model(net)
            alias = net
            trainer = PPOTrainer(model=net, ref_model=base, value_model=head)
            return anchor, alias, base, head

        class Trainer:
            def __init__(self, model):
                self.teacher = create_reference_model(model)
                self.learner = self.unwrap(model)

            def step(self, batch):
                return self.teacher(batch), self.learner(batch), copy(batch)
    """)
    assert role_in(roles, "build", "anchor") == REFERENCE
    assert role_in(roles, "build", "alias") is None  # `net` has no role to pass on
    assert role_in(roles, "build", "base") == REFERENCE
    assert role_in(roles, "build", "head") == VALUE
    assert role_in(roles, "step", "self.teacher") == REFERENCE
    assert role_in(roles, "step", "self.learner") is None
    assert role_in(roles, "step", "copy") is None  # imported names are not models


def test_aliases_of_the_policy_through_wrappers():
    roles = roles_of("""
        def setup(policy, accelerator):
            model = accelerator.unwrap_model(policy).eval()
            ref_model = model
            return ref_model

        class T:
            def __init__(self, model):
                self.model = model
                self.ref = self.model.module
    """)
    assert [(code(roles, stmt), target, source) for stmt, target, source in roles.aliases] == [
        ("ref_model = model", "ref_model", "model"),
        ("self.ref = self.model.module", "self.ref", "self.model"),
    ]


def test_peft_references_are_not_aliases():
    roles = roles_of("""
        def setup(model, peft_config, use_lora):
            if peft_config is not None:
                ref_model = model
            ref_policy = model if use_lora else None
            return ref_model, ref_policy
    """)
    assert roles.aliases == []


def test_builds_and_how_they_are_frozen():
    roles = roles_of("""
        import copy
        from transformers import AutoModelForCausalLM

        def loose(policy):
            ref_model = copy.deepcopy(policy).eval()
            return ref_model

        def chained(policy):
            ref_model = copy.deepcopy(policy).requires_grad_(False)
            return ref_model

        def looped():
            reference = AutoModelForCausalLM.from_pretrained("m")
            for p in reference.parameters():
                p.requires_grad_(False)
            return reference

        def handed_off(policy, trainer_cls):
            ref_model = AutoModelForCausalLM.from_pretrained("m")
            return trainer_cls(policy, ref_model=ref_model)

        def run_by_helper(policy, batch):
            ref_model = copy.deepcopy(policy)
            return logps(ref_model, batch)

        def logps(model, batch):
            return model(batch).logits

        class T:
            def __init__(self, policy):
                self.ref_policy = copy.deepcopy(policy)

            def freeze(self):
                self.ref_policy.requires_grad_(False)
    """)
    found = sorted((b.key, b.how, b.frozen) for b in roles.builds())
    assert found == [
        ("ref_model", "deepcopy(...)", False),   # loose
        ("ref_model", "deepcopy(...)", False),   # run_by_helper: `logps` only runs it
        ("ref_model", "deepcopy(...)", True),    # chained
        ("ref_model", "from_pretrained(...)", True),  # handed to a trainer that may freeze it
        ("reference", "from_pretrained(...)", True),
        ("self.ref_policy", "deepcopy(...)", True),  # frozen in another method
    ]
    assert roles.runs_model["logps"] == ("model",)


def test_reference_parameters_given_to_an_optimizer():
    roles = roles_of("""
        import torch

        def opt(policy, ref_model, reward_model):
            a = torch.optim.AdamW(list(policy.parameters()) + list(ref_model.parameters()), lr=1e-6)
            b = torch.optim.SGD(reward_model.parameters(), lr=1e-5)
            return a, b
    """)
    assert [(code(roles, call), owner) for call, owner in roles.optimized] == [
        ("ref_model.parameters()", "ref_model")]
    assert roles.is_trained("reward_model") and roles.is_trained("policy")
    assert not roles.is_trained("critic")


def test_local_functions_are_not_models():
    roles = roles_of("""
        def reward_model(texts):
            return [len(t) for t in texts]

        def score(texts):
            return reward_model(texts)
    """)
    assert role_in(roles, "score", "reward_model") is None
