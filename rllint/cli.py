"""The command line: flags become a Settings object, the library lints, a reporter writes.

Exit status as ruff's: 0 nothing found, 1 findings, 2 a usage, configuration, file or
internal error. `check` is the default subcommand, so `rllint src/` is `rllint check src/`.
"""
from __future__ import annotations

import difflib
import errno
import io
import json
import os
import sys
import time
import traceback
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import click

from rllint import __version__
from rllint.diagnostic import Diagnostic, FileError
from rllint.report import FORMATS, MACHINE_FORMATS, ROOTED_FORMATS

# The rest of rllint (libcst above all) is imported by the commands that use it: `rllint --version`
# and `rllint clean` need none of it.
if TYPE_CHECKING:
    from rllint.config import ConfigTree
    from rllint.runner import FileResult
    from rllint.settings import Settings

STDIN = "-"


class _DefaultCheck(click.Group):
    """A group whose default subcommand is `check`, and that turns crashes into one line and exit 2."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        top_level = set(ctx.help_option_names) | {"--version"}
        if not args or (args[0] not in self.commands and args[0] not in top_level):
            if args and _looks_like_a_command(args[0]):
                close = difflib.get_close_matches(args[0], [name for name in self.commands if name != "check"], n=2)
                hint = "; did you mean " + " or ".join(f"`rllint {name}`" for name in sorted(close)) + "?" if close else ""
                raise click.UsageError(f"no such command or path: {args[0]!r}{hint}", ctx)
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


def _looks_like_a_command(word: str) -> bool:
    """A first argument that is neither an option, nor a path on disk, nor spelled like a path."""
    return not word.startswith("-") and not os.path.exists(word) and not any(c in word for c in "./\\*")


@click.group(cls=_DefaultCheck, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="\b\nOptions of check (see `rllint check --help`):\n"
                    "  --select --ignore --extend-select --format -o --statistics --config\n"
                    "  --exclude --extend-exclude --force-exclude --exit-zero --stdin-filename\n"
                    "  --jobs --no-cache --fix --unsafe-fixes --diff --add-noqa -q -v\n"
                    "  --show-settings --show-files")
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
@click.option("--fix", is_flag=True, help="Apply the safe fixes, in place, then report what is left.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff, apply the unsafe fixes too.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff instead of applying them; "
              "exit 1 when there is something to fix.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a finding (to adopt "
              "rllint on an existing tree).")
@click.option("-q", "--quiet", is_flag=True, help="Print the findings only: no summary and no warnings.")
@click.option("-v", "--verbose", is_flag=True, help="Also say which config file each file uses and how long it took.")
@click.option("--show-settings", is_flag=True, help="Print the settings the first path is linted with, and exit.")
@click.option("--show-files", is_flag=True, help="Print the files that would be linted, and exit.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Keep the result cache in this folder (default: $RLLINT_CACHE_DIR, the `cache-dir` key, "
              "~/.cache/rllint).")
@click.pass_context
def check(ctx: click.Context, paths: Tuple[str, ...], output_format: str, output_file: Optional[Path],
          statistics: bool, select: Optional[List[str]], extend_select: Optional[List[str]],
          ignore: Optional[List[str]], config_file: Optional[Path], exclude: Optional[List[str]],
          extend_exclude: Optional[List[str]], force_exclude: Optional[bool], respect_gitignore: Optional[bool],
          lint_vendored: Optional[bool], exit_zero: bool, stdin_filename: Optional[str], jobs: Optional[int],
          no_cache: bool, fix: bool, unsafe_fixes: bool, diff: bool, add_noqa: bool, quiet: bool, verbose: bool,
          show_settings: bool, show_files: bool, cache_dir: Optional[Path]) -> None:
    """Lint PATHS (files, folders or notebooks; default: the current folder).

    Each file is linted with the closest configuration file above it.
    """
    from rllint.config import ConfigError, ConfigTree, load_settings

    from_stdin = paths == (STDIN,) or (not paths and stdin_filename is not None)
    if STDIN in paths and not from_stdin:
        raise click.UsageError("`-` (standard input) cannot be combined with other paths")
    if from_stdin and (fix or diff or add_noqa):
        raise click.UsageError("--fix, --diff and --add-noqa change files; they cannot read standard input")
    overrides = {
        "select": select, "extend_select": extend_select, "ignore": ignore, "exclude": exclude,
        "extend_exclude": extend_exclude, "force_exclude": force_exclude, "respect_gitignore": respect_gitignore,
        "lint_vendored": lint_vendored,
    }
    say = _Console(quiet, verbose)
    started = time.perf_counter()
    fixed: List[Diagnostic] = []
    diffs: List[str] = []
    try:
        start = None if config_file else _config_start(paths, stdin_filename)
        configs = ConfigTree(load_settings(config_file, start, overrides), overrides, fixed=config_file is not None)
        settings = configs.run
        if show_settings:
            first = stdin_filename if from_stdin else (list(paths) or ["."])[0]
            click.echo(_settings_text(first, configs.for_path(first)), nl=False)
            ctx.exit(0)
        if from_stdin:
            _refuse_overwrite(output_file, [stdin_filename] if stdin_filename else [])
            result = _lint_stdin(stdin_filename, configs.for_path(stdin_filename or "."))
            files: List[str] = [stdin_filename or STDIN]
        else:
            files, unwalkable = _discover(list(paths) or ["."], configs, say)
            if show_files:
                for path in files:
                    click.echo(_display(path))
                ctx.exit(2 if unwalkable else 0)
            _refuse_overwrite(output_file, files)
            if fix or diff:
                from rllint.fix.apply import fix_files

                result, fixed, diffs = fix_files(files, configs, unsafe_fixes, write=not diff)
            else:
                result = _lint_groups(files, configs, jobs, no_cache, cache_dir, say)
            result.errors[:0] = unwalkable
    except ConfigError as error:
        click.echo(f"rllint: error: {error}", err=True)
        ctx.exit(2)
    say.detail(f"linted {_plural(len(files), 'file')} in {time.perf_counter() - started:.2f}s")
    rooted = output_format in ROOTED_FORMATS
    diagnostics = [replace(d, path=_display(d.path, settings.root if rooted else None)) for d in result.diagnostics]
    errors = [replace(e, path=_display(e.path, settings.root if rooted else None)) for e in result.errors]

    if add_noqa:
        from rllint.fix.apply import add_noqa_comments

        added = add_noqa_comments(result.diagnostics)
        say.summary(f"Added {_plural(added, 'noqa directive')}.")
        ctx.exit(0)
    if diff:
        click.echo("".join(diffs), nl=False)
        say.note(f"Would fix {_plural(len(fixed), 'finding')}." if fixed else "No fixes available.")
        for error in result.errors:  # a file that could not be read is no file without fixes
            click.echo(f"rllint: error: {_display(error.path)}: {error.message}", err=True)
        ctx.exit(2 if errors else 1 if fixed else 0)

    report = io.StringIO()
    if statistics:
        _write_statistics(diagnostics, report, as_json=output_format == "json")
    else:
        FORMATS[output_format](diagnostics, report, [] if output_format not in MACHINE_FORMATS else errors,
                               settings.root)
    _emit(report.getvalue(), output_file, ctx)
    for error in result.errors:
        click.echo(f"rllint: error: {_display(error.path)}: {error.message}", err=True)
    for note in result.notes:
        say.warning(note)
    if not files and not errors:
        say.warning("No Python files found under the given paths.")
    if output_format not in MACHINE_FORMATS and not statistics:
        say.summary(_summary(diagnostics, errors, fixed=len(fixed) if fix else None, unsafe=unsafe_fixes))

    if errors:
        ctx.exit(2)
    ctx.exit(1 if diagnostics and not exit_zero else 0)


class _Console:
    """Where the CLI's own lines go: the summary on stdout, as ruff prints it; warnings and details on stderr."""

    def __init__(self, quiet: bool, verbose: bool) -> None:
        self.quiet, self.verbose = quiet, verbose

    def summary(self, text: str) -> None:
        if not self.quiet:
            click.echo(text)

    def note(self, text: str) -> None:
        if not self.quiet:
            click.echo(text, err=True)

    def warning(self, text: str) -> None:
        if not self.quiet:
            click.echo(f"rllint: warning: {text}", err=True)

    def detail(self, text: str) -> None:
        if self.verbose:
            click.echo(f"rllint: {text}", err=True)


def _discover(paths: List[str], configs: ConfigTree, say: _Console) -> Tuple[List[str], List[FileError]]:
    """Files to lint, each path walked with the settings of its own closest config (so that a nested
    config's excludes hold for the files pre-commit names). A file named on the command line that
    rllint never lints is warned about, not skipped in silence."""
    from rllint.files import discover, file_kind

    groups: Dict[int, Tuple[Settings, List[str]]] = {}
    for path in paths:
        settings = configs.for_path(path)
        groups.setdefault(id(settings), (settings, []))[1].append(path)
        if os.path.isfile(path) and file_kind(path) is None:
            say.warning(f"{_display(path)}: not a kind of file rllint lints (Python, notebooks, YAML and shell "
                        "launch configs); skipped")
    files: List[str] = []
    errors: List[FileError] = []
    notices: List[str] = []
    for settings, group in groups.values():
        found, failed = discover(group, settings, notices)
        files.extend(found)
        errors.extend(failed)
    for notice in notices:
        say.note(f"rllint: {notice}")
    return sorted(set(files)), errors


def _lint_groups(files: List[str], configs: ConfigTree, jobs: Optional[int], no_cache: bool,
                 cache_dir: Optional[Path], say: _Console) -> FileResult:
    """Lint files grouped by their settings (one result cache per settings; `cache_dir` as --cache-dir)."""
    from rllint.cache import ResultCache
    from rllint.runner import FileResult, lint_files

    groups: Dict[int, Tuple[Settings, List[str]]] = {}
    for path in files:
        settings = configs.for_path(path)
        groups.setdefault(id(settings), (settings, []))[1].append(path)
    total = FileResult()
    for settings, group in groups.values():
        say.detail(f"{_plural(len(group), 'file')} with {_display(str(settings.config_path)) if settings.config_path else 'the default settings'}")
        result = lint_files(group, settings, jobs=jobs, cache=None if no_cache else ResultCache(settings, cache_dir))
        total.diagnostics.extend(result.diagnostics)
        total.errors.extend(result.errors)
        total.notes.extend(note for note in result.notes if note not in total.notes)
    total.diagnostics.sort(key=Diagnostic.sort_key)
    return total


def _settings_text(path: str, settings: Settings) -> str:
    """`--show-settings`: every key with the value `path` is linted with, as TOML."""
    from rllint.config import settings_table
    from rllint.docs import toml_value

    lines = [f"# Settings for {_display(path)}",
             f"# config file: {_display(str(settings.config_path)) if settings.config_path else 'none (defaults)'}",
             f"# project root: {settings.root}",
             f"# target Python: {'.'.join(map(str, settings.target_version)) if settings.target_version else 'not set'}",
             f"# rules: {', '.join(rule.code for rule in settings.rules())}",
             "[tool.rllint]"]
    lines += [f"{key} = {toml_value(value)}" for key, value in settings_table(settings).items()]
    return "\n".join(lines) + "\n"


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
    """Where the search for the run's config file starts (the project root that output paths are
    relative to): the folder that holds every path linted, when a config file is found from there;
    else None, so that the working folder is the root, as in ruff."""
    from rllint.config import find_config

    named = [p for p in paths if p != STDIN] or ([stdin_filename] if stdin_filename else [])
    if not named:
        return None
    common = Path(os.path.commonpath([os.path.abspath(p) for p in named]))
    return common if find_config(common) is not None else None


def _lint_stdin(name: Optional[str], settings: Settings) -> FileResult:
    """Lint standard input as the file `name`; with --force-exclude, an excluded name has no findings."""
    from rllint.runner import FileResult, lint_data

    data = sys.stdin.buffer.read()
    if name is not None and _force_excluded(name, settings):
        return FileResult()
    return lint_data(data, name or STDIN, settings)


def _force_excluded(name: str, settings: Settings) -> bool:
    """Whether discovery drops `name` under --force-exclude. A name that is not on disk cannot be
    checked by discovery and is linted."""
    from rllint.files import discover

    if not settings.force_exclude or not os.path.exists(name):
        return False
    files, _ = discover([name], settings)
    return not files


def _display(path: str, root: Optional[Path] = None) -> str:
    """A path as reports show it: relative to `root` (default: the working folder) when under it."""
    if path == STDIN:
        return path
    base = os.fspath(root) if root is not None else os.getcwd()
    absolute = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    relative = os.path.relpath(absolute, base)
    if relative.startswith(os.pardir):
        return os.path.normpath(path) if not os.path.isabs(path) and root is None else absolute
    return relative


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


def _summary(diagnostics: Sequence[Diagnostic], errors: Sequence[FileError], fixed: Optional[int] = None,
             unsafe: bool = False) -> str:
    """ruff's closing lines: what was found (and fixed), what could not be linted, what `--fix` would do."""
    files = len({d.path for d in diagnostics})
    lines = []
    if fixed:
        lines.append(f"Found {_plural(len(diagnostics) + fixed, 'finding')} ({fixed} fixed, {len(diagnostics)} remaining).")
    elif diagnostics:
        lines.append(f"Found {_plural(len(diagnostics), 'finding')} in {_plural(files, 'file')}.")
    elif not errors:
        lines.append("All checks passed.")
    else:
        lines.append("No findings.")
    if errors:
        lines[-1] += f" {_plural(len(errors), 'file')} could not be linted."
    fixable = hidden = 0
    if any(d.fix is not None for d in diagnostics):  # rllint.fix (and libcst) only when there is a fix
        from rllint.fix.apply import applicable

        fixable = sum(applicable(d, unsafe) for d in diagnostics)
        hidden = sum(applicable(d, True) for d in diagnostics) - fixable
    if fixable:
        lines.append(f"{fixable} fixable with `--fix`" + (f" ({hidden} more with `--unsafe-fixes`)." if hidden else "."))
    elif hidden:
        lines.append(f"{hidden} fixable with `--fix --unsafe-fixes`.")
    return "\n".join(lines)


@main.command("server")
@click.pass_context
def server_command(ctx: click.Context) -> None:
    """Run the language server (LSP over standard input and output) for editors."""
    try:
        from rllint.server import serve
    except ImportError as error:
        click.echo(f"rllint: error: `rllint server` needs the `lsp` extra ({error.name} is not installed): "
                   "pip install 'rllint[lsp]'", err=True)
        ctx.exit(2)
    serve()


@main.command("clean")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="The cache folder to clean (default: the one `rllint check` uses).")
def clean_command(cache_dir: Optional[Path]) -> None:
    """Remove the result cache (as `ruff clean`)."""
    from rllint.cache import clean, default_cache_dir
    from rllint.config import ConfigError, load_settings

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
    from rllint.docs import render_page
    from rllint.registry import UnknownSelector, find_rule

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
    from rllint.catalogue import entries  # the generated table: no rule module, no libcst

    rows: List[Dict[str, Any]] = [
        {"code": rule.code, "name": rule.name, "severity": rule.severity.value, "tier": rule.tier.value,
         "default_enabled": rule.default_enabled, "options": list(rule.options)}
        for rule in entries().values()
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
    from rllint.config import ConfigError, load_settings
    from rllint.logs.lint import lint_logs  # the logs package costs `rllint check` nothing
    from rllint.logs.metrics import MappingError, parse_mapping
    from rllint.rules.runlogs import LOG_METRICS

    image = missing = None
    if plot_file is not None:  # an image that cannot be drawn is said before the work; a missing extra after it
        from rllint.logs.plot import PlotPathError, PlotUnavailable, image_format

        try:
            image = image_format(plot_file)
        except PlotPathError as error:
            click.echo(f"rllint: error: {error}", err=True)
            ctx.exit(2)
        except PlotUnavailable as error:
            missing = str(error)
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
    machine = output_format in MACHINE_FORMATS
    FORMATS[output_format](diagnostics, report, result.errors if machine else [], settings.root)
    _emit(report.getvalue(), output_file, ctx)
    for path, warning in result.warnings:
        click.echo(f"rllint: warning: {_display(path)}: {warning}", err=True)
    for error in result.errors:
        click.echo(f"rllint: error: {_display(error.path)}: {error.message}", err=True)
    if not machine:
        click.echo(_summary(diagnostics, result.errors))
    if missing is not None:
        click.echo(f"rllint: error: {missing}", err=True)
        ctx.exit(2)
    if image is not None:
        from rllint.logs.plot import plot_runs

        try:
            drawn = plot_runs(result.runs, plot_file, image, _display)
        except OSError as error:
            click.echo(f"rllint: error: cannot write {plot_file}: {error.strerror or error}", err=True)
            ctx.exit(2)
        if not drawn:
            click.echo("rllint: warning: --plot: no run had a metric to draw; nothing written", err=True)
    if result.errors:
        ctx.exit(2)
    ctx.exit(1 if diagnostics and not exit_zero else 0)
