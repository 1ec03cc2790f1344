"""The word prefilter: a rule runs on a file only when one of its trigger words occurs in the text, and
files that trigger no selected rule are never parsed by libcst. It must never cost a finding."""
import re
import textwrap

import pytest

from rllint import runner
from rllint.registry import CSTRule, load_rules
from rllint.runner import lint_text
from rllint.settings import Settings

from test_fixtures import CASES, FIXTURES, labelled

RULES = [rule for rule in load_rules().values() if issubclass(rule, CSTRule)]
LABEL = re.compile(r"#\s*expect:.*$", re.MULTILINE)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.code)
def test_a_trigger_is_a_word_not_a_character(rule):
    # `=` or `(` occurs in every file: a rule with such a trigger would parse every file it is selected for.
    assert all(len(word) >= 2 for word in rule.triggers), rule.triggers


@pytest.mark.parametrize("rule", [r for r in RULES if r.triggers_ignore_case], ids=lambda rule: rule.code)
def test_words_sought_whatever_their_case_are_written_in_lower_case(rule):
    # They are sought in the lower-cased text: `SamplingParams` there would never match.
    assert all(word == word.lower() for word in rule.triggers), rule.triggers


def _positive(code):
    return [path for path in CASES if any(found == code for _, found in labelled(path))]


@pytest.mark.parametrize("rule", [r for r in RULES if r.triggers], ids=lambda rule: rule.code)
def test_every_positive_fixture_holds_a_trigger_of_its_rule(rule):
    positives = [path for path in _positive(rule.code) if path.suffix == ".py" or rule.file_kinds != ("python",)]
    for path in positives:
        text = LABEL.sub("", path.read_text(encoding="utf-8"))  # the labels name codes, not trigger words
        assert rule.entry().triggered(text, text.lower()), f"{path.name}: none of {rule.triggers}"


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_the_prefilter_drops_no_finding_of_a_fixture(path, monkeypatch):
    settings = Settings(select=["RL"])
    text = path.read_text(encoding="utf-8")
    filtered = lint_text(text, str(path), settings)
    for rule in RULES:
        monkeypatch.setattr(rule, "triggers", ())
    unfiltered = lint_text(text, str(path), settings)
    assert [(d.line, d.code) for d in filtered.diagnostics] == [(d.line, d.code) for d in unfiltered.diagnostics]


def test_a_file_without_any_trigger_is_never_parsed_by_libcst(monkeypatch):
    def refuse(*args):
        raise AssertionError("libcst was asked to parse a file that triggers no rule")

    monkeypatch.setattr(runner, "_parse_cst", refuse)
    source = "import os\n\n\ndef main(path):\n    with open(path) as handle:\n        return len(handle.read())\n"
    assert lint_text(source, "plain.py", Settings(select=["RL"])).diagnostics == []


def test_a_one_value_two_roles_call_triggers_its_rule():
    # RL508's words are the endings of the keywords it compares; a call spelled without spaces still has them.
    source = "import torch\nloss = policy_loss(advantages=adv,response_mask=adv)\n"
    codes = [d.code for d in lint_text(source, "step.py", Settings(select=["RL508"])).diagnostics]
    assert codes == ["RL508"]


def test_hyperparameters_written_as_constants_trigger_their_rules():
    # The analyses compare keys lower-cased, and so does the prefilter of their rules (RL402, RL601-RL605).
    source = "NUM_GENERATIONS = 2\nKL_COEF = 0.5\nCLIP_EPSILON = 0.1\nLEARNING_RATE = 1e-6\n"
    triggered = {rule.code for rule in runner.triggered(Settings(select=["RL"]).selected(), source)}
    assert {"RL402", "RL601", "RL602", "RL603", "RL604", "RL605"} <= triggered
    assert runner.triggered(Settings(select=["RL604"]).selected(), "import os\nSEED = 3\n") == []


def test_a_model_name_the_config_adds_triggers_the_rules_that_judge_models():
    text = textwrap.dedent("""
        class Tuner:
            def __init__(self, model):
                self.model = model
                self.anchor_lm = self.model
    """)
    configured = Settings(select=["RL501"], options={"reference-model-names": ["anchor_*"], "rl-context": "always"})
    found = [d.code for d in lint_text(text, "step.py", configured).diagnostics]
    assert found == ["RL501"]  # its by-name form; none of RL501's own words (`ref`, `deepcopy`...) is in the file
    assert runner.configured_model_words(configured) == ["anchor_"]
    assert runner.configured_model_words(Settings(options={"policy-model-names": ["[ab]ctor", "pi*net"]})) == [
        "ctor", "pi", "net"]
