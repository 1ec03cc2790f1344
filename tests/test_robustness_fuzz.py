"""1,000 random Python programs (hypothesmith, a fixed seed) in worker and in-process mode: no crash, no
internal error, and no finding of an RL rule: a random program is not an RL training script."""
import sys

import pytest

hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")

from rllint.runner import lint_files, lint_text  # noqa: E402
from rllint.settings import Settings  # noqa: E402

COUNT = 1000
# The one-line reasons a valid program may still not be linted (libcst reads less than CPython).
ACCEPTED = ("could not be analysed", "too deeply nested", "too large to lint")


def programs():
    """`COUNT` programs, the same ones on every run (derandomized), generation only (nothing to shrink)."""
    found = []

    @hypothesis.settings(max_examples=COUNT, derandomize=True, database=None, deadline=None,
                         phases=[hypothesis.Phase.generate], suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(hypothesmith.from_grammar())
    def collect(source):
        found.append(source)

    collect()
    return found


@pytest.fixture(scope="module")
def sources(request):
    """The programs, from pytest's cache when an earlier run generated them: generation is derandomized, so the
    same versions give the same programs, and it costs about a minute (the tests themselves a few seconds)."""
    cache = getattr(request.config, "cache", None)  # None with `-p no:cacheprovider`
    key = (f"rllint/fuzz-programs/{COUNT}-py{sys.version_info[0]}.{sys.version_info[1]}-hypothesis"
           f"{hypothesis.__version__}-hypothesmith{hypothesmith.__version__}")
    generated = cache.get(key, None) if cache is not None else None
    if generated is None:
        generated = programs()
        if cache is not None:
            cache.set(key, generated)
    assert len(generated) >= COUNT * 0.9  # hypothesis may stop early on duplicates, never far from the count
    return generated


def engaged(source):
    """The program behind a comment naming every rule's trigger words, so that the cheap word filter lets
    every rule run and libcst parse it: the whole pipeline sees it, and its meaning is unchanged."""
    from rllint.registry import load_rules

    words = sorted({word for rule in load_rules().values() for word in getattr(rule, "triggers", ()) or ()})
    return "# " + " ".join(words) + "\n" + source


def check(result):
    assert result.diagnostics == [], result.diagnostics[:3]
    unexpected = [e for e in result.errors if not any(reason in e.message for reason in ACCEPTED)]
    assert unexpected == []


@pytest.mark.slow
def test_random_programs_in_process(sources):
    settings = Settings(select=["RL"])
    for index, source in enumerate(sources):
        check(lint_text(engaged(source), f"p{index}.py", settings))


@pytest.mark.slow
def test_random_programs_in_worker_processes(sources, tmp_path):
    paths = []
    for index, source in enumerate(sources):
        path = tmp_path / f"p{index}.py"
        path.write_text(engaged(source), encoding="utf-8")
        paths.append(str(path))
    check(lint_files(paths, Settings(select=["RL"]), jobs=2))
