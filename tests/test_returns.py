"""Unit tests of the backward time recursions (GAE, discounted returns) and of full-width bounds."""
import ast
import textwrap

import libcst as cst

from rllint.analysis.returns import Recursions, full_width
from rllint.runner import FileContext
from rllint.settings import Settings


def recursions(body: str):
    text = textwrap.dedent(body)
    module = cst.parse_module(text)
    file = FileContext("snippet.py", text, module, ast.parse(text), Settings(select=["RL"]))
    found = sorted(file.fact(Recursions).by_loop.values(), key=lambda r: module.code_for_node(r.loop))  # by text
    return [(r.time, module.code_for_node(r.bound), r.rows, r.stopped) for r in found]


def test_accumulator_and_next_row_recursions_with_their_rows():
    assert recursions("""
def a(v, r, T):
    acc = 0
    for k in reversed(range(T)):
        acc = r[:, k] + 0.9 * acc - v[:, k]

def b(r, out):
    for j in range(r.shape[1] - 1, -1, -1):
        out[:, j] = r[:, j] + 0.9 * out[:, j + 1]
""") == [("j", "r.shape[1]", ["out", "r"], False), ("k", "T", ["r", "v"], False)]


def test_masks_and_dones_in_the_body_stop_the_recursion():
    assert recursions("""
def a(v, r, not_done, T):
    acc = 0
    for k in reversed(range(T)):
        acc = r[:, k] + 0.9 * acc * not_done[:, k]

def b(v, r, batch, T):
    acc = 0
    for k in reversed(range(T)):
        acc = r[:, k] + 0.9 * acc * batch["response_mask"][:, k]
""") == [("k", "T", ["r"], True), ("k", "T", ["not_done", "r"], True)]


def test_forward_loops_and_loops_that_carry_nothing_are_not_recursions():
    assert recursions("""
def a(r, T):
    acc = 0
    for k in range(T):
        acc = acc + r[:, k]
    for k in reversed(range(T)):
        print(r[:, k])
""") == []


def test_a_recursion_from_a_start_to_the_width_counts_by_its_upper_bound():
    assert recursions("""
def a(r, v, starts, T):
    for i in range(r.shape[0]):
        acc = 0
        for k in reversed(range(starts[i], T)):
            acc = r[i, k] + 0.9 * acc - v[i, k]
""") == [("k", "T", ["r", "v"], False)]


def test_full_width_bounds():
    def bound(code):
        return full_width(cst.parse_expression(code))
    assert [bound(c) for c in ("x.size(-1)", "x.size(1)", "x.shape[-1]", "x.size()[1]")] == [True] * 4
    assert [bound(c) for c in ("x.size(0)", "x.shape[0]", "lengths[i]", "T", "len(x)")] == [False] * 5
