"""The command line as users drive it: exit codes, formats, selection, config errors, stdin, bad paths.

Findings come from RL000 (syntax errors) and RL001 (unused suppressions, off by default),
which the runner itself reports, so these tests do not depend on any analysis rule.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

from rllint import __version__, cli
from rllint.docs import render_page
from rllint.rules.meta import SyntaxErrorRule

BAD = "def reward(completion):\n    return (len(completion)\n"
UNUSED = "x = 1  # noqa: RL000\n"  # an RL001 finding at 1:8 when RL001 is selected
GOOD = "x = 1\n"


def syntax_error(source):
    """(line, column, message) that CPython gives, so that the expectations hold on every version."""
    try:
        compile(source, "bad.py", "exec")
    except SyntaxError as error:
        return error.lineno, error.offset, error.msg
    raise AssertionError("source parses")


LINE, COL, DETAIL = syntax_error(BAD)
BAD_LINE = f"bad.py:{LINE}:{COL}: RL000 syntax error: {DETAIL}"
UNUSED_MESSAGE = "unused suppression of `RL000`: nothing on this line is reported under it"


def runner():
    try:
        return CliRunner(mix_stderr=False)  # click < 8.2 mixes stderr into output unless told not to
    except TypeError:
        return CliRunner()


def run(*args, input=None):
    return runner().invoke(cli.main, list(args), input=input)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A working folder with one file that does not parse and two that do."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "unused.py").write_text(UNUSED)
    return tmp_path


def test_findings_exit_1_in_flake8_format_with_summary(project):
    result = run("check", ".")
    assert result.exit_code == 1
    assert result.stdout == BAD_LINE + "\nFound 1 finding in 1 file.\n"  # the summary on stdout, as ruff's
    assert result.stderr == ""


def test_clean_run_exits_0(project):
    result = run("good.py", "unused.py")
    assert result.exit_code == 0
    assert result.stdout == "All checks passed.\n"
    assert result.stderr == ""


def test_check_is_the_default_subcommand_and_lints_the_working_folder(project):
    assert run().stdout == run("check").stdout == run("bad.py").stdout == BAD_LINE + "\nFound 1 finding in 1 file.\n"


def test_summary_counts_findings_and_files(project):
    (project / "bad2.py").write_text("# a second script\n" + BAD)
    result = run("--extend-select", "RL001")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == "Found 3 findings in 3 files."


def test_exit_zero_turns_findings_into_success_but_not_errors(project):
    assert run("--exit-zero", "bad.py").exit_code == 0
    assert run("--exit-zero", "bad.py", "missing.py").exit_code == 2


def test_absolute_paths_are_shown_relative_to_the_working_folder(project, tmp_path_factory):
    assert run("-q", str(project / "bad.py")).stdout == BAD_LINE + "\n"
    outside = tmp_path_factory.mktemp("elsewhere") / "bad.py"
    outside.write_text(BAD)
    assert run("-q", str(outside)).stdout == f"{outside}:{LINE}:{COL}: RL000 syntax error: {DETAIL}\n"


def test_concise_is_the_text_format(project):
    assert run("--output-format", "concise", "bad.py").stdout == run("--output-format", "text", "bad.py").stdout


def test_json_format(project):
    result = run("--format", "json", "--extend-select", "RL001")
    assert result.exit_code == 1
    findings = json.loads(result.stdout)
    assert findings == [
        {"path": "bad.py", "line": LINE, "column": COL, "end_line": findings[0]["end_line"],
         "end_column": findings[0]["end_column"], "code": "RL000", "name": "syntax-error",
         "severity": "error", "message": f"syntax error: {DETAIL}", "fix": None, "cell": None},
        {"path": "unused.py", "line": 1, "column": 8, "end_line": 1, "end_column": 8, "code": "RL001",
         "name": "unused-suppression", "severity": "info", "message": UNUSED_MESSAGE, "fix": None, "cell": None},
    ]
    assert result.stderr == ""  # machine formats keep stderr for errors only


def test_json_format_of_a_clean_run_is_an_empty_array(project):
    result = run("--format", "json", "good.py")
    assert result.exit_code == 0 and json.loads(result.stdout) == []


def test_json_lines_format(project):
    result = run("--output-format", "json-lines", "--extend-select", "RL001")
    lines = result.stdout.splitlines()
    assert [(item["path"], item["code"]) for item in map(json.loads, lines)] == [
        ("bad.py", "RL000"), ("unused.py", "RL001")]


def test_github_format(project):
    result = run("--format", "github", "--extend-select", "RL001", "unused.py")
    assert result.stdout == (
        "::notice file=unused.py,line=1,col=8,endLine=1,endColumn=8,title=rllint (RL001)::" + UNUSED_MESSAGE + "\n")


def test_sarif_format(project):
    result = run("--format", "sarif", "bad.py")
    log = json.loads(result.stdout)
    assert log["version"] == "2.1.0"
    run_ = log["runs"][0]
    assert [rule["id"] for rule in run_["tool"]["driver"]["rules"]] == ["RL000"]
    location = run_["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "bad.py", "uriBaseId": "%SRCROOT%"}
    assert (location["region"]["startLine"], location["region"]["startColumn"]) == (LINE, COL)


def test_output_file(project):
    result = run("-o", "report.json", "--format", "json", "bad.py")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert [d["code"] for d in json.loads((project / "report.json").read_text())] == ["RL000"]


def test_unwritable_output_file_is_an_error(project):
    result = run("--output-file", str(project / "no" / "such" / "folder" / "out.txt"), "bad.py")
    assert result.exit_code == 2
    assert "rllint: error: cannot write" in result.stderr


def test_statistics_counts_per_rule_most_frequent_first(project):
    for number in range(2):
        (project / f"unused{number}.py").write_text(f"# file {number}\n" + UNUSED)
    result = run("--statistics", "--extend-select", "RL001")
    assert result.exit_code == 1
    assert result.stdout == "3  RL001  unused-suppression\n1  RL000  syntax-error\n"
    as_json = json.loads(run("--statistics", "--format", "json", "--extend-select", "RL001").stdout)
    assert as_json == [{"code": "RL001", "name": "unused-suppression", "count": 3},
                       {"code": "RL000", "name": "syntax-error", "count": 1}]


def codes_found(*args):
    result = run("--format", "json", *args)
    assert result.exit_code in (0, 1), result.stderr
    return sorted({d["code"] for d in json.loads(result.stdout)})


@pytest.mark.parametrize("args, expected", [
    ((), ["RL000"]),
    (("--extend-select", "RL001"), ["RL000", "RL001"]),
    (("--extend-select", "unused-suppression"), ["RL000", "RL001"]),
    (("--select", "RL000"), ["RL000"]),
    (("--select", "RL001"), []),  # RL001 only reports codes of rules that ran
    (("--select", "ALL"), ["RL000", "RL001"]),
    (("--select", "RL"), ["RL000", "RL001"]),
    (("--select", "RL00"), ["RL000", "RL001"]),
    (("--select", "RL000,unused-suppression"), ["RL000", "RL001"]),
    (("--select", "RL000", "--select", "RL001"), ["RL000", "RL001"]),
    (("--select", "ALL", "--ignore", "unused-suppression"), ["RL000"]),
    (("--select", "RL0", "--ignore", "RL001"), ["RL000"]),
    (("--ignore", "RL000"), []),
])
def test_selection_by_code_prefix_name_and_all(project, args, expected):
    assert codes_found(*args) == expected


def test_unknown_selector_is_a_usage_error_with_a_suggestion(project):
    result = run("--select", "syntax-eror", "bad.py")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "rllint: error: --select: unknown rule selector 'syntax-eror'; did you mean 'syntax-error'?" in result.stderr


def test_unknown_option_is_a_usage_error(project):
    result = run("--no-such-flag", "bad.py")
    assert result.exit_code == 2
    assert "No such option" in result.stderr


def test_config_file_is_used(project):
    (project / "pyproject.toml").write_text('[tool.rllint]\nextend-select = ["RL001"]\n')
    assert codes_found() == ["RL000", "RL001"]
    (project / "other.toml").write_text('ignore = ["RL000"]\n')
    assert codes_found("--config", "other.toml") == []


def test_config_error_exits_2_naming_file_and_key(project):
    (project / "pyproject.toml").write_text('[tool.rllint]\nselct = ["RL000"]\n')
    result = run("bad.py")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("rllint: error: pyproject.toml: ")
    assert "'selct'" in result.stderr and "did you mean 'select'?" in result.stderr


def test_missing_config_file_is_an_error(project):
    result = run("--config", "nowhere.toml", "bad.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("rllint: error: ") and "nowhere.toml" in result.stderr


def test_syntax_error_among_good_files_does_not_hide_their_findings(project):
    result = run("--extend-select", "RL001")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[:-1] == [BAD_LINE, f"unused.py:1:8: RL001 {UNUSED_MESSAGE}"]


def test_missing_path_is_reported_and_the_others_are_still_linted(project):
    result = run("missing.py", "bad.py")
    assert result.exit_code == 2
    assert result.stdout == BAD_LINE + "\nFound 1 finding in 1 file. 1 file could not be linted.\n"
    assert result.stderr == "rllint: error: missing.py: No such file or directory\n"


def test_undecodable_file_is_a_file_error(project):
    (project / "latin.py").write_bytes(b"name = '\xe9'\n")
    result = run("latin.py", "good.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("rllint: error: latin.py: cannot be decoded")


def test_stdin_is_linted_under_the_given_name(project):
    result = run("-", "--stdin-filename", "pkg/train.py", input=BAD.encode())
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == f"pkg/train.py:{LINE}:{COL}: RL000 syntax error: {DETAIL}"
    assert run("--stdin-filename", "train.py", input=GOOD.encode()).exit_code == 0


def test_stdin_without_a_name(project):
    result = run("-", input=BAD.encode())
    assert result.stdout.splitlines()[0] == f"-:{LINE}:{COL}: RL000 syntax error: {DETAIL}"


def test_stdin_with_force_exclude_and_an_excluded_name_has_no_findings(project):
    (project / "generated").mkdir()
    (project / "generated" / "train.py").write_text(BAD)
    args = ["-", "--stdin-filename", "generated/train.py", "--extend-exclude", "generated"]
    assert run(*args, input=BAD.encode()).exit_code == 1
    result = run(*args, "--force-exclude", input=BAD.encode())
    assert result.exit_code == 0 and result.stdout == "All checks passed.\n"


def test_force_exclude_applies_to_paths_named_on_the_command_line(project):
    assert run("--extend-exclude", "bad.py", "bad.py").exit_code == 1
    assert run("--extend-exclude", "bad.py", "--force-exclude", "bad.py").exit_code == 0
    assert run("--exclude", "bad.py", "--force-exclude", "bad.py", "good.py").exit_code == 0


def test_excluded_folders_are_skipped_in_walks(project):
    (project / "vendor").mkdir()
    (project / "vendor" / "broken.py").write_text(BAD)
    assert run("--format", "json").stdout.count("vendor") == 1
    assert run("--format", "json", "--extend-exclude", "vendor").stdout.count("vendor") == 0


def test_stdin_cannot_be_combined_with_paths(project):
    result = run("-", "bad.py", input=b"")
    assert result.exit_code == 2
    assert "cannot be combined" in result.stderr


def test_jobs_give_the_same_report(project):
    for number in range(20):  # above the runner's threshold for worker processes
        (project / f"bad{number:02}.py").write_text(f"# script {number}\n" + BAD)
    serial = run("--jobs", "1")
    parallel = run("--jobs", "2")
    assert serial.exit_code == parallel.exit_code == 1
    assert serial.stdout == parallel.stdout and len(serial.stdout.splitlines()) == 22
    assert run("--jobs", "0").exit_code == 2


def test_internal_error_is_one_line_and_exit_2(project, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("rllint.runner.lint_groups", crash)  # the command imports it when it lints
    monkeypatch.delenv("RLLINT_DEBUG", raising=False)
    result = run("bad.py")
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("rllint: error: internal error: RuntimeError: boom (a bug in rllint: please report it")
    monkeypatch.setenv("RLLINT_DEBUG", "1")
    debugged = run("bad.py")
    assert debugged.exit_code == 2
    assert "Traceback (most recent call last)" in debugged.stderr and "RuntimeError: boom" in debugged.stderr


def test_rule_prints_the_page_by_code_or_name():
    page = render_page(SyntaxErrorRule)
    by_code = run("rule", "RL000")
    assert by_code.exit_code == 0 and by_code.stdout == page
    assert run("rule", "syntax-error").stdout == page


def test_unknown_rule_is_a_usage_error():
    result = run("rule", "syntax-eror")
    assert result.exit_code == 2
    assert "did you mean 'syntax-error'?" in result.stderr


def test_rules_lists_every_rule_as_an_aligned_table():
    lines = run("rules").stdout.splitlines()
    header = lines[0].split()
    assert header == ["CODE", "NAME", "SEVERITY", "TIER", "DEFAULT"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["RL000"] == ["RL000", "syntax-error", "error", "correctness", "on"]
    assert rows["RL001"] == ["RL001", "unused-suppression", "info", "pedantic", "off"]
    for column in ("NAME", "SEVERITY", "TIER", "DEFAULT"):
        start = lines[0].index(column)
        assert all(line[start - 2:start] == "  " and line[start] != " " for line in lines[1:])


def test_rules_as_json():
    rows = {row["code"]: row for row in json.loads(run("rules", "--format", "json").stdout)}
    assert rows["RL001"] == {"code": "RL001", "name": "unused-suppression", "severity": "info",
                             "tier": "pedantic", "default_enabled": False, "options": []}


def test_version():
    assert run("--version").stdout.strip() == f"rllint, version {__version__}"


def python_m_rllint(*args, cwd, input=None):
    env = dict(os.environ)
    env.pop("RLLINT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "rllint", *args], cwd=cwd, input=input,
                          capture_output=True, env=env, timeout=120)


@pytest.mark.slow
def test_python_m_rllint_end_to_end(project):
    done = python_m_rllint("--format", "json", "--extend-select", "RL001", "bad.py", "good.py", "unused.py",
                           "missing.py", cwd=project)
    assert done.returncode == 2
    assert [(d["path"], d["code"]) for d in json.loads(done.stdout)] == [
        ("bad.py", "RL000"), ("unused.py", "RL001"), ("missing.py", None)]  # a file error, in the report too
    assert done.stderr.decode() == "rllint: error: missing.py: No such file or directory\n"
    clean = python_m_rllint("good.py", cwd=project)
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, b"All checks passed.\n", b"")


def test_python_m_rllint_reads_stdin(project):
    done = python_m_rllint("-", "--stdin-filename", "scripts/train.py", cwd=project, input=BAD.encode())
    assert done.returncode == 1
    assert done.stdout.decode().splitlines()[0] == f"scripts/train.py:{LINE}:{COL}: RL000 syntax error: {DETAIL}"


def test_closest_config_of_the_linted_folder_wins(project):
    sub = project / "sub"
    sub.mkdir()
    (sub / "bad.py").write_text(BAD)
    (sub / "rllint.toml").write_text('ignore = ["RL000"]\n')
    assert codes_found("sub") == []
    found = json.loads(run("--format", "json", "sub", "bad.py").stdout)  # each file its own closest config
    assert [(d["path"], d["code"]) for d in found] == [("bad.py", "RL000")]


def test_respect_gitignore_flag(project):
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("scratch.py\n")
    (project / "scratch.py").write_text(BAD)
    assert run("--format", "json").stdout.count("scratch.py") == 0
    assert run("--format", "json", "--no-respect-gitignore").stdout.count("scratch.py") == 1


EPSILON = "import torch\n\n\ndef whiten(x):\n    return (x - x.mean()) / (x.std() + 1e4)\n"


def test_rule_finding_its_suppression_comments_and_its_option(project):
    (project / "adv.py").write_text(EPSILON)
    found = json.loads(run("--format", "json", "adv.py").stdout)  # on by default
    assert [(d["line"], d["code"], d["name"]) for d in found] == [(5, "RL201", "large-epsilon")]
    for comment in ("# noqa: RL201", "# rllint: ignore[large-epsilon]"):
        (project / "adv.py").write_text(EPSILON.replace("1e4)", f"1e4)  {comment}"))
        assert run("adv.py").exit_code == 0
    (project / "adv.py").write_text(EPSILON.replace("1e4", "0.5"))
    assert run("adv.py").exit_code == 1
    (project / "pyproject.toml").write_text('[tool.rllint]\nmax-epsilon = 1.0\n')
    assert run("adv.py").exit_code == 0


def test_a_second_run_reads_the_cache_and_no_cache_skips_it(tmp_path, monkeypatch):
    from rllint import runner

    (tmp_path / "bad.py").write_text("x = (\n")
    monkeypatch.chdir(tmp_path)
    first = CliRunner().invoke(cli.main, ["bad.py"])
    log = tmp_path / "linted.log"  # files are linted in worker processes: they write down what they lint
    real = runner.lint_bytes

    def logged(data, path, settings):
        with open(log, "a") as handle:
            handle.write(path + "\n")
        return real(data, path, settings)

    monkeypatch.setattr(runner, "lint_bytes", logged)
    second = CliRunner().invoke(cli.main, ["bad.py"])
    assert first.exit_code == second.exit_code == 1 and first.output == second.output and not log.exists()
    assert os.listdir(os.environ["RLLINT_CACHE_DIR"])
    third = CliRunner().invoke(cli.main, ["--no-cache", "bad.py"])
    assert third.exit_code == 1 and log.read_text() == "bad.py\n"


def test_top_level_help_names_the_check_options():
    result = CliRunner().invoke(cli.main, ["--help"])
    assert result.exit_code == 0
    for flag in ("--select", "--format", "--statistics", "--no-cache", "--exit-zero"):
        assert flag in result.output


def test_each_file_is_linted_with_its_closest_config_whatever_else_is_passed(project):
    """pre-commit passes files from several folders in one call: a nested config applies all the same."""
    (project / "sub").mkdir()
    (project / "sub" / "bad.py").write_text(BAD)
    (project / "sub" / ".rllint.toml").write_text('ignore = ["RL000"]\nextend-exclude = ["skipped.py"]\n')
    (project / "sub" / "skipped.py").write_text(BAD)
    alone = json.loads(run("--format", "json", "sub/bad.py").stdout)
    together = json.loads(run("--format", "json", "sub/bad.py", "bad.py").stdout)
    assert alone == [] and [d["path"] for d in together] == ["bad.py"]
    forced = json.loads(run("--format", "json", "--force-exclude", "sub/skipped.py", "bad.py").stdout)
    assert [d["path"] for d in forced] == ["bad.py"]  # the nested config's excludes hold for named files


@pytest.mark.parametrize("output_format", ["text", "concise", "full", "json", "json-lines", "github", "sarif"])
def test_every_format_names_files_from_the_working_folder_whatever_config_they_use(project, output_format):
    """As ruff: a file under `experiments/` with its own config is `experiments/train.py` in every format (the
    GitHub annotation once named `train.py`, another file of the tree)."""
    (project / "pyproject.toml").write_text("[tool.rllint]\n")
    (project / "experiments").mkdir()
    (project / "experiments" / ".rllint.toml").write_text('extend-select = ["RL001"]\n')
    (project / "experiments" / "train.py").write_text(BAD)
    (project / "train.py").write_text(GOOD)
    result = run("--format", output_format, "experiments/train.py")
    assert result.exit_code == 1, result.stderr
    shown = {
        "text": lambda out: out.splitlines()[0].split(":")[0],
        "concise": lambda out: out.splitlines()[0].split(":")[0],
        "full": lambda out: out.splitlines()[0].split(":")[0],
        "json": lambda out: json.loads(out)[0]["path"],
        "json-lines": lambda out: json.loads(out.splitlines()[0])["path"],
        "github": lambda out: out.split("file=", 1)[1].split(",", 1)[0],
        "sarif": lambda out: json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"][
            "artifactLocation"]["uri"],
    }[output_format](result.stdout)
    assert shown == "experiments/train.py"
    if output_format == "sarif":
        base = json.loads(result.stdout)["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        assert base == project.resolve().as_uri() + "/"


def test_read_errors_reach_the_machine_formats(project):
    (project / "latin.py").write_bytes(b"name = '\xe9'\n")
    github = run("--format", "github", "latin.py", "bad.py")
    assert github.exit_code == 2
    assert github.stdout.splitlines()[-1].startswith("::error file=latin.py,title=rllint::cannot be decoded")
    (entry,) = [d for d in json.loads(run("--format", "json", "latin.py").stdout)]
    assert (entry["path"], entry["code"], entry["name"], entry["line"]) == ("latin.py", None, "file-error", None)
    lines = run("--format", "json-lines", "latin.py").stdout.splitlines()
    assert json.loads(lines[0])["name"] == "file-error"
    sarif_run = json.loads(run("--format", "sarif", "latin.py").stdout)["runs"][0]
    (invocation,) = sarif_run["invocations"]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"].startswith("cannot be decoded")
    assert "could not be linted" not in run("--format", "json", "latin.py").stdout  # no summary in machine formats


def test_sarif_rule_links_resolve_to_the_shipped_pages_or_to_docs_url(project):
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    driver = json.loads(run("--format", "sarif", "bad.py").stdout)["runs"][0]["tool"]["driver"]
    page = urlparse(driver["rules"][0]["helpUri"])
    assert page.scheme == "file"  # no placeholder host: a page on this machine
    assert Path(url2pathname(page.path)).read_text(encoding="utf-8") == render_page(SyntaxErrorRule)
    assert Path(url2pathname(urlparse(driver["informationUri"]).path)).name == "README.md"
    (project / "rllint.toml").write_text('docs-url = "https://example.org/rllint/rules/"\n')
    driver = json.loads(run("--format", "sarif", "bad.py").stdout)["runs"][0]["tool"]["driver"]
    assert driver["rules"][0]["helpUri"] == "https://example.org/rllint/rules/RL000.md"
    assert driver["informationUri"] == "https://example.org/rllint/rules/README.md"
    (project / "rllint.toml").write_text('docs-url = "rules/"\n')
    result = run("--format", "sarif", "bad.py")
    assert result.exit_code == 2 and "rllint.toml: 'docs-url' must be a URL" in result.stderr


def test_an_unknown_command_that_is_no_path_is_named(project):
    result = run("rulez")
    assert result.exit_code == 2
    assert "no such command or path: 'rulez'; did you mean `rllint rule` or `rllint rules`?" in result.stderr
    assert "no such command or path: 'frobnicate'" in run("frobnicate").stderr
    (project / "rulez").mkdir()
    assert run("rulez").exit_code == 0  # an existing folder of that name is linted


def test_quiet_prints_findings_only_and_verbose_says_more(project):
    (project / "notes.txt").write_text("not linted\n")
    quiet = run("-q", "bad.py", "notes.txt")
    assert (quiet.stdout, quiet.stderr) == (BAD_LINE + "\n", "")
    verbose = run("-v", "bad.py")
    assert "rllint: 1 file with the default settings\n" in verbose.stderr
    assert "rllint: linted 1 file in " in verbose.stderr


def test_show_files_lists_what_would_be_linted(project):
    (project / "vendor").mkdir()
    (project / "vendor" / "x.py").write_text(GOOD)
    result = run("--show-files", "--extend-exclude", "vendor")
    assert (result.exit_code, result.stdout) == (0, "bad.py\ngood.py\nunused.py\n")


def test_show_settings_prints_the_resolved_settings_as_toml(project):
    (project / "rllint.toml").write_text('ignore = ["RL201"]\nmax-epsilon = 0.001\n[per-file-ignores]\n"tests/*" = ["RL6"]\n')
    result = run("--show-settings", "--extend-select", "RL001", "bad.py")
    assert result.exit_code == 0
    assert result.stdout.startswith("# Settings for bad.py\n# config file: rllint.toml\n")
    table = tomllib.loads(result.stdout)["tool"]["rllint"]
    assert (table["ignore"], table["extend-select"], table["max-epsilon"]) == (["RL201"], ["RL001"], 0.001)
    assert table["per-file-ignores"] == {"tests/*": ["RL6"]} and table["lint-vendored"] is False


def test_fix_summary_and_hint(project):
    (project / "regex.py").write_text("import re\nA = re.compile(r'<think>.*?</think>')\n")
    result = run("regex.py")
    assert result.stdout.splitlines()[-2:] == ["Found 1 finding in 1 file.", "1 fixable with `--fix`."]
