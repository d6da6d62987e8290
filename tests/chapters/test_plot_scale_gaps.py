"""The scale curve drawn as gaps against zero (``plot_scale_gaps``): on a gaps table
written by hand, every point is the table's gap, its whisker the gap's sd over seeds,
and each panel has its line at 0."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from bertflow_mini.chapters.plotting import COLORS, plot_scale_gaps  # noqa: E402


def hand_gaps() -> pd.DataFrame:
    rows = []
    for pooling in ("first-last-avg", "last-avg"):
        for method in ("whitening", "flow"):
            for task in ("STSB", "Avg."):
                for steps, words, gap, sd in (
                    (1500, 2e6, -1.0, 0.5),
                    (3000, 4e6, 0.5, math.nan),
                ):
                    rows.append(
                        dict(
                            corpus="toy",
                            steps=steps,
                            wordpieces=words,
                            pooling=pooling,
                            method=method,
                            task=task,
                            gap=gap + (task == "Avg.") - (method == "flow"),
                            gap_sd=sd,
                        )
                    )
    return pd.DataFrame(rows)


def test_each_panel_plots_the_gaps_beside_a_line_at_zero():
    gaps = hand_gaps()
    fig = plot_scale_gaps(gaps)
    assert len(fig.axes) == 4
    assert fig.axes[0].get_title() == "first-last-avg, STS-B"
    ax = fig.axes[1]  # first-last-avg, the 7-dataset mean
    assert (
        ax.get_title() == "first-last-avg, 7-dataset mean" and ax.get_xscale() == "log"
    )
    (zero,) = [line for line in ax.lines if list(line.get_ydata()) == [0, 0]]
    assert zero.get_label().startswith("random init")
    points = {
        line.get_color(): (list(line.get_xdata()), list(line.get_ydata()))
        for line in ax.lines
        if line is not zero and line.get_marker() == "o"
    }
    # whitening: -1 + 1 and 0.5 + 1; the flow one lower
    assert points[COLORS["whitening"]] == ([2e6, 4e6], [0.0, 1.5])
    assert points[COLORS["flow"]] == ([2e6, 4e6], [-1.0, 0.5])
    # the whisker: ± 0.5 where there are seeds, none where one seed
    caps = [
        line.get_ydata()
        for line in ax.lines
        if line.get_marker() == "_" and line.get_color() == COLORS["whitening"]
    ]
    assert sorted(np.concatenate(caps)) == pytest.approx([-0.5, 0.5, 1.5, 1.5])
    plt.close(fig)


def test_steps_on_the_x_axis_and_a_refused_axis():
    fig = plot_scale_gaps(hand_gaps(), x="steps")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["1,500", "3,000"]
    plt.close(fig)
    with pytest.raises(ValueError, match="wordpieces"):
        plot_scale_gaps(hand_gaps(), x="epochs")
