"""Copies of RL frameworks inside a project: a walk lints only the files that no release of the framework has
(the project's own changes), with one line saying so."""
from pathlib import Path

from rllint.files import discover
from rllint.settings import Settings
from rllint.vendored import vendored_framework

BAD = "from trl import GRPOConfig\nconfig = GRPOConfig(learning_rate=5e-5)\n"


def make(root: Path, files) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[name] if isinstance(files, dict) else "")


def verl_package(root: Path, prefix: str = "") -> None:
    make(root, [f"{prefix}verl/__init__.py", f"{prefix}verl/protocol.py", f"{prefix}verl/trainer/main_ppo.py",
                f"{prefix}verl/workers/actor.py"])


def walk(root: Path, top: str = ".", **settings):
    notices = []
    files, errors = discover([str(root / top)], Settings(root=root, **settings), notices)
    return {Path(f).relative_to(root).as_posix() for f in files}, notices, errors


def test_a_framework_package_inside_a_project_is_skipped_with_a_notice(tmp_path):
    verl_package(tmp_path)
    make(tmp_path, {"train.py": BAD})
    files, notices, errors = walk(tmp_path)
    assert files == {"train.py"} and not errors
    assert len(notices) == 1 and "verl" in notices[0] and "--lint-vendored" in notices[0]


def test_a_project_folder_whose_metadata_names_the_framework_is_a_copy(tmp_path):
    verl_package(tmp_path, "third_party/verl/")
    make(tmp_path, {"third_party/verl/setup.py": "setup(name='verl', version='0.2')\n",
                    "third_party/verl/examples/run.sh": "", "third_party/verl/scripts/merge.py": "",
                    "train.py": BAD})
    files, notices, _ = walk(tmp_path)
    assert files == {"train.py", "third_party/verl/setup.py"}  # the copy's launch configs are left alone
    assert notices == [f"{tmp_path / 'third_party/verl'}: a copy of the verl framework: only its files that no "
                       "release of verl has are linted (all of them with --lint-vendored)"]


def test_the_projects_own_files_inside_a_copy_are_linted(tmp_path):
    verl_package(tmp_path)  # empty files: byte for byte files of verl's releases (its empty `__init__.py`s)
    make(tmp_path, {"verl/utils/reward_score/my_task.py": BAD, "verl/workers/actor.py": BAD + "# changed\n"})
    files, notices, _ = walk(tmp_path)
    assert files == {"verl/utils/reward_score/my_task.py", "verl/workers/actor.py"} and len(notices) == 1


def test_lint_vendored_and_naming_the_folder_lint_the_copy(tmp_path):
    verl_package(tmp_path)
    files, notices, _ = walk(tmp_path, lint_vendored=True)
    assert "verl/protocol.py" in files and not notices
    files, notices, _ = walk(tmp_path, top="verl")
    assert "verl/protocol.py" in files and not notices


def test_released_distributions_are_the_framework_itself(tmp_path):
    verl_package(tmp_path, "site/")
    make(tmp_path, ["site/verl-0.9.1.dist-info/METADATA",
                    "wheel/openrlhf-0.11.2.data/purelib/openrlhf/__init__.py",
                    "wheel/openrlhf-0.11.2.data/purelib/openrlhf/trainer/ppo.py",
                    "wheel/openrlhf-0.11.2.data/purelib/openrlhf/models/actor.py",
                    "wheel/openrlhf-0.11.2.data/purelib/openrlhf/cli/train_ppo.py",
                    "wheel/openrlhf-0.11.2.dist-info/METADATA"])
    files, notices, _ = walk(tmp_path)
    assert "site/verl/protocol.py" in files and "wheel/openrlhf-0.11.2.data/purelib/openrlhf/cli/train_ppo.py" in files
    assert not notices


def test_look_alikes_are_not_copies(tmp_path):
    # a project's own package that happens to be called `trl` without trl's layout; a folder named
    # `verl` holding the user's launch scripts; metadata naming another project
    assert vendored_framework(str(tmp_path / "trl"), frozenset({"__init__.py", "rewards.py"})) is None
    assert vendored_framework(str(tmp_path / "verl"), frozenset({"run_grpo.sh", "config.yaml"})) is None
    make(tmp_path, {"proj/setup.py": "setup(name='grpo_recipes')\n"})
    verl_package(tmp_path, "proj/")
    names = frozenset({"setup.py", "verl"})
    assert vendored_framework(str(tmp_path / "proj"), names) is None  # the project is not verl (its package folder still is a copy)
    (tmp_path / "proj/setup.py").write_text("setup(name='verl-core')\n")
    assert vendored_framework(str(tmp_path / "proj"), names) == "verl"


def test_the_project_index_holds_the_files_of_a_copy_that_a_lint_skips(tmp_path):
    """The framework's own files of a copy are not linted, but they run: the index reads them (a setting a trainer
    of the copy reads is read, a function it calls has that caller)."""
    from rllint.index import project_files

    verl_package(tmp_path)
    make(tmp_path, {"train.py": BAD, "pyproject.toml": ""})
    indexed = {Path(f).relative_to(tmp_path).as_posix() for f in project_files(str(tmp_path), Settings(root=tmp_path))}
    assert {"train.py", "verl/protocol.py", "verl/workers/actor.py"} <= indexed
    assert walk(tmp_path)[0] == {"train.py"}
