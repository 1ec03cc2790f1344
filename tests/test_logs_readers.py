"""Readers of each format on small hand-written files, the metric mapping, and damaged input."""
import json
import re
from pathlib import Path

import pytest

from rllint.logs.lint import lint_logs
from rllint.logs.metrics import CANDIDATES, MappingError, parse_mapping, resolve
from rllint.logs.lint import read
from rllint.logs.readers import Source, find_sources
from rllint.settings import Settings

README = Path(__file__).resolve().parent.parent / "README.md"

TRAINER_STATE = """{
  "global_step": 3,
  "log_history": [
    {
      "entropy": 0.61,
      "kl": 0.0,
      "reward": 0.25,
      "step": 1
    },
    {
      "entropy": 0.6,
      "kl": 0.002,
      "reward": 0.3,
      "step": 2
    },
    {
      "eval_accuracy": 0.5,
      "step": 2
    },
    {
      "entropy": NaN,
      "kl": 0.004,
      "reward": 0.31,
      "step": 3
    }
  ]
}
"""


def run_of(path, kind):
    (run,) = read(Source(kind, str(path), True))
    return run


def cleaned(run):
    """`run.cleaned()` with its columns (machine arrays) as lists."""
    return {key: tuple(list(column) for column in columns) for key, columns in run.cleaned().items()}


def test_trainer_state_records_and_the_line_of_each_entry(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text(TRAINER_STATE)
    run = run_of(path, "trainer_state")
    points = cleaned(run)
    assert points["kl"] == ([1, 2, 3], [0.0, 0.002, 0.004], [8, 14, 24])
    assert points["eval_accuracy"] == ([2], [0.5], [18])
    assert points["entropy"][0] == [1, 2]
    assert run.warnings == ["1 non-finite value (NaN or inf) of `entropy` from step 3 left out"]


def test_only_the_last_checkpoint_of_a_run_is_read(tmp_path):
    for step in (100, 20, 300):
        folder = tmp_path / "run" / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        (folder / "trainer_state.json").write_text(json.dumps({"log_history": [{"step": step, "kl": 0.1}]}))
    sources, problems = find_sources([str(tmp_path)], [])
    assert problems == []
    assert [(s.kind, Path(s.path).parent.name) for s in sources] == [("trainer_state", "checkpoint-300")]
    (tmp_path / "run" / "trainer_state.json").write_text(json.dumps({"log_history": []}))
    sources, _ = find_sources([str(tmp_path)], [])
    assert [Path(s.path).relative_to(tmp_path).as_posix() for s in sources] == ["run/trainer_state.json"]
    named, _ = find_sources([str(tmp_path / "run" / "checkpoint-20")], [])
    assert [Path(s.path).parent.name for s in named] == ["checkpoint-20"]


def test_jsonl_with_wrappers_nested_keys_and_a_truncated_last_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "data": {"actor/entropy": 0.5, "actor": {"pg_clipfrac": 0.1}}}\n'
                    '\n'
                    '{"_step": 2, "actor/entropy": 0.4, "note": "text", "flag": true}\n'
                    '{"step": 3, "actor/ent')
    run = run_of(path, "jsonl")
    points = cleaned(run)
    assert points == {"actor/entropy": ([1, 2], [0.5, 0.4], [1, 3]), "actor/pg_clipfrac": ([1], [0.1], [1])}
    assert run.warnings == ["line 4 not valid JSON (a run still being written?); skipped"]


def test_csv_plain_and_a_wandb_panel_export_of_two_runs(tmp_path):
    plain = tmp_path / "plain.csv"
    plain.write_text("step,kl,entropy,timestamp\n1,0.01,0.6,2024-01-01\n2,,0.59,2024-01-01\n3,inf,0.58,x\n")
    run = run_of(plain, "csv")
    assert cleaned(run) == {"kl": ([1], [0.01], [2]), "entropy": ([1, 2, 3], [0.6, 0.59, 0.58], [2, 3, 4])}
    panel = tmp_path / "panel.csv"
    panel.write_text('"Step","a - train/kl","a - train/kl__MIN","a - train/kl__MAX","b - train/kl"\n'
                     '1,0.1,0.05,0.2,0.3\n2,0.2,0.1,0.3,0.4\n')
    runs = read(Source("csv", str(panel), True))
    assert [(r.path.rsplit("[", 1)[-1], cleaned(r)["train/kl"][1]) for r in runs] == [("a]", [0.1, 0.2]),
                                                                                      ("b]", [0.3, 0.4])]


def test_csv_without_a_step_column_counts_rows(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("kl\n0.1\n0.2\n")
    run = run_of(path, "csv")
    assert cleaned(run)["kl"][0] == [0, 1]
    assert run.warnings == ["no step column (step, Step, _step, global_step); rows counted as steps"]


def test_steps_that_go_back_and_missing_steps_are_warned_about(tmp_path):
    path = tmp_path / "m.jsonl"
    rows = [{"step": s, "kl": 0.1} for s in list(range(1, 30)) + list(range(20, 40)) + list(range(200, 230))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = run_of(path, "jsonl")
    steps = cleaned(run)["kl"][0]
    assert steps == sorted(set(steps))
    assert run.warnings == ["steps go back from 29 to 20 (line 30): a resumed run? Later values replace earlier ones",
                            "no metrics logged between step 39 and step 200 (usually every 1)"]


@pytest.mark.parametrize("text,message", [
    ('{"log_history": [{"step": 1, "kl": 0.1}', "invalid JSON at line 1, column 40: Expecting ',' delimiter "
                                               "(a truncated file?)"),
    ('{"global_step": 3}', "no `log_history` list: not a trainer_state.json, nor a list of step records"),
    ("", "invalid JSON at line 1, column 1: Expecting value (a truncated file?)"),
])
def test_a_json_log_that_cannot_be_read_is_one_error_and_the_others_are_checked(tmp_path, text, message):
    bad = tmp_path / "bad" / "trainer_state.json"
    bad.parent.mkdir()
    bad.write_text(text)
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps({"step": s, "reward": 0.3}) + "\n" for s in range(30)))
    result = lint_logs([str(bad), str(good)], Settings())
    assert [(e.path, e.message) for e in result.errors] == [(str(bad), message)]
    assert [d.code for d in result.diagnostics] == ["RL711"]


def test_unknown_keys_an_empty_run_and_a_short_run_are_warnings(tmp_path):
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("step,foo,bar\n1,1,2\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    short = tmp_path / "short.jsonl"
    short.write_text("".join(json.dumps({"step": s, "kl": 0.1}) + "\n" for s in range(5)))
    result = lint_logs([str(unknown), str(empty), str(short)], Settings())
    assert result.errors == [] and result.diagnostics == []
    assert sorted((Path(path).name, text) for path, text in result.warnings) == [
        ("empty.jsonl", "no metrics logged; nothing to check"),
        ("short.jsonl", "only 5 logged steps; trends need 18 (2 x log-window)"),
        ("unknown.csv", "no known metric among its keys (`bar`, `foo`); name them with --metric NAME=KEY"),
    ]


def test_walked_files_that_are_not_metric_logs_are_skipped_quietly(tmp_path):
    (tmp_path / "data.jsonl").write_text('{"prompt": "2+2?", "answer": "4"}\n')
    (tmp_path / "README.md").write_text("notes")
    result = lint_logs([str(tmp_path)], Settings())
    assert (result.errors, result.warnings, result.diagnostics) == ([], [], [])
    result = lint_logs([str(tmp_path / "README.md"), str(tmp_path / "missing")], Settings())
    assert [e.message.split(" (")[0] for e in result.errors] == ["not a metrics log", "no such file or folder"]


def test_mapping_prefers_frameworks_in_order_strips_train_and_matches_globs():
    keys = ["train/kl", "train/entropy", "actor/pg_clipfrac", "val-core/gsm8k/acc/mean@1", "val-core/aime/acc/mean@1"]
    assert resolve(keys, {}) == {"kl": "train/kl", "entropy": "train/entropy", "clip_fraction": "actor/pg_clipfrac",
                                 "held_out": "val-core/aime/acc/mean@1"}
    assert resolve(["my/kl", "kl"], parse_mapping(["kl=my/kl"]))["kl"] == "my/kl"
    assert resolve(["actor/ppo_kl"], {}) == {}  # the update's KL, not the KL to the reference


@pytest.mark.parametrize("entry,problem", [("kl", "is not NAME=KEY"), ("kl=", "is not NAME=KEY"),
                                           ("klx=a", "unknown metric 'klx'")])
def test_bad_mapping_entries_are_named(entry, problem):
    with pytest.raises(MappingError, match=re.escape(problem)):
        parse_mapping([entry])


def test_the_readme_table_lists_every_built_in_key():
    text = README.read_text(encoding="utf-8")
    table = text[text.index("| metric |"):]
    for metric, candidates in CANDIDATES.items():
        row = next(line for line in table.splitlines() if line.startswith(f"| `{metric}` |"))
        for _, key in candidates:
            assert f"`{key}`" in row, (metric, key)


def test_tensorboard_scalars_and_tensor_summaries(tmp_path):
    pytest.importorskip("tensorboard")
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    writer = EventFileWriter(str(tmp_path))
    for step in range(1, 4):
        simple = summary_pb2.Summary.Value(tag="train/kl", simple_value=0.1 * step)
        tensor = summary_pb2.Summary.Value(tag="train/entropy", tensor=tensor_util.make_tensor_proto(
            np.float32(0.5 - 0.1 * step)), metadata=summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")))
        writer.add_event(event_pb2.Event(step=step, wall_time=1.0, summary=summary_pb2.Summary(value=[simple, tensor])))
    writer.close()
    sources, _ = find_sources([str(tmp_path)], [])
    assert [s.kind for s in sources] == ["tensorboard"]
    points = cleaned(read(sources[0])[0])
    assert points["train/kl"][0] == [1, 2, 3] and points["train/kl"][1] == pytest.approx([0.1, 0.2, 0.3])
    assert points["train/entropy"][1] == pytest.approx([0.4, 0.3, 0.2])


# ---- hostile input: numbers and nesting JSON allows, files that are no files, damaged event files ----------

def test_numbers_beyond_a_float_and_lines_nested_too_deep_are_left_out_with_a_warning(tmp_path):
    rows = [json.dumps({"step": step, "kl": 0.01}) for step in range(1, 31)]
    rows[3] = '{"step": 4, "kl": 1' + "0" * 400 + "}"  # beyond a float's range
    rows[5] = '{"step": 6, "kl": ' + "9" * 5000 + "}"  # more digits than Python converts to an int
    rows[7] = '{"a": ' * 5000 + "1" + "}" * 5000  # deeper than Python's JSON reader goes
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(rows) + "\n")
    run = run_of(path, "jsonl")
    assert cleaned(run)["kl"][0] == [s for s in range(1, 31) if s not in (4, 6, 8)]
    assert run.warnings == ["line 8 nested too deeply to read (JSON of more than about 1,000 levels); skipped",
                            "2 non-finite values (NaN or inf) of `kl` from step 4 left out"]


def test_a_json_document_nested_too_deep_or_with_huge_numbers(tmp_path):
    deep = tmp_path / "deep" / "trainer_state.json"
    deep.parent.mkdir()
    deep.write_text('{"log_history": ' + "[" * 100_000 + "]" * 100_000 + "}")
    huge = tmp_path / "huge" / "trainer_state.json"
    huge.parent.mkdir()
    huge.write_text(json.dumps({"log_history": [{"step": s, "kl": 0.01} for s in range(1, 31)]})
                    .replace('"kl": 0.01}', '"kl": ' + "9" * 5000 + "}", 1))
    result = lint_logs([str(deep), str(huge)], Settings())
    assert [(e.path, e.message) for e in result.errors] == [
        (str(deep), "nested too deeply to read (JSON of more than about 1,000 levels): not a metrics log")]
    assert (str(huge), "1 non-finite value (NaN or inf) of `kl` from step 1 left out") in result.warnings


def test_a_log_beyond_its_size_bound_and_a_line_beyond_the_line_bound(tmp_path, monkeypatch):
    from rllint.logs import readers

    monkeypatch.setattr(readers, "MAX_DOCUMENT_BYTES", 100)
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 50)
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps({"log_history": [{"step": s, "kl": 0.01} for s in range(30)]}))
    zeros = tmp_path / "zeros.jsonl"
    zeros.write_bytes(b"\0" * 200)  # no line break: a sparse file of zeros would be read whole
    result = lint_logs([str(state), str(zeros)], Settings())
    assert sorted((Path(e.path).name, e.message) for e in result.errors) == [
        ("trainer_state.json", "too large to read (0.0 MiB; rllint reads logs of this kind up to 0 MiB)"),
        ("zeros.jsonl", "line 1 is longer than 0 MiB: not a metrics log")]


def test_reading_a_jsonl_log_keeps_only_the_metrics_it_reads(tmp_path):
    """Memory is a small fraction of the file, not a multiple of it: rows are read one at a time and only
    the values of keys that hold a metric are kept (as machine numbers)."""
    import tracemalloc

    from logs_synthetic import records

    rows = records(3000, 0, 1, {"entropy_collapse": 1500})
    for row in rows:  # what loggers add besides the metrics: timings, learning rates, per-group stats
        row.update({f"timing/{name}": 0.1 for name in ("gen", "ref", "update", "sync")}, learning_rate=1e-6)
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    lint_logs([str(path)], Settings())  # imports and caches: not the run's memory
    tracemalloc.start()
    try:
        result = lint_logs([str(path)], Settings())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [d.code for d in result.diagnostics] == ["RL703"]
    assert peak < path.stat().st_size  # it was 8 times the file's size


def _events(folder, steps=40):
    """An event file as PyTorch's SummaryWriter writes it: one scalar per step."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(folder))
    for step in range(1, steps + 1):
        value = summary_pb2.Summary.Value(tag="train/kl", simple_value=0.01)
        writer.add_event(event_pb2.Event(step=step, wall_time=1.0, summary=summary_pb2.Summary(value=[value])))
    writer.close()
    (path,) = folder.glob("events.out.tfevents.*")
    return path


def test_a_damaged_event_file_is_said_to_be_damaged(tmp_path):
    pytest.importorskip("tensorboard")
    flipped = _events(tmp_path / "flipped")
    data = bytearray(flipped.read_bytes())
    start = 0
    for _ in range(20):  # to the 21st record: each is its length (8 bytes), a checksum, the data, a checksum
        start += 12 + int.from_bytes(data[start:start + 8], "little") + 4
    data[start + 14] ^= 0xFF  # a byte of its data: tensorboard stops there in silence
    flipped.write_bytes(bytes(data))
    shifted = _events(tmp_path / "shifted")
    shifted.write_bytes(shifted.read_bytes()[:start + 3] + shifted.read_bytes()[start + 4:])  # a byte lost
    cut = _events(tmp_path / "cut")
    cut.write_bytes(cut.read_bytes()[:-5])  # the last record is being written
    garbage = tmp_path / "garbage" / "events.out.tfevents.1.host"
    garbage.parent.mkdir()
    garbage.write_bytes(b"not an event file\n" * 100)
    result = lint_logs([str(tmp_path / name) for name in ("flipped", "shifted", "cut", "garbage")], Settings())
    assert [(Path(e.path).name, e.message) for e in result.errors] == [
        ("garbage", "events.out.tfevents.1.host: damaged at byte 0: not a record of an event file; no record could "
                    "be read")]
    warnings = {Path(path).name: text for path, text in result.warnings if "events.out" in text}
    assert warnings["flipped"] == f"{flipped.name}: damaged: record 21 of 41 fails its checksum; the 20 records " \
                                  "before it were read"
    assert warnings["shifted"] == f"{shifted.name}: damaged at byte {start}: not a record of an event file; the 20 " \
                                  "records before it were read"
    assert warnings["cut"] == f"{cut.name}: its last record is cut short (a run still being written?); read up to it"
