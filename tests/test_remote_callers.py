"""The callers of a function are where its parameters come from: in its own file, or, for a module-level
function, a class's constructor or one of its methods, in the project files that import the module. Where a
caller passes something the engine cannot see, the parameters are unknown, never their defaults."""
from engine import Engine


ALGO = """
    import torch


    class Algo:
        def __init__(self, clip=0.2):
            self.clip = clip

        def loss(self, logits, ids=None, temperature=1.0):
            if ids is None:
                raise ValueError("ids are required")
            scaled = logits / temperature
            return scaled.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
"""


def test_a_method_called_from_another_module_receives_what_that_caller_passes(tmp_path):
    """`self.algo` is None in `__init__` and an `Algo` once `setup()` ran: the trainer's call of `loss` is a call
    of the method, so the method's own run sees the caller's logits (with gradient) and its temperature, and
    runs past the `raise` that a parameter's default would take."""
    trainer = """
    import torch
    from algo import Algo


    class Loop:
        def __init__(self, model):
            self.model = model
            self.algo = None

        def setup(self):
            self.algo = Algo(clip=0.3)

        def step(self, ids):
            logits = self.model(ids).logits
            return self.algo.loss(logits, ids=ids, temperature=0.7).mean()
    """
    engine = Engine.project(tmp_path, {"algo.py": ALGO, "trainer.py": trainer}, "algo.py")
    assert engine.facts("scaled", "type") == {"type": "tensor"}
    assert engine.facts("temperature", "number") == {"number": 0.7}


def test_a_method_called_from_another_module_on_an_unknown_receiver_has_unknown_parameters(tmp_path):
    """Where another module calls a method of that name on an object it does not know (it may be an `Algo`),
    the method's callers are out of sight: its parameters are not their defaults."""
    runner = """
    def run(worker, logits, ids):
        return worker.loss(logits, ids=ids, temperature=0.5)
    """
    importer = """
    from algo import Algo

    ALGO = Algo()
    """
    engine = Engine.project(tmp_path, {"algo.py": ALGO, "runner.py": runner + importer}, "algo.py")
    assert engine.facts("temperature", "number") == {"number": None}
    assert engine.facts("scaled", "type") == {"type": None}  # the logits are unknown, not absent


def test_a_subclass_in_another_module_puts_the_callers_of_its_methods_out_of_sight(tmp_path):
    """Instances of a subclass are made and used where this project does not show: even the call the subclass
    writes does not say what every caller passes, and the parameters are unknown, not their defaults."""
    child = """
    from algo import Algo


    class Scaled(Algo):
        def step(self, logits, ids):
            return self.loss(logits, ids=ids, temperature=0.7)
    """
    engine = Engine.project(tmp_path, {"algo.py": ALGO, "child.py": child}, "algo.py")
    assert engine.facts("temperature", "number") == {"number": None}


ENGINES = """
    import torch


    class Sampler:
        def __init__(self, model):
            self.model = model

        def rollout(self, ids, temperature=1.0):
            with torch.no_grad():
                out = self.model.generate(ids, do_sample=True, temperature=temperature)
            return out


    class Remote:
        def __init__(self, url):
            self.url = url

        def rollout(self, ids, temperature=1.0):
            return post(self.url, ids, temperature)


    def make_sampler(kind, model):
        if kind == "local":
            return Sampler(model)
        return Remote("http://localhost")
"""


def test_a_method_called_on_one_of_several_instances_is_called_by_that_site(tmp_path):
    """A factory returns one of two classes: in the module that imports it, the object is one of their
    instances, and `sampler.rollout(...)` calls the method of each. The sampler's temperature is what that call
    passes, not the parameter's default and not unknown."""
    trainer = """
    from engines import make_sampler


    def train(sampler, ids):
        return sampler.rollout(ids, temperature=0.6)


    sampler = make_sampler("local", None)
    train(sampler, None)
    """
    engine = Engine.project(tmp_path, {"engines.py": ENGINES, "trainer.py": trainer}, "engines.py")
    assert engine.facts("temperature", "number", occurrence=0) == {"number": 0.6}
    assert engine.facts("temperature", "number", occurrence=1) == {"number": 0.6}



HELPERS = """
    def scaled_logps(logits, temperature=1.0):
        scaled = logits / temperature
        return scaled.log_softmax(-1)
"""


def test_a_function_called_through_a_star_import_receives_what_that_caller_passes(tmp_path):
    """`from helpers import *` binds every name of the module: the importer's call is a call of the helper."""
    trainer = """
    from helpers import *


    def step(model, ids):
        return scaled_logps(model(ids).logits, temperature=0.6)
    """
    engine = Engine.project(tmp_path, {"helpers.py": HELPERS, "trainer.py": trainer}, "helpers.py")
    assert engine.facts("temperature", "number") == {"number": 0.6}


def test_a_star_imported_helper_is_followed_from_the_importer(tmp_path):
    """In the importing file, the star-imported name is the project's function: its call returns log-probs."""
    trainer = """
    import torch
    from helpers import *


    def step():
        logits = torch.randn(4, 8, 32, requires_grad=True)
        return scaled_logps(logits, temperature=0.6)
    """
    engine = Engine.project(tmp_path, {"helpers.py": HELPERS, "trainer.py": trainer}, "trainer.py")
    assert engine.facts("scaled_logps", "type") == {"type": "ref"}
    assert engine.facts("scaled_logps(logits, temperature=0.6)", "type", "rank") == {"type": "tensor", "rank": 3}


def test_an_unknown_name_does_not_load_a_star_imported_module(tmp_path):
    """`from helpers import *` binds what `helpers` defines; a name it does not define (a builtin, a typo) is
    answered from the module's summary: the module itself is not read for it (a package of star-import
    `__init__` files would otherwise load module after module for every `len` and `print`)."""
    from rllint.analysis import summaries

    importer = """
    from helpers import *


    def step(values):
        return len(values), sorted(values)
    """
    summaries.clear_cache()
    Engine.project(tmp_path, {"helpers.py": HELPERS, "trainer.py": importer}, "trainer.py")
    assert not any(path.endswith("helpers.py") for path, _ in summaries._LOADED)


SAMPLER = """
    def make_sampler(temperature):
        scale = temperature
        return scale
"""


def test_a_test_file_that_calls_the_function_with_a_mock_is_not_a_caller_of_the_run(tmp_path):
    """pytest's files call a function with toy values and mocks; what the run passes is what the project's own
    code passes (here 0.7), not its join with the test's value."""
    train = """
    from sampling import make_sampler

    SCALE = make_sampler(0.7)
    """
    test = """
    from unittest.mock import Mock
    from sampling import make_sampler


    def test_make_sampler():
        assert make_sampler(Mock()) is not None
    """
    files = {"sampling.py": SAMPLER, "train.py": train, "tests/test_sampling.py": test}
    engine = Engine.project(tmp_path, files, "sampling.py")
    assert engine.facts("scale", "number") == {"number": 0.7}


def test_a_function_of_test_code_keeps_its_callers_in_test_code(tmp_path):
    """A helper module of the tests is called by the tests: for it they are the run."""
    test = """
    from tests.helpers import make_sampler

    SCALE = make_sampler(0.7)
    """
    files = {"tests/helpers.py": SAMPLER, "tests/test_sampling.py": test}
    engine = Engine.project(tmp_path, files, "tests/helpers.py")
    assert engine.facts("scale", "number") == {"number": 0.7}
