"""The flake8 plugin, through the real `flake8` command: findings, 0-based columns, config and noqa."""
import subprocess
import sys

import pytest

pytest.importorskip("flake8")

SOURCE = '''import re

FORMAT = re.compile(r"<think>.*?</think>")
QUIET = re.compile(r"<think>.*?</think>")  # noqa: RL302
OTHER = re.compile(r"<think>.*?</think>")  # rllint: ignore[think-regex-without-dotall]
'''


def flake8(*args, cwd):
    return subprocess.run([sys.executable, "-m", "flake8", "--select", "RL", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_flake8_shows_rllint_findings_where_rllint_does(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    done = flake8("train.py", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith("train.py:3:10: RL302 pattern '<think>.*?</think>' uses `.` across reasoning markers")
    rllint = subprocess.run([sys.executable, "-m", "rllint", "-q", "train.py"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert rllint.stdout.splitlines() == [line]  # the same place: flake8 adds one to the plugin's column


def test_flake8_honours_the_closest_rllint_config(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(SOURCE)
    (tmp_path / "pkg" / "rllint.toml").write_text('ignore = ["RL302"]\n')
    done = flake8("pkg/train.py", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


def test_flake8_ignore_and_extend_ignore_apply_to_rl_codes(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    assert flake8("--extend-ignore", "RL302", "train.py", cwd=tmp_path).stdout == ""
