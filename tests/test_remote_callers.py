"""The callers of a function are where its parameters come from: in its own file, or, for a module-level
function, a class's constructor or one of its methods, in the project files that import the module. Where a
caller passes something the engine cannot see, the parameters are unknown, never their defaults."""
import ast
import textwrap
from typing import Tuple

import libcst as cst

from rllint.analysis.flow import Flow
from rllint.runner import FileContext
from rllint.settings import Settings


def _project_flow(tmp_path, files: dict, main: str) -> Tuple[FileContext, Flow]:
    """The flow of `main` in a project of `files` (name -> source)."""
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    text = (tmp_path / main).read_text()
    file = FileContext(str(tmp_path / main), text, cst.parse_module(text), ast.parse(text), Settings(root=tmp_path))
    flow = file.fact(Flow)
    flow.analyze_all()
    return file, flow


def _facts_of(file: FileContext, flow: Flow, code: str, *names: str) -> dict:
    found = [n for n in flow.values if " ".join(file.module.code_for_node(n).split()) == code]
    assert found, f"no expression {code!r} was interpreted"
    held = flow.value(found[-1])
    return {name: held.facts.get(name) for name in names}


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
    file, flow = _project_flow(tmp_path, {"algo.py": ALGO, "trainer.py": trainer}, "algo.py")
    assert _facts_of(file, flow, "scaled", "type") == {"type": "tensor"}
    assert _facts_of(file, flow, "temperature", "number") == {"number": 0.7}


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
    file, flow = _project_flow(tmp_path, {"algo.py": ALGO, "runner.py": runner + importer}, "algo.py")
    assert _facts_of(file, flow, "temperature", "number") == {"number": None}
    assert _facts_of(file, flow, "scaled", "type") == {"type": None}  # the logits are unknown, not absent
