"""Values: the number an expression holds, where it is written, and the file's declarations."""
import ast
import textwrap

import libcst as cst
import pytest

from rllint.analysis.values import Values
from rllint.runner import FileContext
from rllint.settings import Settings


def analyse(source: str):
    text = textwrap.dedent(source)
    module = cst.parse_module(text)
    file = FileContext("example.py", text, module, ast.parse(text), Settings())
    return file, file.fact(Values)


class _Uses(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.args = []

    def visit_Call(self, node):
        if isinstance(node.func, cst.Name) and node.func.value == "use":
            self.args.append(node.args[0].value)


def resolved(source: str):
    """(number, line where it is written, origin) for the argument of each `use(...)` call, in order."""
    file, values = analyse(source)
    uses = _Uses()
    file.module.visit(uses)
    out = []
    for arg in uses.args:
        value = values.of(arg)
        out.append(None if value is None else (value.number, values.line(value.node), value.origin))
    return out


@pytest.mark.parametrize("literal, number", [
    ("2e-5", 2e-5), ("2E-05", 2e-5), ("1e+4", 1e4), ("1_000", 1000), ("0x10", 16), ("-1e-3", -1e-3),
    ("+3", 3), ("5 * 1e-6", 5 * 1e-6), ("3 * 1e-5", 3 * 1e-5), ("1 / 1000", 1e-3), ("2 ** -3", 0.125),
    ("(1e-5)", 1e-5), ("float('2e-5')", 2e-5), ("int(3.0)", 3), ("True", True),
])
def test_literals_and_arithmetic_are_written_where_they_stand(literal, number):
    assert resolved(f"use({literal})\n") == [(number, 1, "literal")]


@pytest.mark.parametrize("expr", ["x", "f(2)", "'2e-5'", "1j", "2 ** 1000", "1 / 0", "a if b else 1e-5", "[1e-5][0]"])
def test_what_the_source_does_not_show_is_none(expr):
    assert resolved(f"use({expr})\n") == [None]


def test_module_constants_and_their_arithmetic():
    assert resolved("""
        BASE = 1e-5
        SCALED = BASE * 2
        use(BASE)
        use(SCALED)
        use(-BASE)
    """) == [(1e-5, 2, "constant BASE"), (2e-5, 3, "constant BASE"), (-1e-5, 2, "constant BASE")]


def test_a_constant_assigned_twice_is_unknown():
    assert resolved("""
        LR = 1e-6
        if DEBUG:
            LR = 1e-4
        use(LR)
    """) == [None]


def test_parameter_default_is_used_inside_its_function_only():
    assert resolved("""
        def whiten(x, eps=1.0):
            return use(eps)

        def other(x, eps):
            return use(eps)

        def third(x, eps=1e-8):
            eps = eps * 2
            return use(eps)
    """) == [(1.0, 2, "default of parameter `eps` of whiten()"), None, None]


def test_local_assignment_and_shadowing_of_a_constant():
    assert resolved("""
        EPS = 1e-8

        def f(x):
            EPS = 0.5
            return use(EPS)

        def g(x):
            return use(EPS)

        def h(EPS):
            return use(EPS)
    """) == [(0.5, 5, "value assigned to EPS"), (1e-8, 2, "constant EPS"), None]


def test_nested_function_sees_the_enclosing_default():
    assert resolved("""
        def outer(lr=3e-5):
            def inner():
                return use(lr)
            return inner
    """) == [(3e-5, 2, "default of parameter `lr` of outer()")]


def test_argparse_defaults_by_dest():
    assert resolved("""
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--learning-rate", type=float, default=5e-5)
        parser.add_argument("--lr", "-l", dest="actor_lr", type=float, default=2e-5)
        parser.add_argument("--steps", type=int)
        args = parser.parse_args()
        use(args.learning_rate)
        use(float(args.actor_lr))
        use(args.steps)
        use(args.unknown)
    """) == [(5e-5, 4, "default of --learning_rate"), (2e-5, 5, "default of --actor_lr"), None, None]


def test_dataclass_fields_inheritance_and_overrides():
    assert resolved("""
        from dataclasses import dataclass, field

        @dataclass
        class Base:
            learning_rate: float = field(default=2e-5, metadata={"help": "lr"})
            beta: float = 0.04

        @dataclass
        class GRPO(Base):
            num_generations: int = 8

        @dataclass
        class Tuned(GRPO):
            learning_rate: float = 1e-6

        def run(cfg: GRPO, tuned: "Tuned"):
            use(cfg.learning_rate)
            use(tuned.learning_rate)
            use(Base.beta)
            built = Tuned()
            use(built.learning_rate)
            use(cfg.num_generations)
    """) == [(2e-5, 6, "default of Base.learning_rate"), (1e-6, 15, "default of Tuned.learning_rate"),
             (0.04, 7, "default of Base.beta"), (1e-6, 15, "default of Tuned.learning_rate"),
             (8, 11, "default of GRPO.num_generations")]


def test_an_attribute_of_an_unknown_object_needs_every_class_to_agree():
    assert resolved("""
        class A:
            lr = 1e-6
            beta = 0.1

        class B:
            lr = 1e-5
            beta = 0.1

        def f(config):
            use(config.lr)
            use(config.beta)
    """) == [None, (0.1, 4, "default of A.beta")]


def test_self_attributes_from_class_fields_and_init_defaults():
    assert resolved("""
        class Normalizer:
            floor = 0.1

            def __init__(self, eps=1e4):
                self.eps = eps

            def __call__(self, x):
                return x / (use(self.eps) + use(self.floor))
    """) == [(1e4, 5, "default of parameter `eps` of __init__()"), (0.1, 3, "default of Normalizer.floor")]


def test_environment_defaults():
    assert resolved("""
        import os
        from os import environ, getenv
        use(float(os.environ.get("LR", "2e-5")))
        use(float(getenv("LR", 3e-5)))
        use(environ.get("LR", default="1e-4"))
        use(os.environ.get("LR"))
        use(float(os.environ.get("LR", "auto")))
    """) == [(2e-5, 4, "default of environment variable LR"), (3e-5, 5, "default of environment variable LR"),
             (1e-4, 6, "default of environment variable LR"), None, None]


def test_names_the_value_was_reached_through():
    file, values = analyse("""
        class HP:
            critic_lr = 5e-5

        def f(hp: HP):
            lr = hp.critic_lr
            return use(lr)
    """)
    uses = _Uses()
    file.module.visit(uses)
    assert values.of(uses.args[0]).names == ("lr", "critic_lr")


def test_declarations_by_name_and_kind():
    file, values = analyse("""
        import argparse
        LR = 2e-5

        class Config:
            learning_rate: float = 1e-6
            name = "run"

        def main(lr=3e-5, steps=None):
            parser = argparse.ArgumentParser()
            parser.add_argument("--learning_rate", default=5e-5)
    """)
    table = [(d.kind, d.name, d.owner) for d in values.declarations()]
    assert table == [("constant", "LR", None), ("field", "learning_rate", "Config"), ("field", "name", "Config"),
                     ("parameter", "lr", "main"), ("parameter", "steps", "main"),
                     ("argparse", "learning_rate", None)]
    numbers = {(d.kind, d.name): getattr(values.value_of(d), "number", None) for d in values.declarations()}
    assert numbers == {("constant", "LR"): 2e-5, ("field", "learning_rate"): 1e-6, ("field", "name"): None,
                       ("parameter", "lr"): 3e-5, ("parameter", "steps"): None, ("argparse", "learning_rate"): 5e-5}
    assert [d.kind for d in values.declarations("learning_rate")] == ["field", "argparse"]
    assert values.subclasses("Config") == []


def test_assigned_gives_the_one_local_expression():
    file, values = analyse("""
        def f(xs):
            spread = xs.std()
            return use(spread)
    """)
    uses = _Uses()
    file.module.visit(uses)
    assert file.module.code_for_node(values.assigned(uses.args[0])) == "xs.std()"


def test_other_command_line_libraries():
    file, values = analyse("""
        import click
        import typer
        from absl import flags

        flags.DEFINE_float("learning_rate", 3e-5, "help")

        @click.command()
        @click.option("--kl-coef", type=float, default=0.05)
        def main(kl_coef, lr: float = typer.Option(2e-5, "--lr")):
            spark.read.option("header", True)
    """)
    table = [(d.kind, d.name, getattr(values.value_of(d), "number", None)) for d in values.declarations()]
    assert table == [("argparse", "learning_rate", 3e-5), ("argparse", "kl_coef", 0.05), ("parameter", "lr", 2e-5)]


def test_held_resolves_a_name_assigned_once_locally_or_at_module_level():
    file, values = analyse("""
        TABLE = [1, 2]
        TWICE = [1]
        TWICE = [2]

        def f(x):
            local = (x, x)
            use(local)
            use(TABLE)
            use(TWICE)
            use(x)
    """)
    finder = _Uses()
    file.module.visit(finder)
    held = [values.held(arg) for arg in finder.args]
    assert [file.module.code_for_node(h) if h is not None else None for h in held] == [
        "(x, x)", "[1, 2]", None, None]
