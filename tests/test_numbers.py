"""NumberReads: which reads of an assignment expression's target use it as a number."""
import ast
import textwrap

import libcst as cst

from rllint.analysis.numbers import NumberReads
from rllint.analysis.syntax import walk
from rllint.runner import FileContext
from rllint.settings import Settings


def reads(source: str):
    """(target, [lines of its reads as a number]) for every assignment expression, in source order."""
    text = textwrap.dedent(source)
    module = cst.parse_module(text)
    file = FileContext("example.py", text, module, ast.parse(text), Settings())
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    lines = wrapper.resolve(cst.metadata.PositionProvider)
    analysis = file.fact(NumberReads)
    found = []
    for node in walk(module, into_functions=True):
        if isinstance(node, cst.NamedExpr):
            found.append((node.target.value, [lines[n].start.line for n in analysis.after(node)]))
    return found


def test_operands_of_arithmetic_negation_and_updates_are_numeric_reads():
    assert reads("""
        def f(xs, acc):
            if k := g(xs):
                a = 2 ** k
                b = -k
                acc -= k
                c = xs @ k
    """) == [("k", [4, 5, 6, 7])]


def test_flags_calls_subscripts_and_formatting_are_not_numeric_reads():
    assert reads("""
        def f(xs):
            if k := g(xs):
                print(k)
                if k and not k:
                    xs[k] = "%s" % k
                return k | 1
    """) == [("k", [])]


def test_reads_stop_where_the_name_is_bound_again():
    assert reads("""
        def f(xs):
            if k := g(xs):
                y = xs / k
                for k in xs:
                    y = y + k
            w = 1 + k
    """) == [("k", [4])]


def test_an_update_in_place_is_a_read_before_it_rebinds():
    assert reads("""
        while (n := step()) > 0:
            n *= 3
            total = n / 2
    """) == [("n", [3])]


def test_reads_are_those_of_the_binding_function_not_of_nested_ones_nor_before_it():
    assert reads("""
        def outer(xs):
            z = 1 / k if False else 0
            if k := len(xs):
                def inner(k):
                    return k * 2
                return inner
    """) == [("k", [])]
