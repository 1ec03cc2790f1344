"""`--plot FILE.png`: every checked metric of every run, raw and smoothed, with the flagged spans shaded.

matplotlib is the optional `rllint[plot]` extra, imported only here, with the Agg backend
(no display needed). People read a curve faster than a table: the shaded span starts at
the onset a finding reports, so the two can be checked against each other.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

INSTALL_HINT = "--plot needs the `plot` extra (matplotlib): pip install 'rllint[plot]'"
_RAW, _SMOOTH, _FLAG = "#9ab8d8", "#1f4e89", "#d62728"


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


class PlotPathError(ValueError):
    """A `--plot` file whose name says no image format matplotlib writes."""


def image_format(path: Path) -> str:
    """The image format `path`'s extension names (PNG without one), checked before any work is done: an
    unknown one would fail only when the plot is saved. Raises PlotUnavailable without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlotUnavailable(INSTALL_HINT) from None
    from matplotlib.backend_bases import FigureCanvasBase

    # pgf needs a TeX installation, which matplotlib looks for only when it saves
    known = sorted(set(FigureCanvasBase.get_supported_filetypes()) - {"pgf"})
    extension = path.suffix[1:].lower()
    if extension and extension not in known:
        raise PlotPathError(f"--plot {path}: `.{extension}` is not an image format rllint can draw; use one of "
                            f"{', '.join('.' + name for name in known)}")
    return extension or "png"


def plot_runs(runs: Sequence, path: Path, image: str = "png", shown: Callable[[str], str] = str) -> bool:
    """Draw the series of `runs` (`rllint.logs.lint.CheckedRun`) into one image of format `image` at `path`
    (the name as given: matplotlib would add an extension to a name without one), one panel per metric;
    False (nothing written) when no run has a series. `shown` spells a run's path. Raises OSError when the
    image cannot be written."""
    panels = [(run, series) for run in runs for series in run.series if len(series)]
    if not panels:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(panels), 1, figsize=(9, 1.9 * len(panels) + 0.6), squeeze=False)
    for axis, (run, series) in zip(axes[:, 0], panels):
        axis.plot(series.steps, series.values, color=_RAW, linewidth=0.8, label="logged")
        axis.plot(series.steps, series.smooth, color=_SMOOTH, linewidth=1.8, label="smoothed")
        for finding in run.findings:
            if finding.series is series:
                start, end = series.steps[finding.first], series.steps[finding.last]
                axis.axvspan(start, end, color=_FLAG, alpha=0.15, linewidth=0)
                axis.axvline(start, color=_FLAG, linewidth=1.2)
                axis.annotate(f"{finding.rule.code} from step {start}", (start, 1), xycoords=("data", "axes fraction"),
                              xytext=(4, -4), textcoords="offset points", va="top", fontsize=8, color=_FLAG,
                              fontweight="bold")
        low, high = min(series.smooth), max(series.smooth)
        if low > 0 and high / low > 100:  # an exploding KL: a linear axis would flatten everything before it
            axis.set_yscale("log")
        axis.set_title(f"{shown(run.path)}: {series.key}", fontsize=9, loc="left")
        axis.set_ylabel(series.metric, fontsize=8)
        axis.tick_params(labelsize=8)
        axis.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step", fontsize=8)
    axes[0, 0].legend(fontsize=7, loc="lower right", bbox_to_anchor=(1, 1), ncol=2, frameon=False)
    figure.tight_layout()
    try:
        figure.savefig(path, format=image, dpi=100)
    finally:
        plt.close(figure)
    return True
