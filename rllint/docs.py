"""Rule pages: each rule's docstring, its metadata and its options, rendered as Markdown.

`rllint rule X` prints a page; `python -m rllint.docs [FOLDER]` writes every page and an
index to `rules/` (stale pages removed) and the rule table `rllint/catalogue_table.py`
(`rllint.catalogue`), and `--check` exits 1 when either is out of date, so that neither
drifts from the code.
"""
from __future__ import annotations

import argparse
import json
import math
import pprint
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from rllint.fix import load_builders
from rllint.registry import OPTIONS, LogRule, Option, load_rules
from rllint.rules.meta import SyntaxErrorRule, UnusedSuppression

DEFAULT_FOLDER = Path(__file__).resolve().parent.parent / "rules"
INDEX = "README.md"
TABLE = Path(__file__).resolve().parent / "catalogue_table.py"
_PAGE_NAME = re.compile(r"^RL\d{3}\.md$")


def _sections(page: str) -> List[Tuple[str, str]]:
    """The page's `## ` sections as (heading, body); text before the first heading has heading ''.

    Lines inside fenced code blocks are never headings (a `## ` there is a Python comment).
    """
    sections: List[Tuple[str, List[str]]] = [("", [])]
    fenced = False
    for line in page.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            sections.append((line[3:].strip(), []))
        else:
            sections[-1][1].append(line)
    return [(heading, "\n".join(body).strip("\n")) for heading, body in sections]


def summary(rule: type) -> str:
    """The first paragraph of the page's "What it does", on one line."""
    for heading, body in _sections(rule.page()):
        if heading == "What it does":
            return " ".join(body.split("\n\n")[0].split())
    return rule.name


def toml_value(value: Any) -> str:
    """`value` written as TOML, as a user would put it under `[tool.rllint]`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(key)} = {toml_value(item)}" for key, item in value.items()) + " }"
    raise TypeError(f"no TOML form for {value!r}")


def _toml_key(key: str) -> str:
    """A bare key where TOML allows one (`max-epsilon`), else a quoted one (`"tests/*"`)."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def _type_name(kind: Any) -> str:
    if isinstance(kind, tuple):
        return " or ".join(_type_name(item) for item in kind)
    return getattr(kind, "__name__", str(kind))


def _option_text(option: Option) -> str:
    default = "not set" if option.default is None else f"`{toml_value(option.default)}`"
    text = f"- `{option.key}` ({_type_name(option.kind)}, default {default}): {option.doc.strip()}"
    if option.choices:
        text += " One of " + ", ".join(f"`{toml_value(choice)}`" for choice in option.choices) + "."
    return text


def _without_option_bullets(prose: str, options: Sequence[Option]) -> str:
    """The docstring's Options prose minus its own bullets for registered options (with their indented
    continuation lines): the generated list states key, type, default and doc from the Option itself."""
    starts = tuple(f"- `{option.key}`" for option in options)
    kept: List[str] = []
    dropping = False
    for line in prose.splitlines():
        if line.startswith(starts):
            dropping = True
        elif dropping and not (line.startswith((" ", "\t")) and line.strip()):
            dropping = False
        if not dropping:
            kept.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")


def _options_section(rule: type, prose: str) -> str:
    prose = _without_option_bullets(prose, rule.options)
    parts = [prose] if prose else []
    if rule.options:
        parts.append("\n".join(_option_text(option) for option in rule.options))
        example = [f"{o.key} = {toml_value(o.default)}" for o in rule.options if o.default is not None]
        if example:
            parts.append("In `pyproject.toml`:\n\n```toml\n[tool.rllint]\n" + "\n".join(example) + "\n```")
    elif not prose:
        parts.append("None.")
    return "\n\n".join(parts)


# Rules that the runner reports around the comment filter: their findings no comment can silence.
_NOT_BY_COMMENT = {
    SyntaxErrorRule: "A file that does not parse has no comments rllint can read",
    UnusedSuppression: "Its findings are about the suppression comments themselves",
}


def _suppression_section(rule: type) -> str:
    if issubclass(rule, LogRule):
        return ("A log has no comments, so `per-file-ignores` plays the part of `# noqa`: "
                f"`\"runs/old-sweep/*\" = [\"{rule.code}\"]` silences it for the logs under that folder. "
                f"For every run, `ignore = [\"{rule.code}\"]` under `[tool.rllint]`, or `--ignore {rule.code}` "
                "for one invocation of `rllint logs`.")
    project = (f"`ignore = [\"{rule.code}\"]` under `[tool.rllint]`, or `per-file-ignores` for some files "
               f"(`\"scripts/*.py\" = [\"{rule.code}\"]`).")
    if rule in _NOT_BY_COMMENT:
        return f"{_NOT_BY_COMMENT[rule]}, so no `# noqa` comment silences this rule. Use {project}"
    return (
        f"On the reported line, end it with `# noqa: {rule.code}` or `# rllint: ignore[{rule.name}]`; "
        f"`# rllint: ignore[{rule.name}]` on a line of its own silences the statement below it. "
        f"For a whole file, put `# rllint: noqa: {rule.code}` on a line of its own. For a project, {project}"
    )


def _fix_section(rule: type) -> str:
    """Whether the rule has a fix, whether it is safe and why (from its builder in `rllint.fix`)."""
    builder = load_builders().get(rule.code)
    if builder is None:
        return "This rule has no automatic fix."
    how = "`rllint --fix`" if builder.safe else "`rllint --fix --unsafe-fixes`"
    return (f"This rule has a fix, {'safe' if builder.safe else 'unsafe'}: {how} applies it, `--diff` shows it, "
            f"and editors offer it as a quick fix. {builder.safety}")


def _fix_kind(rule: type) -> str:
    builder = load_builders().get(rule.code)
    return "" if builder is None else "safe" if builder.safe else "unsafe"


def _status_line(rule: type) -> str:
    severity = getattr(rule.severity, "value", rule.severity)
    if rule.default_enabled:
        default = "on by default"
    else:
        default = f"off by default (turn it on with `extend-select = [\"{rule.code}\"]`)"
    return f"Severity: **{severity}**. Tier: **{rule.tier.value}**. {default[0].upper()}{default[1:]}."


def render_page(rule: type) -> str:
    """The Markdown page of `rule`: title, status, the docstring's sections, options, suppression."""
    sections = _sections(rule.page())
    body: Dict[str, str] = {}
    order: List[str] = []
    for heading, text in sections[1:]:
        order.append(heading)
        body[heading] = text
    if "Options" not in body:
        position = order.index("References") if "References" in order else len(order)
        order.insert(position, "Options")
        body["Options"] = ""
    body["Options"] = _options_section(rule, body["Options"])
    order.insert(order.index("Options"), "Fix safety")
    body["Fix safety"] = _fix_section(rule)
    order.insert(order.index("Options") + 1, "Suppressing it")
    body["Suppressing it"] = _suppression_section(rule)

    parts = [f"# {rule.code} {rule.name}", _status_line(rule)]
    if sections[0][1]:
        parts.append(sections[0][1])
    parts.extend(f"## {heading}\n{body[heading]}" if body[heading] else f"## {heading}" for heading in order)
    return "\n\n".join(parts) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_index() -> str:
    """`rules/README.md`: every rule with its severity, default, summary and a link to its page."""
    lines = [
        "# rllint rules",
        "",
        "Generated from the rules' docstrings by `python -m rllint.docs`; do not edit by hand.",
        "`rllint rule CODE` prints a page in the terminal.",
        "",
        "| Code | Name | Severity | Tier | Default | Fix | What it does |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for rule in load_rules().values():
        severity = getattr(rule.severity, "value", rule.severity)
        default = "on" if rule.default_enabled else "off"
        link = f"[{rule.code}]({rule.code}.md)"
        lines.append(f"| {link} | {rule.name} | {severity} | {rule.tier.value} | {default} | {_fix_kind(rule)} "
                     f"| {_cell(summary(rule))} |")
    return "\n".join(lines) + "\n"


def render_table() -> str:
    """The text of `rllint/catalogue_table.py` (`rllint.catalogue`), from the rule classes (all imported)."""
    lines = ['"""Generated from the rule classes by `python -m rllint.docs`; do not edit by hand '
             '(`rllint.catalogue`)."""', "", "RULES = ("]
    lines += [textwrap.indent(pprint.pformat(rule.entry().row(), width=112, sort_dicts=False), "    ") + ","
              for rule in load_rules().values()]
    lines += [")", "", "# Each rule option's key -> the module that defines it (importing it registers the option).",
              "OPTIONS = {"]
    lines += [f"    {key!r}: {option.module!r}," for key, option in sorted(OPTIONS.items())]
    lines += ["}", ""]
    return "\n".join(lines)


def expected_files() -> Dict[str, str]:
    """File name -> content of every file the rules folder should hold."""
    files = {f"{code}.md": render_page(rule) for code, rule in load_rules().items()}
    files[INDEX] = render_index()
    return files


def out_of_date(folder: Path) -> List[str]:
    """Names of pages that differ from their rendering, are missing, or belong to no rule."""
    expected = expected_files()
    stale = [name for name in _existing_pages(folder) if name not in expected]
    wrong = [name for name, text in expected.items() if _read(folder / name) != text]
    return sorted(wrong + stale)


def _existing_pages(folder: Path) -> List[str]:
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_file() and _PAGE_NAME.match(p.name))


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def write_pages(folder: Path) -> List[str]:
    """Write every page and the index; delete pages of rules that no longer exist. Returns changed names."""
    folder.mkdir(parents=True, exist_ok=True)
    changed = out_of_date(folder)
    expected = expected_files()
    for name in changed:
        if name in expected:
            (folder / name).write_text(expected[name], encoding="utf-8", newline="\n")
        else:
            (folder / name).unlink()
    return changed


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rllint.docs", description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER,
                        help="where the pages go (default: rules/ at the repository root)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any page is out of date")
    args = parser.parse_args(argv)
    table = render_table()
    if args.check:
        stale = [args.folder / name for name in out_of_date(args.folder)]
        stale += [TABLE] if _read(TABLE) != table else []
        for path in stale:
            print(f"out of date: {path}")
        if stale:
            print("run `python -m rllint.docs` to regenerate the rule pages and table", file=sys.stderr)
        return 1 if stale else 0
    for name in write_pages(args.folder):
        print(f"updated {args.folder / name}")
    if _read(TABLE) != table:
        TABLE.write_text(table, encoding="utf-8", newline="\n")
        print(f"updated {TABLE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
