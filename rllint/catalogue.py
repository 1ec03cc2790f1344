"""What is known of every rule without importing it: the generated table `rllint/catalogue_table.py`.

`rllint rules`, rule selection and the word prefilter need a rule's code, name, severity, tier, trigger
words, kinds of file, family module and fix module, not its class: importing the classes costs libcst
and the analyses. `python -m rllint.docs` writes the table from the rule classes (with the rule pages; a test
fails while it is stale). A family module is imported when one of its rules is needed (`Entry.rule`).
"""
from __future__ import annotations

import difflib
import importlib
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from rllint.diagnostic import Severity, Tier

TABLE_MODULE = "rllint.catalogue_table"

# Every rule class imported so far, by code (`rllint.registry.Rule` registers its subclasses here).
RULES: Dict[str, type] = {}


class Entry:
    """One rule as the table states it; the attributes are those of the rule class of the same name."""

    __slots__ = ("code", "name", "severity", "tier", "kind", "module", "fix", "file_kinds", "triggers",
                 "ignore_case", "options", "message", "_rule")

    def __init__(self, code: str, name: str, severity: str, tier: str, kind: str, module: str, fix: Optional[str],
                 file_kinds: Tuple[str, ...], triggers: Tuple[str, ...], ignore_case: bool,
                 options: Tuple[str, ...], message: str, rule: Optional[type] = None) -> None:
        self.code, self.name, self.kind, self.module = code, name, kind, module
        self.fix = fix  # the module of the rule's fix builder (`rllint.fix`), None when it has none
        self.severity, self.tier = Severity(severity), Tier(tier)
        self.file_kinds, self.triggers, self.ignore_case = file_kinds, triggers, ignore_case
        self.options, self.message = options, message
        self._rule = rule

    @property
    def default_enabled(self) -> bool:
        return self.tier is not Tier.PEDANTIC

    @property
    def rule(self) -> type:
        """The rule class; its family module is imported on first use."""
        if self._rule is None:
            importlib.import_module(self.module)  # its classes register themselves in RULES
            self._rule = RULES[self.code]
        return self._rule

    def triggered(self, text: str, lowered: str) -> bool:
        """Whether a file with this `text` (and `lowered`, its lower-cased form) can hold a finding of the rule."""
        if not self.triggers:
            return True
        within = lowered if self.ignore_case else text
        return any(word in within for word in self.triggers)

    def row(self) -> Dict[str, Any]:
        """The entry as the generated table writes it."""
        return {"code": self.code, "name": self.name, "severity": self.severity.value, "tier": self.tier.value,
                "kind": self.kind, "module": self.module, "fix": self.fix, "file_kinds": self.file_kinds,
                "triggers": self.triggers,
                "ignore_case": self.ignore_case, "options": self.options, "message": self.message}


_ENTRIES: Optional[Dict[str, Entry]] = None


def entries() -> Dict[str, Entry]:
    """Every rule of the table by code, in code order."""
    global _ENTRIES
    if _ENTRIES is None:
        table = importlib.import_module(TABLE_MODULE)
        _ENTRIES = {row["code"]: Entry(**row) for row in table.RULES}
    return _ENTRIES


def option_keys() -> List[str]:
    """Every rule option's key."""
    return list(importlib.import_module(TABLE_MODULE).OPTIONS)


def import_option(key: str) -> None:
    """Register the option `key` by importing the module that defines it (nothing for an unknown key)."""
    module = importlib.import_module(TABLE_MODULE).OPTIONS.get(key)
    if module is not None:
        importlib.import_module(module)


class UnknownSelector(ValueError):
    """A code, prefix or name that matches no rule."""

    def __init__(self, selector: str) -> None:
        rules = entries()
        choices = list(rules) + [rule.name for rule in rules.values()]
        close = difflib.get_close_matches(selector, choices, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        super().__init__(f"unknown rule selector {selector!r}{hint}")
        self.selector = selector


def _specificity(selector: str, rule: Entry) -> int:
    """How closely `selector` names `rule`: -1 when it does not name it at all."""
    token = selector.strip()
    if token.upper() == "ALL":
        return 0
    if token.upper() == rule.code or token.lower() == rule.name:
        return 100
    if rule.code.startswith(token.upper()) and re.match(r"^RL\d{0,2}$", token.upper()):
        return len(token)
    return -1


def names_rule(selectors: Iterable[str], code: str) -> bool:
    """Whether a selector names the rule `code` by its code, its name or a prefix of its family (`RL5`, `RL`:
    all of rllint); `ALL` turns rules on without naming them."""
    entry = entries().get(code)
    return entry is not None and any(_specificity(s, entry) >= 2 for s in selectors)


def validate_selectors(selectors: Iterable[str]) -> None:
    rules = entries().values()
    for selector in selectors:
        if not any(_specificity(selector, rule) >= 0 for rule in rules):
            raise UnknownSelector(selector)


def find(selector: str) -> Entry:
    """The rule with this exact code or name."""
    for rule in entries().values():
        if _specificity(selector, rule) == 100:
            return rule
    raise UnknownSelector(selector)


def select(select: Optional[Sequence[str]], extend_select: Sequence[str] = (),
           ignore: Sequence[str] = ()) -> List[Entry]:
    """Rules that run, as ruff decides: the most specific selector wins, ignore wins ties.

    With no `select`, the rules on by default are selected; off-by-default rules run
    only when a selector names them (`RL`, `ALL`, a prefix, a code or a name).
    """
    chosen = []
    for rule in entries().values():
        enabling = [_specificity(s, rule) for s in list(select or []) + list(extend_select)]
        best_on = max(enabling, default=-1)
        if select is None and rule.default_enabled:
            best_on = max(best_on, 0)
        best_off = max((_specificity(s, rule) for s in ignore), default=-1)
        if best_on >= 0 and best_on > best_off:
            chosen.append(rule)
    return chosen
