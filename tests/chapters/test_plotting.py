"""The figure helpers: the cosine histograms and the projection scatter."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bertflow_mini.chapters.plotting import cosine_histograms  # noqa: E402


def test_cosine_histograms_draws_one_histogram_per_sample():
    fig, ax = plt.subplots()
    rng = np.random.default_rng(0)
    cosine_histograms(
        {"raw": rng.uniform(0.5, 1, 100), "flow": rng.uniform(-1, 1, 100)}, ax=ax
    )
    assert ax.get_xlim() == (-1, 1) and [
        t.get_text() for t in ax.get_legend().get_texts()
    ] == ["raw", "flow"]
    plt.close(fig)


def test_projection_scatter_keeps_each_points_colour_and_draws_the_highest_last():
    from bertflow_mini.chapters.plotting import projection_scatter

    rng = np.random.default_rng(1)
    fig, ax = plt.subplots()
    P, c = rng.normal(size=(5000, 2)), rng.uniform(size=5000)
    sc = projection_scatter(ax, P, "p", color=c)
    assert len(sc.get_offsets()) == 4000
    drawn = sc.get_array()
    assert (np.diff(drawn) >= 0).all()  # lowest colour first, the highest drawn on top
    rows = [np.flatnonzero((P == xy).all(axis=1))[0] for xy in sc.get_offsets()[:5]]
    np.testing.assert_allclose(c[rows], drawn[:5])  # each point keeps its own colour
    plt.close(fig)
