"""The papers' own numbers, printed beside ours (Spearman × 100; columns in the paper's order).

Transcribed from the papers' tables: Li et al. 2020 (BERT-flow, Tables 2–3), Su et al. 2021
(whitening), Reimers & Gurevych 2019 (SBERT, as quoted by Li et al.), Gao et al. 2021 (SimCSE);
beyond STS, Li et al.'s QNLI AUCs (Table 4) and SimCSE's pooling ablation (Table 6).
``aggregation`` says how each paper pooled STS12–16 (see :mod:`bertflow_mini.evaluation.sts`).
"""

from __future__ import annotations

import pandas as pd

from bertflow_mini.data import TASKS
from bertflow_mini.evaluation.sts import AVG, task_average

COLUMNS = TASKS  # the papers' column order is the package's task order (one list: bertflow_mini.data.TASKS)

#: (paper, model, pooling, method, fit) -> (aggregation, scores in COLUMNS order)
PUBLISHED: dict[tuple[str, str, str, str, str], tuple[str, tuple[float, ...]]] = {
    # Li et al. 2020, "On the Sentence Embeddings from Pre-trained Language Models"
    ("BERT-flow", "bert-base-uncased", "last-avg", "none", "-"): (
        "wmean",
        (47.29, 58.21, 49.07, 55.92, 54.75, 62.75, 65.19),
    ),
    ("BERT-flow", "bert-base-uncased", "first-last-avg", "none", "-"): (
        "wmean",
        (59.04, 63.75, 57.84, 61.95, 62.48, 70.95, 69.81),
    ),
    ("BERT-flow", "bert-base-uncased", "first-last-avg", "flow", "nli"): (
        "wmean",
        (58.56, 65.44, 59.54, 64.69, 64.66, 72.92, 71.84),
    ),
    ("BERT-flow", "bert-base-uncased", "first-last-avg", "flow", "target"): (
        "wmean",
        (70.72, 63.11, 63.48, 72.14, 68.42, 73.77, 75.37),
    ),
    ("BERT-flow", "bert-large-uncased", "last-avg", "none", "-"): (
        "wmean",
        (46.99, 53.74, 46.89, 53.32, 49.27, 56.54, 61.63),
    ),
    ("BERT-flow", "bert-large-uncased", "first-last-avg", "none", "-"): (
        "wmean",
        (59.56, 60.22, 57.68, 61.37, 61.02, 68.04, 70.32),
    ),
    ("BERT-flow", "bert-large-uncased", "first-last-avg", "flow", "nli"): (
        "wmean",
        (68.09, 64.62, 61.72, 66.05, 66.34, 74.87, 74.47),
    ),
    ("BERT-flow", "bert-large-uncased", "first-last-avg", "flow", "target"): (
        "wmean",
        (72.26, 62.50, 65.20, 73.39, 69.42, 74.92, 77.63),
    ),
    # Reimers & Gurevych 2019 (SBERT), as quoted in Li et al. 2020
    ("SBERT", "glove-840B-300d", "avg", "none", "-"): (
        "all",
        (58.02, 53.76, 55.14, 70.66, 59.73, 68.25, 63.66),
    ),
    ("SBERT", "bert-base-uncased", "last-avg", "none", "-"): (
        "all",
        (46.35, 58.40, 38.78, 57.98, 57.98, 63.15, 61.06),
    ),
    ("SBERT", "bert-base-uncased", "cls", "none", "-"): (
        "all",
        (16.50, 42.63, 20.16, 30.01, 20.09, 36.88, 38.03),
    ),
    # Su et al. 2021, "Whitening Sentence Representations for Better Semantics and Faster Retrieval"
    ("whitening", "bert-base-uncased", "first-last-avg", "whitening", "target"): (
        "wmean",
        (71.34, 60.6, 63.62, 73.02, 69.23, 74.52, 72.15),
    ),
    ("whitening", "bert-base-uncased", "first-last-avg", "whitening-256", "target"): (
        "wmean",
        (71.43, 62.2, 63.89, 73.76, 69.08, 74.59, 74.40),
    ),
    ("whitening", "bert-base-uncased", "first-last-avg", "whitening", "nli"): (
        "wmean",
        (68.19, 63.6, 61.69, 65.70, 66.02, 75.11, 73.11),
    ),
    ("whitening", "bert-large-uncased", "first-last-avg", "whitening", "target"): (
        "wmean",
        (72.14, 59.3, 64.02, 72.67, 68.93, 73.57, 72.52),
    ),
    ("whitening", "bert-large-uncased", "first-last-avg", "whitening-384", "target"): (
        "wmean",
        (72.48, 60.8, 64.34, 74.60, 69.64, 74.68, 75.90),
    ),
    # Gao et al. 2021, SimCSE, under "all" unless said: unsupervised SimCSE; its Table 5 rows for BERT-flow and
    # whitening are the NLI fits; its Table C.1 re-evaluates the target fits
    ("SimCSE", "bert-base-uncased", "cls", "simcse-unsup", "-"): (
        "all",
        (76.85, 72.23, 68.40, 82.41, 74.38, 80.91, 78.56),
    ),
    # the same model under "wmean", from SimCSE's Table B.3: the like-for-like row beside the others
    ("SimCSE (Table B.3)", "bert-base-uncased", "cls", "simcse-unsup", "-"): (
        "wmean",
        (76.85, 72.23, 70.14, 79.56, 75.91, 81.46, 79.07),
    ),
    ("SimCSE", "bert-base-uncased", "first-last-avg", "flow", "nli"): (
        "all",
        (68.66, 64.47, 58.40, 67.10, 60.85, 75.16, 71.22),
    ),
    ("SimCSE", "bert-base-uncased", "first-last-avg", "whitening", "nli"): (
        "all",
        (68.24, 63.73, 57.83, 66.90, 60.90, 75.08, 71.31),
    ),
    ("SimCSE", "bert-base-uncased", "first-last-avg", "flow", "target"): (
        "all",
        (71.70, 61.97, 53.15, 78.38, 66.02, 62.09, 70.84),
    ),
    ("SimCSE", "bert-base-uncased", "first-last-avg", "whitening", "target"): (
        "all",
        (71.34, 60.40, 42.88, 77.77, 66.28, 63.60, 67.58),
    ),
}

#: Li et al. 2020, Table 6 (arXiv:2011.05864, section 4.4): Spearman × 100 between similarities on the
#: STS-B *validation* set, bert-base. Not in ../shared/reference/published-results.md; transcribed
#: from the paper. "edit distance" is between the two sentences of a pair (unit not stated).
LEXICAL_TABLE6: dict[str, dict[str, float]] = {
    "gold similarity": {"edit distance": -24.61, "gold similarity": 100.00},
    "BERT-induced similarity": {"edit distance": -50.49, "gold similarity": 59.30},
    "flow-induced similarity": {"edit distance": -28.01, "gold similarity": 74.09},
}


#: Li et al. 2020 (EMNLP, "On the Sentence Embeddings from Pre-trained Language Models",
#: arXiv:2011.05864), section 4.2 "Unsupervised Question-Answer Entailment", Table 4: AUC × 100 of the
#: cosine of question and sentence embeddings on the QNLI development set (Wang et al. 2019, GLUE),
#: for SBERT-style NLI-fine-tuned BERTs with last2avg (= first-last) pooling, raw and with BERT-flow
#: fitted on NLI sentences or on the target (QNLI) sentences. Not in
#: ../shared/reference/published-results.md; transcribed from the paper's Table 4.
QNLI_TABLE4: dict[str, float] = {
    "BERT-base-NLI, last2avg": 70.30,
    "BERT-base-NLI-flow (NLI)": 72.52,
    "BERT-base-NLI-flow (target)": 76.17,
    "BERT-large-NLI, last2avg": 70.41,
    "BERT-large-NLI-flow (NLI)": 74.19,
    "BERT-large-NLI-flow (target)": 77.09,
}

#: Gao et al. 2021 (EMNLP, "SimCSE: Simple Contrastive Learning of Sentence Embeddings",
#: arXiv:2104.08821), section 6.3, Table 6 "Ablation studies of different pooling methods in
#: unsupervised and supervised SimCSE": Spearman × 100 on the STS-B *development* set, BERT-base.
#: "[CLS] w/ MLP (train)" = the MLP on [CLS] during training, removed at test time (their default
#: for unsupervised SimCSE). Pooler → (unsupervised, supervised).
SIMCSE_TABLE6: dict[str, tuple[float, float]] = {
    "[CLS] w/ MLP": (81.7, 86.2),
    "[CLS] w/ MLP (train)": (82.5, 85.8),
    "[CLS] w/o MLP": (80.9, 86.2),
    "First-last avg.": (81.2, 86.1),
}


#: Table 1 of Li et al. 2020 (bert-base, Wikipedia counts), per frequency-rank bucket: the mean ℓ2
#: norm, then the mean k-NN ℓ2 distance (k = 3, 5, 7), then the mean k-NN dot product (k = 3, 5, 7);
#: the paper gives no bucket sizes. :func:`bertflow_mini.geometry.frequency.published_table1` shapes it.
LI_TABLE1: dict[str, tuple[float, ...]] = {
    "[0,100)": (0.95, 0.77, 0.83, 0.87, 0.73, 0.73, 0.72),
    "[100,500)": (1.04, 0.93, 0.99, 1.04, 0.92, 0.91, 0.90),
    "[500,5K)": (1.22, 1.16, 1.22, 1.26, 1.20, 1.19, 1.17),
    "[5K,…)": (1.45, 1.30, 1.34, 1.37, 1.63, 1.61, 1.60),
}


def published_table(model: str | None = None, paper: str | None = None) -> pd.DataFrame:
    """The published rows (optionally of one model / one paper) as a DataFrame with an ``Avg.`` column."""
    rows = []
    for (pap, mod, pooling, method, fit), (agg, scores) in PUBLISHED.items():
        if (model and mod != model) or (paper and pap != paper):
            continue
        row: dict[str, str | float] = {
            "paper": pap,
            "model": mod,
            "pooling": pooling,
            "method": method,
            "fit": fit,
            "aggregation": agg,
        }
        row.update(dict(zip(COLUMNS, scores)))
        row[AVG] = round(float(task_average(scores)), 2)
        rows.append(row)
    return pd.DataFrame(rows)
