"""The figure helpers: the offline animation player and the cosine histograms."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import animation  # noqa: E402

from bertflow_mini.plotting import cosine_histograms, offline_jshtml  # noqa: E402


def test_offline_jshtml_has_no_external_link_and_keeps_the_frames():
    fig, ax = plt.subplots(figsize=(2, 2), dpi=30)
    anim = animation.FuncAnimation(fig, lambda k: ax.plot([0, k], [0, 1]), frames=3)
    raw = anim.to_jshtml()
    assert "<link" in raw and "font-awesome" in raw  # matplotlib's player really does link a CDN
    html = offline_jshtml(anim)
    plt.close(fig)
    assert "<link" not in html and "http" not in html.split("<script")[0]
    assert 'class="fa ' not in html and "▶" in html
    assert html.count("data:image/png;base64") == 3


def test_cosine_histograms_draws_one_histogram_per_sample():
    fig, ax = plt.subplots()
    rng = np.random.default_rng(0)
    cosine_histograms({"raw": rng.uniform(0.5, 1, 100), "flow": rng.uniform(-1, 1, 100)}, ax=ax)
    assert ax.get_xlim() == (-1, 1) and [t.get_text() for t in ax.get_legend().get_texts()] == ["raw", "flow"]
    plt.close(fig)
