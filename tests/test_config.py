"""Config discovery and loading: precedence, every key, and the errors a typo must produce."""
from pathlib import Path

import pytest

import rllint.options
from rllint import config
from rllint.config import ConfigError, find_config, load_settings
from rllint.registry import Option, load_rules
from rllint.files import DEFAULT_EXCLUDES


@pytest.fixture(autouse=True)
def options(monkeypatch):
    """Throwaway rule options in a copy of the table of options, so that real ones are untouched."""
    load_rules()
    table = dict(rllint.options.OPTIONS)
    monkeypatch.setattr(rllint.options, "OPTIONS", table)
    monkeypatch.setattr(config, "OPTIONS", table)
    Option("max-epsilon", float, 1e-4, "largest epsilon")
    Option("min-group-size", int, 3, "smallest group")
    Option("rl-context", str, "auto", "when a file is RL code", choices=("auto", "always"))
    Option("reference-model-names", list, [], "names of reference models")
    Option("strict-mode", bool, False, "a switch")
    return table


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path, name, text, monkeypatch) -> ConfigError:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / name, text)
    with pytest.raises(ConfigError) as caught:
        load_settings(start=tmp_path)
    return caught.value


# --- find_config ---------------------------------------------------------------------------------

def test_precedence_in_one_folder(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.rllint]\nselect = ['RL']\n")
    assert find_config(tmp_path) == tmp_path / "pyproject.toml"
    write(tmp_path / "rllint.toml", "")
    assert find_config(tmp_path) == tmp_path / "rllint.toml"
    write(tmp_path / ".rllint.toml", "")
    assert find_config(tmp_path) == tmp_path / ".rllint.toml"


def test_closest_folder_wins(tmp_path):
    write(tmp_path / ".rllint.toml", "")
    write(tmp_path / "pkg" / "pyproject.toml", "[tool.rllint]\n")
    (tmp_path / "pkg" / "sub").mkdir()
    assert find_config(tmp_path / "pkg" / "sub") == tmp_path / "pkg" / "pyproject.toml"
    assert find_config(tmp_path / "pkg" / "sub" / "train.py") == tmp_path / "pkg" / "pyproject.toml"


def test_pyproject_without_table_is_skipped_for_a_parent(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.rllint]\nignore = ['RL001']\n")
    write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'pkg'\n[tool.ruff]\nline-length = 100\n")
    assert find_config(tmp_path / "pkg") == tmp_path / "pyproject.toml"
    settings = load_settings(start=tmp_path / "pkg")
    assert settings.ignore == ["RL001"]
    assert settings.root == tmp_path.resolve()


def test_no_config_anywhere(tmp_path):
    (tmp_path / "a").mkdir()
    assert find_config(tmp_path / "a") is None
    settings = load_settings(start=tmp_path / "a")
    assert settings.config_path is None
    assert settings.root == (tmp_path / "a").resolve()
    assert settings.select is None and settings.ignore == [] and settings.options == {}
    assert settings.exclude == list(DEFAULT_EXCLUDES) and settings.respect_gitignore is True


def test_invalid_pyproject_met_while_searching_is_an_error(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.rllint\n")
    with pytest.raises(ConfigError) as caught:
        find_config(tmp_path)
    assert "pyproject.toml" in str(caught.value) and "line 1" in str(caught.value)


# --- reading every key ---------------------------------------------------------------------------

def test_every_key_from_pyproject(tmp_path):
    path = write(tmp_path / "pyproject.toml", """
[project]
name = "x"

[tool.rllint]
select = ["RL0"]
extend-select = ["RL001"]
ignore = ["syntax-error"]
exclude = ["legacy"]
extend-exclude = ["scripts/*.py"]
respect-gitignore = false
force-exclude = true
max-epsilon = 1e-3
min-group-size = 4
rl-context = "always"
reference-model-names = ["teacher"]
strict-mode = true

[tool.rllint.per-file-ignores]
"tests/*.py" = ["RL001"]
""")
    settings = load_settings(start=tmp_path)
    assert settings.config_path == path
    assert settings.root == tmp_path.resolve()
    assert settings.select == ["RL0"]
    assert settings.extend_select == ["RL001"]
    assert settings.ignore == ["syntax-error"]
    assert settings.per_file_ignores == {"tests/*.py": ["RL001"]}
    assert settings.exclude == ["legacy"]
    assert settings.extend_exclude == ["scripts/*.py"]
    assert settings.respect_gitignore is False and settings.force_exclude is True
    assert settings.options == {"max-epsilon": 1e-3, "min-group-size": 4, "rl-context": "always",
                                "reference-model-names": ["teacher"], "strict-mode": True}


def test_rllint_toml_keys_are_top_level(tmp_path):
    write(tmp_path / "rllint.toml", 'ignore = ["RL001"]\nmax-epsilon = 2\n[per-file-ignores]\n"a.py" = ["RL0"]\n')
    settings = load_settings(start=tmp_path)
    assert settings.ignore == ["RL001"]
    assert settings.per_file_ignores == {"a.py": ["RL0"]}
    assert settings.options["max-epsilon"] == 2.0 and isinstance(settings.options["max-epsilon"], float)


def test_per_file_ignores_reach_the_rule_selection(tmp_path):
    write(tmp_path / "rllint.toml", 'select = ["RL"]\n[per-file-ignores]\n"tests/*.py" = ["RL001"]\n')
    settings = load_settings(start=tmp_path)
    codes = {rule.code for rule in settings.rules_for(str(tmp_path / "tests" / "t.py"))}
    assert "RL001" not in codes and "RL000" in codes
    assert "RL001" in {rule.code for rule in settings.rules_for(str(tmp_path / "src" / "t.py"))}


def test_option_defaults_are_not_written_into_settings(tmp_path, options):
    write(tmp_path / "rllint.toml", "")
    settings = load_settings(start=tmp_path)
    assert settings.options == {}
    assert settings.option(options["max-epsilon"]) == 1e-4


def test_explicit_config_file_wins_over_the_closest(tmp_path):
    write(tmp_path / ".rllint.toml", 'ignore = ["RL000"]\n')
    other = write(tmp_path / "conf" / "custom.toml", 'ignore = ["RL001"]\n')
    settings = load_settings(config_file=other, start=tmp_path)
    assert settings.ignore == ["RL001"]
    assert settings.config_path == other and settings.root == (tmp_path / "conf").resolve()


def test_explicit_pyproject_without_table_gives_defaults(tmp_path):
    path = write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    settings = load_settings(config_file=path)
    assert settings.config_path == path and settings.select is None and settings.options == {}


def test_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_settings(config_file=tmp_path / "nope.toml")
    assert str(caught.value) == f"{tmp_path / 'nope.toml'}: no such configuration file"
    assert caught.value.path == tmp_path / "nope.toml"


# --- errors --------------------------------------------------------------------------------------

def test_unknown_key_in_pyproject_suggests_the_close_one(tmp_path, monkeypatch):
    error = error_of(tmp_path, "pyproject.toml", "[tool.rllint]\nmax-epsilion = 0.1\n", monkeypatch)
    assert str(error) == "pyproject.toml: [tool.rllint] unknown key 'max-epsilion'; did you mean 'max-epsilon'?"
    assert error.key == "max-epsilion" and error.path == tmp_path / "pyproject.toml"


def test_unknown_key_in_rllint_toml(tmp_path, monkeypatch):
    error = error_of(tmp_path, "rllint.toml", "extend_select = ['RL001']\n", monkeypatch)
    assert str(error) == "rllint.toml: unknown key 'extend_select'; did you mean 'extend-select'?"
    error = error_of(tmp_path, "rllint.toml", "colour = 'blue'\n", monkeypatch)
    assert str(error) == "rllint.toml: unknown key 'colour'"


def test_nested_table_is_an_unknown_key(tmp_path, monkeypatch):
    error = error_of(tmp_path, "pyproject.toml", "[tool.rllint.lint]\nselect = ['RL']\n", monkeypatch)
    assert str(error) == "pyproject.toml: [tool.rllint] unknown key 'lint'"


def test_tool_rllint_must_be_a_table(tmp_path, monkeypatch):
    error = error_of(tmp_path, "pyproject.toml", "[tool]\nrllint = 1\n", monkeypatch)
    assert str(error) == "pyproject.toml: 'tool.rllint' must be a table, not an integer"


@pytest.mark.parametrize("text, message", [
    ("max-epsilon = '1e-3'", "'max-epsilon' must be a number, not a string ('1e-3')"),
    ("max-epsilon = true", "'max-epsilon' must be a number, not a boolean (True)"),
    ("min-group-size = 2.5", "'min-group-size' must be an integer, not a float (2.5)"),
    ("min-group-size = false", "'min-group-size' must be an integer, not a boolean (False)"),
    ("rl-context = 1", "'rl-context' must be a string, not an integer (1)"),
    ("rl-context = 'sometimes'", "'rl-context' must be one of 'auto', 'always', not 'sometimes'"),
    ("strict-mode = 'yes'", "'strict-mode' must be true or false, not a string ('yes')"),
    ("reference-model-names = 'teacher'", "'reference-model-names' must be a list of strings, not a string"),
    ("reference-model-names = ['a', 3]", "'reference-model-names' must be a list of strings; 3 is an integer"),
    ("select = 'RL'", "'select' must be a list of strings, not a string"),
    ("ignore = [101]", "'ignore' must be a list of strings; 101 is an integer"),
    ("exclude = 'build'", "'exclude' must be a list of strings, not a string"),
    ("extend-exclude = [['a']]", "'extend-exclude' must be a list of strings; ['a'] is an array"),
    ("respect-gitignore = 'no'", "'respect-gitignore' must be true or false, not a string"),
    ("force-exclude = 1", "'force-exclude' must be true or false, not an integer"),
    ("per-file-ignores = ['a.py']", "'per-file-ignores' must be a table of glob = [selectors], not an array"),
    ("per-file-ignores = {'a.py' = 'RL001'}", "'per-file-ignores' 'a.py' must be a list of strings, not a string"),
])
def test_wrong_types(tmp_path, monkeypatch, text, message):
    error = error_of(tmp_path, "pyproject.toml", f"[tool.rllint]\n{text}\n", monkeypatch)
    assert str(error) == f"pyproject.toml: [tool.rllint] {message}"
    assert error.key == message.split("'")[1]


@pytest.mark.parametrize("key", ["select", "ignore", "extend-select"])
def test_unknown_selector_in_each_selector_key(tmp_path, monkeypatch, key):
    error = error_of(tmp_path, "rllint.toml", f"{key} = ['RL0', 'RL0001']\n", monkeypatch)
    assert str(error) == f"rllint.toml: '{key}': unknown rule selector 'RL0001'; did you mean 'RL001'?"
    assert error.key == key


def test_unknown_selector_in_per_file_ignores(tmp_path, monkeypatch):
    error = error_of(tmp_path, "pyproject.toml",
                     "[tool.rllint.per-file-ignores]\n'tests/*' = ['syntax-eror']\n", monkeypatch)
    assert str(error) == ("pyproject.toml: [tool.rllint] 'per-file-ignores' 'tests/*': "
                          "unknown rule selector 'syntax-eror'; did you mean 'syntax-error'?")
    assert error.key == "per-file-ignores"


def test_invalid_toml_names_file_and_line(tmp_path, monkeypatch):
    error = error_of(tmp_path, "rllint.toml", "select = ['RL']\nignore = ['RL000'\nexclude = []\n", monkeypatch)
    assert str(error).startswith("rllint.toml: invalid TOML: ") and "line 3" in str(error)
    error = error_of(tmp_path, "rllint.toml", "select = ['RL']\nignore = [\n", monkeypatch)
    assert str(error).startswith("rllint.toml: invalid TOML: ") and "line 2" in str(error)


def test_config_outside_cwd_is_named_by_its_path(tmp_path, monkeypatch):
    write(tmp_path / "proj" / "rllint.toml", "bogus = 1\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(ConfigError) as caught:
        load_settings(start=tmp_path / "proj")
    assert str(caught.value) == f"{tmp_path / 'proj' / 'rllint.toml'}: unknown key 'bogus'"


# --- command-line overrides ----------------------------------------------------------------------

CONFIGURED = """
extend-select = ["RL001"]
ignore = ["RL000"]
exclude = ["legacy"]
extend-exclude = ["old"]
[per-file-ignores]
"a.py" = ["RL000"]
"""


def test_overrides_add_to_the_config(tmp_path):
    write(tmp_path / "rllint.toml", CONFIGURED)
    settings = load_settings(start=tmp_path, overrides={
        "extend_select": ["RL0"], "ignore": ["RL001"], "per_file_ignores": {"a.py": ["RL001"], "b.py": ["RL0"]},
        "extend_exclude": ["new"], "respect_gitignore": False, "force_exclude": True,
    })
    assert settings.select is None
    assert settings.extend_select == ["RL001", "RL0"]
    assert settings.ignore == ["RL000", "RL001"]
    assert settings.per_file_ignores == {"a.py": ["RL000", "RL001"], "b.py": ["RL0"]}
    assert settings.exclude == ["legacy"] and settings.extend_exclude == ["old", "new"]
    assert settings.respect_gitignore is False and settings.force_exclude is True


def test_select_and_exclude_overrides_replace(tmp_path):
    write(tmp_path / "rllint.toml", CONFIGURED)
    settings = load_settings(start=tmp_path, overrides={"select": ["RL000"], "exclude": ["x"]})
    # as ruff: `--select` starts the selection afresh, so the config's ignore no longer hides RL000
    assert settings.select == ["RL000"] and settings.extend_select == [] and settings.ignore == []
    assert [rule.code for rule in settings.rules()] == ["RL000"]
    assert settings.exclude == ["x"] and settings.extend_exclude == ["old"]
    assert settings.per_file_ignores == {"a.py": ["RL000"]}


def test_none_overrides_are_flags_not_given(tmp_path):
    write(tmp_path / "rllint.toml", CONFIGURED)
    settings = load_settings(start=tmp_path, overrides={"select": None, "ignore": None, "force_exclude": None})
    assert settings.select is None and settings.ignore == ["RL000"] and settings.force_exclude is False


def test_overrides_without_config(tmp_path):
    settings = load_settings(start=tmp_path, overrides={"select": ("RL",), "exclude": []})
    assert settings.select == ["RL"] and settings.exclude == [] and settings.config_path is None


def test_unknown_selector_in_an_override_names_the_flag(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_settings(start=tmp_path, overrides={"extend_select": ["RL0001"]})
    assert str(caught.value) == "--extend-select: unknown rule selector 'RL0001'; did you mean 'RL001'?"
    assert caught.value.path is None and caught.value.key == "extend-select"
    with pytest.raises(ConfigError, match=r"^--per-file-ignores 'a.py': unknown rule selector 'nope'"):
        load_settings(start=tmp_path, overrides={"per_file_ignores": {"a.py": ["nope"]}})


def test_unknown_override_is_a_programming_error(tmp_path):
    with pytest.raises(ValueError, match="max_epsilon"):
        load_settings(start=tmp_path, overrides={"max_epsilon": 1.0})


@pytest.mark.parametrize("spec, expected", [(">=3.9", (3, 9)), (">=3.10,<4", (3, 10)), ("~=3.8", (3, 8)),
                                            ("<4", None)])
def test_requires_python_gives_the_target_version(tmp_path, spec, expected):
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\nrequires-python = "{spec}"\n')
    assert load_settings(start=tmp_path).target_version == expected


@pytest.mark.parametrize("spec, expected", [("^3.8", (3, 8)), ("~3.9", (3, 9)), (">=3.10,<3.13", (3, 10))])
def test_poetry_python_dependency_gives_the_target_version(tmp_path, spec, expected):
    (tmp_path / "pyproject.toml").write_text(f'[tool.poetry]\nname = "x"\n[tool.poetry.dependencies]\npython = "{spec}"\n')
    assert load_settings(start=tmp_path).target_version == expected


def test_zip_without_strict_is_not_reported_to_projects_that_support_python_3_9(tmp_path):
    from rllint.runner import lint_text

    source = ("from trl import GRPOTrainer\n\n"
              "def accuracy_reward(completions, solution, **kwargs):\n"
              "    return [float(c == s) for c, s in zip(completions, solution)]\n")
    selected = '[tool.rllint]\nextend-select = ["RL404"]\n'  # pedantic: off by default
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.11"\n' + selected)
    modern = load_settings(start=tmp_path)
    assert [d.code for d in lint_text(source, "r.py", modern).diagnostics] == ["RL404"]
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.9"\n' + selected)
    assert lint_text(source, "r.py", load_settings(start=tmp_path)).diagnostics == []


# --- settings per file ---------------------------------------------------------------------------

def test_each_file_gets_its_closest_config_and_nearest_requires_python(tmp_path):
    from rllint.config import ConfigTree

    write(tmp_path / "pyproject.toml", "[project]\nrequires-python = '>=3.9'\n[tool.rllint]\nignore = ['RL000']\n")
    write(tmp_path / "pkg" / ".rllint.toml", "select = ['RL001']\n")
    write(tmp_path / "pkg" / "new" / "pyproject.toml", "[project]\nrequires-python = '>=3.11'\n")
    write(tmp_path / "pkg" / "new" / "train.py", "")
    configs = ConfigTree(load_settings(start=tmp_path))
    top = configs.for_path(str(tmp_path / "train.py"))
    assert (top.ignore, top.target_version, top.root) == (["RL000"], (3, 9), tmp_path.resolve())
    nested = configs.for_path(str(tmp_path / "pkg" / "train.py"))
    assert (nested.select, nested.ignore, nested.target_version) == (["RL001"], [], (3, 9))
    newer = configs.for_path(str(tmp_path / "pkg" / "new" / "train.py"))
    assert (newer.select, newer.target_version, newer.root) == (["RL001"], (3, 11), (tmp_path / "pkg").resolve())
    assert configs.for_path(str(tmp_path / "pkg" / "other.py")) is nested  # one Settings per config and target


def test_overrides_apply_to_every_config_and_config_flag_fixes_one(tmp_path):
    from rllint.config import ConfigTree

    write(tmp_path / ".rllint.toml", "ignore = ['RL000']\n")
    write(tmp_path / "pkg" / ".rllint.toml", "select = ['RL001']\n")
    overrides = {"extend_select": ["RL000"]}
    configs = ConfigTree(load_settings(start=tmp_path, overrides=overrides), overrides)
    assert configs.for_path(str(tmp_path / "pkg" / "a.py")).extend_select == ["RL000"]
    fixed = ConfigTree(load_settings(tmp_path / ".rllint.toml"), None, fixed=True)
    assert fixed.for_path(str(tmp_path / "pkg" / "a.py")).ignore == ["RL000"]


# --- extend: a config that inherits another ---------------------------------------------------------

def test_extend_rebases_the_parents_path_patterns_onto_the_child_folder(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.rllint]\nmax-epsilon = 1e-3\nextend-exclude = ['exp/old/', 'gen_*.py']\n"
          "[tool.rllint.per-file-ignores]\n'exp/tests/*' = ['RL001']\n'other/*' = ['RL0']\n")
    write(tmp_path / "exp" / ".rllint.toml", "extend = '../pyproject.toml'\nmin-group-size = 4\n")
    settings = load_settings(start=tmp_path / "exp")
    assert settings.root == (tmp_path / "exp").resolve()
    assert settings.options == {"max-epsilon": 1e-3, "min-group-size": 4}
    assert settings.extend_exclude == ["/old/", "gen_*.py"]  # a name pattern matches at any depth: kept
    assert settings.per_file_ignores == {"tests/*": ["RL001"], "../other/*": ["RL0"]}
    assert "RL001" not in {rule.code for rule in settings.rules_for(str(tmp_path / "exp" / "tests" / "t.py"))}


def test_extend_must_name_a_file(tmp_path, monkeypatch):
    error = error_of(tmp_path, "rllint.toml", "extend = 3\n", monkeypatch)
    assert str(error) == "rllint.toml: 'extend' must be the name of a config file, not an integer"
    assert error.key == "extend"


# --- what a hostile config file holds -----------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "a = " + "[" * 5000 + "]" * 5000,  # tomllib recurses once per level
    "a = " + "{b = " * 3000 + "1" + "}" * 3000,
    "a" + ".a" * 20000 + " = 1",  # tomllib's time and memory grow with the square of a dotted key
    "[" + "a." * 20000 + "a]\n",
])
def test_toml_nested_too_deeply_is_one_error_naming_the_file(tmp_path, monkeypatch, text):
    error = error_of(tmp_path, "rllint.toml", text, monkeypatch)
    assert str(error).startswith("rllint.toml: invalid TOML: ") and "nested too deeply" in str(error)
    assert error.path == tmp_path / "rllint.toml"


def test_many_numbers_and_dotted_words_in_strings_are_no_deep_nesting(tmp_path):
    values = ", ".join(f"{n}.5" for n in range(300))
    words = ".".join(["w"] * 300)
    write(tmp_path / "pyproject.toml", f'[tool.other]\nvalues = [{values}]\nnote = "{words}"\n[tool.rllint]\n')
    assert load_settings(start=tmp_path).config_path == tmp_path / "pyproject.toml"


def test_an_empty_per_file_ignores_pattern_is_an_error_naming_the_key(tmp_path, monkeypatch):
    error = error_of(tmp_path, "pyproject.toml", "[tool.rllint.per-file-ignores]\n'' = ['RL001']\n", monkeypatch)
    assert str(error).startswith("pyproject.toml: [tool.rllint] 'per-file-ignores' has an empty pattern")
    assert error.key == "per-file-ignores"
    with pytest.raises(ConfigError, match="^--per-file-ignores has an empty pattern"):
        load_settings(isolated=True, overrides={"per_file_ignores": {"": ["RL001"]}})


def test_a_config_file_too_large_is_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(config, "MAX_CONFIG_BYTES", 100)
    write(tmp_path / "rllint.toml", "# " + "x" * 200 + "\n")
    with pytest.raises(ConfigError, match="^rllint.toml: too large"):
        load_settings(start=tmp_path)


# --- a tree of many config files --------------------------------------------------------------------

def test_each_config_file_of_a_tree_is_read_and_parsed_once(tmp_path, monkeypatch):
    """2,041 `.rllint.toml` files once made a run take minutes: the cost must grow with the number of configs,
    not with its square. Each folder has a config and a pyproject.toml with `requires-python`."""
    from rllint.config import ConfigFiles, ConfigTree

    folders = 300
    for number in range(folders):
        write(tmp_path / f"d{number}" / ".rllint.toml", "extend-select = ['RL001']\n")
        write(tmp_path / f"d{number}" / "pyproject.toml", "[project]\nrequires-python = '>=3.10'\n")
        write(tmp_path / f"d{number}" / "sub" / "train.py", "x = 1\n")
    reads = []
    real = config._read
    monkeypatch.setattr(config, "_read", lambda path: reads.append(path) or real(path))
    files = ConfigFiles()
    configs = ConfigTree(load_settings(start=tmp_path, files=files), files=files)
    for number in range(folders):
        settings = configs.for_path(str(tmp_path / f"d{number}" / "sub" / "train.py"))
        assert settings.extend_select == ["RL001"] and settings.target_version == (3, 10)
    assert sorted(reads) == sorted(set(reads)) and len(reads) == 2 * folders
