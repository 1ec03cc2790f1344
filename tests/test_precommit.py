"""The pre-commit hook, installed by pre-commit itself from this repository, on a throwaway git repo.

`pre-commit try-repo` installs a hook repository at a commit; of uncommitted work it takes only
changes to tracked files, not new ones. So the hook repository here is a snapshot of this working
tree (tracked and untracked files, minus what git ignores) committed in a temporary repository:
the test checks the hook as the tree stands, committed or not, and never touches this repository's
git state. Both try-repo runs share one PRE_COMMIT_HOME and one commit, so rllint is installed once.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BAD = "def reward(completion):\n    return (len(completion)\n"
GOOD = "def reward(completion):\n    return len(completion)\n"
BAD_NOTEBOOK = ('{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null, '
                '"source": ["!pip install trl\\n", "x = (\\n"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')


def git(*args, cwd):
    return subprocess.run(["git", "-c", "user.name=rllint tests", "-c", "user.email=tests@rllint.invalid",
                           "-c", "commit.gpgsign=false", *args],
                          cwd=cwd, check=True, capture_output=True, text=True, env=_git_env())


def _git_env():
    """The environment without variables that would point git at another repository (as in a hook)."""
    return {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}


def snapshot(destination: Path) -> Path:
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).stdout
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    git("init", "-q", cwd=destination)
    git("add", "-A", cwd=destination)
    git("commit", "-q", "-m", "snapshot", cwd=destination)
    return destination


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    return snapshot(tmp_path_factory.mktemp("rllint-snapshot"))


def try_repo(hook_repo: Path, project: Path, home: Path) -> subprocess.CompletedProcess:
    env = _git_env()
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PRE_COMMIT_HOME"] = str(home)
    env.pop("RLLINT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "rllint", "--all-files"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_hook_fails_on_the_bad_file_and_passes_without_it(hook_repo, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    git("init", "-q", cwd=project)
    (project / "bad.py").write_text(BAD)
    (project / "good.py").write_text(GOOD)
    (project / "bad.ipynb").write_text(BAD_NOTEBOOK)
    git("add", "bad.py", "good.py", "bad.ipynb", cwd=project)
    home = tmp_path / "pre-commit-home"

    failed = try_repo(hook_repo, project, home)
    report = failed.stdout + failed.stderr
    assert failed.returncode == 1, report
    assert "- hook id: rllint" in report
    assert "bad.py:2:" in report and " RL000 syntax error: " in report
    assert "bad.ipynb:cell 1:2:" in report  # notebooks are passed to the hook (types_or: jupyter)
    assert "good.py" not in report.split("- hook id: rllint", 1)[1]

    git("rm", "-q", "--cached", "bad.py", "bad.ipynb", cwd=project)
    (project / "bad.py").unlink()
    (project / "bad.ipynb").unlink()
    passed = try_repo(hook_repo, project, home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "rllint" in passed.stdout and "Passed" in passed.stdout
