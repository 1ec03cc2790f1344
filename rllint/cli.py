"""The command line: flags become a Settings object, the library lints, a reporter writes.

Exit status as ruff's: 0 nothing found, 1 findings, 2 a usage, configuration, file or
internal error. `check` is the default subcommand, so `rllint src/` is `rllint check src/`.
"""
from __future__ import annotations

import dataclasses
import difflib
import errno
import io
import json
import os
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import click

from rllint import __version__
from rllint.diagnostic import Diagnostic, FileError
from rllint.report import FORMATS, MACHINE_FORMATS, STATISTICS_FORMATS, ReportOptions
from rllint.report.escape import printable

# The rest of rllint (libcst above all) is imported by the commands that use it: `rllint --version`
# and `rllint clean` need none of it.
if TYPE_CHECKING:
    from rllint.config import ConfigFiles, ConfigTree
    from rllint.diagnostic import FileResult
    from rllint.settings import Settings

STDIN = "-"


class _DefaultCheck(click.Group):
    """A group whose default subcommand is `check`, and that turns crashes into one line and exit 2."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        try:
            return self._parse_args(ctx, args)
        except KeyboardInterrupt:  # before `invoke`, click would print "Aborted!" and exit 1
            _stderr("rllint: interrupted")
            ctx.exit(130)

    def _parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
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
            _stderr("rllint: interrupted")
            ctx.exit(130)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except _StdoutFailed as error:
            _silence_stdout()
            _stderr(f"rllint: error: cannot write to standard output: {error}")
            ctx.exit(2)
        except Exception as error:  # a bug in rllint: one line, not a traceback, unless asked
            if isinstance(error, OSError) and error.errno == errno.EPIPE:
                raise  # `rllint | head`: click's main handles a closed pipe quietly
            if os.environ.get("RLLINT_DEBUG"):
                traceback.print_exc()
            _stderr(f"rllint: error: internal error: {type(error).__name__}: {error} (a bug in rllint: please "
                    "report it with the command and the file that caused it; RLLINT_DEBUG=1 shows the traceback)")
            ctx.exit(2)


class _StdoutFailed(Exception):
    """Standard output takes no more (`rllint > /dev/full`): one error line, exit status 2."""


def _out(text: str, nl: bool = True) -> None:
    """Text on standard output; a closed pipe stays click's to handle quietly (`rllint | head`)."""
    try:
        click.echo(text, nl=nl)
    except OSError as error:
        if error.errno == errno.EPIPE:
            raise
        raise _StdoutFailed(error.strerror or str(error)) from None


def _silence_stdout() -> None:
    """Point standard output at the null device, so that the interpreter's last flush of what could not be
    written fails no more (it would print a traceback and exit 120)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's stream): nothing to flush
        pass


def _stderr(line: str) -> None:
    """One line on standard error, its control characters escaped: a file name cannot forge a line."""
    click.echo(printable(line), err=True)


def _looks_like_a_command(word: str) -> bool:
    """A first argument that is neither an option, nor a path on disk, nor spelled like a path."""
    return not word.startswith("-") and not os.path.exists(word) and not any(c in word for c in "./\\*")


@click.group(cls=_DefaultCheck, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="\b\nOptions of check (see `rllint check --help`):\n"
                    "  --select --ignore --extend-select --extend-ignore --per-file-ignores\n"
                    "  --format -o --statistics --config --isolated --watch\n"
                    "  --exclude --extend-exclude --force-exclude --exit-zero --stdin-filename\n"
                    "  --jobs --no-cache --fix --unsafe-fixes --fix-only --show-fixes --exit-non-zero-on-fix\n"
                    "  --fixable --unfixable --target-version --diff --add-noqa -q -v\n"
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


def _file_pairs(ctx: click.Context, param: click.Parameter, values: Tuple[str, ...]) -> Optional[Dict[str, List[str]]]:
    """`--per-file-ignores 'tests/*:RL6,scripts/*.py:RL601'` -> {pattern: [selectors]}, as ruff's
    `PATTERN:CODE` pairs; None when the flag was not given."""
    pairs = _split_commas(ctx, param, values)
    if pairs is None:
        return None
    table: Dict[str, List[str]] = {}
    for pair in pairs:
        pattern, colon, selector = pair.rpartition(":")
        if not colon or not pattern.strip() or not selector.strip():
            raise click.BadParameter(f"{pair!r} is not a PATTERN:CODE pair (such as 'tests/*:RL6')")
        table.setdefault(pattern.strip(), []).append(selector.strip())
    return table


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--output-format", "--format", "output_format", type=click.Choice(list(FORMATS)), default="text",
              show_default=True, help="How findings are written. `concise` is the same as `text`: "
              "`path:line:col: CODE message`; `full` adds the code around each finding, and `[*]` when "
              "--fix can fix it.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report (and the summary) to this file instead of standard output.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule, most frequent first, "
              "instead of the findings (a JSON array with `--format json`; text or json only, as ruff).")
@click.option("--select", multiple=True, callback=_split_commas, metavar="RULES",
              help="Rules to run (codes, prefixes, names or ALL, comma-separated); replaces the configured ones.")
@click.option("--extend-select", multiple=True, callback=_split_commas, metavar="RULES",
              help="Rules to run in addition to the selected ones.")
@click.option("--ignore", "--extend-ignore", "ignore", multiple=True, callback=_split_commas, metavar="RULES",
              help="Rules not to run, in addition to the configured ones (--extend-ignore is the same, as in ruff).")
@click.option("--per-file-ignores", multiple=True, callback=_file_pairs, metavar="PATTERN:CODE",
              help="Rules not to run in the files a glob matches, as `tests/*:RL6` pairs (comma-separated); "
              "added to the configured ones.")
@click.option("--config", "config_options", multiple=True, metavar="FILE|KEY=VALUE",
              help="A configuration file to use instead of the closest one, or a TOML `KEY = VALUE` pair "
              "(`--config 'max-epsilon = 1e-3'`) that overrides that key in every configuration; repeatable.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file (flags and --config KEY=VALUE "
              "still apply).")
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
@click.option("-j", "--jobs", type=click.IntRange(min=1),
              help="Worker processes (default and most: one per core).")
@click.option("--no-cache", is_flag=True, help="Lint every file afresh, without reading or writing the result cache "
              "(kept in $RLLINT_CACHE_DIR, else ~/.cache/rllint; never inside the linted tree).")
@click.option("--fix", is_flag=True, help="Apply the safe fixes, in place, then report what is left. With `-`, "
              "print the fixed source.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff, apply the unsafe fixes too.")
@click.option("--fix-only", is_flag=True, help="Apply the fixes and report nothing else: exit 0 even when findings "
              "are left (1 with --exit-non-zero-on-fix when something was fixed). Implies --fix.")
@click.option("--show-fixes", is_flag=True, help="With --fix, --fix-only or --diff, list the findings fixed, per "
              "file and rule.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when a fix was applied, even if no finding is "
              "left.")
@click.option("--fixable", multiple=True, callback=_split_commas, metavar="RULES",
              help="Rules whose fixes are applied and offered (default: all); replaces the `fixable` key.")
@click.option("--unfixable", multiple=True, callback=_split_commas, metavar="RULES",
              help="Rules whose fixes are never applied nor offered, in addition to the `unfixable` key.")
@click.option("--target-version", metavar="pyXY", help="The oldest Python the code must run on (py39, py312...): "
              "overrides `target-version` and `requires-python`; default: those, else the running Python.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff instead of applying them; "
              "exit 1 when there is something to fix.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a finding (to adopt "
              "rllint on an existing tree).")
@click.option("--watch", is_flag=True, help="Lint again whenever a linted file or its config changes, until Ctrl-C.")
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
          ignore: Optional[List[str]], per_file_ignores: Optional[Dict[str, List[str]]],
          config_options: Tuple[str, ...], isolated: bool,
          exclude: Optional[List[str]], extend_exclude: Optional[List[str]], force_exclude: Optional[bool],
          respect_gitignore: Optional[bool], lint_vendored: Optional[bool], exit_zero: bool,
          stdin_filename: Optional[str], jobs: Optional[int], no_cache: bool, fix: bool, unsafe_fixes: bool,
          fix_only: bool, show_fixes: bool, exit_non_zero_on_fix: bool, fixable: Optional[List[str]],
          unfixable: Optional[List[str]], target_version: Optional[str],
          diff: bool, add_noqa: bool, watch: bool, quiet: bool, verbose: bool, show_settings: bool,
          show_files: bool, cache_dir: Optional[Path]) -> None:
    """Lint PATHS (files, folders or notebooks; default: the current folder).

    Each file is linted with the closest configuration file above it.
    """
    from rllint.config import ConfigError, ConfigFiles, ConfigTree, load_settings

    from_stdin = paths == (STDIN,) or (not paths and stdin_filename is not None)
    if STDIN in paths and not from_stdin:
        raise click.UsageError("`-` (standard input) cannot be combined with other paths")
    if from_stdin and add_noqa:
        raise click.UsageError("--add-noqa changes files; it cannot read standard input")
    if statistics and output_format not in STATISTICS_FORMATS:
        raise click.UsageError(f"--statistics prints text or json, not {output_format} (as ruff)")
    if watch:
        if from_stdin or diff or add_noqa or show_settings or show_files:
            raise click.UsageError("--watch lints files on disk again and again; it cannot be combined with "
                                   "standard input, --diff, --add-noqa, --show-settings or --show-files")
        _watch(ctx)  # until Ctrl-C
    fix = fix or fix_only
    flags = _FixFlags(unsafe_fixes, diff, fix_only, show_fixes, exit_non_zero_on_fix, exit_zero)
    say = _Console(quiet, verbose)
    started = time.perf_counter()
    fixed: List[Diagnostic] = []
    diffs: List[str] = []
    sources: Dict[str, str] = {}  # texts read from standard input, for the code frames of `full`
    files_read = ConfigFiles()
    try:
        config_file, config_values = _config_options(config_options, isolated)
        overrides = {
            "config_values": config_values, "select": select, "extend_select": extend_select, "ignore": ignore,
            "per_file_ignores": per_file_ignores, "exclude": exclude, "extend_exclude": extend_exclude,
            "force_exclude": force_exclude, "respect_gitignore": respect_gitignore, "lint_vendored": lint_vendored,
            "fixable": fixable, "unfixable": unfixable, "target_version_name": target_version,
        }
        start = None if config_file or isolated else _config_start(paths, stdin_filename, files_read)
        run = load_settings(config_file, start, overrides, isolated=isolated, files=files_read)
        configs = ConfigTree(run, overrides, fixed=config_file is not None, isolated=isolated, files=files_read)
        settings = configs.run
        if show_settings:
            first = stdin_filename if from_stdin else (list(paths) or ["."])[0]
            _out(_settings_text(first, configs.for_path(first)), nl=False)
            ctx.exit(0)
        if from_stdin:
            _refuse_overwrite(output_file, [stdin_filename] if stdin_filename else [])
            data = sys.stdin.buffer.read()
            if fix or diff:
                _fix_stdin(ctx, data, stdin_filename, configs.for_path(stdin_filename or "."), flags, say)
            result = _lint_stdin(data, stdin_filename, configs.for_path(stdin_filename or "."))
            files: List[str] = [stdin_filename or STDIN]
            sources[_display(files[0])] = data.decode("utf-8", "replace")
        else:
            files, unwalkable = _discover(list(paths) or ["."], configs, say)
            if _WATCHED in ctx.meta:  # under --watch
                ctx.meta[_WATCHED] = _watched(files, list(paths) or ["."], configs)
            if show_files:
                for path in files:
                    _out(printable(_display(path)))
                ctx.exit(2 if unwalkable else 0)
            _refuse_overwrite(output_file, files)
            if fix or diff:
                from rllint.fix.apply import fix_files

                result, fixed, diffs = fix_files(files, configs, unsafe_fixes, write=not diff,
                                                 roots=list(paths) or ["."])
            else:
                cores = os.cpu_count() or 1
                result = _lint_groups(files, configs, min(jobs, cores) if jobs else None, no_cache, cache_dir, say,
                                      named=[p for p in paths if os.path.isdir(p)])
            result.errors[:0] = unwalkable
    except ConfigError as error:
        say.error(str(error))
        ctx.exit(2)
    say.detail(f"linted {_plural(len(files), 'file')} in {time.perf_counter() - started:.2f}s")
    diagnostics = [replace(d, path=_display(d.path)) for d in result.diagnostics]
    errors = [replace(e, path=_display(e.path)) for e in result.errors]

    if add_noqa:
        from rllint.fix.apply import add_noqa_comments

        added, failed = add_noqa_comments(result.diagnostics, roots=list(paths) or ["."])
        for error in result.errors + failed:
            click.echo(f"rllint: error: {_display(error.path)}: {error.message}", err=True)
        say.summary(f"Added {_plural(added, 'noqa directive')}.")
        ctx.exit(2 if result.errors or failed else 0)
    if diff or fix_only:
        _report_fixes(ctx, result, fixed, diffs, flags, say)

    report = io.StringIO()
    if statistics:
        _write_statistics(diagnostics, report, as_json=output_format == "json")
    else:
        options = ReportOptions(docs_url=settings.docs_url, unsafe_fixes=unsafe_fixes, lines=_SourceLines(sources))
        FORMATS[output_format](diagnostics, report, errors if output_format in MACHINE_FORMATS else [], options)
    if output_format not in MACHINE_FORMATS and not statistics and not quiet:  # as ruff: where the report goes
        if show_fixes and fixed:
            report.write(_fixes_listed(fixed, "Fixed") + "\n")
        report.write(_summary(diagnostics, errors, fixed=len(fixed) if fix else None, unsafe=unsafe_fixes) + "\n")
    _emit(report.getvalue(), output_file, ctx)
    for error in errors:
        say.error(f"{error.path}: {error.message}")
    for note in result.notes:
        say.warning(note)
    if not files and not errors:
        say.warning("No Python files found under the given paths.")

    ctx.exit(2 if errors else flags.status(len(fixed), len(diagnostics)))


@dataclass(frozen=True)
class _FixFlags:
    """The flags that say how fixes are applied and reported."""

    unsafe: bool
    diff: bool
    fix_only: bool
    show_fixes: bool
    exit_non_zero_on_fix: bool
    exit_zero: bool

    def status(self, fixed: int, left: int) -> int:
        """The exit status of a run without errors, as ruff's: --diff fails when there is something to fix,
        --fix-only only with --exit-non-zero-on-fix, --fix when findings are left (or fixes made, with it)."""
        if self.exit_zero:
            return 0
        if self.diff:
            return 1 if fixed else 0
        return 1 if (left and not self.fix_only) or (self.exit_non_zero_on_fix and fixed) else 0


def _report_fixes(ctx: click.Context, result: FileResult, fixed: List[Diagnostic], diffs: List[str],
                  flags: _FixFlags, say: _Console) -> None:
    """The end of `--diff` (the diffs on standard output, what they fix on standard error) and of
    `--fix-only` (what was fixed, nothing of what is left); files that could not be fixed, then exit."""
    for error in result.errors:
        click.echo(f"rllint: error: {_display(error.path)}: {error.message}", err=True)
    if flags.diff:
        click.echo("".join(diffs), nl=False)
        if flags.show_fixes and fixed:
            for line in _fixes_listed(fixed, "Would fix").splitlines():
                say.note(line)
        else:
            say.note(f"Would fix {_plural(len(fixed), 'finding')}." if fixed else "No fixes available.")
    else:
        listed = (_fixes_listed(fixed, "Fixed") if flags.show_fixes and fixed
                  else f"Fixed {_plural(len(fixed), 'finding')}.")
        for line in listed.splitlines():
            say.summary(line)
    ctx.exit(2 if result.errors else flags.status(len(fixed), len(result.diagnostics)))


def _fixes_listed(fixed: Sequence[Diagnostic], verb: str) -> str:
    """`--show-fixes`, as ruff lists them: per file, how many findings of each rule were fixed."""
    lines = [f"{verb} {_plural(len(fixed), 'finding')}:"]
    by_file: Dict[str, Counter] = {}
    for d in fixed:
        by_file.setdefault(_display(d.path), Counter())[(d.code, d.name)] += 1
    for path in sorted(by_file):
        lines.append(f"- {path}:")
        lines += [f"    {count} × {code} ({name})" for (code, name), count in sorted(by_file[path].items())]
    return "\n".join(lines)


def _fix_stdin(ctx: click.Context, data: bytes, name: Optional[str], settings: Settings, flags: _FixFlags,
               say: _Console) -> None:
    """`cat f.py | rllint - --fix --stdin-filename f.py`, as ruff: the fixed source on standard output (the
    input unchanged when it cannot be fixed, or is excluded), what is left on standard error; with --diff,
    the diff instead. Then exit."""
    from rllint.fix.apply import FixError, fix_bytes
    from rllint.fix.write import WriteError
    from rllint.notebook import NotebookError
    from rllint.source import SourceError

    path = name or STDIN
    stdout = sys.stdout.buffer
    if name is not None and _force_excluded(name, settings):
        if not flags.diff:
            stdout.write(data)
        ctx.exit(0)
    try:
        outcome = fix_bytes(data, path, settings, flags.unsafe)
    except (SourceError, FixError, NotebookError, WriteError) as error:
        if not flags.diff:
            stdout.write(data)
        click.echo(f"rllint: error: {_display(path)}: {error}", err=True)
        ctx.exit(2)
    if flags.diff:
        _report_fixes(ctx, outcome.result, outcome.fixed, [outcome.diff] if outcome.diff else [], flags, say)
    stdout.write(outcome.data)
    stdout.flush()
    if not flags.fix_only:
        report = io.StringIO()
        FORMATS["text"]([replace(d, path=_display(d.path)) for d in outcome.result.diagnostics], report, [],
                        ReportOptions(docs_url=settings.docs_url, unsafe_fixes=flags.unsafe))
        click.echo(report.getvalue(), nl=False, err=True)
    if flags.show_fixes and outcome.fixed:
        for line in _fixes_listed(outcome.fixed, "Fixed").splitlines():
            say.note(line)
    for error in outcome.result.errors:
        click.echo(f"rllint: error: {_display(error.path)}: {error.message}", err=True)
    ctx.exit(2 if outcome.result.errors else flags.status(len(outcome.fixed), len(outcome.result.diagnostics)))


def _config_options(values: Sequence[str], isolated: bool) -> Tuple[Optional[Path], List[Dict[str, Any]]]:
    """`--config` values, as ruff reads them: the configuration file (at most one; none with --isolated) and
    the tables of the `KEY = VALUE` pairs. Raises ConfigError."""
    from rllint.config import parse_config_value

    named = [os.path.isfile(value) or "=" not in value for value in values]
    files = [Path(value) for value, is_file in zip(values, named) if is_file]
    if len(files) > 1:
        raise click.UsageError(f"--config names {len(files)} configuration files; give one (and KEY=VALUE pairs)")
    if files and isolated:
        raise click.UsageError(f"--config {files[0]} cannot be used with --isolated, which reads no "
                               "configuration file")
    tables = [parse_config_value(value) for value, is_file in zip(values, named) if not is_file]
    return (files[0] if files else None), tables


class _Console:
    """Where the CLI's own lines go: the summary on stdout, as ruff prints it; errors, warnings and details
    on stderr, their control characters escaped."""

    def __init__(self, quiet: bool, verbose: bool) -> None:
        self.quiet, self.verbose = quiet, verbose

    def summary(self, text: str) -> None:
        if not self.quiet:
            _out(text)

    def note(self, text: str) -> None:
        if not self.quiet:
            _stderr(text)

    def error(self, text: str) -> None:
        _stderr(f"rllint: error: {text}")

    def warning(self, text: str) -> None:
        if not self.quiet:
            _stderr(f"rllint: warning: {text}")

    def detail(self, text: str) -> None:
        if self.verbose:
            _stderr(f"rllint: {text}")


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
                 cache_dir: Optional[Path], say: _Console, named: Sequence[str] = ()) -> FileResult:
    """Lint files grouped by their settings (one result cache per settings; `cache_dir` as --cache-dir), all
    in one pool of workers. `named`: the folders the command line names, each the project of the files under
    it that have no project marker of their own (those under the working folder have it as theirs)."""
    from rllint.cache import ResultCache
    from rllint.runner import lint_groups

    groups: Dict[int, Tuple[Settings, List[str]]] = {}
    for path in files:
        settings = configs.for_path(path)
        groups.setdefault(id(settings), (settings, []))[1].append(path)
    runs = []
    for settings, group in groups.values():
        here = os.getcwd()
        outside = tuple(d for d in map(os.path.abspath, named) if d != here and not d.startswith(here + os.sep))
        settings = dataclasses.replace(settings, project_dirs=outside)
        config = _display(str(settings.config_path)) if settings.config_path else "the default settings"
        say.detail(f"{_plural(len(group), 'file')} with {config}")
        runs.append((settings, group, None if no_cache else ResultCache(settings, cache_dir)))
    result = lint_groups(runs, jobs=jobs)
    for problem in dict.fromkeys(cache.problem for _, _, cache in runs if cache is not None and cache.problem):
        say.warning(problem)
    return result


_WATCHED = "rllint.watched"  # the run's entry in `ctx.meta`: what --watch looks at
WATCH_INTERVAL = 0.5  # seconds between two looks


def _watched(files: Sequence[str], paths: Sequence[str], configs: ConfigTree) -> List[str]:
    """What --watch looks at: the linted files, the folders that hold them and the paths given (a file that
    appears or goes changes its folder), and the config file of each."""
    folders = {os.path.dirname(path) or "." for path in files}
    configured = (configs.for_path(path).config_path for path in files)
    return sorted(set(files) | folders | set(paths) | {str(config) for config in configured if config})


def _snapshot(paths: Sequence[str]) -> Dict[str, Optional[Tuple[int, int]]]:
    """Each path's modification time and size (None: gone)."""
    state: Dict[str, Optional[Tuple[int, int]]] = {}
    for path in paths:
        try:
            status = os.stat(path)
            state[path] = (status.st_mtime_ns, status.st_size)
        except OSError:
            state[path] = None
    return state


def _pause() -> None:
    time.sleep(WATCH_INTERVAL)


def _watch(ctx: click.Context) -> None:
    """`--watch`, as ruff's: lint, then look every WATCH_INTERVAL seconds (polling: no dependency, works on
    every filesystem) and lint again when something changed; until Ctrl-C (exit status 130)."""
    params = dict(ctx.params, watch=False)
    ctx.meta[_WATCHED] = []
    while True:
        try:
            ctx.invoke(check, **params)
        except click.exceptions.Exit:
            pass
        watched = ctx.meta[_WATCHED] or list(params["paths"]) or ["."]  # nothing found yet (a config error)
        _stderr(f"rllint: watching {_plural(len(watched), 'path')} for changes (Ctrl-C stops)")
        before = _snapshot(watched)
        while _snapshot(watched) == before:
            _pause()
        _stderr("rllint: a change; linting again")


class _SourceLines:
    """The lines a finding is on (those of its cell, in a notebook), for the code frames of `full`: each
    file read once, and only when a finding in it is shown. `given` holds texts not on disk (standard
    input) by their shown path."""

    def __init__(self, given: Dict[str, str]) -> None:
        self._lines = {(path, None): _python_lines(text) for path, text in given.items()}
        self._read = set(given)

    def __call__(self, d: Diagnostic) -> Optional[List[str]]:
        if d.path not in self._read:
            self._read.add(d.path)
            self._lines.update(_read_lines(d.path))
        return self._lines.get((d.path, d.cell))


def _python_lines(text: str) -> List[str]:
    """A text's lines as Python numbers them: only `\n`, `\r\n` and `\r` end one (not a form feed)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _read_lines(path: str) -> Dict[Tuple[str, Optional[int]], List[str]]:
    """{(path, cell): lines} of a file on disk: one entry (cell None), one per code cell of a notebook, or
    none when it cannot be read."""
    from rllint.files import file_kind
    from rllint.notebook import NotebookError, read_cells
    from rllint.source import SourceError, decode_config, decode_source, read_source

    try:
        data = read_source(path)
        if file_kind(path) == "notebook":
            cells = read_cells(data)
            found: Dict[Tuple[str, Optional[int]], List[str]] = {}
            for line, (cell, _) in zip(_python_lines(cells.text), cells.origins):
                found.setdefault((path, cell), []).append(line)
            return found
        text = decode_source(data) if file_kind(path) == "python" else decode_config(data)
    except (OSError, SourceError, NotebookError):
        return {}
    return {} if text is None else {(path, None): _python_lines(text)}


def _settings_text(path: str, settings: Settings) -> str:
    """`--show-settings`: every key with the value `path` is linted with, as TOML."""
    from rllint.config import settings_table
    from rllint.docs import toml_value

    config = _display(str(settings.config_path)) if settings.config_path else "none (defaults)"
    lines = [f"# Settings for {printable(_display(path))}",
             f"# config file: {printable(config)}",
             f"# project root: {printable(str(settings.root))}",
             f"# target Python: {'.'.join(map(str, settings.target_python()))}",
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


def _config_start(paths: Sequence[str], stdin_filename: Optional[str],
                  files: Optional[ConfigFiles] = None) -> Optional[Path]:
    """Where the search for the run's config file starts (the settings of files that no config covers): the
    folder that holds every path linted, when a config file is found from there; else None, so that the
    working folder is the root, as in ruff."""
    from rllint.config import find_config

    named = [p for p in paths if p != STDIN] or ([stdin_filename] if stdin_filename else [])
    if not named:
        return None
    common = Path(os.path.commonpath([os.path.abspath(p) for p in named]))
    return common if find_config(common, files) is not None else None


def _lint_stdin(data: bytes, name: Optional[str], settings: Settings) -> FileResult:
    """Lint standard input as the file `name`; with --force-exclude, an excluded name has no findings."""
    from rllint.diagnostic import FileResult
    from rllint.runner import lint_data

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


def _display(path: str) -> str:
    """A path as every format shows it, as ruff's: relative to the working folder when under it."""
    if path == STDIN:
        return path
    absolute = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    relative = os.path.relpath(absolute, os.getcwd())
    if relative.startswith(os.pardir):
        return absolute if os.path.isabs(path) else os.path.normpath(path)
    return relative


def _emit(text: str, output_file: Optional[Path], ctx: click.Context) -> None:
    if output_file is None:
        _out(text, nl=False)
        return
    try:
        output_file.write_text(text, encoding="utf-8")
    except OSError as error:
        _stderr(f"rllint: error: cannot write {output_file}: {error.strerror or error}")
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
        _stderr(f"rllint: error: `rllint server` needs the `lsp` extra ({error.name} is not installed): "
                "pip install 'rllint[lsp]'")
        ctx.exit(2)
    serve()


@main.command("clean")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="The cache folder to clean (default: the one `rllint check` uses).")
@click.option("--all", "everything", is_flag=True,
              help="Remove the results of every project in the cache folder, not only this one's.")
def clean_command(cache_dir: Optional[Path], everything: bool) -> None:
    """Remove this project's results from the result cache (as `ruff clean`).

    The project is the folder of the closest config file, else the working folder; its results are
    those of files linted with a config at or below it. `--all` removes every project's results. Only
    files rllint wrote are removed, and only from a folder that holds rllint's CACHEDIR.TAG.
    """
    from rllint.cache import clean, default_cache_dir, owned
    from rllint.config import ConfigError, load_settings

    try:
        settings = load_settings()
    except ConfigError:
        settings = None
    folder = cache_dir or default_cache_dir(settings)
    if folder.exists() and not owned(folder):
        _out(printable(f"{folder} is not a cache folder of rllint's (it has no CACHEDIR.TAG of rllint's); "
                       "nothing removed."))
        return
    project = None if everything else (settings.root if settings is not None else Path.cwd().resolve())
    removed = clean(folder, project)
    whose = "every project's results" if everything else f"the results of {project}"
    _out(printable(f"Removed {_plural(removed, 'file')} ({whose}) from {folder}."))


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
    _out(render_page(rule), nl=False)


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
        _out(json.dumps(rows, indent=2))
        return
    table = [("CODE", "NAME", "SEVERITY", "TIER", "DEFAULT")]
    table += [(row["code"], row["name"], row["severity"], row["tier"], "on" if row["default_enabled"] else "off")
              for row in rows]
    widths = [max(len(line[column]) for line in table) for column in range(4)]
    for line in table:
        _out("  ".join(cell.ljust(width) for cell, width in zip(line, widths)) + f"  {line[4]}")


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
            _stderr(f"rllint: error: {error}")
            ctx.exit(2)
        except PlotUnavailable as error:
            missing = str(error)
    try:
        start = None if config_file else _config_start(paths, None)
        settings = load_settings(config_file, start, {"select": select, "extend_select": extend_select,
                                                      "ignore": ignore})
    except ConfigError as error:
        _stderr(f"rllint: error: {error}")
        ctx.exit(2)
    try:
        mapping = {**parse_mapping(settings.option(LOG_METRICS)), **parse_mapping(metrics)}
    except MappingError as error:
        raise click.BadParameter(str(error), param_hint="--metric") from None

    result = lint_logs(list(paths), settings, mapping)
    diagnostics = [replace(d, path=_display(d.path)) for d in result.diagnostics]
    report = io.StringIO()
    machine = output_format in MACHINE_FORMATS
    FORMATS[output_format](diagnostics, report, result.errors if machine else [], ReportOptions(settings.docs_url))
    if not machine:  # into the report, as in `check`
        report.write(_summary(diagnostics, result.errors) + "\n")
    _emit(report.getvalue(), output_file, ctx)
    for path, warning in result.warnings:
        _stderr(f"rllint: warning: {_display(path)}: {warning}")
    for error in result.errors:
        _stderr(f"rllint: error: {_display(error.path)}: {error.message}")
    if missing is not None:
        _stderr(f"rllint: error: {missing}")
        ctx.exit(2)
    if image is not None:
        from rllint.logs.plot import plot_runs

        try:
            drawn = plot_runs(result.runs, plot_file, image, _display)
        except OSError as error:
            _stderr(f"rllint: error: cannot write {plot_file}: {error.strerror or error}")
            ctx.exit(2)
        if not drawn:
            _stderr("rllint: warning: --plot: no run had a metric to draw; nothing written")
    if result.errors:
        ctx.exit(2)
    ctx.exit(1 if diagnostics and not exit_zero else 0)
