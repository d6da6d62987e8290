"""How far the papers' own harnesses disagree, and which of our margins exceed that.

bert-base's margin over its random twin
(:func:`bertflow_mini.evaluation.earned.earned`) subtracts a control scored here from
a figure published by another harness (SentEval, the authors' fits). The init-seed
spread of the control does not cover that; the spread of the *same configuration's*
published figures across papers
(:data:`bertflow_mini.evaluation.published.PUBLISHED`: Li et al. 2020, Su et al.
2021, Gao et al. 2021, Reimers & Gurevych 2019) is a measure of it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bertflow_mini.data import TASKS
from bertflow_mini.evaluation.earned import COLUMNS
from bertflow_mini.evaluation.published import PUBLISHED

__all__ = ["SPREAD_COLUMNS", "beyond_harness", "harness_spread"]

#: The columns of :func:`harness_spread`'s table.
SPREAD_COLUMNS = [
    "model", "pooling", "method", "fit", "task", "low", "high", "spread", "papers",
    "aggregations",
]  # fmt: skip


def _paper(name: str) -> str:
    """``"SimCSE (Table B.3)"`` → ``"SimCSE"``: one paper's two tables, one harness."""
    return name.split(" (")[0]


def harness_spread(model: str = "bert-base-uncased") -> pd.DataFrame:
    """The spread of the same configuration's published figures across papers.

    For each (pooling, method, fit) of ``model`` that two or more papers print
    (:data:`~bertflow_mini.evaluation.published.PUBLISHED`), per dataset and for the
    7-dataset mean (``Avg.``): ``low`` and ``high`` (the smallest and largest
    published figure), ``spread`` = high − low, the ``papers`` and the
    ``aggregations`` they used. STS-B and SICK-R have no subsets, so there the spread
    is the harnesses' own disagreement; on STS12–16 and ``Avg.`` it also holds the
    aggregation (``wmean`` against ``all``) where the papers differ in it."""
    configs: dict[tuple[str, str, str], list[tuple[str, str, tuple[float, ...]]]] = {}
    for (paper, mod, pooling, method, fit), (aggregation, scores) in PUBLISHED.items():
        if mod == model:
            configs.setdefault((pooling, method, fit), []).append(
                (_paper(paper), aggregation, scores)
            )
    rows = []
    for (pooling, method, fit), entries in configs.items():
        papers = list(dict.fromkeys(p for p, _, _ in entries))
        if len(papers) < 2:
            continue
        aggregations = ", ".join(dict.fromkeys(a for _, a, _ in entries))
        by_task = {t: [s[i] for _, _, s in entries] for i, t in enumerate(TASKS)}
        by_task["Avg."] = [float(np.mean(s)) for _, _, s in entries]
        for task, values in by_task.items():
            rows.append({
                "model": model, "pooling": pooling, "method": method, "fit": fit,
                "task": task, "low": min(values), "high": max(values),
                "spread": max(values) - min(values), "papers": ", ".join(papers),
                "aggregations": aggregations,
            })  # fmt: skip
    return pd.DataFrame(rows, columns=SPREAD_COLUMNS)


def beyond_harness(table: pd.DataFrame, fallback: bool = True) -> pd.DataFrame:
    """The published-minus-ours rows of an :func:`earned` table (bert-base) with the
    harness's spread beside each margin: ``harness_spread`` (from
    :func:`harness_spread`, the configuration the published side is: fit ``-`` for
    raw, ``target`` otherwise), ``harness_from`` (which configuration gave it) and
    ``beyond_harness`` = ``|earned| > harness_spread``.

    A configuration only one paper prints (raw first-last-avg) gets, with
    ``fallback``, the largest spread on that dataset of the configurations with the same
    fit (raw: last-avg, BERT-flow against SBERT; said in ``harness_from``); without it,
    NaN and ``beyond_harness`` NA. Rows whose both
    sides are ours are left out: there the harness is the same on both sides."""
    published = table[table["pretrained_source"].str.contains("their harness")]
    spreads = {m: harness_spread(m) for m in dict.fromkeys(published["model"])}
    out = []
    for _, row in published.iterrows():
        s = spreads[row["model"]]
        fit = "-" if row["method"] == "none" else "target"
        on_task = s[s["task"] == row["task"]]
        same = on_task[
            (on_task["pooling"] == row["pooling"])
            & (on_task["method"] == row["method"])
            & (on_task["fit"] == fit)
        ]
        if len(same) and float(same["spread"].iloc[0]) == 0:
            # identical figures: one paper quotes the other, which measures no harness
            spread = math.nan
            source = f"one figure, quoted by {same['papers'].iloc[0]}"
        elif len(same):
            spread = float(same["spread"].iloc[0])
            source = f"same configuration: {same['papers'].iloc[0]}"
        elif fallback and (on_task["fit"] == fit).any():
            alike = on_task[on_task["fit"] == fit]
            widest = alike.loc[alike["spread"].idxmax()]
            spread = float(widest["spread"])
            source = (
                f"one paper prints it; the largest over configurations fitted {fit}: "
                f"{widest['pooling']} {widest['method']} fit {widest['fit']} "
                f"({widest['papers']})"
            )
        else:
            spread, source = math.nan, "one paper prints it"
        beyond = (
            pd.NA
            if math.isnan(spread) or math.isnan(row["earned"])
            else abs(row["earned"]) > spread
        )
        out.append({**row.to_dict(), "harness_spread": spread, "harness_from": source,
                    "beyond_harness": beyond})  # fmt: skip
    result = pd.DataFrame(
        out, columns=[*COLUMNS, "harness_spread", "harness_from", "beyond_harness"]
    )
    result["beyond_harness"] = result["beyond_harness"].astype("boolean")
    return result
