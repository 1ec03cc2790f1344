"""Hostile input (issue 15): whatever a repository holds, rllint reports every file it can, says in one
line why it could not lint the others, and exits.

Every test runs the real command in a subprocess with an address-space limit and a timeout (the
harness bounds time and memory; nothing here asserts on speed). Beside each hostile file stands
the canary, a GRPO script with `learning_rate=5e-5`, whose RL601 must still be reported. Big and
deep inputs are generated here, never committed.
"""
import os
import pickle
import resource
import signal
import subprocess
import sys
import sysconfig
import shutil
import textwrap
import time

import pytest

CANARY = textwrap.dedent("""\
    from trl import GRPOConfig, GRPOTrainer

    config = GRPOConfig(output_dir="out", learning_rate=5e-5, num_generations=8)
    trainer = GRPOTrainer(model="Qwen/Qwen2-0.5B", args=config, reward_funcs=[])
    trainer.train()
""")
CANARY_FINDING = "train_grpo.py:3:53: RL601"
MEMORY_LIMIT = 3 * 1024 ** 3  # per process: the parent and each worker
TIMEOUT = 120


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def rllint(folder, *args, stdin=None, timeout=TIMEOUT, cache=False):
    """`python -m rllint` in `folder` under the harness's memory limit and timeout; the canary's rule (RL601,
    pedantic) is selected."""
    env = {**os.environ, "RLLINT_CACHE_DIR": str(folder / ".cache")}
    command = [sys.executable, "-m", "rllint", "--extend-select", "RL601", *([] if cache else ["--no-cache"]), *args]
    return subprocess.run(command, cwd=folder, input=stdin, capture_output=True, timeout=timeout,
                          preexec_fn=_limits, env=env)


def project(tmp_path, files=None):
    """A folder with the canary and `files` (name -> text or bytes)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "train_grpo.py").write_text(CANARY)
    for name, content in (files or {}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return tmp_path


def errors(done):
    return [line for line in done.stderr.decode().splitlines() if line.startswith("rllint: error:")]


def assert_canary_and_one_error(done, name, reason):
    """The canary is reported, `name` gets exactly one error line with `reason`, and the exit status is 2."""
    assert CANARY_FINDING in done.stdout.decode(), done.stderr.decode()
    lines = errors(done)
    assert len(lines) == 1 and lines[0].startswith(f"rllint: error: {name}: ") and reason in lines[0], lines
    assert done.returncode == 2


def assert_canary_only(done):
    assert CANARY_FINDING in done.stdout.decode(), done.stderr.decode()
    assert errors(done) == [] and done.returncode == 1, done.stderr.decode()


# 1 ---------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("codec", ["hex", "base64", "bz2", "zlib", "rot13", "uu_codec", "undefined", "punycode"])
def test_1_a_coding_cookie_naming_a_non_text_codec_is_that_files_error(tmp_path, codec):
    folder = project(tmp_path, {"hostile.py": f"# coding: {codec}\nx = 1\n"})
    assert_canary_and_one_error(rllint(folder, "."), "hostile.py", f"its coding cookie names '{codec}")


# 2 ---------------------------------------------------------------------------------------------

TRIGGER = "import torch\nlr = 1e-6\n"  # words that make the rules ask for libcst's tree
SHAPES_THAT_CRASH_LIBCST = {
    "and_chain": TRIGGER + "x = " + " and ".join(["a"] * 10_000) + "\n",
    "or_chain": TRIGGER + "x = " + " or ".join(["a"] * 10_000) + "\n",
    "dotted_import": TRIGGER + "from a" + ".b" * 10_000 + " import c\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(SHAPES_THAT_CRASH_LIBCST))
@pytest.mark.parametrize("mode", ["-j1", "few files", "many files -j2", "stdin"])
def test_2_shapes_that_crash_libcst_cost_one_file_in_every_mode(tmp_path, shape, mode):
    folder = project(tmp_path, {"hostile.py": SHAPES_THAT_CRASH_LIBCST[shape]})
    if mode == "stdin":
        done = rllint(folder, "-", "--stdin-filename", "hostile.py", stdin=SHAPES_THAT_CRASH_LIBCST[shape].encode())
        assert len(errors(done)) == 1 and "hostile.py: too deeply nested" in errors(done)[0] and done.returncode == 2
        return
    if mode == "many files -j2":
        for index in range(20):
            (folder / f"plain{index}.py").write_text("x = 1\n")
    done = rllint(folder, *(["-j1"] if mode == "-j1" else ["-j2"] if "-j2" in mode else []), ".")
    assert_canary_and_one_error(done, "hostile.py", "too deeply nested to lint")


@pytest.mark.slow
def test_2_in_process_linting_survives_them_too(tmp_path):
    """The library (flake8 plugin, editor server) lints in its own process: the guards hold there too."""
    script = textwrap.dedent("""\
        import sys
        from rllint.runner import lint_text
        from rllint.settings import Settings
        result = lint_text(open(sys.argv[1]).read(), "hostile.py", Settings(select=["RL"]))
        print(result.errors[0].message)
    """)
    for shape, text in SHAPES_THAT_CRASH_LIBCST.items():
        (tmp_path / f"{shape}.py").write_text(text)
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path / f"{shape}.py")], capture_output=True,
                              timeout=TIMEOUT, preexec_fn=_limits)
        assert done.returncode == 0 and b"too deeply nested to lint" in done.stdout, (shape, done.stderr)


# 3 ---------------------------------------------------------------------------------------------

VALID_PYTHON = {
    "long_prompt": "PROMPT = (\n" + "".join(f'    "line {i}\\n"\n' for i in range(5000)) + ")\n",
    "one_line_concatenation": "PROMPT = " + " ".join(['"ab"'] * 5000) + "\n",
    "parenthesised_annotated_target": "(x): int = 1\n",
}
NEWER_SYNTAX = {  # Python 3.12
    "type_alias": "type Vector = list[float]\n",
    "generic_function": "def first[T](items: list[T]) -> T:\n    return items[0]\n",
    "pep701_fstring": "def show(x):\n    return f\"{x.replace('\\n', ' ')}\"\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VALID_PYTHON))
def test_3_valid_python_libcst_cannot_read_is_never_rl000(tmp_path, name):
    # A trigger word in a comment, so that a rule runs and needs libcst's tree of the file: a file that
    # triggers no rule is never given to libcst.
    folder = project(tmp_path, {"valid.py": "# reward\n" + VALID_PYTHON[name]})
    done = rllint(folder, "--select", "RL", ".")
    assert b"RL000" not in done.stdout
    assert_canary_and_one_error(done, "valid.py", "could not be analysed: Python parses it but libcst")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NEWER_SYNTAX))
def test_3_newer_syntax_is_never_rl000(tmp_path, name):
    folder = project(tmp_path, {"new.py": NEWER_SYNTAX[name]})
    done = rllint(folder, ".")
    assert b"RL000" not in done.stdout
    if sys.version_info >= (3, 12):
        assert_canary_only(done)
    else:
        assert_canary_and_one_error(done, "new.py", "uses syntax that Python 3.11, which runs rllint, cannot parse")


@pytest.mark.slow
def test_3_rl000_means_not_python_in_any_grammar(tmp_path):
    folder = project(tmp_path, {"broken.py": "if x == 1\n    pass\n", "deep.py": "x = " + "(" * 5000 + ")" * 5000 + "\n"})
    done = rllint(folder, ".")
    assert "broken.py:1:10: RL000" in done.stdout.decode()
    assert "deep.py:1:" in done.stdout.decode() and done.returncode == 1  # beyond what any Python nests


# 4 ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_4_gitignore_lines_that_git_accepts_and_pathspec_rejects(tmp_path):
    folder = project(tmp_path, {".git/info/exclude": "*.tmp\n", ".gitignore": "build\\\n[z-a]\n!\nignored.py\n",
                                "ignored.py": "x = (\n"})
    assert_canary_only(rllint(folder, "."))


@pytest.mark.slow
def test_4_a_git_file_with_non_utf8_bytes(tmp_path):
    folder = project(tmp_path, {".git": b"gitdir: \xff\xfe/elsewhere\n", ".gitignore": "ignored.py\n",
                                "ignored.py": "x = (\n"})
    assert_canary_only(rllint(folder, "."))


@pytest.mark.slow
def test_4_an_exclude_pattern_pathspec_rejects_is_a_config_error(tmp_path):
    folder = project(tmp_path / "config", {"pyproject.toml": "[tool.rllint]\nextend-exclude = ['a/[z-a]']\n"})
    done = rllint(folder, ".")
    assert done.returncode == 2 and "'extend-exclude'" in errors(done)[0] and "invalid pattern" in errors(done)[0]
    flag = rllint(project(tmp_path / "flag"), "--extend-exclude", "a/[z-a]", "train_grpo.py")
    assert flag.returncode == 2 and "--extend-exclude" in errors(flag)[0] and "internal error" not in flag.stderr.decode()


# 5 ---------------------------------------------------------------------------------------------

def alias_bomb() -> str:
    text = "lr: 5e-5\nnum_generations: 8\na: &a [" + ",".join(['"lol"'] * 9) + "]\n"
    for previous, name in zip("abcdefg", "bcdefgh"):
        text += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
    return text


def merge_bomb() -> str:
    text = "lr: 5e-5\nnum_generations: 8\nl0: &l0 {a: 1, b: 2}\n"
    for level in range(1, 25):
        text += f"l{level}: &l{level}\n  x: {{<<: *l{level - 1}}}\n  y: {{<<: *l{level - 1}}}\n"
    return text


@pytest.mark.slow
@pytest.mark.parametrize("bomb", [alias_bomb, merge_bomb])
def test_5_yaml_alias_and_merge_bombs(tmp_path, bomb):
    assert len(bomb()) < 1100
    folder = project(tmp_path, {"grpo.yaml": bomb()})
    assert_canary_and_one_error(rllint(folder, "."), "grpo.yaml", "expand to too many entries")


@pytest.mark.slow
def test_5_aliases_and_merges_of_a_real_config_are_still_read(tmp_path):
    folder = project(tmp_path, {"grpo.yaml": "base: &base\n  lr: 5e-5\nactor:\n  <<: *base\nnum_generations: 8\n"})
    assert "grpo.yaml:2:7: RL601" in rllint(folder, ".").stdout.decode()


# 6 ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_6_non_utf8_yaml_and_shell_files_of_other_tools(tmp_path):
    folder = project(tmp_path, {
        "latin.yaml": "name: caf\xe9\n".encode("latin-1"),
        "wide.yaml": "\ufeffname: wide\n".encode("utf-16"),
        "binary.sh": b"#!/bin/sh\necho \x00\x01\x02\n",
        "latin.sh": "echo caf\xe9\n".encode("latin-1"),
    })
    assert_canary_only(rllint(folder, "."))


@pytest.mark.slow
def test_6_a_utf16_rl_config_is_read(tmp_path):
    folder = project(tmp_path, {"grpo.yaml": "lr: 5e-5\nnum_generations: 8\n".encode("utf-16")})
    assert "grpo.yaml:1:5: RL601" in rllint(folder, ".").stdout.decode()


# 7 ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_7_a_generated_module_beyond_the_node_budget(tmp_path):
    dense = "DATA = [\n" + "".join(f"    ({i}, {i + 1}),\n" for i in range(100_000)) + "]\n"  # 1.5 MB, 400k nodes
    folder = project(tmp_path, {"generated.py": dense})
    assert_canary_and_one_error(rllint(folder, "--select", "RL", "."), "generated.py", "too large to lint (")


@pytest.mark.slow
def test_7_a_file_beyond_the_size_bound(tmp_path):
    folder = project(tmp_path, {"huge.py": "x = 1\n" * 9_000_000})  # 54 MB
    assert_canary_and_one_error(rllint(folder, "."), "huge.py", "too large to lint (51.5 MiB")


def test_7_memory_error_anywhere_is_that_files_error(monkeypatch):
    from rllint import runner
    from rllint.settings import Settings

    def exhausted(*args):
        raise MemoryError

    monkeypatch.setattr(runner, "_run_cst_rules", exhausted)
    result = runner.lint_text("from trl import GRPOConfig\n", "a.py", Settings())
    assert [e.message for e in result.errors] == ["ran out of memory while linting; not linted"]


# 8 ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_8_special_files_named_or_reached_through_links(tmp_path):
    folder = project(tmp_path)
    os.mkfifo(folder / "pipe.py")
    os.mkfifo(folder / "hidden_pipe")
    (folder / "sub").mkdir()
    os.symlink(folder / "hidden_pipe", folder / "sub" / "link.py")
    os.symlink("/dev/zero", folder / "sub" / "zero.py")
    done = rllint(folder, "pipe.py", "sub", "train_grpo.py")
    assert CANARY_FINDING in done.stdout.decode() and done.returncode == 2
    assert sorted(line.split(": ")[2] for line in errors(done)) == ["pipe.py", "sub/link.py", "sub/zero.py"]
    assert all("not a regular file" in line for line in errors(done))


@pytest.mark.parametrize("mode", ["--fix", "--diff"])
def test_8_fix_and_diff_refuse_special_files_as_check_does(tmp_path, mode):
    fixable = "import torch\n\n\ndef policy_logps(logits):\n    return torch.log(torch.softmax(logits, dim=-1))\n"
    folder = project(tmp_path, {"fixable.py": fixable})
    os.mkfifo(folder / "pipe.py")
    os.symlink("/dev/zero", folder / "zero.py")
    done = rllint(folder, mode, "--extend-select", "RL108", "pipe.py", "zero.py", "fixable.py", "train_grpo.py")
    assert done.returncode == 2
    assert sorted(line.split(": ")[2] for line in errors(done)) == ["pipe.py", "zero.py"]
    assert all("not a regular file" in line for line in errors(done))
    fixed = "torch.log_softmax(logits, dim=-1)"
    if mode == "--fix":  # the other files are fixed and reported
        assert fixed in (folder / "fixable.py").read_text() and CANARY_FINDING in done.stdout.decode()
    else:
        assert f"+    return {fixed}" in done.stdout.decode() and (folder / "fixable.py").read_text() == fixable


# 9 ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_9_rl601_config_check_is_linear(tmp_path):
    keys = "".join(f"k{i}:\n  lr: 5e-5\n" for i in range(15_000))
    folder = project(tmp_path, {"grpo.yaml": "trainer: grpo\nnum_generations: 8\n" + keys})
    done = rllint(folder, "--statistics", ".")
    assert done.stdout.decode().split() == ["15001", "RL601", "sft-scale-learning-rate"]


# 10 --------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_10_numeric_options_must_be_finite_and_positive(tmp_path, value):
    folder = project(tmp_path, {"pyproject.toml": f"[tool.rllint]\nmax-learning-rate = {value}\n"})
    done = rllint(folder, ".")
    assert done.returncode == 2 and done.stdout == b""
    assert errors(done) == [f"rllint: error: pyproject.toml: [tool.rllint] 'max-learning-rate' must be a finite "
                            f"number above 0, not {value}"]


# 11 --------------------------------------------------------------------------------------------

def slow_project(tmp_path):
    """Files that take seconds each to lint with every rule selected (deep subscripts), so that workers are busy
    when signalled."""
    folder = project(tmp_path)
    for index in range(12):  # the comment's trigger word makes rules run, so that libcst parses the file
        (folder / f"slow{index}.py").write_text("# reward\nx = a" + "[0]" * 1500 + "\n")
    return folder


def start(folder, *args):
    env = {**os.environ, "RLLINT_CACHE_DIR": str(folder / ".cache")}
    return subprocess.Popen([sys.executable, "-m", "rllint", "--no-cache", "-j2", *args], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_limits)


def workers_started(pid: int, timeout: float = 30.0) -> bool:
    """Whether `pid` has forked its worker processes within `timeout` (a loaded machine starts slowly)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as children:
                forked = children.read().split()
            if forked:
                time.sleep(0.5)
                return True
        except OSError:
            return False
        time.sleep(0.05)
    return False


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False


def wait_gone(group: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while group_alive(group) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not group_alive(group)


@pytest.mark.slow
@pytest.mark.parametrize("presses", [1, 2])
def test_11_ctrl_c_stops_the_workers_and_exits_130(tmp_path, presses):
    process = start(slow_project(tmp_path), "--select", "RL", ".")
    assert workers_started(process.pid)  # then they are linting the slow files (the run takes more than 20 s)
    for _ in range(presses):
        os.killpg(process.pid, signal.SIGINT)  # as a terminal sends it: to the whole foreground group
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130 and b"rllint: interrupted" in stderr
    assert wait_gone(process.pid)


@pytest.mark.slow
def test_11_ctrl_c_while_rllint_starts_is_no_traceback(tmp_path):
    """Ctrl-C while modules load or click parses (a loaded machine makes that window long): the one-line message,
    no traceback and no click "Aborted!" with exit 1."""
    process = start(slow_project(tmp_path), "--select", "RL", ".")
    time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode in (130, -signal.SIGINT) and b"rllint: interrupted" in stderr, stderr
    assert b"Traceback" not in stderr and b"Aborted" not in stderr, stderr


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_11_workers_exit_when_the_parent_dies(tmp_path, how):
    process = start(slow_project(tmp_path), "--select", "RL", ".")
    time.sleep(2.0)
    os.kill(process.pid, how)  # the parent only
    process.communicate(timeout=30)
    assert wait_gone(process.pid)


# 12 --------------------------------------------------------------------------------------------

class Payload:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))


def cache_file(folder):
    cache = folder / ".cache"
    return [path for path in cache.iterdir() if path.suffix == ".json"] if cache.is_dir() else []


@pytest.mark.slow
def test_12_the_cache_is_data_checked_on_load_and_rewritten(tmp_path):
    folder = project(tmp_path)
    first = rllint(folder, "train_grpo.py", cache=True)
    assert first.returncode == 1
    [path] = cache_file(folder)
    (folder / ".cache" / "0123456789abcdef0123456789abcdef.pickle").write_bytes(pickle.dumps(Payload()))
    for hostile in (pickle.dumps(Payload()), b'{"format": 1, "entries": {"train_grpo.py": {"digest": 1}}}',
                    b'{"format": 1, "entries": []}', b"\xff\x00garbage", b"[" * 100_000):
        path.write_bytes(hostile)
        done = rllint(folder, "train_grpo.py", cache=True)
        assert CANARY_FINDING in done.stdout.decode() and done.returncode == 1 and errors(done) == []
        assert path.read_bytes().startswith(b'{"format": 2,')  # a miss, rewritten
    assert not (folder / "PWNED").exists()
    path.unlink()
    os.mkfifo(path)  # a FIFO in its place must not hang the run
    assert CANARY_FINDING in rllint(folder, "train_grpo.py", cache=True).stdout.decode()


@pytest.mark.slow
def test_12_a_forged_empty_result_of_another_shape_is_a_miss(tmp_path):
    folder = project(tmp_path)
    rllint(folder, "train_grpo.py", cache=True)
    [path] = cache_file(folder)
    text = path.read_text()
    path.write_text(text.replace('"code":"RL601"', '"code":"import os"'))
    assert CANARY_FINDING in rllint(folder, "train_grpo.py", cache=True).stdout.decode()


@pytest.mark.slow
def test_12_a_failed_write_leaves_no_temporary_file(tmp_path):
    folder = project(tmp_path)
    rllint(folder, "train_grpo.py", cache=True)
    [path] = cache_file(folder)
    path.unlink()
    path.mkdir()  # os.replace onto a folder fails
    for _ in range(2):
        assert rllint(folder, "train_grpo.py", cache=True).returncode == 1
    assert [p.name for p in (folder / ".cache").iterdir() if p.suffix == ".tmp"] == []


# 13 --------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_13_a_module_that_appears_later_makes_the_cached_result_stale(tmp_path):
    folder = project(tmp_path, {"train.py": CANARY.replace("learning_rate=5e-5", "learning_rate=LR").replace(
        "from trl import", "from config import LR\nfrom trl import")})
    assert rllint(folder, "train.py", cache=True).returncode == 0
    (folder / "config.py").write_text("LR = 5e-5\n")
    assert "config.py:1:6: RL601" in rllint(folder, "train.py", cache=True).stdout.decode()


# 14 --------------------------------------------------------------------------------------------

def test_14_astroid_never_imports_while_rllint_reads_modules(tmp_path, monkeypatch):
    from astroid.manager import AstroidManager

    from rllint.analysis.modules import Resolver, clear_cache

    imported = []
    monkeypatch.setattr(AstroidManager, "ast_from_module_name", lambda self, name, *a, **k: imported.append(name))
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "config.py").write_text("import audioop\nfrom json import *\naudioop.flag = 1\nLR = 5e-5\n")
    clear_cache()
    found = Resolver(str(tmp_path / "train.py")).resolve("config", 0, ("LR",))
    assert found.number == 5e-5 and imported == []


@pytest.mark.slow
@pytest.mark.skipif(shutil.which(sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc")
                    is None, reason="needs a C compiler to build an extension module")
def test_14_an_extension_module_of_the_linted_tree_is_never_loaded(tmp_path):
    source = tmp_path / "audioop.c"
    source.write_text(textwrap.dedent(f"""\
        #include <Python.h>
        #include <stdio.h>
        static struct PyModuleDef m = {{PyModuleDef_HEAD_INIT, "audioop", NULL, -1, NULL}};
        PyMODINIT_FUNC PyInit_audioop(void) {{
            FILE *f = fopen("{tmp_path}/PWNED", "w"); if (f) fclose(f); return PyModule_Create(&m);
        }}
    """))
    compiler = (sysconfig.get_config_var("CC") or "cc").split()
    subprocess.run([*compiler, "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o",
                    str(tmp_path / ("audioop" + sysconfig.get_config_var("EXT_SUFFIX"))), str(source)], check=True)
    folder = project(tmp_path, {
        "config.py": "import audioop\naudioop.flag = 1\nLR = 5e-5\n",
        "train.py": "from config import LR\n" + CANARY.replace("learning_rate=5e-5", "learning_rate=LR"),
    })
    env = {**os.environ, "PYTHONPATH": ""}  # an empty entry: the working folder is on sys.path
    done = subprocess.run([sys.executable, "-m", "rllint", "--extend-select", "RL601", "--no-cache", "train.py"],
                          cwd=folder, env=env, capture_output=True, timeout=TIMEOUT, preexec_fn=_limits)
    assert "config.py:3:6: RL601" in done.stdout.decode()
    assert not (tmp_path / "PWNED").exists()


# 15 --------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_15_a_comment_cannot_hang_the_run(tmp_path):
    hostile = ("# rllint: noqa: " + " " * 5000 + "!\n" + "# rllint: ignore[" * 5000 + "\n"
               + "x = 1  # noqa: " + "RL1 " * 5000 + "a" * 5000 + "\n")
    folder = project(tmp_path, {"hostile.py": hostile, "hostile.yaml": hostile.replace("x = 1", "x: 1")})
    assert_canary_only(rllint(folder, "."))


@pytest.mark.slow
def test_15_each_file_is_bounded_in_time(tmp_path, monkeypatch):
    import libcst as cst

    from rllint.registry import CSTRule
    from rllint.runner import lint_files
    from rllint.settings import Settings

    class Forever(CSTRule):
        name = "forever-probe"
        message = "unreachable"

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == "sleep":
                time.sleep(3600)

    Forever.code = "RL996"
    forever = [Forever.entry()]
    monkeypatch.setattr(Settings, "selected_for", lambda self, path: forever)  # workers are forked: they see it
    (tmp_path / "slow.py").write_text("sleep = 1\n")
    (tmp_path / "fine.py").write_text("x = 1\n")
    result = lint_files([str(tmp_path / "slow.py"), str(tmp_path / "fine.py")], Settings(), jobs=1, time_limit=2)
    assert [(os.path.basename(e.path), e.message) for e in result.errors] == [
        ("slow.py", "took longer than 2 s to lint; stopped, not linted")]


# 16 --------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_16_the_report_never_overwrites_a_linted_file(tmp_path):
    folder = project(tmp_path)
    for args in (["-o", "train_grpo.py", "train_grpo.py"], ["-o", "./train_grpo.py", "."]):
        done = rllint(folder, *args)
        assert done.returncode == 2 and b"would overwrite it" in done.stderr
        assert (folder / "train_grpo.py").read_text() == CANARY
    os.symlink(folder / "train_grpo.py", folder / "report.txt")
    assert rllint(folder, "-o", "report.txt", "train_grpo.py").returncode == 2
    assert (folder / "train_grpo.py").read_text() == CANARY
