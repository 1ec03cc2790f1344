"""`--fix` and `--add-noqa` leave every file complete or untouched (issue 26.1, 26.5, 26.7): the new text
goes to a temporary file, is read back, then replaces the file in one step; whatever fails names the file
in one line, the run goes on with the other files, and the exit status is 2."""
import errno
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from rllint import cli

REGEX = "FORMAT = re.compile(r'<think>.*?</think>')"
FIXED = "FORMAT = re.compile(r'<think>.*?</think>', flags=re.DOTALL)"
SOURCE = f"import re\n{REGEX}\n"


def run(*args):
    return CliRunner().invoke(cli.main, ["--select", "RL302", *args])


def leftovers(folder: Path):
    return [p.name for p in folder.iterdir() if p.name.endswith(".rllint-tmp")]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with `train.py` to break and `other.py`, which must still be fixed."""
    monkeypatch.chdir(tmp_path)
    Path("other.py").write_text(SOURCE)
    return tmp_path


def test_a_fix_replaces_the_file_whole_and_keeps_its_mode(project):
    Path("train.py").write_text(SOURCE)
    os.chmod("train.py", 0o751)
    assert run("--fix", ".").exit_code == 0
    assert Path("train.py").read_text() == f"import re\n{FIXED}\n"
    assert stat.S_IMODE(os.stat("train.py").st_mode) == 0o751
    assert leftovers(project) == []


# A label of the `idna` codec (the text between two dots) holds at most 63 characters: this file decodes and
# encodes as it is, but `# noqa: RL302` (or `flags=re` after the quote) makes the label after its line's
# last dot too long to encode.
IDNA_NOQA = f"# coding: idna\nimport re\n{REGEX}\nlong_name_without_any_dot_in_it_at_all_here = re.I\n"
IDNA_FIX = "# coding: idna\nimport re\nFORMAT = re.compile(r'<think>.*?</think>" + "x" * 45 + "')\n"


@pytest.mark.parametrize("source, flag", [(IDNA_NOQA, "--add-noqa"), (IDNA_FIX, "--fix")], ids=["noqa", "fix"])
def test_a_codec_that_cannot_encode_the_new_text_leaves_the_file_untouched(source, flag, project):
    data = source.encode("idna")
    Path("train.py").write_bytes(data)
    result = run(flag, ".")
    assert Path("train.py").read_bytes() == data
    assert result.exit_code == 2
    assert result.stderr.startswith("rllint: error: train.py: not changed: its encoding (idna) cannot write the "
                                    "fixed text (encoding with 'idna' codec failed")
    assert leftovers(project) == []
    assert "noqa" in Path("other.py").read_text() or "DOTALL" in Path("other.py").read_text()


@pytest.mark.parametrize("flag", ["--fix", "--add-noqa"])
def test_a_unicode_escape_cookie_is_not_rewritten_onto_one_line(flag, project):
    data = f"# coding: unicode_escape\nimport re\n{REGEX}\n".encode()
    Path("train.py").write_bytes(data)
    result = run(flag, ".")
    assert Path("train.py").read_bytes() == data
    assert result.exit_code == 2
    assert ("rllint: error: train.py: not changed: its encoding (unicode_escape) does not write its own text back "
            "as the same bytes") in result.stderr


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names an open file through /proc")
def test_a_write_error_leaves_the_file_whole(project, monkeypatch):
    Path("train.py").write_text(SOURCE)
    real_fsync = os.fsync

    def full_disk(descriptor):
        if os.path.basename(os.readlink(f"/proc/self/fd/{descriptor}")).startswith(".train.py."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", full_disk)
    result = run("--fix", ".")
    assert Path("train.py").read_text() == SOURCE
    assert result.exit_code == 2
    assert "rllint: error: train.py: cannot be written: No space left on device; not changed" in result.stderr
    assert "train.py:2:10: RL302" in result.stdout  # its findings stand
    assert Path("other.py").read_text() == f"import re\n{FIXED}\n"
    assert leftovers(project) == []


@pytest.mark.parametrize("flag", ["--fix", "--add-noqa"])
def test_a_read_only_file_is_an_error_and_the_run_goes_on(flag, project):
    Path("train.py").write_text(SOURCE)
    os.chmod("train.py", 0o444)
    result = run(flag, ".")
    assert Path("train.py").read_text() == SOURCE
    assert result.exit_code == 2
    assert "rllint: error: train.py: is read-only; not changed" in result.stderr
    assert Path("other.py").read_text() != SOURCE


@pytest.mark.parametrize("flag", ["--fix", "--add-noqa"])
def test_a_link_out_of_the_tree_is_not_written_through(flag, tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "train.py").write_text(SOURCE)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link.py").symlink_to(outside / "train.py")
    (tree / "target.py").write_text(SOURCE)
    (tree / "inner.py").symlink_to(tree / "target.py")
    monkeypatch.chdir(tree)
    for paths in (["."], ["link.py", "inner.py"]):  # a walk, and the names pre-commit would pass
        result = run(flag, *paths)
        assert (outside / "train.py").read_text() == SOURCE
        assert result.exit_code == 2
        assert (f"rllint: error: link.py: is a symbolic link (or lies in a linked folder) to {outside / 'train.py'}, "
                "outside the linted tree; not changed") in result.stderr
    assert (tree / "inner.py").is_symlink() and (tree / "target.py").read_text() != SOURCE  # inside: written through


def test_the_last_statement_of_a_file_without_a_final_newline_is_fixed(project):
    Path("train.py").write_text(f"import re\n{REGEX}")
    assert "+FORMAT" in run("--diff", "train.py").stdout
    assert run("--fix", "train.py").exit_code == 0
    assert Path("train.py").read_text() == f"import re\n{FIXED}"
    Path("nested.py").write_text(f"import re\nif True:\n    {REGEX}")
    run("--fix", "nested.py")
    assert Path("nested.py").read_text() == f"import re\nif True:\n    {FIXED}"


def test_add_noqa_names_files_it_could_not_read(project):
    Path("train.py").write_text(SOURCE)
    Path("broken.py").write_bytes(b"x = '\xff'\n")
    result = run("--add-noqa", ".")
    assert result.exit_code == 2
    assert "rllint: error: broken.py: cannot be decoded" in result.stderr
    assert Path("train.py").read_text() == f"import re\n{REGEX}  # noqa: RL302\n"
