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
