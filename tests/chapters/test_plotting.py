"""The figure helpers: the offline animation player and the cosine histograms."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import animation  # noqa: E402

from bertflow_mini.chapters.plotting import cosine_histograms, offline_jshtml  # noqa: E402


def test_offline_jshtml_has_no_external_link_and_keeps_the_frames():
    fig, ax = plt.subplots(figsize=(2, 2), dpi=30)
    anim = animation.FuncAnimation(fig, lambda k: ax.plot([0, k], [0, 1]), frames=3)
    raw = anim.to_jshtml()
    # matplotlib's player really does link a CDN
    assert "<link" in raw and "font-awesome" in raw
    html = offline_jshtml(anim)
    plt.close(fig)
    assert "<link" not in html and "http" not in html.split("<script")[0]
    assert 'class="fa ' not in html and "▶" in html
    assert html.count("data:image/png;base64") == 3


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


def test_basis_animation_prints_both_cosines_on_each_frame():
    from bertflow_mini.chapters.plotting import basis_animation
    from bertflow_mini.geometry.bases import skewed_example

    B, x = skewed_example()
    anim = basis_animation(B, x, n_frames=3, size=(2, 2))
    fig = anim._fig
    anim._func(2)  # the last frame: the skewed basis itself
    text = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "cos(x1,x3): coord +0.00  true +0.88" in text
    anim._func(0)  # the first frame: orthonormal, the two cosines agree
    text = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "cos(x1,x3): coord +0.00  true +0.00" in text
    ax = fig.axes[0]
    assert [ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel()] == ["e1", "e2", "e3"]
    assert html_frames(anim) == 3


def html_frames(anim) -> int:
    return offline_jshtml(anim).count("data:image/png;base64")


def test_frequency_norm_scatter_and_projection_scatter():
    from bertflow_mini.chapters.plotting import (
        frequency_norm_scatter,
        projection_scatter,
    )

    rng = np.random.default_rng(1)
    f = 10 ** rng.uniform(-7, -2, 500)
    fig, ax = plt.subplots()
    frequency_norm_scatter(ax, f, rng.uniform(0, 1, 500), "t")
    medians = ax.get_lines()[0]
    assert len(medians.get_xdata()) == 10  # ten half-decades of 50 words each
    import pytest

    with pytest.raises(ValueError, match="freq > 0"):
        frequency_norm_scatter(ax, np.r_[f[:-1], 0.0], np.ones(500), "t")
    P, c = rng.normal(size=(5000, 2)), rng.uniform(size=5000)
    sc = projection_scatter(ax, P, "p", color=c)
    assert len(sc.get_offsets()) == 4000
    drawn = sc.get_array()
    assert (np.diff(drawn) >= 0).all()  # lowest colour first, the highest drawn on top
    rows = [np.flatnonzero((P == xy).all(axis=1))[0] for xy in sc.get_offsets()[:5]]
    np.testing.assert_allclose(c[rows], drawn[:5])  # each point keeps its own colour
    plt.close(fig)
