"""The paper's unsupervised question-answering test, and an offline analogue.

Li et al. (2020, section 4.2, Table 4) turn QNLI (Wang et al. 2019, GLUE; questions and sentences
from SQuAD, each pair labelled ``entailment`` when the sentence answers the question) into an
unsupervised test: score each pair by the cosine of the two sentence embeddings, and report the
area under the ROC curve (AUC) of that score for the labels, on the dev set. AUC is the probability
that a random positive pair scores above a random negative one: 0.5 is chance, whatever the scale.

QNLI is not part of the local mirror; :func:`load_qnli` reads it from ``$BERTFLOW_DATA/glue/QNLI``
or downloads GLUE's official archive into the data cache, as the STS data are (Colab). The offline
analogue needs no new data: SICK's own ``entailment_judgment`` column (:func:`load_sick_entailment`),
``ENTAILMENT`` against ``NEUTRAL`` and ``CONTRADICTION``, scored the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertflow_mini.evaluation.published import QNLI_TABLE4

#: Li et al. (2020) Table 4 (QNLI dev AUC × 100): kept in :mod:`bertflow_mini.evaluation.published`
#: with the papers' other figures and its exact citation.
PUBLISHED_QNLI: dict[str, float] = QNLI_TABLE4
QNLI_SPLITS = {"train": "train.tsv", "dev": "dev.tsv"}  # test.tsv has no labels
SICK_FILES = {"train": "SICK_train.txt", "trial": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


@dataclass(frozen=True)
class LabelledPairs:
    """Sentence pairs with a binary label (1 = entails / answers)."""

    name: str
    first: list[str]
    second: list[str]
    labels: np.ndarray

    def __post_init__(self) -> None:
        if not len(self.first) == len(self.second) == len(self.labels):
            raise ValueError(f"{self.name}: first, second and labels differ in length")

    def __len__(self) -> int:
        return len(self.labels)

    def sentences(self) -> list[str]:
        """Every distinct sentence, in order of first appearance."""
        return list(dict.fromkeys(s for pair in zip(self.first, self.second) for s in pair))


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve × 100 (Mann–Whitney U / (n₊ n₋); ties count one half)."""
    from scipy.stats import mannwhitneyu

    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels)
    if scores.shape != labels.shape or scores.ndim != 1:
        raise ValueError(f"scores and labels must be 1-D of equal length, got {scores.shape}, {labels.shape}")
    if not np.isfinite(scores).all():
        raise ValueError("scores contain NaN or infinity")
    pos, neg = scores[labels == 1], scores[labels == 0]
    if len(pos) == 0 or len(neg) == 0 or len(pos) + len(neg) != len(labels):
        raise ValueError("labels must be 0/1 with at least one of each")
    return float(mannwhitneyu(pos, neg).statistic / (len(pos) * len(neg)) * 100.0)


def load_sick_entailment(split: str = "test", root: str | Path | None = None) -> LabelledPairs:
    """SICK pairs of ``split`` labelled 1 for ``ENTAILMENT``, 0 for ``NEUTRAL`` or ``CONTRADICTION``
    (the first ``$BERTFLOW_MAX_PAIRS`` only, when that cap is set, as for every STS split)."""
    from bertflow_mini.data.datasets import data_root, max_pairs, numbered_lines

    if split not in SICK_FILES:
        raise ValueError(f"SICK has splits {tuple(SICK_FILES)}, not {split!r}")
    path = data_root(root, need="sick") / "sick" / SICK_FILES[split]
    first, second, labels = [], [], []
    for number, line in numbered_lines(path, "SICK-R"):
        fields = line.split("\t")
        if number == 1:
            if len(fields) != 5 or fields[4] != "entailment_judgment":
                raise ValueError(f"{path}:1: expected SICK's header ending in entailment_judgment")
            continue
        if len(fields) != 5 or fields[4] not in ("ENTAILMENT", "NEUTRAL", "CONTRADICTION"):
            raise ValueError(f"{path}:{number}: expected 5 fields ending in a SICK entailment label")
        first.append(fields[1])
        second.append(fields[2])
        labels.append(int(fields[4] == "ENTAILMENT"))
    n = max_pairs()  # $BERTFLOW_MAX_PAIRS: the same first pairs that load_sts("SICK-R", split) keeps
    return LabelledPairs(f"SICK-E/{split}", first[:n], second[:n], np.asarray(labels[:n]))


def load_qnli(split: str = "dev", root: str | Path | None = None) -> LabelledPairs:
    """QNLI pairs (question, sentence) of ``split``, labelled 1 for ``entailment``.

    Looks in ``root``, ``$BERTFLOW_DATA`` and the data cache for ``glue/QNLI/<split>.tsv``; downloads
    GLUE's official ``QNLIv2.zip`` (:data:`bertflow_mini.data.URLS`) into the cache when none has it.
    """
    from bertflow_mini.data.datasets import data_root, numbered_lines

    if split not in QNLI_SPLITS:
        raise ValueError(f"QNLI has labelled splits {tuple(QNLI_SPLITS)}, not {split!r}")
    path = data_root(root, need="glue/QNLI") / "glue" / "QNLI" / QNLI_SPLITS[split]
    first, second, labels = [], [], []
    for number, line in numbered_lines(path, "QNLI"):
        fields = line.split("\t")
        if number == 1:
            if fields != ["index", "question", "sentence", "label"]:
                raise ValueError(f"{path}:1: expected the header index, question, sentence, label")
            continue
        if len(fields) != 4 or fields[3] not in ("entailment", "not_entailment"):
            raise ValueError(f"{path}:{number}: expected 4 fields ending in entailment/not_entailment")
        first.append(fields[1])
        second.append(fields[2])
        labels.append(int(fields[3] == "entailment"))
    return LabelledPairs(f"QNLI/{split}", first, second, np.asarray(labels))


def cosine_auc(pairs: LabelledPairs, embed, post=None, fit_on: list[str] | None = None) -> float:
    """AUC × 100 of the cosine between the two sentences of each pair; ``embed`` maps sentences to
    ``(n, d)``; ``post`` (unfitted post-processor, or None) is fitted on ``fit_on`` (default: every
    sentence of ``pairs``, the paper's "target" fit) and applied to both sides first."""
    from bertflow_mini.evaluation.sts import cosine_scores

    a, b = embed(pairs.first), embed(pairs.second)
    if post is not None:
        post.fit(embed(fit_on if fit_on is not None else pairs.sentences()))
        a, b = post.transform(a), post.transform(b)
    return auc(cosine_scores(a, b), pairs.labels)
