"""The runner on awkward input: encodings, line endings, deep nesting, unreadable files, suppressions."""
import faulthandler
import multiprocessing
import os

import libcst as cst
import pytest

from rllint.diagnostic import FileResult, Severity
from rllint import runner, workers
from rllint.analysis.configs import LaunchConfig
from rllint.cache import ResultCache
from rllint.registry import CSTRule
from rllint.runner import lint_bytes, lint_files, lint_text
from rllint.settings import Settings


class Marker(CSTRule):
    """Reports every name `marker`: a probe for positions and suppressions, not a catalogue rule."""

    name = "marker-probe"
    severity = Severity.WARNING
    message = "marker found"

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "marker":
            self.report(node)


Marker.code = "RL999"  # set after class creation so that the probe stays out of the catalogue


def selecting(monkeypatch, *rules):
    """Every file gets these rules (probes made here, outside the catalogue)."""
    chosen = [rule.entry() for rule in rules]
    monkeypatch.setattr(Settings, "selected_for", lambda self, path: chosen)


@pytest.fixture
def probe(monkeypatch):
    from rllint.rules.meta import SyntaxErrorRule, UnusedSuppression

    selecting(monkeypatch, SyntaxErrorRule, UnusedSuppression, Marker)
    return Settings()


def spots(result):
    return [(d.line, d.column, d.code) for d in result.diagnostics]


def test_positions_are_one_based(probe):
    assert spots(lint_text("x = 1\ny = marker\n", "a.py", probe)) == [(2, 5, "RL999")]


def test_crlf_tabs_and_non_ascii_identifiers_keep_columns(probe):
    text = "def f():\r\n\tnäme = 1\r\n\tz = (näme, marker)\r\n"
    assert spots(lint_text(text, "a.py", probe)) == [(3, 13, "RL999")]


def test_bom_and_coding_cookie_are_honoured(probe):
    assert spots(lint_bytes("\ufeffy = marker\n".encode("utf-8"), "a.py", probe)) == [(1, 5, "RL999")]
    latin = "# -*- coding: latin-1 -*-\ns = 'café'\ny = marker\n".encode("latin-1")
    assert spots(lint_bytes(latin, "a.py", probe)) == [(3, 5, "RL999")]


def test_undecodable_bytes_and_nul_bytes_are_file_errors(probe):
    bad = lint_bytes(b"s = '\xff\xfe'\n", "bad.py", probe)
    assert bad.diagnostics == [] and len(bad.errors) == 1
    assert bad.errors[0].path == "bad.py" and bad.errors[0].message.startswith("cannot be decoded")
    late = lint_bytes(b"x = 1\ny = 2\ns = '\xff'\n", "late.py", probe)
    assert late.errors[0].message.startswith("cannot be decoded as utf-8")
    nul = lint_bytes(b"x = 1\x00\n", "nul.py", probe)
    assert [e.message for e in nul.errors] == ["contains NUL bytes; not a text file"]


def test_empty_and_comment_only_files(probe):
    assert lint_text("", "a.py", probe).diagnostics == []
    assert lint_text("# just a comment\n# marker\n", "a.py", probe).diagnostics == []


def test_syntax_error_is_reported_where_cpython_reports_it(probe):
    result = lint_text("x = 1\nif x == 1\n    pass\n", "a.py", probe)
    assert [(d.line, d.column, d.code, d.message) for d in result.diagnostics] == [
        (2, 10, "RL000", "syntax error: expected ':'")
    ]


def test_deep_nesting_is_an_error_or_rl000_never_a_crash(probe):
    parens = lint_text("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n", "p.py", probe)
    assert [d.code for d in parens.diagnostics] == ["RL000"]
    chained = lint_text("x = " + "-" * 50000 + "marker\n", "u.py", probe)
    assert chained.diagnostics == [] and "deeply nested" in chained.errors[0].message


def test_long_expressions_that_python_parses_are_linted(probe):
    text = "x = " + " + ".join(["marker"] * 1100) + "\n"
    assert len(lint_text(text, "long.py", probe).diagnostics) == 1100


def test_visitor_recursion_is_a_file_error(probe, monkeypatch):
    monkeypatch.setattr(runner, "RECURSION_LIMIT", 1000)
    text = "x = " + " + ".join(["marker"] * 1200) + "\n"
    result = lint_text(text, "deep.py", probe)
    assert result.diagnostics == []
    assert [(e.path, e.message) for e in result.errors] == [
        ("deep.py", "too deeply nested to analyse (recursion limit); not linted")
    ]


def test_noqa_forms(probe):
    text = (
        "a = marker  # noqa\n"
        "b = marker  # noqa: RL999\n"
        "c = marker  # noqa:RL101\n"
        "d = marker  # rllint: ignore[marker-probe]\n"
        "e = marker  # NOQA: E501, RL999\n"
        "f = 'marker  # noqa'; g = marker\n"
    )
    assert spots(lint_text(text, "a.py", probe)) == [(3, 5, "RL999"), (6, 27, "RL999")]


def test_ignore_comment_on_its_own_line_covers_the_next_statement(probe):
    text = (
        "# rllint: ignore[RL999]\n"
        "value = call(\n"
        "    marker,\n"
        ")\n"
        "other = marker\n"
    )
    assert spots(lint_text(text, "a.py", probe)) == [(5, 9, "RL999")]


def test_file_level_noqa(probe):
    assert lint_text("# rllint: noqa\nx = marker\n", "a.py", probe).diagnostics == []
    assert lint_text("# rllint: noqa: RL999\nx = marker\n", "a.py", probe).diagnostics == []
    assert spots(lint_text("# rllint: noqa: RL101\nx = marker\n", "a.py", probe)) == [(2, 5, "RL999")]
    # Only on a line of its own: a trailing comment is not a file-level switch.
    assert spots(lint_text("x = marker  # rllint: noqa\n", "a.py", probe)) == [(1, 5, "RL999")]


def test_unused_suppression_names_the_stale_code(probe):
    text = "a = marker  # noqa: RL999, RL000\nb = 1  # rllint: ignore[marker-probe]\nc = 2  # noqa\n"
    result = lint_text(text, "a.py", probe)
    assert [(d.line, d.column, d.code, d.message) for d in result.diagnostics] == [
        (1, 13, "RL001", "unused suppression of `RL000`: nothing on this line is reported under it"),
        (2, 8, "RL001", "unused suppression of `marker-probe`: nothing on this line is reported under it"),
    ]


def test_unreadable_and_missing_files_are_errors_and_the_run_goes_on(probe, tmp_path):
    good = tmp_path / "good.py"
    good.write_text("y = marker\n")
    folder = tmp_path / "folder.py"
    folder.mkdir()
    result = lint_files([str(tmp_path / "missing.py"), str(folder), str(good)], probe)
    assert spots(result) == [(1, 5, "RL999")]
    assert [os.path.basename(e.path) for e in result.errors] == ["missing.py", "folder.py"]
    assert all("cannot be read" in e.message for e in result.errors)


def test_worker_processes_give_the_same_findings(tmp_path):
    paths = []
    for index in range(20):
        path = tmp_path / f"f{index}.py"
        path.write_text(f"# file {index}\n" + ("x = 1\n" if index % 2 else "x = (\n"))
        paths.append(str(path))
    serial = lint_files(paths, Settings(select=["RL000"]), jobs=1)
    parallel = lint_files(paths, Settings(select=["RL000"]), jobs=2)
    assert serial.diagnostics == parallel.diagnostics
    assert len(serial.diagnostics) == 10


class Crasher(CSTRule):
    """Kills its process on the name `crash`, as a native parser crash would."""

    name = "crash-probe"
    message = "unreachable"

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "crash":
            faulthandler.disable()  # the abort is the point: no stack dump in the test output
            os.abort()


Crasher.code = "RL998"


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="the probe reaches workers by fork")
def test_a_crashing_worker_costs_one_file(monkeypatch, tmp_path):
    selecting(monkeypatch, Marker, Crasher)
    paths = []
    for index in range(20):
        path = tmp_path / f"f{index:02}.py"
        path.write_text("crash = 1\n" if index == 7 else f"x = marker  # file {index}\n")
        paths.append(str(path))
    result = lint_files(paths, Settings(), jobs=2)
    assert len(result.diagnostics) == 19
    assert [(os.path.basename(e.path), e.message) for e in result.errors] == [
        ("f07.py", "the parser crashed on this file (too deeply nested?); not linted")
    ]


_KEPT = []  # what a worker keeps from each task, as caches and freed-but-kept memory do


def _keeping(size, key):
    """A task that keeps `size` bytes resident; returns its worker and what that worker holds beyond its start."""
    _KEPT.append(b"x" * size)
    return os.getpid(), workers._resident_bytes()


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="the task reaches workers by fork")
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="resident memory as Linux reports it")
def test_a_worker_that_kept_too_much_memory_is_replaced(monkeypatch):
    """Peak memory of a long-lived worker stayed growing (338 MB against a bound of 200 MiB): a worker that
    holds `RECYCLE_BYTES` more than at its start is replaced before its next task."""
    step = 16 * 2 ** 20
    monkeypatch.setattr(workers, "RECYCLE_BYTES", 40 * 2 ** 20)
    done = workers.run([(step, index) for index in range(8)], _keeping, 1, 60)
    pids = [done[index][0] for index in range(8)]
    assert len(set(pids)) >= 3  # 16 MiB kept per task: a worker is replaced after three
    first = {pid: done[pids.index(pid)][1] for pid in set(pids)}  # each worker's memory after its first task
    assert all(resident - first[pid] <= 40 * 2 ** 20 + step for pid, resident in done.values())  # no pile-up


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="the task reaches workers by fork")
def test_a_heavy_task_goes_to_a_fresh_worker():
    done = workers.run([(0, index) for index in range(6)], _keeping, 1, 60, heavy=lambda task: task[1] in (2, 4))
    pids = [done[index][0] for index in range(6)]
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4] == pids[5]


def test_cache_skips_unchanged_files_and_notices_changes(probe, tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_text("x = marker\n")
    first = lint_files([str(path)], probe, cache=ResultCache(probe, tmp_path / "cache"))
    calls = []
    monkeypatch.setattr(runner, "lint_bytes", lambda *args: calls.append(args) or FileResult())
    again = lint_files([str(path)], probe, cache=ResultCache(probe, tmp_path / "cache"), isolated=False)
    assert again.diagnostics == first.diagnostics and len(first.diagnostics) == 1 and calls == []
    path.write_text("x = 1\n")
    lint_files([str(path)], probe, cache=ResultCache(probe, tmp_path / "cache"), isolated=False)
    assert len(calls) == 1
    other = Settings(options={"max-epsilon": 0.5})
    assert ResultCache(other, tmp_path / "cache").path != ResultCache(probe, tmp_path / "cache").path


class ConfigProbe(CSTRule):
    """Reports every launch-config entry whose key is `marker`."""

    name = "config-probe"
    message = "marker set to {value}"
    file_kinds = ("python", "yaml", "shell")

    def check_config(self) -> None:
        for entry in self.file.fact(LaunchConfig).entries:
            if entry.key.endswith("marker"):
                self.report_at(entry.line, entry.column, entry.line, entry.column + len(entry.text), value=entry.text)


ConfigProbe.code = "RL997"


@pytest.fixture
def config_probe(monkeypatch):
    from rllint.rules.meta import SyntaxErrorRule, UnusedSuppression

    selecting(monkeypatch, SyntaxErrorRule, UnusedSuppression, ConfigProbe)
    return Settings()


def test_launch_configs_are_judged_from_their_entries(config_probe):
    yaml_text = "actor:\n  marker: 3e-5  # noqa: RL997\n  other:\n    marker: 1\n"
    assert spots(lint_text(yaml_text, "grpo.yaml", config_probe)) == [(4, 13, "RL997")]
    ignored = "a:\n  # rllint: ignore[config-probe]\n\n  marker: 1\n  b:\n    marker: 2\n"
    assert spots(lint_text(ignored, "grpo.yaml", config_probe)) == [(6, 13, "RL997")]
    shell = "python -m verl.trainer.main_ppo \\\n    a.marker=2 \\\n    b.c=1\n"
    result = lint_text(shell, "run.sh", config_probe)
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [(2, 14, "marker set to 2")]


def test_a_broken_config_is_rl000_only_when_it_speaks_of_rl(config_probe):
    broken_rl = "algorithm:\n  adv_estimator: grpo\n  kl: [1, 2\n"
    assert [d.code for d in lint_text(broken_rl, "ppo.yaml", config_probe).diagnostics] == ["RL000"]
    helm = "metadata:\n  name: {{ .Values.name }}\n  labels: [a\n"
    assert lint_text(helm, "chart.yaml", config_probe).diagnostics == []


def test_unused_suppression_reports_codes_and_names_that_name_no_rule(probe):
    text = ("a = marker  # noqa: RL999, RL123\n"       # RL123 names no rule
            "b = marker  # noqa: RL2, E501\n"          # a prefix is not a code (as in ruff); E501 is flake8's
            "c = marker  # rllint: ignore[not-a-rule, marker-probe]\n")
    result = lint_text(text, "a.py", probe)
    assert [(d.line, d.code, d.message) for d in result.diagnostics if d.code == "RL001"] == [
        (1, "RL001", "unused suppression of `RL123`: no rule has this code or name"),
        (2, "RL001", "unused suppression of `RL2`: `# noqa` takes whole codes, not prefixes such as this one "
                     "(of RL201..RL210)"),
        (3, "RL001", "unused suppression of `not-a-rule`: no rule has this code or name"),
    ]
    assert spots(result)[:2] == [(1, 13, "RL001"), (2, 5, "RL999")]  # `RL2` suppressed nothing


def test_unused_file_level_suppression_is_reported(probe):
    text = "# rllint: noqa: RL999, RL000\nx = marker\n"
    result = lint_text(text, "a.py", probe)
    assert [(d.line, d.column, d.code, d.message) for d in result.diagnostics] == [
        (1, 1, "RL001", "unused suppression of `RL000`: nothing in this file is reported under it")]


def test_suppression_comments_parse_in_linear_time(probe):
    """Crafted comments that made the old patterns backtrack (minutes for 5,000 characters)."""
    text = ("# rllint: noqa: " + " " * 50_000 + "!\n" + "x = marker  # rllint: ignore[" * 20_000 + "\n"
            + "y = marker  # noqa: " + "E1 " * 20_000 + "a" * 20_000 + "\n")
    assert [d.code for d in lint_text(text, "a.py", probe).diagnostics] == ["RL999", "RL999"]


@pytest.mark.slow
def test_many_own_line_ignore_comments(probe):
    text = "".join(f"# rllint: ignore[RL999]\nx{i} = marker\n" for i in range(5_000)) + "z = marker\n"
    assert spots(lint_text(text, "a.py", probe)) == [(10_001, 5, "RL999")]


def test_libcst_judges_what_python_refuses_within_a_shape_bound_that_needs_no_grammar():
    assert runner._judge("type Vector = list[float]\n") is True  # newer syntax: Python, not RL000
    assert runner._judge("if x == 1\n    pass\n") is False
    assert runner._judge("x = " + "(" * 300 + ")" * 300 + "\n") is False  # no Python nests brackets this deep
    assert runner._judge("x = " + "not " * 3000 + "a\n") is None  # beyond the nesting libcst is given
    assert runner._judge('x = """unterminated\n' + "y = 1\n" * 3000) is False  # read to the end
    assert runner._judge("if x:\n        a = 1\n    b = 2\n" + "c = 1\n" * 3000) is False  # a dedent to nowhere

