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


@pytest.mark.slow
def test_flake8_shows_rllint_findings_where_rllint_does(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    done = flake8("train.py", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith("train.py:3:10: RL302 pattern '<think>.*?</think>' uses `.` across reasoning markers")
    rllint = subprocess.run([sys.executable, "-m", "rllint", "-q", "train.py"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert rllint.stdout.splitlines() == [line]  # the same place: flake8 adds one to the plugin's column


@pytest.mark.slow
def test_flake8_honours_the_closest_rllint_config(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(SOURCE)
    (tmp_path / "pkg" / "rllint.toml").write_text('ignore = ["RL302"]\n')
    done = flake8("pkg/train.py", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


@pytest.mark.slow
def test_flake8_ignore_and_extend_ignore_apply_to_rl_codes(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    assert flake8("--extend-ignore", "RL302", "train.py", cwd=tmp_path).stdout == ""


# RL204 (off by default) on line 6
GROUP_STD = ("import torch\n\n\ndef grpo_scores(scores, rollout_n):\n    grouped = scores.reshape(-1, rollout_n)\n"
             "    return (grouped - grouped.mean(-1, keepdim=True)) / grouped.std(-1, keepdim=True).clamp(min=1e-6)\n")


@pytest.mark.slow
def test_flake8_select_of_an_rl_code_turns_on_an_off_by_default_rule(tmp_path):
    (tmp_path / "adv.py").write_text(GROUP_STD)
    assert flake8("adv.py", cwd=tmp_path).stdout == ""  # `--select RL`: rllint's own selection, as configured
    for args in (["--select", "RL204"], ["--select", "RL", "--extend-select", "RL2"]):
        done = subprocess.run([sys.executable, "-m", "flake8", *args, "adv.py"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)
        assert [line.split(" ")[1] for line in done.stdout.splitlines()] == ["RL204"], (args, done.stderr)
    (tmp_path / "setup.cfg").write_text("[flake8]\nextend-select = RL204\n")  # flake8's own config counts too
    assert " RL204 " in flake8("adv.py", cwd=tmp_path).stdout


NUMBERS = "STEP_SIZE = 4e-5\n"
LAUNCH = ("from trl import GRPOConfig, GRPOTrainer\n"
          "from conf import numbers as n\n\n"
          "args = GRPOConfig(output_dir='out', learning_rate=n.STEP_SIZE)\n"
          "GRPOTrainer(model='m', args=args, reward_funcs=[len], train_dataset=[]).train()\n")


@pytest.mark.slow
def test_flake8_keeps_findings_that_another_module_places_in_the_file(tmp_path):
    """A value written in `conf/numbers.py` and used as a learning rate in `launch.py`: rllint reports it in
    numbers.py whichever file it is given, and so does flake8."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "__init__.py").write_text("")
    (tmp_path / "conf" / "numbers.py").write_text(NUMBERS)
    (tmp_path / "launch.py").write_text(LAUNCH)
    rllint = subprocess.run([sys.executable, "-m", "rllint", "-q", "--select", "RL601", "conf/numbers.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert [line.split(" ")[:2] for line in rllint.stdout.splitlines()] == [["conf/numbers.py:1:13:", "RL601"]]
    done = flake8("--select", "RL601", "conf/numbers.py", cwd=tmp_path)
    assert done.stdout == rllint.stdout, done.stderr
