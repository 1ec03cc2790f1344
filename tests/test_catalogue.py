"""The generated rule table (`rllint.catalogue`): in step with the rule classes, and what it spares a run."""
import subprocess
import sys
import textwrap

import pytest

from rllint import catalogue
from rllint.catalogue import Entry, UnknownSelector, entries, select
from rllint.docs import render_table
from rllint.docs import TABLE
from rllint.registry import OPTIONS, load_rules


def test_the_table_is_the_one_the_rule_classes_make():
    # After adding or changing a rule: `python -m rllint.docs` (README, "Developing").
    assert TABLE.read_text(encoding="utf-8") == render_table()


def test_every_entry_states_what_its_class_says():
    rules = load_rules()
    assert list(entries()) == list(rules)
    for code, entry in entries().items():
        rule = rules[code]
        assert entry.rule is rule
        assert (entry.name, entry.severity, entry.tier, entry.default_enabled, entry.triggers, entry.file_kinds) == (
            rule.name, rule.severity, rule.tier, rule.default_enabled, rule.triggers, rule.file_kinds)


def test_an_option_names_the_module_that_defines_it():
    load_rules()
    assert OPTIONS["reference-model-names"].module == "rllint.analysis.names"
    assert OPTIONS["max-epsilon"].module == "rllint.rules.advantages"


def test_selection_reads_the_table_as_the_classes_would_be_read():
    chosen = [entry.code for entry in select(["RL1"], ignore=["RL105"])]
    assert chosen == [code for code in entries() if code.startswith("RL1") and code != "RL105"]
    assert "RL108" not in [entry.code for entry in select(None)]  # pedantic: named, or not run
    with pytest.raises(UnknownSelector, match="did you mean 'gather-non-final-dim'"):
        catalogue.validate_selectors(["RL1", "gather-non-final-dims"])


def test_an_ignore_case_rule_is_triggered_whatever_the_spelling():
    entry = Entry("RL990", "probe", "warning", "suspicious", "cst", "probe", None, ("python",), ("kl_coef",), True, (), "")
    assert entry.triggered("KL_COEF = 0.5\n", "kl_coef = 0.5\n")
    exact = Entry("RL991", "probe", "warning", "suspicious", "cst", "probe", None, ("python",), ("kl_coef",), False, (), "")
    assert not exact.triggered("KL_COEF = 0.5\n", "kl_coef = 0.5\n")


def _imported_after(code: str) -> list:
    probe = textwrap.dedent(code) + (
        "\nprint(sorted(m for m in sys.modules if (m.startswith('rllint.rules.') and m != 'rllint.rules.bases')"
        " or m in ('libcst', 'yaml')))\n")  # the families; `bases` holds no rule
    done = subprocess.run([sys.executable, "-c", "import sys\n" + probe], capture_output=True, text=True, check=True)
    return eval(done.stdout.strip().splitlines()[-1])


def test_choosing_rules_imports_no_rule_module():
    assert _imported_after("""
        from rllint.settings import Settings
        settings = Settings(select=["RL"], per_file_ignores={"*.py": ["RL5"]})
        assert len(settings.selected_for("train.py")) > 50
        """) == []


def test_a_file_imports_the_families_of_the_rules_it_triggers_only():
    imported = _imported_after("""
        from rllint.runner import lint_text
        from rllint.settings import Settings
        source = "import torch\\nratio = torch.exp(logp - old_logp)\\n"  # RL101's word, and no finding to fix
        assert lint_text(source, "ratio.py", Settings()).diagnostics == []
        """)
    assert imported == ["libcst", "rllint.rules.logprobs", "rllint.rules.meta"]


def test_a_fixable_finding_imports_the_fix_builders_of_its_rule_only():
    imported = _imported_after("""
        from rllint.runner import lint_text
        from rllint.settings import Settings
        source = ("import torch\\n\\ndef token_logps(logits, ids):\\n"
                  "    logp = torch.log_softmax(logits.half(), dim=-1)\\n"
                  "    return logp.gather(-1, ids.unsqueeze(-1)).squeeze(-1)\\n")
        found = lint_text(source, "logps.py", Settings(select=["RL107"])).diagnostics
        assert [(d.code, d.fix is not None) for d in found] == [("RL107", True)], found
        fixers = sorted(m for m in sys.modules if m.startswith("rllint.fix."))
        assert fixers == ["rllint.fix.logprobs"], fixers
        """)
    assert imported == ["libcst", "rllint.rules.logprobs", "rllint.rules.meta"]


def test_a_file_that_triggers_nothing_imports_no_family_and_no_yaml():
    assert _imported_after("""
        from rllint.runner import lint_text
        from rllint.settings import Settings
        assert lint_text("import os\\nprint(os.sep)\\n", "tool.py", Settings(select=["RL"])).diagnostics == []
        """) == ["libcst", "rllint.rules.meta"]


def test_a_config_option_imports_its_module_when_a_file_sets_it(tmp_path):
    (tmp_path / "rllint.toml").write_text('max-epsilon = 0.001\nreference-model-names = ["anchor"]\n')
    imported = _imported_after(f"""
        from rllint.config import load_settings
        from rllint.registry import OPTIONS
        settings = load_settings(start={str(tmp_path)!r})
        assert settings.option(OPTIONS["max-epsilon"]) == 0.001
        """)
    assert imported == ["libcst", "rllint.rules.advantages"]


def test_a_rule_is_named_by_its_code_name_family_or_rl_and_only_turned_on_by_all():
    """Naming a rule widens it to its broad form: `RL` is all of rllint, the bench's and users' "everything"."""
    from rllint.catalogue import names_rule

    for selector in ("RL601", "sft-scale-learning-rate", "RL6", "RL60", "RL"):
        assert names_rule([selector], "RL601"), selector
    for selector in ("ALL", "RL5", "RL602"):
        assert not names_rule([selector], "RL601"), selector
