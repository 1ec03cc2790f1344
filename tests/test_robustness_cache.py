"""The result cache (issues 11 and 15): data checked on load, a folder of one's choice, pruned, cleaned."""
import json
import os
import time

from click.testing import CliRunner

from rllint import cli
from rllint.cache import _TAG_TEXT, ResultCache, _signature, _signing_key, clean, key_path
from rllint.config import load_settings
from rllint.diagnostic import Diagnostic, Severity
from rllint.diagnostic import FileResult
from rllint.settings import Settings

FINDING = Diagnostic("a.py", 1, 5, 1, 6, "RL601", "sft-scale-learning-rate", Severity.WARNING, "m")


def test_results_round_trip_as_json(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    path = str(tmp_path / "a.py")
    cache = ResultCache(Settings(), tmp_path / "cache")
    cache.put(path, "d1", FileResult([FINDING], dependencies={"/x/config.py": ""}, used_elsewhere=[("b.py", 2, "RL601")]))
    cache.save()
    again = ResultCache(Settings(), tmp_path / "cache").get(path, "d1")
    assert again.diagnostics == [FINDING] and again.dependencies == {"/x/config.py": ""}
    assert again.used_elsewhere == [("b.py", 2, "RL601")]
    assert json.loads(cache.path.read_text().splitlines()[0])["format"] == 2


def read_document(cache: ResultCache) -> dict:
    return json.loads(cache.path.read_bytes().partition(b"\n")[2])


def write_signed(cache: ResultCache, document: dict) -> None:
    """Write `document` as the cache would, signed with the user's key: what only rllint itself can do."""
    body = json.dumps(document).encode()
    signature = _signature(_signing_key(key_path()), cache.root, body)
    header = json.dumps({"format": 2, "root": cache.root, "signature": signature}).encode()
    cache.path.write_bytes(header + b"\n" + body)


def test_entries_of_another_shape_are_misses(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    path = str(tmp_path / "a.py")
    cache = ResultCache(Settings(), tmp_path / "cache")
    cache.put(path, "d1", FileResult([FINDING]))
    cache.save()
    good = read_document(cache)
    write_signed(cache, good)
    assert ResultCache(Settings(), tmp_path / "cache").get(path, "d1") is not None
    for mutate in (lambda r: r.update(extra=1), lambda r: r["diagnostics"][0].update(line=True),
                   lambda r: r["diagnostics"][0].update(severity="fatal"), lambda r: r.update(dependencies=[]),
                   lambda r: r["diagnostics"][0].pop("fix"), lambda r: r.update(used_elsewhere=[["a", -1, "b"]])):
        document = json.loads(json.dumps(good))
        mutate(document[path]["result"])
        write_signed(cache, document)
        assert ResultCache(Settings(), tmp_path / "cache").get(path, "d1") is None


def test_an_absent_dependency_that_appears_is_stale(tmp_path):
    cache = ResultCache(Settings(), tmp_path / "cache")
    missing = str(tmp_path / "config.py")
    assert not cache.stale({missing: ""})
    (tmp_path / "config.py").write_text("LR = 5e-5\n")
    assert ResultCache(Settings(), tmp_path / "cache").stale({missing: ""})


def test_pruning_drops_gone_files_and_old_cache_files(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "CACHEDIR.TAG").write_text(_TAG_TEXT)  # a folder rllint made
    old = folder / ("results-" + "0" * 32 + ".json")
    old.write_text("{}")
    os.utime(old, (time.time() - 40 * 86400,) * 2)
    legacy = folder / ("f" * 32 + ".pickle")
    legacy.write_bytes(b"not read")
    os.utime(legacy, (time.time() - 40 * 86400,) * 2)
    unrelated = folder / "notes.txt"
    unrelated.write_text("mine")
    (tmp_path / "a.py").write_text("x = 1\n")
    cache = ResultCache(Settings(), folder)
    cache.put(str(tmp_path / "a.py"), "d", FileResult())
    cache.put(str(tmp_path / "gone.py"), "d", FileResult())
    cache.save()
    assert set(read_document(cache)) == {str(tmp_path / "a.py")}
    assert not old.exists() and not legacy.exists() and unrelated.exists()


def test_cache_dir_flag_config_key_and_clean(tmp_path, monkeypatch):
    monkeypatch.delenv("RLLINT_CACHE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("x = (\n")
    (tmp_path / "pyproject.toml").write_text("[tool.rllint]\ncache-dir = 'build/rllint-cache'\n")
    assert load_settings().cache_dir == str(tmp_path / "build/rllint-cache")
    assert CliRunner().invoke(cli.main, ["a.py"]).exit_code == 1
    assert [p.suffix for p in (tmp_path / "build/rllint-cache").iterdir() if p.name.startswith("results-")] == [".json"]
    assert CliRunner().invoke(cli.main, ["--cache-dir", "elsewhere", "a.py"]).exit_code == 1
    assert any(p.name.startswith("results-") for p in (tmp_path / "elsewhere").iterdir())
    (tmp_path / "elsewhere" / "keep.txt").write_text("not rllint's")
    done = CliRunner().invoke(cli.main, ["clean"])
    assert done.exit_code == 0 and not (tmp_path / "build/rllint-cache").exists()
    assert CliRunner().invoke(cli.main, ["clean", "--cache-dir", "elsewhere"]).exit_code == 0
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["CACHEDIR.TAG", "keep.txt"]


def test_clean_of_a_missing_folder(tmp_path):
    assert clean(tmp_path / "nothing") == 0


def test_fixes_cells_and_steps_round_trip(tmp_path):
    from rllint.fix import Edit, Fix

    fixed = Diagnostic("nb.ipynb", 2, 1, 2, 9, "RL302", "think-regex-without-dotall", Severity.ERROR, "m",
                       Fix("add re.DOTALL", (Edit(2, 5, 2, 9, "re.S"),), True), cell=3)
    logged = Diagnostic("run/trainer_state.json", 7, 1, 7, 1, "RL703", "entropy-collapse", Severity.WARNING, "m",
                        step=420)
    path = str(tmp_path / "nb.ipynb")
    (tmp_path / "nb.ipynb").write_text("{}")
    cache = ResultCache(Settings(), tmp_path / "cache")
    cache.put(path, "d1", FileResult([fixed, logged]))
    cache.save()
    assert ResultCache(Settings(), tmp_path / "cache").get(path, "d1").diagnostics == [fixed, logged]


def test_a_warm_run_under_site_packages_or_a_venv_reads_the_cache(tmp_path, monkeypatch):
    """A relative import there names no project file: it used to be recorded as an absent dependency while
    the file exists, so every run found the cached result stale (issue 26.7)."""
    from rllint import runner

    linted = []
    real = runner.lint_bytes
    monkeypatch.setattr(runner, "lint_bytes", lambda data, path, settings: linted.append(path) or real(data, path, settings))
    for folder in ("lib/site-packages/pkg", "venv/lib/pkg"):
        package = tmp_path / folder
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "config.py").write_text("LR = 5e-5\n")
        (package / "train.py").write_text("from .config import LR\nfrom trl import GRPOConfig\n"
                                          "config = GRPOConfig(learning_rate=LR)\n")
        path = str(package / "train.py")
        settings = Settings(select=["RL601"])
        for _ in range(2):
            runner.lint_files([path], settings, cache=ResultCache(settings, tmp_path / "cache"), isolated=False)
        assert linted.count(path) == 1
