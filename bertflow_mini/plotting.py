"""The book's figure style, in one place, so every chapter's figures look alike."""
from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

#: One colour per role, used consistently across chapters.
COLORS = {"raw": "#c44e52", "flow": "#4c72b0", "whitening": "#55a868", "glove": "#8172b2", "gold": "#937860"}


def set_style() -> None:
    """Seaborn's clean style, readable font sizes, and figures sized for a book page."""
    sns.set_theme(context="notebook", style="whitegrid", palette="deep")
    mpl.rcParams.update({
        "figure.figsize": (7.0, 4.0), "figure.dpi": 100, "savefig.dpi": 100,
        "axes.titlesize": 12, "axes.labelsize": 11, "legend.fontsize": 9, "axes.spines.top": False,
        "axes.spines.right": False,
    })


def cosine_histograms(samples: dict[str, np.ndarray], ax=None, bins: int = 60, title: str | None = None):
    """Overlaid density histograms of cosine similarities, one per named sample, on a shared [-1, 1] axis."""
    ax = ax or plt.gca()
    for name, values in samples.items():
        ax.hist(np.asarray(values), bins=bins, range=(-1, 1), density=True, alpha=0.45, label=name,
                color=COLORS.get(name.split()[0].lower()))
    ax.set_xlim(-1, 1)
    ax.set_xlabel("cosine similarity")
    ax.set_ylabel("density")
    if title:
        ax.set_title(title)
    ax.legend()
    return ax


def offline_jshtml(anim, **kwargs) -> str:
    """``anim.to_jshtml()`` with no external file, for a book read offline.

    Matplotlib's player links Font Awesome from a CDN only for its nine button icons; drop that
    link and label the buttons with plain characters instead.
    """
    import re

    icons = {"fa-minus": "−", "fa-fast-backward": "|◀◀", "fa-step-backward": "|◀", "fa-play fa-flip-horizontal": "◀",
             "fa-pause": "❚❚", "fa-play": "▶", "fa-step-forward": "▶|", "fa-fast-forward": "▶▶|", "fa-plus": "+"}
    html = re.sub(r'<link rel="stylesheet"[^>]*>', "", anim.to_jshtml(**kwargs))
    return re.sub(r'<i class="fa ([^"]+)"></i>', lambda m: icons[m.group(1)], html)
