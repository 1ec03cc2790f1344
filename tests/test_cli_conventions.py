"""ruff's conventions where a ruff user reaches for them: --per-file-ignores, --config KEY=VALUE, --isolated,
`extend`, `extend-ignore`, the `full` format, --watch, -o with the summary, and --statistics per format.

Findings come from RL000 (a syntax error) and RL001 (an unused suppression, off by default), which the runner
reports itself, so that these tests depend on no analysis rule.
"""
import json
import sys

import pytest

from rllint import cli
from tests.test_cli import run

BAD = "def reward(completion):\n    return (len(completion)\n"
UNUSED = "x = 1  # noqa: RL000\n"  # RL001 at 1:8 when RL001 is selected


def found(*args):
    result = run("--format", "json", *args)
    assert result.exit_code in (0, 1), result.stderr
    return sorted((d["path"], d["code"]) for d in json.loads(result.stdout))


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "tests" / "bad.py").write_text("# a test\n" + BAD)  # not a copy: copies are another matter
    (tmp_path / "unused.py").write_text(UNUSED)
    return tmp_path


def test_per_file_ignores_on_the_command_line_add_to_the_config(project):
    (project / "rllint.toml").write_text('[per-file-ignores]\n"unused.py" = ["RL001"]\n')
    assert found("--extend-select", "RL001") == [("bad.py", "RL000"), ("tests/bad.py", "RL000")]
    assert found("--extend-select", "RL001", "--per-file-ignores", "tests/*:RL000") == [("bad.py", "RL000")]
    assert found("--per-file-ignores", "tests/*:RL000,bad.py:syntax-error") == []
    for wrong in ("tests/*", "tests/*:", ":RL000"):
        result = run("--per-file-ignores", wrong)
        assert result.exit_code == 2 and "is not a PATTERN:CODE pair" in result.stderr
    result = run("--per-file-ignores", "tests/*:RL999")
    assert result.exit_code == 2 and "rllint: error: --per-file-ignores 'tests/*': unknown rule selector" in \
        result.stderr


def test_config_key_value_overrides_that_key_in_every_config(project):
    (project / "tests" / ".rllint.toml").write_text('ignore = ["RL000"]\n')
    assert found() == [("bad.py", "RL000")]
    assert found("--config", 'extend-select = ["RL001"]') == [("bad.py", "RL000"), ("unused.py", "RL001")]
    # a `select` starts afresh, in the nested config too (its `ignore` goes with the selection it refined)
    assert found("--config", "select = ['RL000']") == [("bad.py", "RL000"), ("tests/bad.py", "RL000")]
    assert found("--config", "per-file-ignores = {'bad.py' = ['RL000']}") == []
    (project / "other.toml").write_text('exclude = ["tests"]\n')  # a file and a pair together, as ruff
    assert found("--config", "other.toml", "--config", "extend-select=['RL001']") == [
        ("bad.py", "RL000"), ("unused.py", "RL001")]


@pytest.mark.parametrize("value, message", [
    ("max-epsilon = 'big'", "rllint: error: --config 'max-epsilon' must be a number"),
    ("colour = 1", "rllint: error: --config unknown key 'colour'"),
    ("select = [", "rllint: error: --config 'select = [': invalid TOML"),
    ("nowhere.toml", "rllint: error: nowhere.toml: no such configuration file"),
    ("extend = 'x.toml'", "give the file itself with --config FILE"),
])
def test_config_values_that_cannot_be_used_are_one_line_errors(project, value, message):
    result = run("--config", value)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("rllint: error: ") and message in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_two_config_files_are_a_usage_error(project):
    (project / "a.toml").write_text("")
    (project / "b.toml").write_text("")
    assert run("--config", "a.toml", "--config", "b.toml").exit_code == 2


def test_isolated_ignores_every_config_file(project):
    (project / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.9"\n[tool.rllint]\nbogus = 1\n')
    (project / "tests" / ".rllint.toml").write_text('ignore = ["RL000"]\n')
    assert run().exit_code == 2  # the bogus key
    assert found("--isolated") == [("bad.py", "RL000"), ("tests/bad.py", "RL000")]
    assert found("--isolated", "--config", "extend-select = ['RL001']") == [
        ("bad.py", "RL000"), ("tests/bad.py", "RL000"), ("unused.py", "RL001")]
    settings = run("--isolated", "--show-settings", "bad.py").stdout
    running = f"{sys.version_info.major}.{sys.version_info.minor}"  # no requires-python read: the running one
    assert "# config file: none (defaults)" in settings and f"# target Python: {running}" in settings
    (project / "other.toml").write_text("")
    assert run("--isolated", "--config", "other.toml").exit_code == 2


def test_extend_inherits_another_config_and_its_own_keys_win(project):
    (project / "pyproject.toml").write_text('[tool.rllint]\nextend-select = ["RL001"]\nignore = ["RL000"]\n'
                                            'extend-exclude = ["tests/bad.py"]\n')
    (project / "tests" / "bad2.py").write_text("# another test\n" + BAD)
    (project / "tests" / ".rllint.toml").write_text('extend = "../pyproject.toml"\nextend-ignore = ["RL001"]\n')
    (project / "tests" / "unused.py").write_text("# a test\n" + UNUSED)
    # tests/ inherits RL001 and the ignore of RL000, adds RL001 to what it ignores; the parent's
    # `tests/bad.py` exclude, written from the parent's folder, still names tests/bad.py
    assert found("tests") == []
    assert run("--show-files", "tests").stdout.splitlines() == ["tests/bad2.py", "tests/unused.py"]
    (project / "tests" / ".rllint.toml").write_text('extend = "../pyproject.toml"\nselect = ["RL000"]\n')
    assert found("tests") == [("tests/bad2.py", "RL000")]  # `select` starts afresh: the inherited ignore goes


def test_an_extend_cycle_or_a_missing_parent_is_one_error_naming_the_file(project):
    (project / "a.toml").write_text('extend = "b.toml"\n')
    (project / "b.toml").write_text('extend = "a.toml"\n')
    result = run("--config", "a.toml")
    assert result.exit_code == 2 and "b.toml: 'extend': 'a.toml' extends this file again (a cycle)" in result.stderr
    (project / "b.toml").write_text('extend = "gone.toml"\n')
    result = run("--config", "a.toml")
    assert result.exit_code == 2 and "b.toml: 'extend': no such configuration file gone.toml" in result.stderr


def test_extend_ignore_flag_and_key_add_to_ignore(project):
    assert found("--extend-select", "RL001", "--ignore", "RL000", "--extend-ignore", "RL001") == []
    (project / "rllint.toml").write_text('extend-select = ["RL001"]\nextend-ignore = ["RL001"]\n')
    assert found() == [("bad.py", "RL000"), ("tests/bad.py", "RL000")]


def test_full_format_shows_each_finding_with_its_code_frame(project):
    result = run("--format", "full", "--extend-select", "RL001", "bad.py", "unused.py")
    assert result.exit_code == 1
    frames = result.stdout.split("\n\n")
    assert frames[0].splitlines()[0].startswith("bad.py:2:") and "RL000 syntax error:" in frames[0]
    assert "1 | def reward(completion):" in frames[0] and "2 |     return (len(completion)" in frames[0]
    assert frames[1].splitlines() == [
        f"unused.py:1:8: RL001 {frames[1].split('RL001 ', 1)[1].splitlines()[0]}",
        "  |",
        "1 | x = 1  # noqa: RL000",
        "  |        ^ RL001",
        "  |"]
    assert result.stdout.endswith("Found 2 findings in 2 files.\n")


def test_full_format_marks_fixable_findings_and_shows_what_the_fix_does(project):
    (project / "regex.py").write_text("import re\n\nA = re.compile(r'<think>.*?</think>')\n")
    result = run("--format", "full", "regex.py")
    header, *frame = result.stdout.split("\n\n")[0].splitlines()
    assert header.startswith("regex.py:3:5: RL302 [*] ")
    assert frame[-1].startswith("  = help: ")


def test_full_format_of_standard_input_frames_what_was_read(project):
    result = run("--format", "full", "-", "--stdin-filename", "new.py", input=BAD.encode())
    assert "2 |     return (len(completion)" in result.stdout


def test_output_file_takes_the_summary_too(project):
    result = run("-o", "report.txt", "bad.py")
    assert result.exit_code == 1 and result.stdout == ""
    assert (project / "report.txt").read_text().splitlines()[-1] == "Found 1 finding in 1 file."
    run("-q", "-o", "quiet.txt", "bad.py")
    assert "Found" not in (project / "quiet.txt").read_text()


@pytest.mark.parametrize("output_format", ["json-lines", "github", "sarif"])
def test_statistics_in_a_format_without_counts_is_a_usage_error_as_ruff(project, output_format):
    result = run("--statistics", "--format", output_format)
    assert result.exit_code == 2 and result.stdout == ""
    assert f"--statistics prints text or json, not {output_format}" in result.stderr


@pytest.mark.parametrize("output_format", ["text", "concise", "full"])
def test_statistics_in_the_text_formats_are_the_counts(project, output_format):
    assert run("--statistics", "--format", output_format).stdout == "2  RL000  syntax-error\n"


def test_watch_lints_again_when_a_file_changes_until_ctrl_c(project, monkeypatch):
    pauses = []

    def pause():  # the first look finds nothing new; then the file is mended; then the user presses Ctrl-C
        pauses.append(1)
        if len(pauses) == 2:
            (project / "bad.py").write_text("def reward(completion):\n    return len(completion)\n")
        if len(pauses) == 4:
            raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_pause", pause)
    result = run("--watch", "bad.py")
    assert result.exit_code == 130
    assert result.stdout.count("Found 1 finding in 1 file.") == 1
    assert result.stdout.count("All checks passed.") == 1
    assert result.stderr.count("rllint: a change; linting again") == 1
    assert run("--watch", "--diff").exit_code == 2


def test_logs_output_file_takes_the_summary_too(project):
    (project / "run.jsonl").write_text("".join(f'{{"step": {step}, "kl": 0.01}}\n' for step in range(1, 41)))
    result = run("logs", "run.jsonl", "-o", "report.txt")
    assert result.exit_code == 0 and result.stdout == ""
    assert (project / "report.txt").read_text() == "All checks passed.\n"
