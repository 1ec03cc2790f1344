"""A lambda bound to a local name and only called there is a function of its own: what its body calls is called
from wherever the name is called, with what that call passes; a lambda handed on (to `map`, a trainer, a list)
is called out of sight, and what its body calls gets unknown arguments, as before."""
from engine import Engine


def test_a_helper_called_through_a_local_lambda_receives_what_the_lambda_is_called_with():
    source = """
    import torch


    def score(model, ids, temperature):
        logits = model(ids).logits / temperature
        return logits.log_softmax(-1)


    class Evaluator:
        def __init__(self, model, runner=None):
            self.model = model
            self._runner = runner

        def step(self, ids):
            runner = self._runner
            if runner is None:
                runner = lambda m, x: score(m, x, temperature=0.7)
            return runner(self.model, ids)
    """
    engine = Engine(source)
    assert engine.facts("temperature", "number", occurrence=0) == {"number": 0.7}
    assert engine.facts("m", "type") == {"type": None}  # the model of an Evaluator nobody here builds


def test_a_lambda_reads_the_names_of_the_function_it_is_written_in():
    source = """
    import torch


    def scaled(logits, temperature):
        return logits / temperature


    def loop(model, ids):
        temperature = 0.5
        scale = lambda x: scaled(x, temperature)
        out = model.generate(ids, do_sample=True, temperature=temperature)
        return scale(model(out).logits).log_softmax(-1)
    """
    engine = Engine(source)
    assert engine.facts("logits / temperature", "type") == {"type": "tensor"}
    assert engine.facts("temperature", "number", occurrence=0) == {"number": 0.5}


def test_a_lambda_handed_on_leaves_what_its_body_calls_with_unknown_arguments():
    """`map(lambda ...)` and a lambda given to another function run where this file cannot see: the helper's
    parameter is not its default."""
    source = """
    def fmt(example, prefix="Q: "):
        return prefix + example


    def build(rows, dataset):
        keep = lambda row: fmt(row, prefix="A: ")
        dataset.map(keep)
        return list(map(lambda row: fmt(row), rows))
    """
    engine = Engine(source)
    assert engine.facts("prefix", "type", occurrence=0) == {"type": None}


def test_a_name_compared_with_none_is_not_handed_on():
    """`if fn is None` reads the name without passing the function anywhere: its callers stay in sight."""
    source = """
    def helper(x, scale=1.0):
        return x * scale


    def run(x):
        if helper is not None:
            return helper(x, scale=3.0)
    """
    engine = Engine(source)
    assert engine.facts("scale", "number", occurrence=0) == {"number": 3.0}


def test_a_name_the_lambda_shares_with_another_function_s_variable_is_not_the_lambda():
    """`self.runner = runner` in `__init__` reads another variable that happens to be spelled like the lambda's
    name in `step`: it hands nothing of `step` on, so the lambda's caller is in sight."""
    source = """
    def score(x, temperature):
        return x / temperature


    class Loop:
        def __init__(self, runner=None):
            self.runner = runner

        def step(self, x):
            runner = lambda value, t: score(value, temperature=t)
            return runner(x, 0.4)
    """
    engine = Engine(source)
    assert engine.facts("t", "number", occurrence=0) == {"number": 0.4}
    assert engine.facts("temperature", "number", occurrence=0) == {"number": 0.4}


def test_a_nested_function_returned_by_the_function_it_is_in_escapes():
    source = """
    def make(scale=2.0):
        def apply(x, factor=1.0):
            return x * factor
        apply(1.0, factor=scale)
        return apply
    """
    engine = Engine(source)
    assert engine.facts("factor", "number", occurrence=0) == {"number": None}
