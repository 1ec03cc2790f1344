"""`rllint logs` as users run it: output formats, exit codes, selection, config, --metric, --plot, extras."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from logs_synthetic import records
from rllint.cli import main


def write_run(folder, faults=None, name="trainer_state.json"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps({"log_history": records(300, 0, 1, faults)}, indent=2, sort_keys=True))
    return path


def run(args, cwd):
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, args)
    finally:
        os.chdir(previous)


def test_text_output_says_path_step_code_and_exits_1(tmp_path):
    write_run(tmp_path / "run", {"entropy_collapse": 150})
    result = run(["logs", "run"], tmp_path)
    assert result.exit_code == 1
    line = result.stdout.splitlines()[0]
    assert line.startswith("run/trainer_state.json: step 150: RL703 entropy `entropy` fell below")
    assert "Found 1 finding in 1 file." in result.stdout


def test_a_healthy_run_exits_0(tmp_path):
    write_run(tmp_path / "run")
    result = run(["logs", "run"], tmp_path)
    assert (result.exit_code, result.stdout) == (0, "All checks passed.\n")


@pytest.mark.parametrize("fmt", ["json", "json-lines", "github", "sarif"])
def test_the_source_linters_formats(tmp_path, fmt):
    write_run(tmp_path / "run", {"clip_fraction": 120})
    result = run(["logs", "run", "--format", fmt], tmp_path)
    assert result.exit_code == 1
    if fmt == "json":
        (finding,) = json.loads(result.stdout)
        assert (finding["code"], finding["step"], finding["path"]) == ("RL704", 120, "run/trainer_state.json")
        assert finding["line"] > 1  # the line of the entry where the episode began
    elif fmt == "github":
        assert result.stdout.startswith("::warning file=run/trainer_state.json,line=")
    elif fmt == "sarif":
        (finding,) = json.loads(result.stdout)["runs"][0]["results"]
        assert finding["ruleId"] == "RL704" and finding["properties"] == {"step": 120}


def test_an_unreadable_log_exits_2_and_the_others_are_still_reported(tmp_path):
    write_run(tmp_path / "good", {"truncation": 60})
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "trainer_state.json").write_text('{"log_history": [')
    result = run(["logs", "good", "bad"], tmp_path)
    assert result.exit_code == 2
    assert "RL707" in result.stdout
    assert "rllint: error: bad/trainer_state.json: invalid JSON at line 1" in result.stderr


def test_select_ignore_and_per_file_ignores(tmp_path):
    write_run(tmp_path / "old", {"entropy_collapse": 150})
    write_run(tmp_path / "new", {"entropy_collapse": 150, "clip_fraction": 100})
    assert "RL704" not in run(["logs", "new", "--ignore", "high-clip-fraction"], tmp_path).stdout
    assert run(["logs", "new", "--select", "RL703"], tmp_path).stdout.count("RL7") == 1
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.rllint]
        max-clip-fraction = 0.5

        [tool.rllint.per-file-ignores]
        "old/*" = ["RL703"]
    """))
    result = run(["logs", "old", "new"], tmp_path)
    assert [line.split(": ")[2].split()[0] for line in result.stdout.splitlines()[:-1]] == ["RL703"]
    assert result.stdout.startswith("new/")


@pytest.mark.parametrize("config,message", [
    ("log-window = 2", "'log-window': must be 3 or more"),
    ('log-metrics = ["kl"]', "'log-metrics': 'kl' is not NAME=KEY"),
    ('max-kl = "big"', "'max-kl' must be a number"),
])
def test_log_options_are_validated_like_the_others(tmp_path, config, message):
    write_run(tmp_path / "run")
    (tmp_path / "pyproject.toml").write_text(f"[tool.rllint]\n{config}\n")
    result = run(["logs", "run"], tmp_path)
    assert result.exit_code == 2 and message in result.stderr


def test_metric_maps_a_key_and_a_bad_one_is_a_usage_error(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"step": s, "my_entropy": 0.6 if s < 100 else 0.01}) + "\n" for s in range(200)))
    assert "no known metric among its keys (`my_entropy`)" in run(["logs", "m.jsonl"], tmp_path).stderr
    result = run(["logs", "m.jsonl", "--metric", "entropy=my_entropy"], tmp_path)
    assert result.stdout.startswith("m.jsonl: step 100: RL703 entropy `my_entropy`")
    result = run(["logs", "m.jsonl", "--metric", "entropy"], tmp_path)
    assert result.exit_code == 2 and "'entropy' is not NAME=KEY" in result.stderr


def test_rule_pages_and_the_catalogue_know_log_rules(tmp_path):
    assert run(["rule", "RL701"], tmp_path).stdout.startswith("# RL701 kl-explosion")
    listing = run(["rules"], tmp_path).stdout
    assert "RL711  unmonitored-run" in listing and "RL607  unmonitored-training-loop" in listing


@pytest.mark.slow
def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    write_run(tmp_path / "run", {"entropy_collapse": 150, "kl_growth": 200})
    result = run(["logs", "run", "--plot", "curves.png"], tmp_path)
    assert result.exit_code == 1
    png = (tmp_path / "curves.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 20_000


def test_plot_to_a_name_without_an_extension_writes_that_file(tmp_path):
    pytest.importorskip("matplotlib")
    write_run(tmp_path / "run", {"entropy_collapse": 150})
    assert run(["logs", "run", "--plot", "curves"], tmp_path).exit_code == 1
    assert (tmp_path / "curves").read_bytes().startswith(b"\x89PNG")  # matplotlib would write curves.png
    assert not (tmp_path / "curves.png").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_plot_that_cannot_be_written_is_an_error(tmp_path):
    pytest.importorskip("matplotlib")
    write_run(tmp_path / "run", {"entropy_collapse": 150})
    result = run(["logs", "run", "--plot", "/dev/full"], tmp_path)
    assert result.exit_code == 2 and "RL703" in result.stdout
    assert "rllint: error: cannot write /dev/full: No space left on device" in result.stderr


def test_plot_to_an_unknown_image_format_is_refused_before_the_work(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from rllint.logs import lint

    write_run(tmp_path / "run", {"entropy_collapse": 150})
    monkeypatch.setattr(lint, "lint_logs", lambda *args: pytest.fail("the logs were read"))
    result = run(["logs", "run", "--plot", "curves.foo"], tmp_path)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("rllint: error: --plot curves.foo: `.foo` is not an image format rllint can "
                                    "draw; use one of ") and ".png" in result.stderr


def test_plot_without_matplotlib_prints_the_findings_then_what_to_install(tmp_path, monkeypatch):
    write_run(tmp_path / "run", {"entropy_collapse": 150})
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = run(["logs", "run", "--plot", "curves.png"], tmp_path)
    assert result.exit_code == 2  # asked for a plot and got none: an error, as the README says
    assert "step 150: RL703" in result.stdout and "Found 1 finding in 1 file." in result.stdout
    assert result.stderr == "rllint: error: --plot needs the `plot` extra (matplotlib): pip install 'rllint[plot]'\n"
    assert not (tmp_path / "curves.png").exists()


def test_special_files_are_refused_as_the_source_linter_refuses_them(tmp_path):
    """A FIFO would block the run and /dev/zero fill its memory: each is one error line, and the rest is read
    (in a process of its own with a timeout, since a hang is the defect)."""
    os.mkfifo(tmp_path / "pipe.jsonl")
    os.symlink("/dev/zero", tmp_path / "zero.csv")
    (tmp_path / "run").mkdir()
    os.mkfifo(tmp_path / "run" / "trainer_state.json")  # met in a walk
    (tmp_path / "tb").mkdir()
    os.symlink("/dev/zero", tmp_path / "tb" / "events.out.tfevents.1.host")
    write_run(tmp_path / "good", {"entropy_collapse": 150})
    done = subprocess.run([sys.executable, "-m", "rllint", "logs", "pipe.jsonl", "zero.csv", "run", "tb", "good"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "good/trainer_state.json: step 150: RL703" in done.stdout
    refused = "not a regular file (a FIFO, device or socket); not read"
    assert sorted(line for line in done.stderr.splitlines() if line.startswith("rllint: error:")) == [
        f"rllint: error: pipe.jsonl: {refused}", f"rllint: error: run/trainer_state.json: {refused}",
        f"rllint: error: tb: events.out.tfevents.1.host: {refused}", f"rllint: error: zero.csv: {refused}"]


def test_missing_extras_name_the_extra_to_install(tmp_path, monkeypatch):
    write_run(tmp_path / "run")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = run(["logs", "run", "--plot", "x.png"], tmp_path)
    assert result.exit_code == 2 and "pip install 'rllint[plot]'" in result.stderr
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "events.out.tfevents.1.host").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    monkeypatch.setitem(sys.modules, "tensorboard.backend.event_processing", None)
    result = run(["logs", "tb"], tmp_path)
    assert result.exit_code == 2 and "pip install 'rllint[tensorboard]'" in result.stderr


def test_the_source_linter_imports_no_log_machinery(tmp_path):
    (tmp_path / "train.py").write_text("import torch\n")
    code = ("import sys; from click.testing import CliRunner; from rllint.cli import main; "
            "CliRunner().invoke(main, ['--no-cache', 'train.py']); "
            "print(sorted(m for m in sys.modules if m.startswith(('rllint.logs', 'matplotlib', 'tensorboard'))))")
    output = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert output.stdout.strip() == "[]"
