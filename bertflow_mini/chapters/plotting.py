"""The book's figure style, in one place, so every chapter's figures look alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

if TYPE_CHECKING:
    from matplotlib.animation import Animation, FuncAnimation
    from matplotlib.axes import Axes
    from matplotlib.collections import PathCollection
    from matplotlib.figure import Figure

#: One colour per role, used consistently across chapters.
# seen / unseen: tokens the corpus does / does not hold
COLORS = {
    "raw": "#c44e52",
    "flow": "#4c72b0",
    "whitening": "#55a868",
    "glove": "#8172b2",
    "gold": "#937860",
    "seen": "#64b5cd",
    "unseen": "#dd8452",
}


def set_style() -> None:
    """Seaborn's clean style, readable font sizes, and figures sized for a book page."""
    sns.set_theme(context="notebook", style="whitegrid", palette="deep")
    mpl.rcParams.update(
        {
            "figure.figsize": (7.0, 4.0),
            "figure.dpi": 100,
            "savefig.dpi": 100,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "legend.fontsize": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )


def cosine_histograms(
    samples: dict[str, np.ndarray],
    ax: Axes | None = None,
    bins: int = 60,
    title: str | None = None,
) -> Axes:
    """Overlaid density histograms of cosine similarities, one per named sample, on a shared [-1, 1] axis."""
    ax = ax or plt.gca()
    for name, values in samples.items():
        ax.hist(
            np.asarray(values),
            bins=bins,
            range=(-1, 1),
            density=True,
            alpha=0.45,
            label=name,
            color=COLORS.get(name.split()[0].lower()),
        )
    ax.set_xlim(-1, 1)
    ax.set_xlabel("cosine similarity")
    ax.set_ylabel("density")
    if title:
        ax.set_title(title)
    ax.legend()
    return ax


def offline_jshtml(anim: Animation, **kwargs: Any) -> str:
    """``anim.to_jshtml()`` with no external file, for a book read offline.

    Matplotlib's player links Font Awesome from a CDN only for its nine button icons; drop that
    link and label the buttons with plain characters instead.
    """
    import re

    icons = {
        "fa-minus": "−",
        "fa-fast-backward": "|◀◀",
        "fa-step-backward": "|◀",
        "fa-play fa-flip-horizontal": "◀",
        "fa-pause": "❚❚",
        "fa-play": "▶",
        "fa-step-forward": "▶|",
        "fa-fast-forward": "▶▶|",
        "fa-plus": "+",
    }
    html = re.sub(r'<link rel="stylesheet"[^>]*>', "", anim.to_jshtml(**kwargs))
    return re.sub(r'<i class="fa ([^"]+)"></i>', lambda m: icons[m.group(1)], html)


def basis_animation(
    B: np.ndarray,
    points: dict[str, np.ndarray],
    n_frames: int = 16,
    size: tuple[float, float] = (8.4, 4.4),
) -> FuncAnimation:
    """A 3-D animation of coordinate vectors ``points`` drawn in the basis (1 − s)·I + s·B as s goes
    0 → 1, with their coordinate and true cosines printed beside each frame (Chapter 2). The axes
    are the orthonormal reference frame e1, e2, e3; basis vectors are labelled at their midpoints
    and the points at their tips, so that no two labels sit on the same spot."""
    from matplotlib import animation

    from bertflow_mini.geometry.bases import gram_cosine, interpolate_basis

    fig = plt.figure(figsize=size, dpi=64)
    # the left part holds the 3-D view, the right part the cosines printed beside it; a 3-D
    # Axes (mpl_toolkits), whose three-coordinate methods matplotlib's type stubs do not know
    ax: Any = fig.add_axes((0.0, 0.04, 0.56, 0.92), projection="3d")
    colors = dict(zip(points, ["#c44e52", "#4c72b0", "#55a868", "#8172b2"]))
    pairs = [(p, q) for i, p in enumerate(points) for q in list(points)[i + 1 :]]
    lim = 1.1 * max(np.abs(B @ a).max() for a in points.values())

    def draw(frame: int) -> None:
        s = frame / max(1, n_frames - 1)
        M = interpolate_basis(B, s)
        G = M.T @ M
        ax.clear()
        for i in range(M.shape[1]):
            ax.quiver(0, 0, 0, *M[:, i], color="0.55", lw=1, arrow_length_ratio=0.1)
            ax.text(*(M[:, i] * 0.5), f" b{i + 1}", color="0.35", fontsize=8)
        for name, a in points.items():
            ax.quiver(
                0, 0, 0, *(M @ a), color=colors[name], lw=2.2, arrow_length_ratio=0.08
            )
            ax.text(
                *(M @ a * 1.06), name, color=colors[name], fontsize=10, weight="bold"
            )
        lines = [
            f"cos({p},{q}): coord {gram_cosine(points[p], points[q]):+.2f}  "
            f"true {gram_cosine(points[p], points[q], G):+.2f}"
            for p, q in pairs
        ]
        ax.text2D(
            1.16,
            0.75,
            f"s = {s:.2f}\n\n" + "\n".join(lines),
            transform=ax.transAxes,
            fontsize=9,
            family="monospace",
            va="top",
        )
        ax.set(xlim=(-lim, lim), ylim=(-lim, lim), zlim=(-lim, lim))
        ax.set(xlabel="e1", ylabel="e2", zlabel="e3")
        ax.set_title(
            "basis (1 − s)·I + s·B in the orthonormal frame e1, e2, e3",
            fontsize=9,
            y=-0.06,
        )

    anim = animation.FuncAnimation(fig, draw, frames=n_frames)
    plt.close(fig)  # the animation, not a static copy of its last frame
    return anim


def frequency_norm_scatter(
    ax: Axes,
    freq: np.ndarray,
    norms: np.ndarray,
    title: str,
    color: str = "C0",
    xlabel: str = "log$_{10}$ word frequency (wordfreq)",
) -> Axes:
    """Word-level scatter of log10 frequency against embedding norm, with the median norm per
    half-decade bin (bins of fewer than 20 words are not drawn). Frequencies must be > 0."""
    freq, norms = np.asarray(freq, dtype=float), np.asarray(norms, dtype=float)
    if freq.shape != norms.shape or freq.ndim != 1 or (freq <= 0).any():
        raise ValueError(
            "freq and norms must be 1-D arrays of one length, freq > 0 (drop unknown words)"
        )
    logf = np.log10(freq)
    ax.scatter(logf, norms, s=2, alpha=0.15, color=color, rasterized=True)
    edges = np.arange(np.floor(logf.min()), logf.max() + 0.5, 0.5)
    which = np.digitize(logf, edges)
    mids = [(edges[b - 1] + 0.25) for b in np.unique(which) if (which == b).sum() >= 20]
    medians = [
        np.median(norms[which == b])
        for b in np.unique(which)
        if (which == b).sum() >= 20
    ]
    ax.plot(mids, medians, "k.-", label="median per bin")
    ax.set(xlabel=xlabel, ylabel="ℓ2 norm of the word embedding", title=title)
    ax.legend(loc="best")
    return ax


def projection_scatter(
    ax: Axes,
    P: np.ndarray,
    title: str,
    color: np.ndarray | None = None,
    n_show: int = 4000,
    seed: int = 0,
    **kwargs: Any,
) -> PathCollection:
    """Scatter of 2-D coordinates ``P`` (at most ``n_show`` random rows), the origin marked by a cross;
    ``color`` (one value per row) is drawn with viridis, lowest values first so the highest (e.g. the
    frequent words, a minority) are not buried under the rest. Returns the scatter, for a colour bar."""
    P = np.asarray(P)
    show = np.random.default_rng(seed).choice(
        len(P), size=min(len(P), n_show), replace=False
    )
    if color is not None:
        show = show[np.argsort(np.asarray(color)[show], kind="stable")]
    if color is None:
        sc = ax.scatter(
            P[show, 0], P[show, 1], s=3, alpha=0.3, color="C1", rasterized=True
        )
    else:
        sc = ax.scatter(
            P[show, 0],
            P[show, 1],
            s=3,
            alpha=0.5,
            c=np.asarray(color)[show],
            cmap="viridis",
            rasterized=True,
            **kwargs,
        )
    ax.plot(0, 0, "kx", ms=12, mew=3, label="origin")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set(title=title, xlabel="singular direction 1", ylabel="singular direction 2")
    return sc


# --------------------------------------------------------------------------------------
# What pretraining earns, and the scale curve (bertflow_mini.evaluation.earned, .scale)
# --------------------------------------------------------------------------------------
def plot_earned(
    table: pd.DataFrame,
    task: str = "Avg.",
    ax: Axes | Sequence[Axes] | np.ndarray | None = None,
) -> list[Axes]:
    """The earned points of one ``task`` (default ``Avg.``), a panel per pooling, x =
    checkpoint, a colour per method; whiskers: the bootstrap interval where both
    sides are ours, else ± the control's init-seed sd. A dashed line at 0: no gain
    over the random network."""
    t = table[table["task"] == task]
    if t.empty:
        raise ValueError(
            f"no rows for task {task!r}; the table has {sorted(set(table['task']))}"
        )
    poolings = list(dict.fromkeys(t["pooling"]))
    if ax is None:
        _, ax = plt.subplots(
            1,
            len(poolings),
            figsize=(4.2 * len(poolings), 3.4),
            sharey=True,
            squeeze=False,
        )
        axes = list(ax[0])
    else:
        # numpy's stubs take array-likes only; an Axes becomes a one-element object array
        axes = list(np.atleast_1d(ax))  # type: ignore[arg-type]
    if len(axes) != len(poolings):
        raise ValueError(
            f"need {len(poolings)} axes (one per pooling), got {len(axes)}"
        )
    labels = list(dict.fromkeys(t["checkpoint"]))
    methods = list(dict.fromkeys(t["method"]))
    for a, pooling in zip(axes, poolings):
        for j, method in enumerate(methods):
            rows = t[(t["pooling"] == pooling) & (t["method"] == method)]
            if rows.empty:
                continue
            x = (
                np.array([labels.index(c) for c in rows["checkpoint"]])
                + (j - (len(methods) - 1) / 2) * 0.12
            )
            y = rows["earned"].to_numpy()
            ours = rows["low"].notna().to_numpy()
            lo = np.where(ours, y - rows["low"], rows["control_sd"].fillna(0))
            hi = np.where(ours, rows["high"] - y, rows["control_sd"].fillna(0))
            a.errorbar(
                x,
                y,
                yerr=[lo, hi],
                fmt="o-" if len(labels) > 1 else "o",
                capsize=3,
                label={"none": "raw cosine"}.get(method, method),
            )
        a.axhline(0, color="grey", ls="--", lw=1)
        a.set_xticks(range(len(labels)), labels, rotation=15)
        a.set_title(f"{pooling}, {task}")
    axes[0].set_ylabel("pretrained − random init\n(Spearman × 100)")
    axes[-1].legend(fontsize=8)
    return axes


def _scale_runs(
    ax: Axes,
    gaps: pd.DataFrame,
    pooling: str,
    task: str,
    methods: Sequence[str],
    corpora: Sequence[str],
    x: str,
    y: str,
) -> None:
    """Each method's runs of one (pooling, task) panel: ``y`` against ``x``, a marker per
    corpus, whiskers ± the gap's sd over seeds, in the method's colour."""
    for i, method in enumerate(methods):
        pick = (
            (gaps["pooling"] == pooling)
            & (gaps["method"] == method)
            & (gaps["task"] == task)
        )
        for marker, corpus in zip("osD^", corpora):
            line = gaps[pick & (gaps["corpus"] == corpus)].sort_values(x)
            if len(line):
                ax.errorbar(
                    line[x],
                    line[y],
                    yerr=line["gap_sd"].fillna(0),
                    fmt=f"{marker}-",
                    color=COLORS.get(method, f"C{i}"),
                    capsize=3,
                    label=f"{method}, {corpus}",
                )


def _scale_axis(ax: Axes, gaps: pd.DataFrame, x: str) -> None:
    """A log ``x`` axis with a tick at each run's length."""
    ax.set_xscale("log")
    ticks = sorted(set(gaps[x]))
    labels = [f"{t / 1e6:.1f} M" if x == "wordpieces" else f"{t:,.0f}" for t in ticks]
    ax.set_xticks(ticks, labels)
    ax.minorticks_off()


def plot_scale_curve(
    curve: pd.DataFrame,
    tasks: Sequence[str] = ("STSB", "Avg."),
    methods: Sequence[str] = ("whitening", "flow"),
    x: str = "wordpieces",
) -> Figure:
    """Score against ``x`` — wordpieces seen or pretraining ``"steps"`` — on a log
    scale with a tick at each run, a panel per (pooling, task): each method's
    pretrained runs in its colour from :data:`COLORS` (a marker per corpus, joined;
    whiskers ± the sd of the gap over seeds, where a length has several) and, in the
    same colour, its control — the step-0 network, the same for every run of a seed —
    as a dotted line at its mean over the seeds measured, with a ± sd band."""
    from bertflow_mini.evaluation.scale import scale_gaps, step_zero

    if x not in ("wordpieces", "steps"):
        raise ValueError(f"x must be 'wordpieces' or 'steps', not {x!r}")
    gaps = scale_gaps(curve)
    poolings = list(dict.fromkeys(gaps["pooling"]))
    corpora = list(dict.fromkeys(gaps["corpus"]))
    # the control: each seed's step 0, mean and sd over seeds
    control = step_zero(curve).groupby(["pooling", "method", "task"])["score"]
    control = control.agg(["mean", "std"])
    fig, axes = plt.subplots(
        len(poolings),
        len(tasks),
        figsize=(4.6 * len(tasks), 3.4 * len(poolings)),
        squeeze=False,
        sharex=True,
    )
    for row, pooling in zip(axes, poolings):
        for ax, task in zip(row, tasks):
            _scale_runs(ax, gaps, pooling, task, methods, corpora, x, "pretrained")
            for i, method in enumerate(methods):
                if (pooling, method, task) in control.index:
                    colour = COLORS.get(method, f"C{i}")
                    level, sd = control.loc[(pooling, method, task)]
                    ax.axhline(
                        level,
                        ls=":",
                        color=colour,
                        label=f"{method}, step 0 (random init), ± sd",
                    )
                    if np.isfinite(sd):  # NaN for one seed
                        ax.axhspan(
                            level - sd, level + sd, color=colour, alpha=0.12, lw=0
                        )
            _scale_axis(ax, gaps, x)
            ax.set_title(f"{pooling}, {'7-dataset mean' if task == 'Avg.' else task}")
            ax.set_xlabel(
                "wordpieces seen in pretraining"
                if x == "wordpieces"
                else "pretraining steps"
            )
        row[0].set_ylabel("Spearman × 100")
    drawn = [ax for ax in fig.axes if ax.get_legend_handles_labels()[0]]
    if drawn:
        drawn[-1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_scale_gaps(
    gaps: pd.DataFrame,
    tasks: Sequence[str] = ("STSB", "Avg."),
    methods: Sequence[str] = ("whitening", "flow"),
    x: str = "wordpieces",
) -> Figure:
    """The scale curve as gaps: each run's ``gap`` (pretrained − its own step 0, from
    :func:`bertflow_mini.evaluation.scale.scale_gaps`) against ``x`` — wordpieces seen
    or pretraining ``"steps"`` — on a log scale, a panel per (pooling, task), each
    method in its colour from :data:`COLORS` (a marker per corpus; whiskers ± the gap's
    sd over seeds, where a length has several), beside a line at 0: the random init.
    A point below the line is a run that scores below the network it started from."""
    if x not in ("wordpieces", "steps"):
        raise ValueError(f"x must be 'wordpieces' or 'steps', not {x!r}")
    poolings = list(dict.fromkeys(gaps["pooling"]))
    corpora = list(dict.fromkeys(gaps["corpus"]))
    fig, axes = plt.subplots(
        len(poolings),
        len(tasks),
        figsize=(4.2 * len(tasks), 3.0 * len(poolings)),
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    for row, pooling in zip(axes, poolings):
        for ax, task in zip(row, tasks):
            ax.axhline(0, color="0.3", lw=1, label="random init (its own step 0)")
            _scale_runs(ax, gaps, pooling, task, methods, corpora, x, "gap")
            _scale_axis(ax, gaps, x)
            ax.tick_params(labelbottom=True)
            name = {"Avg.": "7-dataset mean", "STSB": "STS-B"}.get(task, task)
            ax.set_title(f"{pooling}, {name}")
        row[0].set_ylabel("pretrained − step 0")
    for ax in axes[-1]:
        ax.set_xlabel(
            "wordpieces seen in pretraining"
            if x == "wordpieces"
            else "pretraining steps"
        )
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(
        handles, labels, fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5)
    )
    return fig
