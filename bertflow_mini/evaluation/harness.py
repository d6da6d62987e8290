"""How far the papers' own harnesses disagree, and which of our margins exceed that.

bert-base's margin over its random twin
(:func:`bertflow_mini.evaluation.earned.earned`) subtracts a control scored here from
a figure published by another harness (SentEval, the authors' fits). The init-seed
spread of the control does not cover that; two papers' figures for the *same
configuration* (:data:`bertflow_mini.evaluation.published.PUBLISHED`: Li et al. 2020,
Su et al. 2021, Gao et al. 2021, Reimers & Gurevych 2019) measure it, but only where
both aggregate alike: on STS12–16 a ``wmean`` figure against an ``all`` one holds the
aggregation as well as the harness, so such a pair is no measure of the harness.
STS-B and SICK-R have no subsets, so every pair there is comparable.
"""

from __future__ import annotations

import itertools
import math

import pandas as pd

from bertflow_mini.data import TASKS
from bertflow_mini.evaluation.earned import COLUMNS
from bertflow_mini.evaluation.published import PUBLISHED
from bertflow_mini.evaluation.sts import AVG, task_average

__all__ = [
    "GAP_COLUMNS",
    "SPREAD_COLUMNS",
    "beyond_harness",
    "harness_gaps",
    "harness_spread",
]

#: The datasets without subsets: no aggregation, so any two papers' figures compare.
UNAGGREGATED = ("STSB", "SICK-R")
#: The columns of :func:`harness_gaps`'s table.
GAP_COLUMNS = [
    "model", "pooling", "method", "fit", "task", "paper_a", "paper_b", "a", "b",
    "gap", "aggregation", "matched", "quoted",
]  # fmt: skip
#: The columns of :func:`harness_spread`'s table.
SPREAD_COLUMNS = [
    "model", "pooling", "method", "fit", "task", "low", "high", "spread", "papers",
    "aggregations", "matched",
]  # fmt: skip


def _paper(name: str) -> str:
    """``"SimCSE (Table B.3)"`` → ``"SimCSE"``: one paper's two tables, one harness."""
    return name.split(" (")[0]


def _aggregation(task: str, a: str, b: str) -> str:
    """How a pair of figures on ``task`` was aggregated: ``none`` (no subsets), the
    shared aggregation, or ``"wmean vs all"`` (mixed: not comparable)."""
    if task in UNAGGREGATED:
        return "none"
    return a if a == b else f"{a} vs {b}"


def harness_gaps(model: str = "bert-base-uncased") -> pd.DataFrame:
    """Every pair of published figures for one configuration of ``model``.

    One row per (pooling, method, fit), dataset (and the 7-dataset mean ``Avg.``)
    and pair of papers that both print it (two tables of one paper are one harness,
    not a pair): the two figures ``a`` and ``b``, ``gap`` = |a − b|, the pair's
    ``aggregation`` (``none`` on STS-B and SICK-R), ``matched`` (both aggregate
    alike, so the gap is the harnesses' disagreement alone) and ``quoted`` (the two
    figures are identical: one paper reprints the other's, which measures no
    harness)."""
    figures: dict[tuple[str, str, str], dict[str, tuple[str, tuple[float, ...]]]] = {}
    for (paper, mod, pooling, method, fit), (aggregation, scores) in PUBLISHED.items():
        if mod == model:
            by_paper = figures.setdefault((pooling, method, fit), {})
            # one paper's first table stands for it (SimCSE's Table B.3 repeats a row)
            by_paper.setdefault(_paper(paper), (aggregation, scores))
    rows = []
    for (pooling, method, fit), by_paper in figures.items():
        for (pa, (agg_a, sa)), (pb, (agg_b, sb)) in itertools.combinations(
            by_paper.items(), 2
        ):
            values = {t: (sa[i], sb[i]) for i, t in enumerate(TASKS)}
            values[AVG] = (float(task_average(sa)), float(task_average(sb)))
            for task, (a, b) in values.items():
                aggregation = _aggregation(task, agg_a, agg_b)
                rows.append({
                    "model": model, "pooling": pooling, "method": method, "fit": fit,
                    "task": task, "paper_a": pa, "paper_b": pb, "a": a, "b": b,
                    "gap": abs(a - b), "aggregation": aggregation,
                    "matched": " vs " not in aggregation, "quoted": a == b,
                })  # fmt: skip
    return pd.DataFrame(rows, columns=GAP_COLUMNS)


def harness_spread(model: str = "bert-base-uncased") -> pd.DataFrame:
    """The spread of the same configuration's published figures across papers.

    For each (pooling, method, fit) of ``model`` that two or more papers print, per
    dataset and for the 7-dataset mean (``Avg.``): ``low`` and ``high`` (the two
    figures of the widest comparable pair), ``spread`` = high − low, the ``papers``
    and the ``aggregations`` they used, and ``matched``. Where no pair aggregates
    alike (STS12–16 and ``Avg.`` printed under ``wmean`` by one paper and ``all``
    by the other) ``spread`` is NaN and ``low``/``high`` are the smallest and
    largest figure, shown but not a measure of the harness."""
    gaps = harness_gaps(model)
    rows = []
    keys = ["pooling", "method", "fit", "task"]
    for (pooling, method, fit, task), group in gaps.groupby(keys, sort=False):
        papers = list(dict.fromkeys([*group["paper_a"], *group["paper_b"]]))
        matched = group[group["matched"]]
        if len(matched):
            widest = matched.loc[matched["gap"].idxmax()]
            low, high = sorted((float(widest["a"]), float(widest["b"])))
            spread = float(widest["gap"])
        else:
            values = [*group["a"], *group["b"]]
            low, high, spread = float(min(values)), float(max(values)), math.nan
        rows.append({
            "model": model, "pooling": pooling, "method": method, "fit": fit,
            "task": task, "low": low, "high": high, "spread": spread,
            "papers": ", ".join(papers),
            "aggregations": ", ".join(dict.fromkeys(group["aggregation"])),
            "matched": bool(len(matched)),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=SPREAD_COLUMNS)


def _describe(pairs: pd.DataFrame) -> str:
    """``"STSB 0.98, SICK-R 1.14 (BERT-flow vs SimCSE)"``."""
    by_papers = pairs.groupby(["paper_a", "paper_b"], sort=False)
    return "; ".join(
        ", ".join(f"{r.task} {r.gap:.2f}" for r in g.itertuples()) + f" ({a} vs {b})"
        for (a, b), g in by_papers
    )


def beyond_harness(table: pd.DataFrame, fallback: bool = True) -> pd.DataFrame:
    """The published-minus-ours rows of an :func:`earned` table (bert-base) with the
    harness's bar beside each margin.

    The bar is measured under the margin's own aggregation: from every comparable
    pair of published figures of the configuration the published side is (fit
    ``-`` for raw, ``target`` otherwise), on every dataset where the pair is
    comparable — in practice STS-B and SICK-R, since no two papers print a
    bert-base configuration's STS12–16 both under ``wmean`` — quoted figures left
    out. Columns added: ``harness_spread`` (the largest of those gaps: a margin must
    clear every one), ``harness_pairs`` (how many gaps), ``harness_from`` (which
    pairs, and their gaps), ``beyond_harness`` = ``|earned| > harness_spread``;
    ``harness_widest``, the largest comparable gap of *any* configuration of the
    model (what one re-implementation has differed from another), and
    ``beyond_widest``.

    A configuration only one paper prints (raw first-last-avg) takes, with
    ``fallback``, the pairs of the model's configurations with the same method and
    fit (raw: last-avg, BERT-flow against SBERT; said in ``harness_from``); without
    it, NaN and ``beyond_harness`` NA. Rows whose both sides are ours are left out:
    there the harness is the same on both sides."""
    published = table[table["pretrained_source"].str.contains("their harness")]
    gaps = {m: harness_gaps(m) for m in dict.fromkeys(published["model"])}
    out = []
    for _, row in published.iterrows():
        usable = gaps[row["model"]]
        usable = usable[usable["matched"] & ~usable["quoted"]]
        fit = "-" if row["method"] == "none" else "target"
        same = usable[
            (usable["pooling"] == row["pooling"])
            & (usable["method"] == row["method"])
            & (usable["fit"] == fit)
        ]
        source = f"same configuration: {_describe(same)}"
        if same.empty and fallback:
            same = usable[(usable["method"] == row["method"]) & (usable["fit"] == fit)]
            poolings = ", ".join(dict.fromkeys(same["pooling"]))
            source = (
                f"one paper prints it; the same method and fit at {poolings}: "
                f"{_describe(same)}"
            )
        if same.empty:
            spread, source = math.nan, "one paper prints it (or only quotes)"
        else:
            spread = float(same["gap"].max())
        widest = float(usable["gap"].max()) if len(usable) else math.nan
        margin = abs(row["earned"])
        out.append({
            **row.to_dict(), "harness_spread": spread, "harness_pairs": len(same),
            "harness_from": source,
            "beyond_harness": pd.NA if math.isnan(spread) or math.isnan(margin)
            else margin > spread,
            "harness_widest": widest,
            "beyond_widest": pd.NA if math.isnan(widest) or math.isnan(margin)
            else margin > widest,
        })  # fmt: skip
    added = [
        "harness_spread", "harness_pairs", "harness_from", "beyond_harness",
        "harness_widest", "beyond_widest",
    ]  # fmt: skip
    result = pd.DataFrame(out, columns=[*COLUMNS, *added])
    for column in ("beyond_harness", "beyond_widest"):
        result[column] = result[column].astype("boolean")
    return result
