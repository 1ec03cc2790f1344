"""RL201 options and wording, beyond what the fixtures show."""
import textwrap

from rllint.runner import lint_text
from rllint.settings import Settings

SOURCE = textwrap.dedent("""
    def whiten(values):
        return (values - values.mean()) / (values.std() + 1e-2)
""")


def findings(text, **options):
    result = lint_text(text, "adv.py", Settings(select=["RL201"], options=options))
    return [(d.line, d.column, d.message) for d in result.diagnostics]


def test_max_epsilon_is_an_option():
    assert findings(SOURCE, **{"max-epsilon": 1e-2}) == []
    assert [(line, column) for line, column, _ in findings(SOURCE)] == [(3, 55)]


def test_a_positive_exponent_is_named_as_a_likely_typo():
    assert findings(SOURCE.replace("1e-2", "1e4")) == [
        (3, 55, "epsilon 10000.0 added to the std; it dominates the std in the denominator and advantages shrink "
                "toward zero (use 1e-6 to 1e-4); a positive exponent: did you mean 1e-4?")]
