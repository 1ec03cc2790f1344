"""One logged metric over a run, smoothed, and the episodes during which a condition holds.

Training metrics are noisy: a single step of high KL or a few short completions say
nothing. So every check judges a centred running median (robust to single spikes, and it
keeps the edge of a step change where it is), asks that a condition hold on `window`
smoothed points in a row, merges episodes separated by fewer than `window` points, and
drops episodes that lie wholly inside the first window of the run. Windows count logged
points, not steps: a run logged every 10 steps has the same tolerance in points.

Onset tolerance: for a clean change of level or a crossing of a bound, the reported onset
lies within `window // 2` logged points of the true one (tests/test_logs_series.py).
"""
from __future__ import annotations

import bisect
import math
import statistics
from array import array
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

# A median's standard error is sqrt(pi / 2) times the mean's.
_MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)
# MAD of successive differences -> standard deviation of one point.
_MAD_TO_SIGMA = 1 / (0.6745 * math.sqrt(2))


@dataclass(frozen=True)
class Episode:
    """Logged points `first`..`last` (inclusive indexes into the series) during which a condition held."""

    first: int
    last: int


@dataclass
class Series:
    """A metric as logged: `key` is the name in the log, `metric` the name the checks use (`kl`)."""

    metric: str
    key: str
    steps: Sequence[int]  # lists or machine arrays (`array`, as readers keep them: 8 bytes a point)
    values: Sequence[float]
    lines: Sequence[int]  # where each value is written in the file (1 when the format has no lines)
    window: int = 9
    sequence_level: bool = False  # a KL summed over the sequence (TRL PPO), not a per-token mean
    _smooth: Optional[Sequence[float]] = field(default=None, repr=False)
    _noise: Optional[float] = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.values)

    @property
    def judgeable(self) -> bool:
        """Long enough to tell a sustained condition from the first steps: two windows of points."""
        return len(self.values) >= 2 * self.window

    @property
    def smooth(self) -> Sequence[float]:
        """The centred running median over `window` points (fewer at the ends)."""
        if self._smooth is None:
            half = self.window // 2
            values = self.values
            self._smooth = array("d", (statistics.median(values[max(0, i - half): i + half + 1])
                                       for i in range(len(values))))
        return self._smooth

    def early(self) -> float:
        """The level at the start of the run: the median of the first window of raw values."""
        return statistics.median(self.values[: self.window])

    def noise(self) -> float:
        """The spread of one logged value around the trend (robust: from successive differences)."""
        if self._noise is None:
            diffs = [abs(b - a) for a, b in zip(self.values, self.values[1:])]
            self._noise = statistics.median(diffs) * _MAD_TO_SIGMA if len(diffs) > 1 else 0.0
        return self._noise

    def moved(self, start: int, end: int, z: float = 3.0) -> float:
        """How far the smoothed level at `end` is from the one at `start`, in standard errors of a
        window median (positive: up). Two windows apart a level differs by chance less than 3."""
        error = self.noise() * _MEDIAN_EFFICIENCY * math.sqrt(2 / self.window)
        change = self.smooth[end] - self.smooth[start]
        if error == 0:
            return math.copysign(math.inf, change) if change else 0.0
        return change / error

    def index_at(self, step: int) -> int:
        """The index of the last logged point at or before `step` (the first point if none is)."""
        return max(0, bisect.bisect_right(self.steps, step) - 1)

    def at(self, step: int) -> float:
        """The smoothed value at `step` (the last logged point at or before it)."""
        return self.smooth[self.index_at(step)]

    def episodes(self, flags: Sequence[bool], skip: Optional[int] = None,
                 sustain: Optional[int] = None) -> List[Episode]:
        """Episodes of a condition given as one flag per point (judged on `smooth`): at least `sustain`
        points (default `window`), gaps shorter than `window` bridged, none wholly before index `skip`
        (default `window`: the first steps alone never make a finding). Empty when the run is too short."""
        if not self.judgeable:
            return []
        return find_episodes(flags, self.window if sustain is None else sustain, self.window,
                             self.window if skip is None else skip)

    def value(self, index: int) -> str:
        """The smoothed value at `index`, as messages write it."""
        return number(self.smooth[index])

    def describe(self, index: int) -> str:
        """`0.42 at step 300`: the smoothed value and the step, for messages."""
        return f"{self.value(index)} at step {self.steps[index]}"

    @staticmethod
    def format(value: float) -> str:
        return number(value)


def find_episodes(flags: Sequence[bool], sustain: int, gap: int, skip: int) -> List[Episode]:
    """Runs of True in `flags`, merged across gaps of fewer than `gap` False points, that hold on at
    least `sustain` points and reach index `skip` or beyond."""
    merged: List[Tuple[int, int, int]] = []  # (first, last, points that hold)
    start = None
    for index, flag in enumerate(list(flags) + [False]):
        if flag and start is None:
            start = index
        elif not flag and start is not None:
            first, last = start, index - 1
            if merged and first - merged[-1][1] - 1 < gap:
                merged[-1] = (merged[-1][0], last, merged[-1][2] + last - first + 1)
            else:
                merged.append((first, last, last - first + 1))
            start = None
    return [Episode(first, last) for first, last, held in merged if held >= sustain and last >= skip]


def number(value: float) -> str:
    """A metric value as messages write it: three significant digits."""
    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.3g}"
    return f"{value:.2e}"
