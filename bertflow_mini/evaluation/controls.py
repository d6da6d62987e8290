"""The random-init controls as numbers: one cell's mean and seed spread, and the
7-dataset mean.

The controls themselves are measured by ``experiments/controls.py`` and shipped
(:func:`bertflow_mini.evaluation.measured.controls_table`); scratch-bert's
pretraining seeds likewise
(:func:`bertflow_mini.evaluation.measured.pretrain_seeds`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from bertflow_mini.data import TASKS
from bertflow_mini.data.pairs import canonical_task
from bertflow_mini.evaluation.measured import (
    CONTROLS_FILE,
    PRETRAIN_SEEDS_FILE,
    Source,
    controls_table,
    pretrain_seeds,
)

__all__ = ["SEEDED_MODEL", "control_summary", "pretrain_seed_spread", "with_average"]

#: The one model whose pretraining seeds were measured (the shipped seeds file is its).
SEEDED_MODEL = "scratch-bert"


def with_average(
    table: pd.DataFrame, by: Sequence[str], values: Sequence[str] = ("score",)
) -> pd.DataFrame:
    """``table`` plus one ``Avg.`` row per ``by`` group that has all 7 datasets: the
    mean of ``values`` over them (each seed's 7-dataset mean, as every table here
    reports it)."""
    groups = table[table["task"].isin(TASKS)].groupby(list(by))
    avg = groups[list(values)].mean()[groups.size() == len(TASKS)].reset_index()
    return pd.concat([table, avg.assign(task="Avg.")], ignore_index=True)


def control_summary(
    shape: str,
    pooling: str,
    method: str,
    task: str,
    init: str = "hf",
    path: Source = CONTROLS_FILE,
    seed: int | None = None,
) -> tuple[float, float, int]:
    """Mean, sd (``ddof=1``; NaN for one seed) and number of init seeds of one control
    cell; the ``Avg.`` cell is each seed's mean over the 7 datasets (only seeds with
    all 7). ``seed`` keeps that one init seed only."""
    table = controls_table(path)
    if table.empty:
        return math.nan, math.nan, 0
    t = table[
        (table["shape"] == shape)
        & (table["init"] == init)
        & (table["pooling"] == pooling)
        & (table["method"] == method)
        & ((table["seed"] == seed) if seed is not None else True)
    ]
    if task == "Avg.":
        t = with_average(t, ["seed"])
    column = task if task == "Avg." else canonical_task(task)
    scores = t.loc[t["task"] == column, "score"].to_numpy()
    if len(scores) == 0:
        return math.nan, math.nan, 0
    sd = float(np.std(scores, ddof=1)) if len(scores) > 1 else math.nan
    return float(np.mean(scores)), sd, len(scores)


def pretrain_seed_spread(
    pooling: str,
    method: str,
    task: str,
    path: Source = PRETRAIN_SEEDS_FILE,
    *,
    model: str = SEEDED_MODEL,
) -> tuple[float, int]:
    """``model``'s sd over pretraining seeds (``ddof=1``) and the number of seeds,
    for STS-B or ``Avg.`` (the only columns the seeds experiment keeps); NaN and 0
    otherwise. Only :data:`SEEDED_MODEL`'s seeds were measured: any other model gets
    NaN and 0, never that model's spread."""
    if model != SEEDED_MODEL:
        return math.nan, 0
    column = "Avg." if task == "Avg." else canonical_task(task)
    scores = [
        s[pooling][method][column]
        for s in pretrain_seeds(path)["seeds"].values()
        if column in s.get(pooling, {}).get(method, {})
    ]
    if len(scores) < 2:
        return math.nan, len(scores)
    return float(np.std(scores, ddof=1)), len(scores)
