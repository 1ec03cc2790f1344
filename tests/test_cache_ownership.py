"""The result cache owns only what rllint made (issue 26.2), `rllint clean` cleans this project's results
unless told `--all` (25.7), and a forged cache file cannot hide a finding (26.9)."""
import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from rllint import cli
from rllint.cache import _TAG_TEXT, ResultCache, key_path
from rllint.diagnostic import FileResult
from rllint.settings import Settings

SCRIPT = "import re\nFORMAT = re.compile(r'<think>.*?</think>')\n"


def run(*args):
    return CliRunner().invoke(cli.main, list(args))


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(SCRIPT)
    return tmp_path


def test_a_folder_of_other_files_is_neither_written_pruned_nor_cleaned(project):
    folder = project / "shared"
    folder.mkdir()
    look_alike = folder / ("results-" + "0" * 32 + ".json")  # a name rllint's files have, made by someone else
    look_alike.write_text("theirs")
    os.utime(look_alike, (0, 0))  # old enough to be pruned, were it rllint's
    (folder / "notes.txt").write_text("theirs")
    result = run("--cache-dir", "shared", "train.py")
    assert result.exit_code == 1 and "train.py:2:10: RL302" in result.stdout
    assert "rllint: warning: the result cache is off: shared holds files rllint did not make" in result.stderr
    assert sorted(p.name for p in folder.iterdir()) == sorted([look_alike.name, "notes.txt"])
    cleaned = run("clean", "--all", "--cache-dir", "shared")
    assert cleaned.output == ("shared is not a cache folder of rllint's (it has no CACHEDIR.TAG of rllint's); "
                              "nothing removed.\n")
    assert sorted(p.name for p in folder.iterdir()) == sorted([look_alike.name, "notes.txt"])


def test_rllint_claims_a_new_or_empty_folder_with_its_tag(project):
    (project / "empty").mkdir()
    for folder in ("new/cache", "empty"):
        assert run("--cache-dir", folder, "train.py").stderr == ""
        assert (project / folder / "CACHEDIR.TAG").read_text() == _TAG_TEXT
        assert any(p.name.startswith("results-") for p in (project / folder).iterdir())


def test_a_dangling_tag_link_does_not_make_rllint_create_its_target(project):
    folder = project / "cache"
    folder.mkdir()
    target = project / "elsewhere" / "created-by-rllint"
    (project / "elsewhere").mkdir()
    (folder / "CACHEDIR.TAG").symlink_to(target)
    result = run("--cache-dir", "cache", "train.py")
    assert result.exit_code == 1
    assert not target.exists() and not os.path.lexists(str(target))
    assert [p.name for p in folder.iterdir()] == ["CACHEDIR.TAG"]
    assert "rllint: warning: the result cache is off" in result.stderr


def test_a_cache_file_link_is_replaced_never_written_through(project):
    victim = project / "victim.txt"
    victim.write_text("mine")
    settings = Settings(root=project)
    cache = ResultCache(settings, project / "cache")
    cache.put(str(project / "train.py"), "d", FileResult())
    cache.save()
    cache.path.unlink()
    cache.path.symlink_to(victim)
    cache.put(str(project / "train.py"), "e", FileResult())
    cache.save()
    assert victim.read_text() == "mine" and not cache.path.is_symlink()


def test_clean_removes_this_projects_results_unless_told_all(tmp_path, monkeypatch):
    shared = tmp_path / "cache"
    monkeypatch.setenv("RLLINT_CACHE_DIR", str(shared))
    for name in ("alpha", "beta"):
        (tmp_path / name / "experiments").mkdir(parents=True)
        (tmp_path / name / "pyproject.toml").write_text("[tool.rllint]\n")
        (tmp_path / name / "experiments" / ".rllint.toml").write_text("extend-select = ['RL001']\n")
        (tmp_path / name / "train.py").write_text(SCRIPT)
        (tmp_path / name / "experiments" / "run.py").write_text(SCRIPT)
        monkeypatch.chdir(tmp_path / name)
        assert run(".").exit_code == 1
    assert len(list(shared.glob("results-*.json"))) == 4  # two configs in each project
    monkeypatch.chdir(tmp_path / "alpha")
    assert run("clean").output == f"Removed 2 files (the results of {tmp_path / 'alpha'}) from {shared}.\n"
    roots = sorted(json.loads(p.read_text().splitlines()[0])["root"] for p in shared.glob("results-*.json"))
    assert roots == [str(tmp_path / "beta"), str(tmp_path / "beta" / "experiments")]
    assert run("clean", "--all").output == f"Removed 2 files (every project's results) from {shared}.\n"
    assert not shared.exists()  # nothing else was in it


def test_clean_help_says_how_to_clean_every_project():
    assert "--all" in run("clean", "--help").output and "this project" in run("clean", "--help").output


def test_a_forged_cache_file_cannot_hide_a_finding(project):
    """The attack of issue 26.9: an entry with the file's digest and no finding, written by whoever can write
    the cache folder. Its signature is not made with the user's key, so it is a miss."""
    assert run("train.py").exit_code == 1
    (cache_file,) = Path(os.environ["RLLINT_CACHE_DIR"]).glob("results-*.json")
    header, body = cache_file.read_text().split("\n", 1)
    document = json.loads(body)
    for entry in document.values():
        entry["result"]["diagnostics"] = []
    forged = json.dumps(document)
    cache_file.write_text(header + "\n" + forged)  # the old signature over new entries
    assert run("train.py").exit_code == 1
    signed = dict(json.loads(header), signature="0" * 64)
    cache_file.write_text(json.dumps(signed) + "\n" + forged)  # a signature of the forger's choosing
    assert run("train.py").exit_code == 1


def test_the_key_is_private_and_one_open_to_others_turns_the_cache_off(project):
    assert run("train.py").exit_code == 1
    key = key_path()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) >= 32
    os.chmod(key, 0o644)
    from rllint.cache import _signing_key

    _signing_key.cache_clear()  # the same key, looked at afresh
    result = run("train.py")
    assert result.exit_code == 1
    assert f"the result cache is off: its key {key} cannot be made or read, or is not private to you" in result.stderr
