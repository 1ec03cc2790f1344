"""The command line: flags become a Settings object, the library lints, a reporter writes.

Exit status as ruff's: 0 nothing found, 1 findings, 2 a usage, configuration, file or
internal error. `check` is the default subcommand, so `rllint src/` is `rllint check src/`.
"""
from __future__ import annotations

import errno
import io
import json
import os
import sys
import traceback
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import click

from rllint import __version__
from rllint.cache import ResultCache, clean, default_cache_dir
from rllint.config import ConfigError, find_config, load_settings
from rllint.diagnostic import Diagnostic, FileError
from rllint.docs import render_page
from rllint.files import discover
from rllint.registry import UnknownSelector, find_rule, load_rules
from rllint.report import FORMATS
from rllint.runner import FileResult, lint_data, lint_files
from rllint.settings import Settings

STDIN = "-"
_TEXT_FORMATS = ("text", "concise")


class _DefaultCheck(click.Group):
    """A group whose default subcommand is `check`, and that turns crashes into one line and exit 2."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        top_level = set(ctx.help_option_names) | {"--version"}
        if not args or (args[0] not in self.commands and args[0] not in top_level):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # the workers are already stopped; 130 as ruff and shells say
            click.echo("rllint: interrupted", err=True)
            ctx.exit(130)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as error:  # a bug in rllint: one line, not a traceback, unless asked
            if isinstance(error, OSError) and error.errno == errno.EPIPE:
                raise  # `rllint | head`: click's main handles a closed pipe quietly
            if os.environ.get("RLLINT_DEBUG"):
                traceback.print_exc()
            click.echo(f"rllint: error: internal error: {type(error).__name__}: {error} (a bug in rllint: please "
                       "report it with the command and the file that caused it; RLLINT_DEBUG=1 shows the traceback)",
                       err=True)
            ctx.exit(2)


@click.group(cls=_DefaultCheck, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="\b\nOptions of check (see `rllint check --help`):\n"
                    "  --select --ignore --extend-select --format -o --statistics --config\n"
                    "  --exclude --extend-exclude --force-exclude --exit-zero --stdin-filename\n"
                    "  --jobs --no-cache")
@click.version_option(__version__, prog_name="rllint")
def main() -> None:
    """rllint: static analysis for reinforcement-learning post-training code.

    `rllint PATHS` is `rllint check PATHS`.
    """


def _split_commas(ctx: click.Context, param: click.Parameter, values: Tuple[str, ...]) -> Optional[List[str]]:
    """`--select A,B --select C` -> [A, B, C]; None when the flag was not given."""
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--output-format", "--format", "output_format", type=click.Choice(list(FORMATS)), default="text",
              show_default=True, help="How findings are written. `concise` is the same as `text`: "
              "`path:line:col: CODE message`.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report to this file instead of standard output.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule, most frequent first, "
              "instead of the findings (a JSON array with `--format json`).")
@click.option("--select", multiple=True, callback=_split_commas, metavar="RULES",
              help="Rules to run (codes, prefixes, names or ALL, comma-separated); replaces the configured ones.")
@click.option("--extend-select", multiple=True, callback=_split_commas, metavar="RULES",
              help="Rules to run in addition to the selected ones.")
@click.option("--ignore", multiple=True, callback=_split_commas, metavar="RULES", help="Rules not to run.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Use this configuration file instead of the closest one.")
@click.option("--exclude", multiple=True, callback=_split_commas, metavar="PATTERNS",
              help="Paths to skip (globs); replaces the default and configured excludes.")
@click.option("--extend-exclude", multiple=True, callback=_split_commas, metavar="PATTERNS",
              help="Paths to skip in addition to the excluded ones.")
@click.option("--force-exclude/--no-force-exclude", default=None,
              help="Apply excludes to paths given on the command line too (for pre-commit and editors).")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None,
              help="Skip files that .gitignore files ignore (on by default).")
@click.option("--lint-vendored/--no-lint-vendored", default=None,
              help="Lint copies of RL frameworks (verl, trl, openrlhf) found inside the project; skipped by default.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (errors still exit 2).")
@click.option("--stdin-filename", metavar="NAME",
              help="With the path `-`, read the source from standard input and lint it as this file.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: one per core).")
@click.option("--no-cache", is_flag=True, help="Lint every file afresh, without reading or writing the result cache "
              "(kept in $RLLINT_CACHE_DIR, else ~/.cache/rllint; never inside the linted tree).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Keep the result cache in this folder (default: $RLLINT_CACHE_DIR, the `cache-dir` key, "
              "~/.cache/rllint).")
@click.pass_context
def check(ctx: click.Context, paths: Tuple[str, ...], output_format: str, output_file: Optional[Path],
          statistics: bool, select: Optional[List[str]], extend_select: Optional[List[str]],
          ignore: Optional[List[str]], config_file: Optional[Path], exclude: Optional[List[str]],
          extend_exclude: Optional[List[str]], force_exclude: Optional[bool], respect_gitignore: Optional[bool],
          lint_vendored: Optional[bool], exit_zero: bool, stdin_filename: Optional[str], jobs: Optional[int],
          no_cache: bool, cache_dir: Optional[Path]) -> None:
    """Lint PATHS (files or folders; default: the current folder)."""
    from_stdin = paths == (STDIN,) or (not paths and stdin_filename is not None)
    if STDIN in paths and not from_stdin:
        raise click.UsageError("`-` (standard input) cannot be combined with other paths")
    overrides = {
        "select": select, "extend_select": extend_select, "ignore": ignore, "exclude": exclude,
        "extend_exclude": extend_exclude, "force_exclude": force_exclude, "respect_gitignore": respect_gitignore,
        "lint_vendored": lint_vendored,
    }
    try:
        start = None if config_file else _config_start(paths, stdin_filename)
        settings = load_settings(config_file, start, overrides)
    except ConfigError as error:
        click.echo(f"rllint: error: {error}", err=True)
        ctx.exit(2)

    if from_stdin:
        _refuse_overwrite(output_file, [stdin_filename] if stdin_filename else [])
        result = _lint_stdin(stdin_filename, settings)
    else:
        notices: List[str] = []
        files, unwalkable = discover(list(paths) or ["."], settings, notices)
        for notice in notices:
            click.echo(f"rllint: {notice}", err=True)
        _refuse_overwrite(output_file, files)
        result = lint_files(files, settings, jobs=jobs, cache=None if no_cache else ResultCache(settings, cache_dir))
        result.errors[:0] = unwalkable
    diagnostics = [replace(d, path=_display(d.path)) for d in result.diagnostics]
    errors = result.errors

    report = io.StringIO()
    if statistics:
        _write_statistics(diagnostics, report, as_json=output_format == "json")
    else:
        FORMATS[output_format](diagnostics, report)
    _emit(report.getvalue(), output_file, ctx)
    for error in errors:
        click.echo(f"rllint: error: {_display(error.path)}: {error.message}", err=True)
    if output_format in _TEXT_FORMATS:
        click.echo(_summary(diagnostics, errors), err=True)

    if errors:
        ctx.exit(2)
    ctx.exit(1 if diagnostics and not exit_zero else 0)


def _refuse_overwrite(output: Optional[Path], files: Sequence[str]) -> None:
    """`-o train.py train.py` would replace the script with its report: a usage error (exit 2)."""
    try:
        target = os.stat(output) if output is not None else None
    except OSError:
        return
    for path in files if target is not None else ():
        try:
            same = os.path.samestat(os.stat(path), target)
        except OSError:
            continue
        if same:
            raise click.UsageError(f"the output file {output} is a file being linted; the report would overwrite it")


def _config_start(paths: Sequence[str], stdin_filename: Optional[str]) -> Optional[Path]:
    """Where the search for the closest config file starts: the folder that holds every path linted,
    when a config file is found from there; else None, so that excludes are anchored at the working
    folder, as in ruff."""
    named = [p for p in paths if p != STDIN] or ([stdin_filename] if stdin_filename else [])
    if not named:
        return None
    common = Path(os.path.commonpath([os.path.abspath(p) for p in named]))
    return common if find_config(common) is not None else None


def _lint_stdin(name: Optional[str], settings: Settings) -> FileResult:
    """Lint standard input as the file `name`; with --force-exclude, an excluded name has no findings."""
    data = sys.stdin.buffer.read()
    if name is not None and _force_excluded(name, settings):
        return FileResult()
    return lint_data(data, name or STDIN, settings)


def _force_excluded(name: str, settings: Settings) -> bool:
    """Whether discovery drops `name` under --force-exclude. A name that is not on disk cannot be
    checked by discovery and is linted."""
    if not settings.force_exclude or not os.path.exists(name):
        return False
    files, _ = discover([name], settings)
    return not files


def _display(path: str) -> str:
    """A path as reports show it: relative to the working folder when under it."""
    if path == STDIN:
        return path
    if os.path.isabs(path):
        relative = os.path.relpath(path)
        return path if relative.startswith(os.pardir) else relative
    return os.path.normpath(path)


def _emit(text: str, output_file: Optional[Path], ctx: click.Context) -> None:
    if output_file is None:
        click.echo(text, nl=False)
        return
    try:
        output_file.write_text(text, encoding="utf-8")
    except OSError as error:
        click.echo(f"rllint: error: cannot write {output_file}: {error.strerror or error}", err=True)
        ctx.exit(2)


def _write_statistics(diagnostics: Sequence[Diagnostic], stream: io.StringIO, as_json: bool) -> None:
    """Findings per rule, most frequent first."""
    counts = Counter((d.code, d.name) for d in diagnostics)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0][0]))
    if as_json:
        json.dump([{"code": code, "name": name, "count": count} for (code, name), count in rows], stream, indent=2)
        stream.write("\n")
        return
    width = max((len(str(count)) for _, count in rows), default=1)
    for (code, name), count in rows:
        stream.write(f"{count:>{width}}  {code}  {name}\n")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _summary(diagnostics: Sequence[Diagnostic], errors: Sequence[FileError]) -> str:
    files = len({d.path for d in diagnostics})
    parts = []
    if diagnostics:
        parts.append(f"Found {_plural(len(diagnostics), 'finding')} in {_plural(files, 'file')}.")
    elif not errors:
        parts.append("All checks passed.")
    else:
        parts.append("No findings.")
    if errors:
        parts.append(f"{_plural(len(errors), 'file')} could not be linted.")
    return " ".join(parts)


@main.command("clean")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="The cache folder to clean (default: the one `rllint check` uses).")
def clean_command(cache_dir: Optional[Path]) -> None:
    """Remove the result cache (as `ruff clean`)."""
    try:
        settings = load_settings()
    except ConfigError:
        settings = None
    folder = cache_dir or default_cache_dir(settings)
    removed = clean(folder)
    click.echo(f"Removed {_plural(removed, 'file')} from {folder}.")


@main.command("rule")
@click.argument("selector", metavar="CODE|NAME")
def rule_command(selector: str) -> None:
    """Print the page of one rule (its code or its name)."""
    try:
        rule = find_rule(selector)
    except UnknownSelector as error:
        raise click.BadParameter(str(error), param_hint="CODE|NAME") from None
    click.echo(render_page(rule), nl=False)


@main.command("rules")
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def rules_command(output_format: str) -> None:
    """List every rule: code, name, severity, and whether it runs by default."""
    rows: List[Dict[str, Any]] = [
        {"code": rule.code, "name": rule.name, "severity": getattr(rule.severity, "value", rule.severity),
         "tier": rule.tier.value, "default_enabled": rule.default_enabled, "options": [option.key for option in rule.options]}
        for rule in load_rules().values()
    ]
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    table = [("CODE", "NAME", "SEVERITY", "TIER", "DEFAULT")]
    table += [(row["code"], row["name"], row["severity"], row["tier"], "on" if row["default_enabled"] else "off")
              for row in rows]
    widths = [max(len(line[column]) for line in table) for column in range(4)]
    for line in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths)) + f"  {line[4]}")


@main.command("logs")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--output-format", "--format", "output_format", type=click.Choice(list(FORMATS)), default="text",
              show_default=True, help="How findings are written; text is `path: step N: CODE message`.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report to this file instead of standard output.")
@click.option("--select", multiple=True, callback=_split_commas, metavar="RULES",
              help="Rules to run (codes, prefixes such as RL7, names or ALL); replaces the configured ones.")
@click.option("--extend-select", multiple=True, callback=_split_commas, metavar="RULES",
              help="Rules to run in addition to the selected ones (RL706 and RL709 are off by default).")
@click.option("--ignore", multiple=True, callback=_split_commas, metavar="RULES", help="Rules not to run.")
@click.option("--metric", "metrics", multiple=True, metavar="NAME=KEY",
              help="Read metric NAME from the logged key KEY (e.g. kl=train/approx_kl); NAME is one of kl, entropy, "
                   "clip_fraction, reward, response_length, truncated_fraction, zero_std_fraction, held_out, "
                   "repetition.")
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Also draw every checked metric, with the flagged spans marked, to this PNG (needs the `plot` "
                   "extra).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Use this configuration file instead of the closest one.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (errors still exit 2).")
@click.pass_context
def logs_command(ctx: click.Context, paths: Tuple[str, ...], output_format: str, output_file: Optional[Path],
                 select: Optional[List[str]], extend_select: Optional[List[str]], ignore: Optional[List[str]],
                 metrics: Tuple[str, ...], plot_file: Optional[Path], config_file: Optional[Path],
                 exit_zero: bool) -> None:
    """Lint training runs' logged metrics (RL7xx) in PATHS: TRL trainer_state.json (checkpoint folders too),
    JSON-lines, CSV and TensorBoard event files (with the `tensorboard` extra)."""
    from rllint.logs.lint import lint_logs  # the logs package costs `rllint check` nothing
    from rllint.logs.metrics import MappingError, parse_mapping
    from rllint.rules.runlogs import LOG_METRICS

    if plot_file is not None:
        from rllint.logs.plot import PlotUnavailable, require_matplotlib

        try:
            require_matplotlib()
        except PlotUnavailable as error:
            click.echo(f"rllint: error: {error}", err=True)
            ctx.exit(2)
    try:
        start = None if config_file else _config_start(paths, None)
        settings = load_settings(config_file, start, {"select": select, "extend_select": extend_select,
                                                      "ignore": ignore})
    except ConfigError as error:
        click.echo(f"rllint: error: {error}", err=True)
        ctx.exit(2)
    try:
        mapping = {**parse_mapping(settings.option(LOG_METRICS)), **parse_mapping(metrics)}
    except MappingError as error:
        raise click.BadParameter(str(error), param_hint="--metric") from None

    result = lint_logs(list(paths), settings, mapping)
    diagnostics = [replace(d, path=_display(d.path)) for d in result.diagnostics]
    report = io.StringIO()
    FORMATS[output_format](diagnostics, report)
    _emit(report.getvalue(), output_file, ctx)
    for path, warning in result.warnings:
        click.echo(f"rllint: warning: {_display(path)}: {warning}", err=True)
    for error in result.errors:
        click.echo(f"rllint: error: {_display(error.path)}: {error.message}", err=True)
    if plot_file is not None:
        from rllint.logs.plot import plot_runs

        try:
            drawn = plot_runs(result.runs, plot_file, _display)
        except OSError as error:
            click.echo(f"rllint: error: cannot write {plot_file}: {error.strerror or error}", err=True)
            ctx.exit(2)
        if not drawn:
            click.echo("rllint: warning: --plot: no run had a metric to draw; nothing written", err=True)
    if output_format in _TEXT_FORMATS:
        click.echo(_summary(diagnostics, result.errors), err=True)
    if result.errors:
        ctx.exit(2)
    ctx.exit(1 if diagnostics and not exit_zero else 0)
