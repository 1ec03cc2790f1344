"""Rule selection as ruff users expect it: codes, prefixes, names, ALL; the most specific selector wins."""
import pytest

from rllint.diagnostic import Tier

from rllint.registry import RULES, UnknownSelector, find_rule, load_rules, select_rules, validate_selectors


def codes(rules):
    return {rule.code for rule in rules}


def test_catalogue_entries_are_complete():
    for code, rule in load_rules().items():
        assert rule.code == code and rule.name and rule.message and rule.severity
        assert rule.name == rule.name.lower() and " " not in rule.name
        assert "## What it does" in rule.page() and "## Why is this bad?" in rule.page()


def test_default_selection_leaves_out_off_by_default_rules():
    chosen = codes(select_rules(None))
    assert "RL000" in chosen and "RL001" not in chosen
    assert chosen == {code for code, rule in load_rules().items() if rule.default_enabled}


def test_tier_decides_the_default():
    rules = load_rules()
    assert all(rule.default_enabled == (rule.tier is not Tier.PEDANTIC) for rule in rules.values())
    assert rules["RL000"].tier is Tier.CORRECTNESS and rules["RL001"].tier is Tier.PEDANTIC


def test_prefix_all_and_rl_select_every_rule_including_off_by_default():
    every = set(load_rules())
    assert codes(select_rules(["RL"])) == every
    assert codes(select_rules(["ALL"])) == every
    assert codes(select_rules(["RL0"])) == {c for c in every if c.startswith("RL0")}


def test_names_and_codes_select_the_same_rule():
    assert codes(select_rules(["unused-suppression"])) == {"RL001"}
    assert codes(select_rules(["RL001"])) == {"RL001"}
    assert find_rule("syntax-error").code == "RL000"


def test_ignore_and_extend_select():
    assert "RL000" not in codes(select_rules(None, ignore=["RL000"]))
    assert "RL001" in codes(select_rules(None, extend_select=["RL001"]))
    # The more specific selector wins: RL001 stays on although its prefix is ignored.
    assert codes(select_rules(["RL001"], ignore=["RL0"])) == {"RL001"}
    assert codes(select_rules(["RL0"], ignore=["RL001"])) == {c for c in load_rules() if c.startswith("RL0")} - {"RL001"}


def test_unknown_selectors_suggest_a_close_match():
    with pytest.raises(UnknownSelector, match="did you mean 'syntax-error'"):
        validate_selectors(["syntax-eror"])
    with pytest.raises(UnknownSelector, match="RL9"):
        validate_selectors(["RL9"])
    with pytest.raises(UnknownSelector):
        find_rule("RL0")


def test_rules_register_once_by_code():
    from rllint.registry import Rule

    with pytest.raises(ValueError):
        type("Duplicate", (Rule,), {"code": "RL000", "name": "again"})
    assert RULES["RL000"].name == "syntax-error"
