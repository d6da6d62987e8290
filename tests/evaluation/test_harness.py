"""The harness bar: two papers' figures for one configuration, compared only where both
aggregate alike. Oracles: the figures typed from ../shared/reference/published-results.md
(not from published.py) and differences worked out by hand; a made-up table of three
papers for the pairing and the aggregation rule."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bertflow_mini.data import TASKS
from bertflow_mini.evaluation import earned as E
from bertflow_mini.evaluation import harness as H

# bert-base, first-last-avg, from the reference file: Li et al. 2020 and Su et al. 2021 under
# wmean; SimCSE's Table C.1 (target fits) and Table 5 (NLI fits) under "all".
LI_FLOW_TARGET = (70.72, 63.11, 63.48, 72.14, 68.42, 73.77, 75.37)
SIMCSE_FLOW_TARGET = (71.70, 61.97, 53.15, 78.38, 66.02, 62.09, 70.84)
LI_FLOW_NLI_STSB, SIMCSE_FLOW_NLI_STSB = 58.56, 68.66
SU_WHITENING_SICKR, SIMCSE_WHITENING_SICKR = 60.6, 60.40
# last-avg raw: Li et al. (wmean) and SBERT as Li et al. quote it ("all")
LI_RAW_LAST, SBERT_RAW_LAST = (47.29, 58.21), (46.35, 58.40)


def test_every_pair_is_listed_with_its_aggregation():
    gaps = H.harness_gaps().set_index(["pooling", "method", "fit", "task"]).sort_index()
    flow = gaps.loc[("first-last-avg", "flow", "target")]
    for i, task in enumerate(TASKS):
        assert flow.loc[task, "gap"] == pytest.approx(
            abs(LI_FLOW_TARGET[i] - SIMCSE_FLOW_TARGET[i])
        )
    # STS-B and SICK-R have no subsets: comparable; STS12-16 and the mean: wmean against all
    assert flow.loc["STSB", "aggregation"] == "none" and flow.loc["STSB", "matched"]
    assert flow.loc["STS12", "aggregation"] == "wmean vs all"
    assert not flow.loc[
        ["STS12", "STS13", "STS14", "STS15", "STS16", "Avg."], "matched"
    ].any()
    # the 10.1-point gap of the NLI-fitted flow on STS-B
    nli = gaps.loc[("first-last-avg", "flow", "nli", "STSB")]
    assert nli["gap"] == pytest.approx(10.10) and nli["matched"]
    assert nli["gap"] == pytest.approx(SIMCSE_FLOW_NLI_STSB - LI_FLOW_NLI_STSB)
    # SimCSE prints Su et al.'s 71.34 again: quoted, not a second measurement
    assert gaps.loc[("first-last-avg", "whitening", "target", "STSB"), "quoted"]
    # two tables of one paper are one harness: no SimCSE-vs-SimCSE pair
    assert not (gaps["paper_a"] == gaps["paper_b"]).any()
    assert ("cls", "simcse-unsup", "-", "STSB") not in gaps.index


def test_spread_is_nan_where_the_aggregations_differ():
    spread = H.harness_spread().set_index(["pooling", "method", "fit", "task"])
    row = spread.loc[("first-last-avg", "flow", "target", "STS12")]
    assert np.isnan(row["spread"]) and not row["matched"]
    assert (row["low"], row["high"]) == (53.15, 63.48)
    assert np.isnan(
        spread.loc[("first-last-avg", "whitening", "target", "Avg."), "spread"]
    )
    assert spread.loc[("last-avg", "none", "-", "STSB"), "spread"] == pytest.approx(
        LI_RAW_LAST[0] - SBERT_RAW_LAST[0]
    )
    assert spread.loc[("last-avg", "none", "-", "STSB"), "papers"] == "BERT-flow, SBERT"


def test_three_papers_give_three_pairs_and_only_like_aggregations_compare(monkeypatch):
    scores = {
        "A": ("wmean", (70.0, 60.0, 50.0, 50.0, 50.0, 50.0, 50.0)),
        "B": ("wmean", (71.0, 60.5, 53.0, 50.0, 50.0, 50.0, 50.0)),
        "C (Table 9)": ("all", (68.0, 60.0, 40.0, 50.0, 50.0, 50.0, 50.0)),
    }
    monkeypatch.setattr(
        H,
        "PUBLISHED",
        {(p, "toy", "avg", "flow", "target"): v for p, v in scores.items()},
    )
    gaps = H.harness_gaps("toy")
    assert len(gaps) == 3 * (len(TASKS) + 1)
    sts12 = gaps[gaps["task"] == "STS12"].set_index(["paper_a", "paper_b"])
    # A and B both wmean: 3 points apart, comparable; C ("all") against either is not
    assert (
        sts12.loc[("A", "B"), "gap"] == pytest.approx(3.0)
        and sts12.loc[("A", "B"), "matched"]
    )
    assert not sts12.loc[("A", "C"), "matched"] and not sts12.loc[("B", "C"), "matched"]
    spread = H.harness_spread("toy").set_index("task")
    # STS-B: the widest of the three pairs, B against C
    assert spread.loc["STSB", "spread"] == pytest.approx(3.0)
    assert (spread.loc["STSB", "low"], spread.loc["STSB", "high"]) == (68.0, 71.0)
    assert spread.loc["STS12", "spread"] == pytest.approx(3.0)
    assert spread.loc["STS12", "aggregations"] == "wmean, wmean vs all"


@pytest.fixture()
def bert_base_table(tmp_path):
    """earned() for bert-base, first-last-avg and last-avg, on a made-up control file."""
    records = [
        {"shape": "bert-base", "init": "hf", "seed": seed, "pooling": p,
         "method": m, "task": t, "score": 40.0 + seed}
        for p in ("last-avg", "first-last-avg")
        for m in ("none", "whitening", "flow")
        for t in TASKS
        for seed in (0, 1, 2)
    ]  # fmt: skip
    path = tmp_path / "controls.json"
    path.write_text(json.dumps({"records": records}))
    return E.earned("bert-base-uncased", controls=path)


def test_each_margin_meets_every_comparable_pair_of_its_configuration(bert_base_table):
    out = H.beyond_harness(bert_base_table).set_index(["pooling", "method", "task"])
    assert len(out) == len(bert_base_table)
    # the flow: STS-B (0.98) and SICK-R (1.14); the bar is the larger, for STS-B and the mean
    flow_gaps = [
        abs(LI_FLOW_TARGET[0] - SIMCSE_FLOW_TARGET[0]),
        abs(LI_FLOW_TARGET[1] - SIMCSE_FLOW_TARGET[1]),
    ]
    for task in ("STSB", "Avg."):
        flow = out.loc[("first-last-avg", "flow", task)]
        assert (
            flow["harness_spread"]
            == pytest.approx(max(flow_gaps))
            == pytest.approx(1.14)
        )
        assert flow["harness_pairs"] == 2
        assert bool(flow["beyond_harness"]) == (abs(flow["earned"]) > 1.14)
    # whitening: STS-B is one figure quoted twice, so SICK-R's 0.20 is its only pair
    white = out.loc[("first-last-avg", "whitening", "STSB")]
    assert white["harness_spread"] == pytest.approx(
        SU_WHITENING_SICKR - SIMCSE_WHITENING_SICKR
    )
    assert white["harness_pairs"] == 1 and "SICK-R 0.20" in white["harness_from"]
    # raw first-last-avg: one paper; the raw last-avg pairs stand in (0.94 on STS-B)
    raw = out.loc[("first-last-avg", "none", "Avg.")]
    assert raw["harness_spread"] == pytest.approx(LI_RAW_LAST[0] - SBERT_RAW_LAST[0])
    assert raw["harness_from"].startswith("one paper prints it")
    # the widest comparable gap of any configuration: the NLI-fitted flow on STS-B
    assert out["harness_widest"].tolist() == pytest.approx([10.10] * len(out))
    assert (out["beyond_widest"] == (out["earned"].abs() > 10.10)).all()
    strict = H.beyond_harness(bert_base_table, fallback=False).set_index(
        ["pooling", "method", "task"]
    )
    assert np.isnan(strict.loc[("first-last-avg", "none", "STSB"), "harness_spread"])
    assert pd.isna(strict.loc[("first-last-avg", "none", "STSB"), "beyond_harness"])


def test_rows_whose_both_sides_are_ours_are_left_out(bert_base_table):
    ours = bert_base_table.assign(pretrained_source="ours: scratch-bert, same harness")
    assert H.beyond_harness(ours).empty
