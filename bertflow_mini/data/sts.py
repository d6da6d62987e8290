"""STS12–16, the STS Benchmark and SICK-R: the official files' parsers, and :func:`load_sts`,
which finds them (``root``, ``$BERTFLOW_DATA``, the cache), else uses the hub's MTEB copy when it
verifiably holds SentEval's pairs (:mod:`bertflow_mini.data.hub_copies`), else downloads the
official archive (:mod:`bertflow_mini.data.layout`).

``$BERTFLOW_MAX_PAIRS=N`` keeps the first N pairs of every split loaded
(:func:`~bertflow_mini.data.pairs.max_pairs`): a quick, smaller run (the simulated Colab test uses
it); the book's committed outputs never do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from bertflow_mini.data import hub_copies
from bertflow_mini.data.layout import (
    HUB_FAILURES,
    SICK_FILES,
    SOURCES,
    data_root,
    numbered_lines,
    official_present,
)
from bertflow_mini.data.pairs import (
    STS_SUBSETS,
    STSPairs,
    canonical_task,
    check_split,
    from_rows,
    gold_score,
    splits,
)
from bertflow_mini.data.pairs import capped as _cap

SICK_HEADER = [
    "pair_ID",
    "sentence_A",
    "sentence_B",
    "relatedness_score",
    "entailment_judgment",
]
SICK_LABELS = ("ENTAILMENT", "NEUTRAL", "CONTRADICTION")


def read_sick(path: Path) -> list[tuple[str, str, float, str]]:
    """(sentence_A, sentence_B, relatedness score, entailment label) of each pair of one of SICK's
    SemEval files (header, then pair_ID, sentence_A, sentence_B, relatedness_score,
    entailment_judgment); a malformed line raises an error naming ``path`` and the line."""
    rows = []
    for number, line in numbered_lines(path, "SICK-R"):
        fields = line.split("\t")
        if len(fields) != 5:
            raise ValueError(
                f"{path}:{number}: expected 5 tab-separated fields, got {len(fields)}"
            )
        if number == 1:
            if fields != SICK_HEADER:
                raise ValueError(
                    f"{path}:1: expected the SICK header '{'<TAB>'.join(SICK_HEADER)}', "
                    f"got {line[:60]!r}"
                )
            continue
        if fields[4] not in SICK_LABELS:
            raise ValueError(
                f"{path}:{number}: {fields[4]!r} is not a SICK label {SICK_LABELS}"
            )
        score = gold_score(fields[3], f"{path}:{number}", "SICK-R")
        rows.append((fields[1], fields[2], score, fields[4]))
    return rows


def sick_path(split: str, root: str | Path | None = None) -> Path:
    """The official SICK file of ``split`` (found or downloaded as :func:`data_root` does)."""
    return data_root(root, need="sick") / "sick" / SICK_FILES[split]


def _load_sts_year(task: str, folder: Path) -> STSPairs:
    """STS12–16: per subset, ``*.input.<subset>.txt`` (sentence1 TAB sentence2 [TAB sources]) and
    ``*.gs.<subset>.txt`` (the gold score, or an empty line for an unscored pair)."""
    prefix = "STS2016" if task == "STS16" else "STS"
    sent1: list[str] = []
    sent2: list[str] = []
    scores: list[float] = []
    subsets: list[str] = []
    for subset in STS_SUBSETS[task]:
        inp, gold = (
            folder / f"{prefix}.input.{subset}.txt",
            folder / f"{prefix}.gs.{subset}.txt",
        )
        pairs, golds = numbered_lines(inp, task), numbered_lines(gold, task)
        if len(pairs) != len(golds):
            short, n = (
                (inp, len(pairs)) if len(pairs) < len(golds) else (gold, len(golds))
            )
            raise ValueError(
                f"{short}:{n + 1}: {inp.name} has {len(pairs)} lines but {gold.name} has "
                f"{len(golds)}"
            )
        for (number, line), (_, score) in zip(pairs, golds):
            if not score.strip():
                continue  # unscored pair
            fields = line.split("\t")
            if len(fields) < 2:
                raise ValueError(
                    f"{inp}:{number}: expected 'sentence1<TAB>sentence2', got {len(fields)} field(s)"
                )
            sent1.append(fields[0])
            sent2.append(fields[1])
            scores.append(gold_score(score.strip(), f"{gold}:{number}", task))
            subsets.append(subset)
    return STSPairs(
        task, "test", sent1, sent2, np.asarray(scores, dtype=np.float64), subsets
    )


def _load_stsb(path: Path, split: str) -> STSPairs:
    """STS-B: genre, file, year, id, score, sentence1, sentence2 [, sources…] — a plain TAB split,
    no CSV quoting."""
    rows = []
    for number, line in numbered_lines(path, "STSB"):
        fields = line.split("\t")
        if len(fields) < 7:
            raise ValueError(
                f"{path}:{number}: expected at least 7 tab-separated fields, got {len(fields)}"
            )
        rows.append(
            (fields[5], fields[6], gold_score(fields[4], f"{path}:{number}", "STSB"))
        )
    return from_rows("STSB", split, rows)


def load_sts(
    task: str,
    split: str = "test",
    root: str | Path | None = None,
    *,
    capped: bool = True,
) -> STSPairs:
    """Load the scored pairs of one task and split (unscored pairs — an empty gold line — are
    skipped).

    Official files from ``root``, ``$BERTFLOW_DATA`` or the cache; else the hub's MTEB copy when it
    verifiably holds SentEval's pairs (:func:`~bertflow_mini.data.hub_copies.load_hub_copy`); else
    the official archive, downloaded. ``$BERTFLOW_MAX_PAIRS`` keeps the first N pairs unless
    ``capped=False`` (for what is cached under a key that does not hold the sentences: the
    pretraining and SimCSE corpora)."""
    task = canonical_task(task)
    check_split(task, split)
    pairs = _load_full(task, split, root)
    return _cap(pairs) if capped else pairs


def _load_full(task: str, split: str, root: str | Path | None) -> STSPairs:
    target = SOURCES[task].target
    if root is None and not official_present(task):
        try:
            pairs = hub_copies.load_hub_copy(task, split)
            HUB_FAILURES.pop(target, None)
            return pairs
        except (
            Exception
        ) as err:  # unreachable, missing or not SentEval's pairs: the archive next
            why = (
                f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            )
            HUB_FAILURES[target] = f"{hub_copies.describe(task)} was not used: {why}."
    if task in STS_SUBSETS:
        return _load_sts_year(task, data_root(root, need=target) / target)
    if task == "STSB":
        return _load_stsb(
            data_root(root, need=target) / target / f"sts-{split}.csv", split
        )
    rows = read_sick(sick_path(split, root))
    return from_rows("SICK-R", split, [row[:3] for row in rows])


def distinct_sentences(parts: Iterable[STSPairs]) -> list[str]:
    """The distinct sentences of several sets of pairs, in first-seen order."""
    return list(dict.fromkeys(s for pairs in parts for s in pairs.sentences()))


def task_sentences(
    task: str, which: Sequence[str] | None = None, *, capped: bool = True
) -> list[str]:
    """Distinct sentences of ``task``'s splits (all of them by default), in first-seen order
    (``capped``: see :func:`load_sts`)."""
    parts = (load_sts(task, split, capped=capped) for split in which or splits(task))
    return distinct_sentences(parts)
