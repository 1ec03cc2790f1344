"""File discovery: walks, kinds, excludes, .gitignore, explicit paths and the errors of a walk."""
import os
from pathlib import Path

import pytest

from rllint import files
from rllint.diagnostic import FileError
from rllint.files import discover, file_kind
from rllint.settings import Settings


def make(root: Path, *names: str) -> None:
    """Create files (names ending in `/` are folders) under `root`."""
    for name in names:
        path = root / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x = 1\n", encoding="utf-8")


def found(root: Path, settings: Settings = None, paths=(".",)) -> list:
    """Discover from inside `root` (cwd), expecting no errors."""
    os.chdir(root)
    result, errors = discover(list(paths), settings or Settings(root=root))
    assert errors == []
    return result


@pytest.fixture(autouse=True)
def restore_cwd():
    cwd = os.getcwd()
    yield
    os.chdir(cwd)


def test_file_kind():
    assert file_kind("train.py") == "python"
    assert file_kind("src/stubs/torch.pyi") == "python"
    assert file_kind("config.yaml") == file_kind("config.yml") == "yaml"
    assert file_kind("run.sh") == "shell"
    assert file_kind("notebook.ipynb") == "notebook"
    assert file_kind("py") is None
    assert file_kind("Makefile") is None


def test_walk_is_sorted_relative_and_skips_other_kinds(tmp_path):
    make(tmp_path, "src/train.py", "src/pkg/b.py", "src/pkg/a.pyi", "src/notes.txt", "src/cfg.json", "top.py",
         "src/empty/")
    assert found(tmp_path) == ["src/pkg/a.pyi", "src/pkg/b.py", "src/train.py", "top.py"]
    assert found(tmp_path, paths=["src"]) == ["src/pkg/a.pyi", "src/pkg/b.py", "src/train.py"]
    assert found(tmp_path, paths=["./src/"]) == ["src/pkg/a.pyi", "src/pkg/b.py", "src/train.py"]
    assert found(tmp_path, paths=[str(tmp_path / "src" / "pkg")]) == [
        str(tmp_path / "src" / "pkg" / "a.pyi"), str(tmp_path / "src" / "pkg" / "b.py")]


def test_explicit_files(tmp_path):
    make(tmp_path, "src/train.py", "src/notes.txt", "script")
    # an explicit non-Python file is skipped silently, as ruff does; duplicates are listed once
    assert found(tmp_path, paths=["src/notes.txt", "src/train.py", "script", "src", "./src/train.py"]) == [
        "src/train.py"]


def test_default_excludes_are_not_descended(tmp_path):
    make(tmp_path, "keep.py", "pkg/mod.py", ".venv/lib/x.py", "venv/y.py", "build/lib/z.py", "dist/d.py",
         "node_modules/n.py", "lib/python3.11/site-packages/torch/t.py", "pkg/__pycache__/c.py", ".git/hooks/h.py",
         ".tox/t.py", ".mypy_cache/m.py", "__pypackages__/p.py")
    os.symlink(tmp_path, tmp_path / "build" / "loop")  # would be a loop error if `build` were walked
    assert found(tmp_path) == ["keep.py", "pkg/mod.py"]


def test_exclude_replaced(tmp_path):
    make(tmp_path, "keep.py", ".venv/x.py", "legacy/old.py")
    settings = Settings(root=tmp_path, exclude=["legacy"])
    assert found(tmp_path, settings) == [".venv/x.py", "keep.py"]


def test_extend_exclude_names_and_anchored_paths(tmp_path):
    make(tmp_path, "a.py", "proto/msg_pb2.py", "pkg/generated/g.py", "other/pkg/generated/g.py",
         "scripts/run.py", "scripts/sub/deep.py", "x/fixtures/f.py", "fixtures/f.py", "build/b.py")
    settings = Settings(root=tmp_path, extend_exclude=["*_pb2.py", "pkg/generated", "scripts/*.py", "**/fixtures"])
    assert found(tmp_path, settings) == ["a.py", "other/pkg/generated/g.py", "scripts/sub/deep.py"]


def test_anchored_patterns_are_relative_to_the_root_not_the_cwd(tmp_path):
    make(tmp_path, "proj/pkg/generated/g.py", "proj/pkg/ok.py", "proj/sub/pkg/generated/h.py")
    settings = Settings(root=tmp_path / "proj", extend_exclude=["pkg/generated"])
    assert found(tmp_path, settings, paths=["proj"]) == ["proj/pkg/ok.py", "proj/sub/pkg/generated/h.py"]
    # walking from inside a subfolder: patterns still anchor at the root
    assert found(tmp_path / "proj" / "pkg", settings) == ["ok.py"]


def test_explicit_paths_are_linted_even_when_excluded(tmp_path):
    make(tmp_path, ".venv/x.py", "scripts/run.py", "build/lib/b.py")
    settings = Settings(root=tmp_path, extend_exclude=["scripts/*.py"])
    paths = [".venv/x.py", "scripts/run.py", "build"]
    assert found(tmp_path, settings, paths) == [".venv/x.py", "build/lib/b.py", "scripts/run.py"]


def test_explicit_folder_matched_by_an_anchored_pattern_is_walked(tmp_path):
    make(tmp_path, "pkg/generated/g.py", "pkg/generated/sub/h.py", "pkg/generated/sub/x_pb2.py",
         "pkg/generated/legacy/l.py")
    settings = Settings(root=tmp_path, extend_exclude=["pkg/generated", "*_pb2.py", "pkg/generated/legacy"])
    assert found(tmp_path, settings, ["pkg/generated"]) == ["pkg/generated/g.py", "pkg/generated/sub/h.py"]
    assert found(tmp_path, settings, ["pkg/generated/sub"]) == ["pkg/generated/sub/h.py"]
    assert found(tmp_path, settings, ["pkg"]) == []


def test_force_exclude_applies_excludes_to_explicit_paths(tmp_path):
    make(tmp_path, ".venv/x.py", "scripts/run.py", "scripts/keep.sh", "build/lib/b.py", "pkg/generated/g.py",
         "src/train.py", "src/gen_pb2.py")
    settings = Settings(root=tmp_path, force_exclude=True,
                        extend_exclude=["scripts/*.py", "pkg/generated", "*_pb2.py"])
    paths = [".venv/x.py", "scripts/run.py", "build", "build/lib/b.py", "pkg/generated/g.py", "pkg/generated",
             "src/train.py", "src/gen_pb2.py", str(tmp_path / ".venv" / "x.py")]
    assert found(tmp_path, settings, paths) == ["src/train.py"]


def test_force_exclude_ignores_folders_above_the_root(tmp_path):
    make(tmp_path, "build/proj/src/a.py")
    root = tmp_path / "build" / "proj"
    settings = Settings(root=root, force_exclude=True)
    assert found(root, settings, ["src/a.py", "src", "."]) == ["src/a.py"]


# --- .gitignore ----------------------------------------------------------------------------------

def repo(root: Path) -> Path:
    (root / ".git" / "info").mkdir(parents=True)
    return root


def test_gitignore_nested_negation_and_info_exclude(tmp_path):
    repo(tmp_path)
    (tmp_path / ".gitignore").write_text("*.log\nout/\ngen_*.py\n# comment\n/top_only.py\n")
    (tmp_path / ".git" / "info" / "exclude").write_text("secret.py\n")
    make(tmp_path, "a.py", "gen_a.py", "top_only.py", "secret.py", "out/o.py", "pkg/out/p.py",
         "pkg/top_only.py", "pkg/gen_b.py", "pkg/keep.py", "pkg/drop.py", "pkg/sub/drop.py", "pkg/sub/keep.py")
    (tmp_path / "pkg" / ".gitignore").write_text("*.py\n!keep.py\n!gen_b.py\n")
    assert found(tmp_path) == ["a.py", "pkg/gen_b.py", "pkg/keep.py", "pkg/sub/keep.py"]


def test_gitignore_from_above_the_walk_root(tmp_path):
    repo(tmp_path)
    (tmp_path / ".gitignore").write_text("scratch_*.py\n")
    make(tmp_path, "src/pkg/scratch_1.py", "src/pkg/mod.py")
    (tmp_path / "src" / ".gitignore").write_text("pkg/mod.py\n")
    assert found(tmp_path / "src" / "pkg") == []
    make(tmp_path, "src/pkg/other.py")
    assert found(tmp_path, paths=["src/pkg"]) == ["src/pkg/other.py"]


def test_deeper_gitignore_wins(tmp_path):
    repo(tmp_path)
    (tmp_path / ".gitignore").write_text("gen.py\n")
    make(tmp_path, "gen.py", "a/gen.py", "b/gen.py")
    (tmp_path / "a" / ".gitignore").write_text("!gen.py\n")
    assert found(tmp_path) == ["a/gen.py"]


def test_respect_gitignore_off(tmp_path):
    repo(tmp_path)
    (tmp_path / ".gitignore").write_text("*.py\n")
    (tmp_path / ".git" / "info" / "exclude").write_text("*.py\n")
    make(tmp_path, "a.py", "pkg/b.py")
    assert found(tmp_path) == []
    assert found(tmp_path, Settings(root=tmp_path, respect_gitignore=False)) == ["a.py", "pkg/b.py"]


def test_explicit_files_are_not_gitignored(tmp_path):
    repo(tmp_path)
    (tmp_path / ".gitignore").write_text("*.py\n")
    make(tmp_path, "a.py")
    assert found(tmp_path, Settings(root=tmp_path, force_exclude=True), ["a.py"]) == ["a.py"]


def test_explicit_folder_that_git_ignores_is_walked(tmp_path):
    repo(tmp_path)
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / ".git" / "info" / "exclude").write_text("*_tmp.py\n")
    make(tmp_path, "a.py", "build/lib/b.py", "build/lib/c_tmp.py", "build/lib/d.py")
    (tmp_path / "build" / "lib" / ".gitignore").write_text("d.py\n")
    assert found(tmp_path) == ["a.py"]
    assert found(tmp_path, paths=["build"]) == ["build/lib/b.py"]
    assert found(tmp_path / "build" / "lib") == ["b.py"]


def test_gitignore_outside_a_repository_is_not_consulted(tmp_path):
    (tmp_path / ".gitignore").write_text("*.py\n")
    make(tmp_path, "a.py")
    assert found(tmp_path) == ["a.py"]


def test_nested_repository_starts_afresh(tmp_path):
    repo(tmp_path)
    (tmp_path / ".gitignore").write_text("*_x.py\n")
    make(tmp_path, "a_x.py", "vendor/lib/b_x.py", "vendor/lib/c.py")
    repo(tmp_path / "vendor" / "lib")
    (tmp_path / "vendor" / "lib" / ".gitignore").write_text("c.py\n")
    assert found(tmp_path) == ["vendor/lib/b_x.py"]


def test_repository_with_git_file(tmp_path):
    """A worktree: `.git` is a file naming the git folder, whose `commondir` holds info/exclude."""
    (tmp_path / "main" / ".git" / "info").mkdir(parents=True)
    (tmp_path / "main" / ".git" / "info" / "exclude").write_text("local.py\n")
    (tmp_path / "main" / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (tmp_path / "main" / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    make(tmp_path, "wt/local.py", "wt/a.py")
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {tmp_path / 'main' / '.git' / 'worktrees' / 'wt'}\n")
    assert found(tmp_path / "wt") == ["a.py"]


# --- errors --------------------------------------------------------------------------------------

def test_missing_path_is_an_error_and_the_run_goes_on(tmp_path):
    make(tmp_path, "a.py")
    os.chdir(tmp_path)
    assert discover(["nope.py", "a.py", "gone/"], Settings(root=tmp_path)) == (
        ["a.py"], [FileError("nope.py", "No such file or directory"), FileError("gone", "No such file or directory")])


def test_symlink_loop_is_a_notice_given_once_and_no_error(tmp_path):
    make(tmp_path, "a.py", "pkg/b.py", "pkg/inner/c.py")
    os.symlink("..", tmp_path / "pkg" / "inner" / "up")
    os.symlink("inner", tmp_path / "pkg" / "alias")  # a second way into the loop
    os.chdir(tmp_path)
    notices = []
    result, errors = discover(["."], Settings(root=tmp_path), notices)
    assert result == ["a.py", "pkg/alias/c.py", "pkg/b.py", "pkg/inner/c.py"] and errors == []
    assert len(notices) == 1
    assert notices[0] in {"pkg/inner/up: a symbolic link loop (it leads back to 'pkg'); not descended",
                          "pkg/alias/up: a symbolic link loop (it leads back to 'pkg'); not descended"}


def test_symlink_to_itself(tmp_path):
    make(tmp_path, "pkg/b.py")
    os.symlink(".", tmp_path / "pkg" / "self")
    os.chdir(tmp_path)
    notices = []
    assert discover(["pkg"], Settings(root=tmp_path), notices) == (["pkg/b.py"], [])
    assert notices == ["pkg/self: a symbolic link loop (it leads back to 'pkg'); not descended"]


def test_dangling_python_link_is_left_to_the_runner(tmp_path):
    make(tmp_path, "a.py")
    os.symlink("missing.py", tmp_path / "b.py")
    assert found(tmp_path) == ["a.py", "b.py"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root can list any folder, so permissions cannot make one unlistable")
def test_unlistable_directory(tmp_path):
    make(tmp_path, "a.py", "locked/b.py")
    (tmp_path / "locked").chmod(0)
    try:
        os.chdir(tmp_path)
        assert discover(["."], Settings(root=tmp_path)) == (
            ["a.py"], [FileError("locked", "cannot list directory: Permission denied")])
    finally:
        (tmp_path / "locked").chmod(0o755)


def test_listing_error_is_reported_and_the_walk_goes_on(tmp_path, monkeypatch):
    """The same path as above, made to fail even as root."""
    make(tmp_path, "a.py", "locked/b.py", "open/c.py")
    real_scandir = os.scandir

    def scandir(path):
        if os.path.basename(path) == "locked":
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(files.os, "scandir", scandir)
    os.chdir(tmp_path)
    assert discover(["."], Settings(root=tmp_path)) == (
        ["a.py", "open/c.py"], [FileError("locked", "cannot list directory: Permission denied")])


def test_launch_configs_are_walked_only_when_a_selected_rule_reads_them(tmp_path, monkeypatch):
    from rllint.registry import CSTRule

    (tmp_path / "train.py").write_text("x = 1\n")
    (tmp_path / "grpo.yaml").write_text("lr: 1\n")
    (tmp_path / "run.sh").write_text("python train.py\n")
    settings = Settings(root=tmp_path, select=["RL000"])
    assert [os.path.basename(p) for p in discover([str(tmp_path)], settings)[0]] == ["train.py"]

    class ReadsYaml(CSTRule):
        file_kinds = ("python", "yaml")

    monkeypatch.setattr(Settings, "selected", lambda self: [ReadsYaml.entry()])
    assert [os.path.basename(p) for p in discover([str(tmp_path)], settings)[0]] == ["grpo.yaml", "train.py"]
