"""Every README snippet that can run offline does what the README says: config blocks load, example
outputs match real runs, usage lines are accepted, the problem matcher matches real output, and the
pre-commit, CI and editor snippets pin one commit of this repository with one placeholder for its address
(tests/test_snippets.py runs them from a clone at that commit)."""
import json
import re
import shlex
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from rllint import cli
from rllint.config import ConfigError, load_settings

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, flags=re.MULTILINE | re.DOTALL)
ADDRESS = "https://github.com/OWNER/rllint"  # the one placeholder of the snippets: the repository's address
PINS = re.findall(r"rllint@(\w+)|rev: (\w+)", README)


def blocks(language):
    return [body for tag, body in BLOCKS if tag == language]


def run(*args):
    return CliRunner().invoke(cli.main, list(args))


def test_the_readme_has_the_snippets_these_tests_check():
    assert {tag for tag, _ in BLOCKS} >= {"python", "console", "bash", "toml", "yaml", "json", "lua"}


@pytest.mark.parametrize("body", blocks("toml"), ids=lambda body: body.splitlines()[0])
def test_toml_blocks_parse_and_rllint_config_loads(body, tmp_path, monkeypatch):
    document = tomllib.loads(body)
    first = body.splitlines()[0]
    if "rllint" in document.get("tool", {}):
        folder, name = tmp_path, "pyproject.toml"
    elif first.startswith("# ") and first.endswith("rllint.toml"):  # a sub-folder's config, named in its first line
        folder, name = (tmp_path / first[2:]).parent, Path(first).name
        folder.mkdir(parents=True)
    else:
        assert "tool" in document or "language-server" in document  # another tool's config (ruff's, Helix's)
        return
    (folder / name).write_text(body)
    if "extend" in document:  # the file it inherits
        (folder / document["extend"]).write_text("[tool.rllint]\n")
    monkeypatch.chdir(tmp_path)
    try:
        settings = load_settings(start=folder)
    except ConfigError as error:
        pytest.fail(f"README config does not load: {error}")
    assert settings.config_path == folder / name


def test_the_example_output_matches_a_real_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sources = {body.splitlines()[0][2:]: body for body in blocks("python") if re.match(r"# \w+\.py\n", body)}
    checked = 0
    for console in blocks("console"):
        command, *expected = console.splitlines()
        args = shlex.split(command.removeprefix("$ "))[1:]
        if all(arg in sources for arg in args if arg.endswith(".py")) and any(a.endswith(".py") for a in args):
            for name in (arg for arg in args if arg.endswith(".py")):
                Path(name).write_text(sources[name])
            assert run(*args).stdout.splitlines() == expected
            checked += 1
    assert checked == 2  # grpo_step.py and train_grpo.py


def test_the_notebook_example_is_the_real_format(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (console,) = [body for body in blocks("console") if "train.ipynb" in body]
    command, expected = console.splitlines()
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# GRPO\n"},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": "import re\n"},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": "%%time\n\n\nthink = re.compile(r'<think>.*?</think>')\n"}]
    Path("train.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert run(*shlex.split(command)[2:]).stdout.splitlines()[0] == expected


def usage_lines():
    for body in blocks("bash"):
        for line in body.splitlines():
            command = line.split(" #")[0].split("|")[-1].strip()
            if command.startswith("rllint"):
                yield command


@pytest.mark.parametrize("command", list(usage_lines()))
def test_usage_lines_are_accepted_by_the_command_line(command):
    args = shlex.split(command)[1:]
    group = cli.main
    context = group.make_context("rllint", ["--help"], resilient_parsing=True)
    name = args[0] if args and args[0] in group.commands else "check"
    rest = args[1:] if args and args[0] in group.commands else args
    try:
        group.commands[name].make_context(name, list(rest), parent=context)
    except click.UsageError as error:
        pytest.fail(f"README usage `{command}` is rejected: {error}")


@pytest.mark.slow
def test_the_setup_commands_are_the_ones_ci_runs_and_the_fixtures_have_findings():
    setup = blocks("bash")[:2]
    assert setup[1].strip() == 'python -m pip install ".[test]" && python -m pytest -q'
    assert setup[1].strip() in (ROOT / ".ci" / "run").read_text()
    assert setup[0].strip() == "python -m pip install . && rllint fixtures/"
    assert run("-q", str(ROOT / "fixtures")).exit_code == 1  # "full of findings, so it exits with status 1"


def test_every_snippet_pins_the_same_commit_of_this_repository():
    pins = {one or other for one, other in PINS}
    assert len(PINS) >= 5 and len(pins) == 1, pins
    (pin,) = pins
    assert re.fullmatch(r"[0-9a-f]{40}", pin)  # a commit, which the repository holds (no tag to create)
    assert f"commit `{pin}`" in README and README.count("`OWNER/rllint`") == 2  # said once, in Set-up (and linked)


def test_pre_commit_snippet_names_the_hook():
    (config,) = [yaml.safe_load(body) for body in blocks("yaml") if "repos:" in body]
    (repo,) = config["repos"]
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert repo["repo"] == ADDRESS
    assert [hook["id"] for hook in repo["hooks"]] == [hook["id"] for hook in hooks] == ["rllint"]


def test_ci_snippets_use_the_action_or_pip_and_their_commands_run():
    (job,) = [yaml.safe_load(body)["jobs"]["rllint"] for body in blocks("yaml") if "jobs:" in body]
    (action,) = [step for step in job["steps"] if step.get("uses", "").startswith("OWNER/rllint@")]
    inputs = yaml.safe_load((ROOT / "action.yml").read_text())["inputs"]
    assert set(action["with"]) <= set(inputs) and job["permissions"]["security-events"] == "write"
    (steps,) = [yaml.safe_load(body) for body in blocks("yaml") if "- run:" in body]
    runs = [step["run"] for step in steps if "run" in step]
    pin = PINS[0][0] or PINS[0][1]
    assert runs[0] == f'pip install "rllint @ git+{ADDRESS}@{pin}"'
    assert f'pip install "rllint[lsp] @ git+{ADDRESS}@{pin}"' in README  # the language server's
    args = shlex.split(runs[1])
    assert args[0] == "rllint"
    cli.check.make_context("check", args[1:])


def test_the_problem_matcher_matches_real_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (matcher,) = [json.loads(body) for body in blocks("json") if '"owner": "rllint"' in body]
    pattern = matcher["pattern"]
    Path("train.py").write_text("import re\nA = re.compile(r'<think>.*?</think>')\n")
    Path("broken.py").write_text("x = (\n")
    lines = run("-q", "train.py", "broken.py").stdout.splitlines()
    found = [re.match(pattern["regexp"], line) for line in lines]
    assert all(found), lines
    assert [(m.group(pattern["file"]), m.group(pattern["line"]), m.group(pattern["column"]), m.group(pattern["code"]))
            for m in found] == [("broken.py", "1", "5", "RL000"), ("train.py", "2", "5", "RL302")]
    assert all(m.group(pattern["message"]) for m in found)


def test_the_json_fix_example_is_the_real_shape(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (example,) = [json.loads(body) for body in blocks("json") if '"applicability"' in body]
    Path("logps.py").write_text("import torch\n\n\n\n\ndef policy_logps(logits):\n"
                                "    return torch.log(torch.softmax(logits, dim=-1))\n")
    (finding,) = json.loads(run("--format", "json", "--extend-select", "RL108", "logps.py").stdout)
    assert finding["fix"] == example


def test_vs_code_settings_snippet_is_json():
    assert {"flake8.importStrategy": "fromEnvironment"} in [json.loads(body) for body in blocks("json")]
