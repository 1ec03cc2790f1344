"""The command line against a hostile tree and a hostile environment: a full standard output, names that would
forge output, symbolic link loops, absurd job counts, many config files, and a project whose modules shadow
the libraries rllint imports."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import run

BAD = "def reward(completion):\n    return (len(completion)\n"


def rllint(*args, cwd, env=None, stdout=subprocess.PIPE, command=(sys.executable, "-m", "rllint")):
    environment = dict(os.environ if env is None else env)
    environment.pop("RLLINT_DEBUG", None)
    return subprocess.run([*command, *args], cwd=cwd, env=environment, stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=120)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["bad.py"], ["--format", "json", "bad.py"], ["--show-files"], ["rules"]])
def test_a_full_standard_output_is_one_error_line_and_exit_2(tmp_path, args):
    (tmp_path / "bad.py").write_text(BAD)
    with open("/dev/full", "w") as full:
        done = rllint(*args, cwd=tmp_path, stdout=full)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "rllint: error: cannot write to standard output: No space left on device\n"


FORGED = "x\n::error file=setup.py,line=1::forged\x1b[2J.py"


@pytest.mark.parametrize("output_format", ["github", "text"])
def test_a_file_name_cannot_forge_a_line_on_stderr(tmp_path, monkeypatch, output_format):
    monkeypatch.chdir(tmp_path)
    (tmp_path / FORGED).write_bytes(b"name = '\xe9'\n")  # a file that cannot be decoded: an error on stderr
    result = run("--format", output_format, ".")
    assert result.exit_code == 2
    assert not any(line.startswith("::") for line in result.stderr.splitlines())
    assert "\x1b" not in result.stderr and "x\\n::error file=setup.py" in result.stderr
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert len(annotations) == (1 if output_format == "github" else 0)  # the file's own error, nothing forged


def test_a_symbolic_link_loop_is_a_warning_and_the_run_succeeds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text("x = 1\n")
    os.symlink("..", tmp_path / "pkg" / "up")
    result = run(".")
    assert (result.exit_code, result.stdout) == (0, "All checks passed.\n")
    assert result.stderr == "rllint: pkg/up: a symbolic link loop (it leads back to '.'); not descended\n"
    assert run("-q", ".").stderr == ""


def test_jobs_are_capped_at_the_number_of_cores(tmp_path, monkeypatch):
    from rllint import runner

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("x = 1\n")
    asked = []
    real = runner.lint_groups
    monkeypatch.setattr(runner, "lint_groups", lambda groups, jobs=None, **rest: asked.append(jobs) or real(
        groups, jobs=jobs, **rest))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert run("-j", "300", ".").exit_code == 0
    assert run("-j", "1", ".").exit_code == 0
    assert asked == [2, 1]


def test_many_config_files_are_linted_in_one_pool_of_workers(tmp_path, monkeypatch):
    """A tree of N config files once started N pools one after the other (2,041 configs: minutes)."""
    from rllint import workers

    monkeypatch.chdir(tmp_path)
    for number in range(60):
        (tmp_path / f"d{number}").mkdir()
        (tmp_path / f"d{number}" / ".rllint.toml").write_text(f"extend-select = ['RL001']  # {number}\n")
        (tmp_path / f"d{number}" / "train.py").write_text(f"x = {number}  # noqa: RL000\n")
    pools = []
    real = workers.run
    monkeypatch.setattr(workers, "run", lambda tasks, *rest, **options: pools.append(len(tasks)) or real(
        tasks, *rest, **options))
    result = run("--no-cache", ".")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == "Found 60 findings in 60 files."  # each file its own config's RL001
    assert pools == [60]


SHADOWS = {"pathspec.py": "raise SystemExit('the project pathspec.py was imported')\n",
           "difflib.py": "raise SystemExit('the project difflib.py was imported')\n",
           "json.py": "raise SystemExit('the project json.py was imported')\n"}


@pytest.mark.parametrize("pythonpath, script", [(None, False), (":", False), (":", True)],
                         ids=["python -m rllint", "PYTHONPATH=: python -m rllint", "PYTHONPATH=: rllint"])
def test_the_projects_own_modules_never_shadow_rllints_imports(tmp_path, pythonpath, script):
    for name, text in SHADOWS.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "bad.py").write_text(BAD)
    env = dict(os.environ, PYTHONPATH=pythonpath) if pythonpath else None
    console = Path(sys.executable).with_name("rllint")
    if script and not console.exists():
        pytest.skip("no rllint console script next to this interpreter")
    command = (str(console),) if script else (sys.executable, "-m", "rllint")
    done = rllint("--format", "json", "--no-cache", "bad.py", cwd=tmp_path, env=env, command=command)
    assert "was imported" not in done.stderr
    assert done.returncode == 1 and '"code": "RL000"' in done.stdout
