"""`isinstance(x, dict)` of a model, tensor or tokenizer is false for every caller: what made the value proves its
kind. The branch it guards never runs, in a call and in the function's own context (which stands for every
caller); that context still reads the dead branch, so what it stores on `self` is seen, and keeps none of its
values."""
import textwrap

from engine import Engine

HELPER = """
    from transformers import AutoModelForCausalLM


    def score(model, ids):
        if isinstance(model, {classes}) and "model" in model:
            out = model["model"](ids)
        else:
            out = model(ids).logits
        return out


    score(AutoModelForCausalLM.from_pretrained("gpt2"), None)
"""


def test_a_model_is_no_builtin_container_in_every_caller():
    for classes in ("dict", "(dict, list)", "tuple"):
        engine = Engine(HELPER.format(classes=classes))
        assert engine.facts("isinstance(model, {})".format(classes), "type", "number") == \
            {"type": "bool", "number": 0.0}
        assert engine.facts("out", "content", occurrence=-1) == {"content": "logits"}  # the dead branch's unknown
        # is not joined


def test_a_class_that_may_hold_the_value_or_a_value_of_unknown_kind_decides_nothing():
    engine = Engine(HELPER.format(classes="torch.nn.Module"))
    assert engine.facts("out", "content", occurrence=-1) == {"content": None}
    unknown = HELPER.format(classes="dict").replace('AutoModelForCausalLM.from_pretrained("gpt2")', "load()")
    assert Engine(unknown).facts("out", "content", occurrence=-1) == {"content": None}
    shadowed = "dict = object\n" + textwrap.dedent(HELPER.format(classes="dict"))
    assert Engine(shadowed).facts("out", "content", occurrence=-1) == {"content": None}


def test_a_false_left_operand_is_the_value_of_and():
    engine = Engine("""
        import torch

        x = torch.zeros(3)
        both = isinstance(x, list) and len(x) > 2
    """)
    assert engine.facts("both", "type", "number") == {"type": "bool", "number": 0.0}


def test_a_store_in_a_dead_branch_is_still_a_store_of_the_attribute():
    """The branch is dead for every caller known here, but the attribute's value is the join of its stores: the
    one in the dead branch is read (a model, here), not left out as a store nothing interpreted."""
    engine = Engine("""
        import copy
        from transformers import AutoModelForCausalLM


        class Runner:
            def __init__(self, model):
                self.model = model
                self.old = copy.deepcopy(model)

            def sync(self):
                if isinstance(self.model, dict):
                    self.old = copy.deepcopy(self.model)

            def score(self, ids):
                return self.old(ids).logits


        Runner(AutoModelForCausalLM.from_pretrained("gpt2")).score(None)
    """)
    assert engine.facts("self.old(ids).logits", "content") == {"content": "logits"}
