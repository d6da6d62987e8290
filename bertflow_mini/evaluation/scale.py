"""scratch-bert's scale curve as gaps: each run length's pretrained score minus its own
step 0.

The curve itself is shipped (:func:`bertflow_mini.evaluation.measured.scale_curve`,
written by ``experiments/scale_curve.py``: separate pretraining runs of growing
length, each scored beside its random initialisation); the figure is
:func:`bertflow_mini.chapters.plotting.plot_scale_curve`.
"""

from __future__ import annotations

import math

import pandas as pd

from bertflow_mini.data import TASKS
from bertflow_mini.evaluation.controls import with_average

__all__ = ["scale_gaps", "step_zero"]

_RUN = ["corpus", "layers", "hidden", "steps"]


def scale_gaps(curve: pd.DataFrame) -> pd.DataFrame:
    """Per run length, pooling, method and task (+ ``Avg.``, each seed's mean over the 7
    datasets where it has all 7): the pretrained score, its control, and ``gap`` =
    pretrained − control, as the mean over the seeds run (``seeds``), with the seeds'
    sd of the gap (``gap_sd``, NaN for one seed)."""
    if curve.empty:
        raise ValueError(
            "the scale curve is empty: run experiments/scale_curve.py first"
        )
    index = _RUN + ["seed", "pooling", "method"]
    wide = curve.pivot_table(
        index=index + ["task"], columns="checkpoint", values="score"
    ).dropna()
    wide = wide.rename(
        columns={"pct-100": "pretrained", "pct-000": "control"}
    ).reset_index()
    wide = with_average(wide, index, ["pretrained", "control"])
    wide["gap"] = wide["pretrained"] - wide["control"]
    facts = (
        curve.groupby(_RUN)[["epochs", "wordpieces", "held_out_loss"]]
        .mean()
        .reset_index()
    )
    out = (
        wide.groupby(_RUN + ["pooling", "method", "task"])
        .agg(
            seeds=("seed", "nunique"),
            pretrained=("pretrained", "mean"),
            control=("control", "mean"),
            gap=("gap", "mean"),
            gap_sd=("gap", lambda g: g.std(ddof=1) if len(g) > 1 else math.nan),
        )
        .reset_index()
        .merge(facts, on=_RUN)
    )
    out["order"] = out["task"].map({t: i for i, t in enumerate([*TASKS, "Avg."])})
    return (
        out.sort_values(_RUN + ["pooling", "method", "order"])
        .drop(columns="order")
        .reset_index(drop=True)
    )


def step_zero(curve: pd.DataFrame) -> pd.DataFrame:
    """Each seed's random initialisation as scored: one row per seed, pooling, method
    and task (+ ``Avg.`` where all 7 are there), from the step-0 checkpoint. Every run
    of a seed starts from the same network, so its step 0 is one control per seed,
    whatever the run's length or corpus; two runs of a seed that disagree at step 0 did
    not, and raise ``ValueError``."""
    keys = ["seed", "pooling", "method", "task"]
    step0 = curve[curve["checkpoint"] == "pct-000"]
    if step0.empty:
        raise ValueError("the scale curve has no step-0 (pct-000) scores")
    spread = step0.groupby(keys)["score"].agg(lambda s: s.max() - s.min())
    if (spread > 1e-6).any():
        raise ValueError(
            "runs of one seed disagree at step 0, so they did not start from one "
            f"network: {spread[spread > 1e-6].to_dict()}"
        )
    first = step0.drop_duplicates(keys)[keys + ["score"]]
    return with_average(first, keys[:-1]).reset_index(drop=True)
