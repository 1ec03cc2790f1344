"""RL701-RL711 on generated runs with known onsets: each fault alone, several at once, healthy noisy runs.

Onset tolerance (stated in `rllint.logs.series`): a change of level is reported within
`log-window // 2` logged points of its true step; trends (geometric KL growth, RL709) within a
window; a held-out fall (RL708) at the evaluation where the held-out metric was best.
"""
import json

import pytest

from logs_synthetic import records
from rllint.logs.lint import lint_logs
from rllint.settings import Settings

WINDOW = 9  # the default log-window


def findings(tmp_path, faults=None, select=None, steps=300, every=1, seed=0, eval_every=0, options=None):
    path = tmp_path / "trainer_state.json"
    entries = records(steps, seed, every, faults, eval_every)
    path.write_text(json.dumps({"global_step": steps, "log_history": entries}, indent=2))
    result = lint_logs([str(path)], Settings(select=select, options=options or {}))
    assert result.errors == []
    return [(d.code, d.step) for d in result.diagnostics]


CASES = [  # fault, onset, code, tolerance in steps
    ("kl_explosion", 150, "RL701", WINDOW // 2),
    ("kl_growth", 150, "RL701", WINDOW),
    ("entropy_collapse", 150, "RL703", WINDOW // 2),
    ("clip_fraction", 120, "RL704", WINDOW // 2),
    ("length_collapse", 150, "RL705", WINDOW // 2),
    ("length_explosion", 150, "RL706", WINDOW // 2),
    ("truncation", 60, "RL707", WINDOW // 2),
    ("zero_variance", 200, "RL710", WINDOW // 2),
    ("length_padding", 150, "RL709", 3 * WINDOW),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("fault,onset,code,tolerance", CASES, ids=[case[0] for case in CASES])
def test_each_fault_alone_is_reported_once_near_its_onset(tmp_path, fault, onset, code, tolerance, seed):
    found = [(c, step) for c, step in findings(tmp_path, {fault: onset}, select=["ALL"], seed=seed) if c == code]
    assert len(found) == 1, found
    assert abs(found[0][1] - onset) <= tolerance


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("fault", ["kl_growth", "kl_explosion"])
def test_a_kl_growth_is_dated_where_it_began_not_where_its_windows_begin(tmp_path, fault, seed):
    """Growth is detected over three windows back from a point; the first of them lies on the flat level
    before the growth. Logged every 5 steps, a KL that grew from step 250 was dated to steps 205-215."""
    found = findings(tmp_path, {fault: 250}, select=["RL701"], steps=400, every=5, seed=seed)
    (step,) = [step for code, step in found if code == "RL701"]
    assert abs(step - 250) <= 5 * (WINDOW // 2)


def test_a_stall_from_the_start_is_reported_at_the_first_step(tmp_path):
    assert findings(tmp_path, {"kl_stall": 0}) == [("RL702", 1)]


def test_reward_hacking_onset_is_the_best_evaluation(tmp_path):
    assert findings(tmp_path, {"reward_hacking": 150}, eval_every=20) == [("RL708", 140)]


def test_several_faults_at_once_each_at_its_own_onset(tmp_path):
    faults = {"truncation": 60, "entropy_collapse": 100, "kl_growth": 150, "clip_fraction": 200}
    found = findings(tmp_path, faults)
    assert [code for code, _ in found] == ["RL707", "RL703", "RL701", "RL704"]
    for (code, step), onset in zip(found, [60, 100, 150, 200]):
        assert abs(step - onset) <= WINDOW


def test_onsets_are_steps_when_logging_every_ten_steps(tmp_path):
    found = findings(tmp_path, {"entropy_collapse": 1000, "clip_fraction": 2000}, steps=3000, every=10)
    assert found == [("RL703", 1000), ("RL704", 2000)]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("steps,every", [(300, 1), (1000, 5), (60, 1)])
def test_healthy_noisy_runs_give_nothing(tmp_path, seed, steps, every):
    assert findings(tmp_path, select=["ALL"], steps=steps, every=every, seed=seed, eval_every=5 * every) == []


def test_thresholds_come_from_options(tmp_path):
    assert findings(tmp_path, {"clip_fraction": 120}, options={"max-clip-fraction": 0.5}) == []
    assert [code for code, _ in findings(tmp_path, options={"max-zero-std-fraction": 0.1})] == ["RL710"]


def test_unmonitored_run_is_one_hint_at_the_first_step(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "reward": 0.3, "loss": 0.1}) + "\n" for s in range(5, 100, 5)))
    result = lint_logs([str(path)], Settings())
    assert [(d.code, d.step, d.line) for d in result.diagnostics] == [("RL711", 5, 1)]
    assert "it logs `reward`" in result.diagnostics[0].message


def test_a_kl_that_is_switched_off_is_no_stall(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "kl": 0.0, "reward": 0.3}) + "\n" for s in range(200)))
    assert lint_logs([str(path)], Settings()).diagnostics == []


def test_messages_name_the_metric_the_onset_and_the_evidence(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": records(300, 0, 1, {"entropy_collapse": 150})}))
    (finding,) = lint_logs([str(path)], Settings()).diagnostics
    assert finding.message.startswith("entropy `entropy` fell below 0.2x its early level ")
    assert "from step 150 (" in finding.message and " then, " in finding.message and "at step 300)" in finding.message
