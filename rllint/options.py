"""Rule options: the `[tool.rllint]` keys that tune rules, and the one that tunes the fact engine.

Options live apart from the rule classes (`rllint.registry`) so that the analyses can declare and read
them without knowing rules, settings or the runner.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple


@dataclass(frozen=True)
class Option:
    """A `[tool.rllint]` key that tunes rules. `kind` is the Python type a value must have."""

    key: str
    kind: Any
    default: Any
    doc: str
    choices: Tuple[Any, ...] = ()  # the allowed values, when only a few are
    # A further check of a well-typed value: the problem as a phrase, or None when the value is fine.
    check: Optional[Callable[[Any], Optional[str]]] = None
    # Name patterns that make a model a reference or a policy: a file that holds one of their words is linted
    # by every rule, whose own trigger words cannot know these names.
    names_models: bool = False
    # The module that defines the option: importing it registers the option (`rllint.catalogue.import_option`).
    module: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.module:  # the caller of the dataclass's __init__
            object.__setattr__(self, "module", sys._getframe(2).f_globals.get("__name__", ""))
        OPTIONS[self.key] = self


OPTIONS: Dict[str, Option] = {}


CROSS_MODULE_VALUES = Option(
    "cross-module-values", bool, True,
    "Resolve values imported from other modules of the linted project (constants, config classes and "
    "their inherited defaults) and report them where they are written, and ask the project index what other "
    "modules do (helpers, reads, sampling temperatures, importers of a file linted alone); off: only the "
    "linted file itself is seen.",
)
