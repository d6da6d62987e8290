"""What a loaded dataset is: scored sentence pairs (:class:`STSPairs`), the task names and their
splits, and ``$BERTFLOW_MAX_PAIRS``, the cap on pairs per split for quick runs."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import numpy as np

#: Set to a positive integer N to keep only the first N pairs of every loaded split.
MAX_PAIRS_ENV = "BERTFLOW_MAX_PAIRS"

#: The paper's column order.
TASKS: tuple[str, ...] = ("STSB", "SICK-R", "STS12", "STS13", "STS14", "STS15", "STS16")

# SentEval's subsets, in SentEval's order. STS13's SMT subset is not distributed (licence).
STS_SUBSETS: dict[str, tuple[str, ...]] = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "OnWN", "images", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": (
        "answer-answer",
        "headlines",
        "plagiarism",
        "postediting",
        "question-question",
    ),
}
SPLITS: dict[str, tuple[str, ...]] = {
    **{task: ("test",) for task in STS_SUBSETS},
    "STSB": ("train", "dev", "test"),
    "SICK-R": ("train", "trial", "test"),
}
# every STS task: 0–5
_SCORE_RANGE: dict[str, tuple[float, float]] = {"SICK-R": (1.0, 5.0)}


@dataclass(frozen=True)
class STSPairs:
    """Sentence pairs with gold similarity scores: one task, one split."""

    task: str  # canonical task name, e.g. "STS12", "STSB", "SICK-R"
    split: str  # "test" (STS12–16); "train"/"dev"/"test" (STSB); "train"/"trial"/"test" (SICK-R)
    sent1: list[str]
    sent2: list[str]
    scores: np.ndarray  # float64 gold scores (0–5 for STS, 1–5 for SICK)
    # per pair: subset name ("MSRpar", …); for STSB/SICK-R the split name
    subsets: list[str]

    def __post_init__(self) -> None:
        n = len(self.sent1)
        equal = len(self.sent2) == len(self.scores) == len(self.subsets) == n
        if not equal or np.ndim(self.scores) != 1:
            raise ValueError(
                f"{self.task}/{self.split}: sent1, sent2, scores and subsets must be 1-D and "
                f"equally long, got {n}, {len(self.sent2)}, {np.shape(self.scores)}, "
                f"{len(self.subsets)}"
            )

    def __len__(self) -> int:
        return len(self.sent1)

    def sentences(self) -> list[str]:
        """Every distinct sentence, in order of first appearance (pair by pair): encode these once."""
        return list(
            dict.fromkeys(s for pair in zip(self.sent1, self.sent2) for s in pair)
        )


def canonical_task(name: str) -> str:
    """``"STS-B"``, ``"stsb"``, ``"STSBenchmark"`` → ``"STSB"``; ``"SICK"``, ``"sickr"`` →
    ``"SICK-R"``; ``"sts12"``, ``"STS2012"`` → ``"STS12"``."""
    key = re.sub(r"[^a-z0-9]", "", str(name).lower())
    key = re.sub(r"^sts20(1[2-6])$", r"sts\1", key)  # "STS2012" → "sts12"
    aliases = {
        "stsb": "STSB",
        "stsbenchmark": "STSB",
        "sick": "SICK-R",
        "sickr": "SICK-R",
    }
    aliases.update({t.lower(): t for t in STS_SUBSETS})
    if key not in aliases:
        raise ValueError(
            f"unknown task {name!r}; expected one of {TASKS} (or an alias like 'STS-B', 'SICK', "
            "'sts12')"
        )
    return aliases[key]


def splits(task: str) -> tuple[str, ...]:
    """The splits a task has: ``("test",)`` for STS12–16, ``("train", "dev", "test")`` for STSB, …"""
    return SPLITS[canonical_task(task)]


def check_split(task: str, split: str) -> None:
    """Raise ValueError unless ``split`` is one of (canonical) ``task``'s splits."""
    if split not in SPLITS[task]:
        raise ValueError(f"{task} has splits {SPLITS[task]}, not {split!r}")


def gold_score(text: str, where: str, task: str) -> float:
    """``text`` as a gold score of ``task``, or a ValueError naming ``where`` (file:line)."""
    lo, hi = _SCORE_RANGE.get(task, (0.0, 5.0))
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: gold score {text!r} is not a number") from None
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ValueError(f"{where}: gold score {value} is outside [{lo:g}, {hi:g}]")
    return value


def from_rows(task: str, split: str, rows: list[tuple[str, str, float]]) -> STSPairs:
    """(sentence1, sentence2, score) rows as one split's pairs (every pair's subset: the split)."""
    sent1, sent2, scores = (list(col) for col in zip(*rows)) if rows else ([], [], [])
    return STSPairs(
        task,
        split,
        sent1,
        sent2,
        np.asarray(scores, dtype=np.float64),
        [split] * len(rows),
    )


def max_pairs() -> int | None:
    """``$BERTFLOW_MAX_PAIRS`` as a positive integer, or None when unset (every pair is kept)."""
    raw = os.environ.get(MAX_PAIRS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(
            f"${MAX_PAIRS_ENV} must be a positive integer (the pairs kept per split), got {raw!r}"
        )
    return int(raw)


def capped(pairs: STSPairs) -> STSPairs:
    """The first :func:`max_pairs` pairs of ``pairs`` (all of them when the variable is unset)."""
    n = max_pairs()
    if n is None or n >= len(pairs):
        return pairs
    p = pairs
    return STSPairs(
        p.task, p.split, p.sent1[:n], p.sent2[:n], p.scores[:n], p.subsets[:n]
    )
