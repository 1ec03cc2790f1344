"""The README's set-up snippets, run as written from a clone of this repository at the commit they pin, with
the one placeholder filled: `https://github.com/OWNER/rllint` (and `OWNER/rllint`) becomes the clone.

- pre-commit: the snippet's config, `repo:` the clone, runs the hook on a throwaway project;
- pip: the editor snippet (`rllint[lsp] @ git+...@REV`, the CI snippet plus the extra) installs into a fresh
  virtual environment, which lints, links rules to pages that the wheel carries, and imports the server;
- the GitHub Action: its steps' scripts run as the runner runs them (its inputs in the environment).

Each installs rllint afresh (from this machine's package index): slow tests, which CI runs.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
ADDRESS = "https://github.com/OWNER/rllint"
PIN = re.search(r"rev: ([0-9a-f]{40})", README).group(1)
BAD = "def reward(completion):\n    return (len(completion)\n"
GOOD = "def reward(completion):\n    return len(completion)\n"

pytestmark = pytest.mark.slow


def git(*args, cwd):
    return subprocess.run(["git", "-c", "user.name=rllint tests", "-c", "user.email=tests@rllint.invalid",
                           "-c", "commit.gpgsign=false", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env=_environment())


def _environment(**extra):
    """This environment without variables that point git elsewhere (as in a hook), plus `extra`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.pop("RLLINT_DEBUG", None)
    env.pop("PYTHONPATH", None)
    env.update(extra)
    return env


def yaml_block(marker):
    (body,) = [body for body in re.findall(r"^```yaml\n(.*?)^```", README, flags=re.M | re.S) if marker in body]
    return body


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """This repository cloned and checked out at the pinned commit, which must be in its history."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    if subprocess.run(["git", "merge-base", "--is-ancestor", PIN, "HEAD"], cwd=ROOT, env=_environment(),
                      capture_output=True).returncode != 0:
        pytest.fail(f"the README pins {PIN}, which is not a commit of this repository's history")
    destination = tmp_path_factory.mktemp("rllint-clone") / "rllint"
    git("clone", "--quiet", str(ROOT), str(destination), cwd=ROOT)
    git("checkout", "--quiet", "--detach", PIN, cwd=destination)
    return destination


def filled(text, clone):
    return text.replace(ADDRESS, clone.as_uri()).replace("OWNER/rllint", str(clone))


def fresh_python(folder):
    """A virtual environment with a current pip (that of a new venv may predate `name @ git+file://` URLs)."""
    venv.EnvBuilder(with_pip=True).create(folder)
    python = folder / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True,
                   env=_environment(), capture_output=True, timeout=600)
    return python


def test_pre_commit_snippet_runs_the_hook_from_the_pinned_commit(clone, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    git("init", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(filled(yaml_block("repos:"), clone).replace(
        f"repo: {clone.as_uri()}", f"repo: {clone}"))
    (project / "bad.py").write_text(BAD)
    git("add", ".", cwd=project)
    env = _environment(PRE_COMMIT_HOME=str(tmp_path / "home"),
                       PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    failed = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=900)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "bad.py:2:" in failed.stdout and " RL000 syntax error: " in failed.stdout
    (project / "bad.py").write_text(GOOD)
    passed = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=900)
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_pip_snippets_install_the_pinned_commit_with_its_rule_pages(clone, tmp_path):
    (requirement,) = re.findall(r'pip install "(rllint\[lsp\] @ [^"]+)"', README)
    python = fresh_python(tmp_path / "venv")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", filled(requirement, clone)], check=True,
                   env=_environment(), capture_output=True, timeout=900, cwd=tmp_path)
    rllint = python.with_name("rllint")
    (tmp_path / "bad.py").write_text(BAD)
    done = subprocess.run([str(rllint), "--format", "sarif", "bad.py"], cwd=tmp_path, env=_environment(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    driver = json.loads(done.stdout)["runs"][0]["tool"]["driver"]
    page = Path(url2pathname(urlparse(driver["rules"][0]["helpUri"]).path))
    assert page.is_file() and page.parent.name == "rule_pages"  # in the installed wheel, not in the clone
    assert page.read_text(encoding="utf-8").startswith("# RL000 ")
    server = subprocess.run([str(python), "-c", "import rllint.server"], env=_environment(), capture_output=True,
                            text=True, timeout=120)
    assert server.returncode == 0, server.stderr


def test_the_github_action_runs_as_the_readme_uses_it(clone, tmp_path):
    action = yaml.safe_load((clone / "action.yml").read_text())
    (use,) = [step for step in yaml.safe_load(yaml_block("jobs:"))["jobs"]["rllint"]["steps"]
              if step.get("uses", "").startswith("OWNER/rllint@")]
    assert use["uses"] == f"OWNER/rllint@{PIN}"
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs.update({name: str(value).lower() if isinstance(value, bool) else str(value)
                   for name, value in use["with"].items()})
    inputs.update(python=sys.executable, args="src/")
    workspace = tmp_path / "workspace"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "bad.py").write_text(BAD)
    output = tmp_path / "github_output"
    output.touch()
    runner = {"GITHUB_ACTION_PATH": str(clone), "RUNNER_TEMP": str(tmp_path / "runner"), "GITHUB_OUTPUT": str(output)}
    (tmp_path / "runner").mkdir()
    outputs = {}
    printed = ""
    for step in action["runs"]["steps"]:
        if "run" not in step or not _runs(step.get("if"), inputs):
            continue
        env = {key: _expanded(value, inputs, outputs) for key, value in step.get("env", {}).items()}
        done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=workspace, env=_environment(**runner, **env),
                              capture_output=True, text=True, timeout=900)
        printed += done.stdout
        if "id" in step:
            outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines())
        if step is action["runs"]["steps"][-1]:
            assert done.returncode == 1  # the job fails: there is a finding
        else:
            assert done.returncode == 0, done.stderr
    assert re.search(r"^::error file=src/bad\.py,line=2,", printed, flags=re.M), printed
    sarif = json.loads((tmp_path / "runner" / "rllint.sarif").read_text())
    assert sarif["runs"][0]["results"][0]["ruleId"] == "RL000"


def _runs(condition, inputs):
    """The `if:` of the action's steps: none, or `inputs.NAME == 'VALUE'`."""
    if condition is None:
        return True
    name, value = re.fullmatch(r"inputs\.(\w+) == '(\w+)'", condition).groups()
    return inputs[name] == value


def _expanded(value, inputs, outputs):
    """`${{ inputs.X }}` and `${{ steps.ID.outputs.X }}` as the runner expands them in `env:`."""
    def one(match):
        parts = match.group(1).split(".")
        return inputs[parts[1]] if parts[0] == "inputs" else outputs[parts[1]][parts[3]]

    return re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", one, str(value))
