"""Sentence pairs with a binary label, for the unsupervised entailment test
(:mod:`bertflow_mini.evaluation.entailment`): SICK's own entailment labels and GLUE's QNLI.

Each loader reads the official files from ``root``, ``$BERTFLOW_DATA`` or the cache; else the
hub's copy (:data:`~bertflow_mini.data.hub_copies.SICK_HUB`,
:data:`~bertflow_mini.data.hub_copies.QNLI_HUB`), used only when it passes its check (SICK: SemEval's
split, by pair count and score sum; QNLI: the pinned files' SHA-256 and GLUE's row counts); else the
official archive, downloaded and checked (:mod:`bertflow_mini.data.layout`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertflow_mini.data import downloads, hub_copies
from bertflow_mini.data.checksums import QNLI_ROWS
from bertflow_mini.data.layout import (
    HUB_FAILURES,
    QNLI_FILES,
    SICK_FILES,
    SOURCES,
    data_root,
    numbered_lines,
    official_present,
)
from bertflow_mini.data.pairs import gold_score, max_pairs
from bertflow_mini.data.sts import SICK_LABELS, read_sick, sick_path


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
        return list(
            dict.fromkeys(s for pair in zip(self.first, self.second) for s in pair)
        )


def _hub_failed(key: str, repo: str, err: Exception) -> None:
    url = downloads.HUB_URL.format(f"datasets/{repo}")
    why = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    HUB_FAILURES[SOURCES[key].target] = f"The hub copy {url} was not used: {why}."


def sick_from_hub(split: str) -> list[tuple[str, str, float, str]]:
    """SICK's ``split`` from :data:`~bertflow_mini.data.hub_copies.SICK_HUB`, as :func:`read_sick`
    gives it; a ValueError unless it is SemEval's split (its pair count and score sum)."""
    repo, revision = hub_copies.SICK_HUB
    path = downloads.hub_download(repo, revision, hub_copies.SICK_HUB_FILES[split])
    columns = {
        "a": ("sentence_A",),
        "b": ("sentence_B",),
        "score": ("relatedness_score",),
        "label": ("entailment_label", "entailment_judgment", "label"),
    }
    cols = hub_copies.read_parquet(path, columns)
    rows = []
    for i, (a, b, score, label) in enumerate(zip(*cols.values())):
        if isinstance(label, int) and 0 <= label < len(SICK_LABELS):
            # the old script's ClassLabel: entailment, neutral, …
            label = SICK_LABELS[label]
        if str(label).upper() not in SICK_LABELS:
            raise ValueError(
                f"{path}: row {i}: {label!r} is not a SICK label {SICK_LABELS}"
            )
        rows.append(
            (a, b, gold_score(str(score), f"{path}: row {i}", "SICK-R"), label.upper())
        )
    _, n, total = next(
        block for block in hub_copies.BLOCKS["SICK-R"] if block[0] == split
    )
    got = sum(r[2] for r in rows)
    if len(rows) != n or abs(got - total) > 0.01:
        raise ValueError(
            f"{path} ({repo}@{revision}) is not SemEval's SICK {split} split: {len(rows)} pairs "
            f"with scores summing to {got:.3f}, not {n} and {total}"
        )
    return rows


def load_sick_entailment(
    split: str = "test", root: str | Path | None = None
) -> LabelledPairs:
    """SICK pairs of ``split`` labelled 1 for ``ENTAILMENT``, 0 for ``NEUTRAL`` or
    ``CONTRADICTION`` (the first ``$BERTFLOW_MAX_PAIRS`` only, when that cap is set, as for every
    STS split)."""
    if split not in SICK_FILES:
        raise ValueError(f"SICK has splits {tuple(SICK_FILES)}, not {split!r}")
    rows = None
    if root is None and not official_present("SICK-R"):
        try:
            rows = sick_from_hub(split)
        except (
            OSError,
            ValueError,
        ) as err:  # unreachable or not SemEval's: the archive next
            _hub_failed("SICK-R", hub_copies.SICK_HUB[0], err)
    if rows is None:
        rows = read_sick(sick_path(split, root))
    # $BERTFLOW_MAX_PAIRS: the same first pairs that load_sts("SICK-R", split) keeps
    n = max_pairs()
    first, second = [r[0] for r in rows[:n]], [r[1] for r in rows[:n]]
    labels = np.asarray([int(r[3] == "ENTAILMENT") for r in rows[:n]])
    return LabelledPairs(f"SICK-E/{split}", first, second, labels)


def _qnli_from_files(path: Path) -> tuple[list[str], list[str], list[int]]:
    """GLUE's tsv: a header ``index question sentence label``, then one pair per line."""
    first, second, labels = [], [], []
    for number, line in numbered_lines(path, "QNLI"):
        fields = line.split("\t")
        if number == 1:
            if fields != ["index", "question", "sentence", "label"]:
                raise ValueError(
                    f"{path}:1: expected the header index, question, sentence, label"
                )
            continue
        if len(fields) != 4 or fields[3] not in ("entailment", "not_entailment"):
            raise ValueError(
                f"{path}:{number}: expected 4 fields ending in entailment/not_entailment"
            )
        first.append(fields[1])
        second.append(fields[2])
        labels.append(int(fields[3] == "entailment"))
    return first, second, labels


def qnli_from_hub(split: str) -> tuple[list[str], list[str], list[int]]:
    """QNLI's ``split`` from :data:`~bertflow_mini.data.hub_copies.QNLI_HUB`; a ValueError unless
    the file has the pinned SHA-256 and GLUE's row count."""
    repo, revision = hub_copies.QNLI_HUB
    file, digest = hub_copies.QNLI_HUB_FILES[split]
    path = downloads.hub_download(repo, revision, file)
    if downloads.sha256(path) != digest:
        raise ValueError(
            f"{path}: its SHA-256 is not that of {repo}@{revision[:7]}/{file}"
        )
    cols = hub_copies.read_parquet(
        path, {"q": ("question",), "s": ("sentence",), "label": ("label",)}
    )
    rows = QNLI_ROWS[QNLI_FILES[split]]
    if len(cols["label"]) != rows or set(cols["label"]) - {0, 1}:
        raise ValueError(
            f"{path}: expected {rows} rows labelled 0/1, got {len(cols['label'])}"
        )
    # 0 = entailment
    return (
        cols["q"],
        cols["s"],
        [int(label == 0) for label in cols["label"]],
    )


def load_qnli(split: str = "dev", root: str | Path | None = None) -> LabelledPairs:
    """QNLI pairs (question, sentence) of ``split``, labelled 1 for ``entailment``.

    ``glue/QNLI/<split>.tsv`` from ``root``, ``$BERTFLOW_DATA`` or the cache; else the hub's
    parquet copy (checked); else GLUE's official ``QNLIv2.zip``, downloaded into the cache.
    """
    if split not in QNLI_FILES:
        raise ValueError(f"QNLI has labelled splits {tuple(QNLI_FILES)}, not {split!r}")
    columns = None
    if root is None and not official_present("QNLI"):
        try:
            columns = qnli_from_hub(split)
        except (OSError, ValueError) as err:  # unreachable or not the pinned files
            _hub_failed("QNLI", hub_copies.QNLI_HUB[0], err)
    if columns is None:
        target = SOURCES["QNLI"].target
        columns = _qnli_from_files(
            data_root(root, need=target) / target / QNLI_FILES[split]
        )
    first, second, labels = columns
    return LabelledPairs(f"QNLI/{split}", list(first), list(second), np.asarray(labels))
