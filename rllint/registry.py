"""The Rule base classes, rule options, and selection by code, prefix or name.

A rule registers itself by subclassing `Rule` (or `CSTRule`) with a `code`; the family
modules under `rllint/rules/` are imported once by `load_rules()`, or one by one as the
runner needs their rules (`rllint.catalogue`, the generated table of what every rule is,
which selection reads). Adding a rule touches only its family's module (and the table:
`python -m rllint.docs`).
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from typing import Any, Callable, ClassVar, Dict, List, NamedTuple, Optional, Sequence, Tuple

import libcst as cst

from rllint import catalogue
from rllint.catalogue import RULES, Entry, UnknownSelector, validate_selectors
from rllint.analysis.positions import Lines
from rllint.diagnostic import Severity, Tier
from rllint.options import OPTIONS, Option

_CODE = re.compile(r"^RL\d{3}$")




class Rule:
    """Metadata of a rule. The class docstring is its page (ruff's sections, in Markdown)."""

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[Severity] = Severity.WARNING
    # clippy's tiers: `correctness` and `suspicious` rules run by default, `pedantic` ones on request.
    tier: ClassVar[Tier] = Tier.SUSPICIOUS
    default_enabled: ClassVar[bool] = True  # set from `tier` for every subclass
    message: ClassVar[str] = ""  # str.format template of the one-line finding message
    options: ClassVar[Tuple[Option, ...]] = ()
    # A file whose text contains none of these words cannot hold a finding, so the rule does not run on it and
    # a file that triggers no selected rule is not parsed by libcst (README, "Developing"). Derive them from
    # what the rule and its analyses match; empty: always run (and parse every file).
    triggers: ClassVar[Tuple[str, ...]] = ()
    # True: the words are lower case and sought in the lower-cased text, for rules whose analyses compare
    # names whatever their case (hyperparameter keys: `LR`, `Kl_Coef`, `GROUP_SIZE`).
    triggers_ignore_case: ClassVar[bool] = False
    # The kinds of file the rule judges (`rllint.files.file_kind`): Python sources are
    # visited; launch configs ("yaml", "shell") are handed to `check_config`.
    file_kinds: ClassVar[Tuple[str, ...]] = ("python",)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.default_enabled = cls.tier is not Tier.PEDANTIC
        if cls.__dict__.get("code"):
            if not _CODE.match(cls.code) or cls.code in RULES:
                raise ValueError(f"bad or duplicate rule code {cls.code!r} on {cls.__name__}")
            RULES[cls.code] = cls

    @classmethod
    def page(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def entry(cls) -> Entry:
        """The rule's row of the catalogue (the generated table; rules made outside it, in tests)."""
        from rllint.fix import load_builders  # the fix modules import the rule families

        kind = "log" if issubclass(cls, LogRule) else "cst" if issubclass(cls, CSTRule) else "runner"
        builder = load_builders().get(cls.code)
        fix = None if builder is None else builder.build.__module__
        return Entry(cls.code, cls.name, getattr(cls.severity, "value", cls.severity), cls.tier.value, kind,
                     cls.__module__, fix, tuple(cls.file_kinds), tuple(cls.triggers), cls.triggers_ignore_case,
                     tuple(option.key for option in cls.options), cls.message, cls)


class Finding:
    """A report from a rule before positions are resolved: a node of the parsed module, or a
    (line, column, end line, end column) span for files that have no syntax tree or, with `path`,
    for a place in another file (a value written in an imported module). Fixes are not the rule's
    business: the runner asks the rule's fix builder (`rllint.fix`) about findings at a node."""

    __slots__ = ("rule", "node", "span", "message", "path", "severity")

    def __init__(self, rule: type, node: Optional[cst.CSTNode], span: Optional[Tuple[int, int, int, int]],
                 message: str, path: Optional[str] = None, severity: Optional[Severity] = None) -> None:
        self.rule, self.node, self.span, self.message, self.path = rule, node, span, message, path
        self.severity = severity  # None: the rule's; set by rules whose findings differ (RL604: 1 error, 2 warning)


class CSTRule(Rule, cst.BatchableCSTVisitor):
    """A rule that visits the libcst tree. All selected rules share one batched traversal.

    A rule that also judges launch configs lists their kinds in `file_kinds` and
    implements `check_config`; it is then built with a `ConfigFile` instead of a
    `FileContext` and reports with `report_at`.
    """

    def __init__(self, file: Any) -> None:  # file: rllint.runner.FileContext or ConfigFile
        super().__init__()
        self.file = file
        self.findings: List[Finding] = []

    def option(self, option: Option) -> Any:
        return self.file.settings.option(option)

    def get_visitors(self) -> Dict[str, Callable[[cst.CSTNode], None]]:
        """libcst's visitor hooks of this rule. libcst finds them with `inspect.getmembers` for
        every instance, that is for every rule in every file; the names are a fact of the class."""
        cls = type(self)
        names = cls.__dict__.get("_visitor_names")
        if names is None:
            names = tuple(
                name for name in dir(cls)
                if name.startswith(("visit_", "leave_")) and callable(getattr(cls, name))
                and not getattr(getattr(cls, name), "_is_no_op", False)
            )
            cls._visitor_names = names
        return {name: getattr(self, name) for name in names}

    def report(self, node: Any, severity: Optional[Severity] = None, **values: Any) -> None:
        """Report at a node; `node` may also be the `RemoteNode` of a value written in another module
        (`rllint.analysis.values`): the finding is then placed there and says which file uses it.
        `severity` overrides the rule's for this finding."""
        if isinstance(node, cst.CSTNode):
            self.findings.append(Finding(type(self), node, None, self.message.format(**values), severity=severity))
        else:
            self._report_remote(node, None, values, severity)

    def report_value(self, written: Any, /, used_at: Optional[cst.CSTNode] = None,
                     severity: Optional[Severity] = None, **values: Any) -> None:
        """Report where a `rllint.analysis.values.Value` is written, in this file or in another module;
        for another module the message ends with where this file uses it (`used_at`, when given)."""
        if isinstance(written.node, cst.CSTNode):
            self.report(written.node, severity, **values)
        else:
            self._report_remote(written.node, used_at, values, severity)

    def _report_remote(self, place: Any, used_at: Optional[cst.CSTNode], values: Dict[str, Any],
                       severity: Optional[Severity] = None) -> None:
        message = self.message.format(**values)
        if self.file.path not in message:  # the rule's own wording may already say where the value is used
            user = self.file.path if used_at is None else f"{self.file.path}:{self.file.fact(Lines).line(used_at)}"
            message = f"{message} (used in {user})"
        span = (place.line, place.column, place.end_line, place.end_column)
        self.findings.append(Finding(type(self), None, span, message, place.path, severity))

    def report_at(self, line: int, column: int, end_line: int, end_column: int,
                  severity: Optional[Severity] = None, **values: Any) -> None:
        """Report at a 1-based span, for files without a syntax tree; `severity` overrides the rule's."""
        self.findings.append(Finding(type(self), None, (line, column, end_line, end_column),
                                     self.message.format(**values), severity=severity))

    def check_config(self) -> None:
        """Judge a launch config (`self.file` is a ConfigFile); only for rules whose file_kinds name one."""
        raise NotImplementedError(f"{self.code} lists config kinds in file_kinds but has no check_config")


class LogFinding(NamedTuple):
    """A report from a log rule: the logged points `first`..`last` of `series` (an `rllint.logs.series.Series`)."""

    rule: type
    series: Any
    first: int
    last: int
    message: str


class LogRule(Rule):
    """A check of a training run's logged metrics (RL7xx), run by `rllint logs`, never on a source file
    (no file kind). `metrics` names what it reads (`rllint.logs.metrics.METRICS`); `check` asks the run
    (`rllint.logs.lint.RunMetrics`) for their series and reports episodes with `report`."""

    file_kinds = ()
    metrics: ClassVar[Tuple[str, ...]] = ()

    def __init__(self, run: Any) -> None:
        self.run = run
        self.findings: List[LogFinding] = []

    def option(self, option: Option) -> Any:
        return self.run.settings.option(option)

    def check(self) -> None:
        raise NotImplementedError(f"{self.code} has no check")

    def report(self, series: Any, first: int, last: int, **values: Any) -> None:
        """Report the condition that held on points `first`..`last` of `series`; the finding is placed at
        the step where it began."""
        self.findings.append(LogFinding(type(self), series, first, last, self.message.format(**values)))


def load_rules() -> Dict[str, type]:
    """Import every family module under `rllint.rules` once; return the catalogue by code."""
    import rllint.rules as families

    for module in pkgutil.iter_modules(families.__path__):
        importlib.import_module(f"{families.__name__}.{module.name}")
    return dict(sorted(RULES.items()))


def find_rule(selector: str) -> type:
    """The rule with this exact code or name."""
    return catalogue.find(selector).rule


def select_rules(
    select: Optional[Sequence[str]], extend_select: Sequence[str] = (), ignore: Sequence[str] = ()
) -> List[type]:
    """The classes of the rules that run (`rllint.catalogue.select`); their family modules are imported."""
    return [entry.rule for entry in catalogue.select(select, extend_select, ignore)]


__all__ = ["CSTRule", "Finding", "LogFinding", "LogRule", "OPTIONS", "Option", "RULES", "Rule", "UnknownSelector",
           "find_rule", "load_rules", "select_rules", "validate_selectors"]
