"""A value that is a number on some paths and None on others (a parameter one call leaves at its `None` default,
a setting that may be unset) is an `optional` number: wherever arithmetic uses it, it is the number, since None
would raise there. Numbers that differ stay numbers; None joined with a tensor or a model stays what it was."""
from engine import Engine


def test_a_parameter_one_call_leaves_none_is_an_optional_number():
    engine = Engine("""
        import torch

        def perturb(x, scale=None, positions_only=False):
            norm = torch.norm(x, dim=-1)
            if positions_only:
                return norm > norm.mean()
            return scale / (1 + norm)

        def run(x):
            where = perturb(x, positions_only=True)
            return perturb(x, 0.05) * where
    """)
    assert engine.facts("scale", "type", "optional") == {"type": None, "optional": "number"}


def test_a_number_set_on_one_branch_only_is_optional_and_two_numbers_stay_a_number():
    engine = Engine("""
        def pick(flag):
            step = None
            if flag:
                step = 0.5
            both = 0.1 if flag else 0.2
            return step, both
    """)
    assert engine.facts("step", "type", "optional") == {"type": None, "optional": "number"}
    assert engine.facts("both", "type", "optional") == {"type": "number", "optional": None}


def test_none_joined_with_a_string_is_not_a_number():
    engine = Engine("""
        def pick(flag):
            name = None
            if flag:
                name = "gpt2"
            return name
    """)
    assert engine.facts("name", "optional") == {"optional": None}
