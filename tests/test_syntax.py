"""Small syntax facts shared by the analyses (rllint/analysis/syntax.py)."""
import libcst as cst
import pytest

from rllint.analysis.syntax import updates_in_place


@pytest.mark.parametrize("statement, expected", [
    ("scores += bonus", True),
    ("scores[i] = 0.0", True),
    ("scores[mask] = other", True),
    ("scores = scores + bonus", False),  # a rebinding, not an update in place
    ("other += scores", False),
    ("other[scores] = 1", False),
    ("scores.weight = 1", False),
])
def test_updates_in_place(statement, expected):
    node = cst.parse_statement(statement).body[0]
    assert updates_in_place(node, "scores") is expected
