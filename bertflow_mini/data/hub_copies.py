"""The Hugging Face hub's copies of the data, for readers without the official files (Colab).

* STS12–16, STS-B and SICK-R: MTEB's jsonl copies (:data:`HUB_COPIES`), used only when they hold
  SentEval's pairs — each subset (or SICK's split) one contiguous block of the official size and
  score sum (:data:`BLOCKS`), in some order — so every pair gets its SentEval subset back;
* SICK with its entailment labels (:data:`SICK_HUB`) and GLUE's QNLI (:data:`QNLI_HUB`): parquet
  files, read by :func:`read_parquet` (their checks live with their loaders,
  :mod:`bertflow_mini.data.entailment`).

Every file comes through :func:`bertflow_mini.data.downloads.hub_download` (tests serve fixtures
in the copies' formats through it).
"""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np

from bertflow_mini.data import downloads
from bertflow_mini.data.pairs import (
    STSPairs,
    canonical_task,
    check_split,
    from_rows,
    gold_score,
)

#: task -> (hub dataset, revision). The revisions are those MTEB's own task definitions pin.
HUB_COPIES: dict[str, tuple[str, str]] = {
    "STS12": ("mteb/sts12-sts", "a0d554a64d88156834ff5ae9920b964011b16384"),
    "STS13": ("mteb/sts13-sts", "7e90230a92c190f1bf69ae9002b8cea547a64cca"),
    "STS14": ("mteb/sts14-sts", "6031580fec1f6af667f0bd2da0a551cf4f0b2375"),
    "STS15": ("mteb/sts15-sts", "ae752c7c21bf194d8b67fd573edf7ae58183cbe3"),
    "STS16": ("mteb/sts16-sts", "4d8694f8f0e0100860b497b999b3dbed754a0513"),
    "STSB": ("mteb/stsbenchmark-sts", "b0fddb56ed78048fa8b90373c8a3cfc37b684831"),
    "SICK-R": ("mteb/sickr-sts", "20a6d6f312dd54037fe07a32d58e5e168867909d"),
}
#: Our split -> the copy's file. STS-B's dev split is MTEB's "validation"; MTEB's SICK-R is one
#: file ("test") holding all 9,927 SICK pairs, from which :data:`BLOCKS` selects SentEval's split.
_HUB_FILES = {"dev": "validation.jsonl.gz"}
#: SentEval's blocks of each file that mixes several: (subset or split, pairs, sum of gold
#: scores), computed from the official files (tests/data/test_hub_copies.py checks them).
BLOCKS: dict[str, tuple[tuple[str, int, float], ...]] = {
    "STS12": (("MSRpar", 750, 2453.023), ("MSRvid", 750, 1722.824),
              ("SMTeuroparl", 459, 2088.263), ("surprise.OnWN", 750, 2903.165),
              ("surprise.SMTnews", 399, 1729.573)),
    "STS13": (("FNWN", 189, 277.45), ("headlines", 750, 1929.6667), ("OnWN", 561, 1297.1667)),
    "STS14": (("deft-forum", 450, 1237.1421), ("deft-news", 300, 909.2),
              ("headlines", 750, 2079.2), ("OnWN", 750, 1978.9333), ("images", 750, 2005.6),
              ("tweet-news", 750, 2332.8)),
    "STS15": (("answers-forums", 375, 624.24), ("answers-students", 750, 2188.41),
              ("belief", 375, 606.2), ("headlines", 750, 1922.73), ("images", 750, 1876.16)),
    "STS16": (("answer-answer", 254, 633.0), ("headlines", 249, 615.0),
              ("plagiarism", 230, 557.0), ("postediting", 244, 612.0),
              ("question-question", 209, 445.0)),
    "SICK-R": (("train", 4500, 15844.255), ("trial", 500, 1797.195), ("test", 4927, 17392.415)),
}  # fmt: skip
_BLOCK_TOLERANCE = 0.01  # on a block's score sum: the gold files give 3–4 decimals

#: SICK with its entailment labels (the former ``sick`` dataset, script-based): the hub's parquet
#: conversion of it; our split -> its file. Columns as ../shared/README.md gives them (pair_ID,
#: sentence_A, sentence_B, relatedness_score, entailment_label); the old script's names (id, label
#: as 0/1/2 = entailment/neutral/contradiction) are read too. Not reachable from here.
SICK_HUB = ("RobZamp/sick", "refs/convert/parquet")
SICK_HUB_FILES = {s: f"default/{h}/0000.parquet" for s, h in
                  (("train", "train"), ("trial", "validation"), ("test", "test"))}  # fmt: skip
#: GLUE's QNLI on the hub (parquet; label 0 = entailment, 1 = not_entailment), at a pinned commit,
#: with each file's SHA-256 (its Git-LFS object id in that commit's tree, as published there;
#: no copy of QNLI is in ../shared to check it against).
QNLI_HUB = ("nyu-mll/glue", "bcdcba79d07bc864c1c254ccfcedcce55bcc9a8c")
QNLI_HUB_FILES: dict[str, tuple[str, str]] = {
    "train": ("qnli/train-00000-of-00001.parquet",
              "ebc7cb70a5bbde0b0336c3d51f31bb4df4673e908e8874b090b52169b1365c6c"),
    "dev": ("qnli/validation-00000-of-00001.parquet",
            "e69311b81dc65589286091d9905a27617a90436dd215c7a59832fa8f4f336169"),
}  # fmt: skip


def describe(task: str) -> str:
    """``"The hub copy <url> (revision abc1234)"`` for a task of :data:`HUB_COPIES`."""
    repo, revision = HUB_COPIES[task]
    url = downloads.HUB_URL.format(f"datasets/{repo}")
    return f"The hub copy {url} (revision {revision[:7]})"


def read_hub_jsonl(path: Path, task: str) -> list[tuple[str, str, float]]:
    """(sentence1, sentence2, score) of each line of an MTEB jsonl(.gz) file; a malformed line
    raises an error naming ``path`` and the line."""
    rows = []
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                a, b, score = row["sentence1"], row["sentence2"], row["score"]
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise ValueError(
                    f"{path}:{number}: expected a JSON object with sentence1, sentence2 and "
                    f"score ({type(err).__name__}: {err})"
                ) from None
            if not (isinstance(a, str) and isinstance(b, str)):
                raise ValueError(
                    f"{path}:{number}: sentence1 and sentence2 must be strings"
                )
            rows.append((a, b, gold_score(str(score), f"{path}:{number}", task)))
    return rows


def match_blocks(task: str, scores: np.ndarray) -> list[str] | None:
    """Per row, its SentEval subset/split: the first order of :data:`BLOCKS` whose contiguous
    blocks have the official sizes and score sums; None when no order fits."""
    blocks = BLOCKS[task]
    if len(scores) != sum(n for _, n, _ in blocks):
        return None
    for order in itertools.permutations(blocks):
        start, fits = 0, True
        for _, n, total in order:
            if abs(float(scores[start : start + n].sum()) - total) > _BLOCK_TOLERANCE:
                fits = False
                break
            start += n
        if fits:
            return [name for name, n, _ in order for _ in range(n)]
    return None


def load_hub_copy(task: str, split: str = "test") -> STSPairs:
    """``task``'s ``split`` from the hub's MTEB copy, labelled with SentEval's subsets; SICK-R's
    file (all 9,927 SICK pairs) is cut to SentEval's ``split``. Raises ValueError when the copy is
    not SentEval's blocks (:data:`BLOCKS`), OSError when it cannot be had."""
    task = canonical_task(task)
    check_split(task, split)
    repo, revision = HUB_COPIES[task]
    file = (
        "test.jsonl.gz"
        if task == "SICK-R"
        else _HUB_FILES.get(split, f"{split}.jsonl.gz")
    )
    path = downloads.hub_download(repo, revision, file)
    rows = read_hub_jsonl(path, task)
    if task == "STSB":
        return from_rows(task, split, rows)
    labels = match_blocks(task, np.array([r[2] for r in rows]))
    if labels is None:
        blocks = [(name, n) for name, n, _ in BLOCKS[task]]
        raise ValueError(
            f"{path} ({repo}@{revision[:7]}) does not hold SentEval's {task} pairs as "
            f"contiguous blocks {blocks}"
        )
    if task == "SICK-R":
        return from_rows(
            task, split, [r for r, label in zip(rows, labels) if label == split]
        )
    sent1, sent2, scores = (list(col) for col in zip(*rows))
    return STSPairs(
        task, split, sent1, sent2, np.asarray(scores, dtype=np.float64), labels
    )


def read_parquet(
    path: Path, columns: dict[str, tuple[str, ...]]
) -> dict[str, list[Any]]:
    """The columns of a parquet file, each found under the first of its accepted names
    (``columns``: our name → the names a copy may use); an error names ``path`` and what it
    has instead. Needs pyarrow (a dependency; Colab ships it)."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (
        OSError,
        ValueError,
    ) as err:  # not parquet, truncated (pyarrow's errors are both)
        raise ValueError(
            f"{path}: not a readable parquet file ({type(err).__name__}: {err})"
        )
    out = {}
    for ours, names in columns.items():
        name = next((n for n in names if n in table.column_names), None)
        if name is None:
            raise ValueError(
                f"{path}: no column {' or '.join(names)} (it has {table.column_names})"
            )
        out[ours] = table.column(name).to_pylist()
    return out
