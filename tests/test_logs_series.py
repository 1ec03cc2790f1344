"""Series: the running median, noise, and episodes (sustained, merged, never from the first steps alone)."""
import random

import pytest

from rllint.logs.series import Episode, Series, find_episodes, number


def series(values, window=9):
    return Series("kl", "kl", list(range(len(values))), list(values), [1] * len(values), window=window)


def test_episodes_need_sustain_merge_short_gaps_and_reach_past_skip():
    flags = [False] * 5 + [True] * 4 + [False] * 2 + [True] * 3 + [False] * 20 + [True] * 2
    # 4 + 3 points across a gap of 2 make one episode of 7; the last run of 2 is too short
    assert find_episodes(flags, sustain=6, gap=3, skip=0) == [Episode(5, 13)]
    assert find_episodes(flags, sustain=8, gap=3, skip=0) == []
    # an episode wholly inside the first window is dropped
    assert find_episodes([True] * 6 + [False] * 30, sustain=5, gap=3, skip=9) == []
    assert find_episodes([True] * 12 + [False] * 30, sustain=5, gap=3, skip=9) == [Episode(0, 11)]


def test_the_median_keeps_a_step_edge_where_it_is_and_ignores_a_spike():
    values = [0.0] * 50 + [1.0] * 50
    values[20] = 100.0
    smooth = series(values).smooth
    assert smooth[20] == 0.0
    assert smooth[49] == 0.0 and smooth[50] == 1.0


@pytest.mark.parametrize("seed", range(10))
def test_onset_of_a_noisy_change_is_within_half_a_window(seed):
    """The stated tolerance: a change of level at step 150 is reported within window // 2 points."""
    rng = random.Random(seed)
    values = [rng.gauss(0.05, 0.015) for _ in range(150)] + [rng.gauss(0.4, 0.03) for _ in range(150)]
    s = series(values)
    episodes = s.episodes([value > 0.3 for value in s.smooth])
    assert len(episodes) == 1
    assert abs(episodes[0].first - 150) <= s.window // 2
    assert episodes[0].last == 299


def test_short_runs_are_not_judged():
    s = series([1.0] * 17)
    assert not s.judgeable and s.episodes([True] * 17) == []
    assert series([1.0] * 18).judgeable


def test_moved_is_in_standard_errors_of_a_window_median():
    rng = random.Random(1)
    flat = series([rng.gauss(0.3, 0.05) for _ in range(200)])
    assert abs(flat.moved(10, 190)) < 3
    rising = series([0.3 + 0.002 * i + rng.gauss(0, 0.05) for i in range(200)])
    assert rising.moved(10, 190) > 3
    assert series([2.0] * 30).moved(0, 29) == 0.0


def test_lookup_by_step_and_wording():
    s = Series("reward", "reward", [10, 20, 30], [0.1, 0.2, 0.3], [4, 5, 6], window=3)
    assert s.index_at(25) == 1 and s.index_at(5) == 0 and s.index_at(99) == 2
    assert s.describe(2) == f"{number(s.smooth[2])} at step 30"
    assert number(0.000012) == "1.20e-05" and number(212.4) == "212" and number(0.0) == "0"
