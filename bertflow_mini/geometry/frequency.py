"""Word frequency and the geometry of word embeddings: Table 1 of Li et al. (2020) for any embedding matrix.

Li et al. sort bert-base's whole-word vocabulary by frequency, cut it into rank buckets, and report per
bucket the mean ℓ2 norm of the embeddings and the mean distance / dot product to each word's k nearest
neighbours. Frequent words sit close to the origin in a dense crowd; rare words lie far out and sparse.
That is the anisotropy the book's later chapters try to undo.

Reading order: which tokens count as words (:func:`whole_word_vocab`), how frequent each one is
(:func:`frequency_ranks`), exact nearest neighbours (:func:`bertflow_mini.geometry.neighbours.knn`),
and the table itself (:func:`frequency_table`, to compare with :func:`published_table1`). How often
each token occurred in a model's corpus is :mod:`bertflow_mini.geometry.corpus_counts`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.stats

from bertflow_mini._checks import check_matrix
from bertflow_mini.evaluation.published import LI_TABLE1
from bertflow_mini.geometry.neighbours import knn

# ----------------------------------------------------------------------------- which tokens are words

SPECIAL_TOKENS = frozenset({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
_UNUSED = re.compile(r"\[unused\d+\]")


def is_special(token: str) -> bool:
    """BERT's control tokens and its reserved ``[unusedN]`` slots."""
    return token in SPECIAL_TOKENS or _UNUSED.fullmatch(token) is not None


def is_word_piece(token: str) -> bool:
    """A WordPiece continuation such as ``##ing``: a fragment, never a word on its own."""
    return token.startswith("##")


def is_punctuation(token: str) -> bool:
    """Every character is punctuation or a symbol (Unicode categories P* and S*): ``!``, ``--``, ``$``."""
    return len(token) > 0 and all(unicodedata.category(ch)[0] in "PS" for ch in token)


def is_digits(token: str) -> bool:
    """Only digits: ``1999``, ``7``, ``²``."""
    return token.isdigit()


#: The exclusion rules in the order they are applied; a token is a whole word if none of them fires.
EXCLUSION_RULES: dict[str, Callable[[str], bool]] = {
    "special": is_special,
    "word piece": is_word_piece,
    "punctuation/symbol": is_punctuation,
    "digits": is_digits,
}


def exclusion_counts(vocab: Sequence[str]) -> dict[str, int]:
    """How many tokens each rule removes (a token is charged to the first rule that fires), plus what is kept."""
    counts = {name: 0 for name in EXCLUSION_RULES}
    kept = 0
    for token in vocab:
        rule = next(
            (name for name, fires in EXCLUSION_RULES.items() if fires(token)), None
        )
        if rule is None:
            kept += 1
        else:
            counts[rule] += 1
    counts["whole words (kept)"] = kept
    return counts


def whole_word_vocab(vocab: Sequence[str]) -> list[int]:
    """Indices of the whole-word tokens of ``vocab``: no special token, ``##`` piece, punctuation or number."""
    return [
        i
        for i, token in enumerate(vocab)
        if not any(fires(token) for fires in EXCLUSION_RULES.values())
    ]


# ----------------------------------------------------------------------------- how frequent each word is


def word_frequencies(words: Sequence[str], lang: str = "en") -> np.ndarray:
    """Frequency of each word per ``wordfreq.word_frequency`` (0 for words wordfreq does not know)."""
    import wordfreq

    return np.array([wordfreq.word_frequency(w, lang) for w in words], dtype=np.float64)


def ranks_from_frequencies(freqs: Sequence[float] | np.ndarray) -> np.ndarray:
    """Rank 0 for the most frequent entry, then descending; ties keep their input order (a stable sort)."""
    freqs = np.asarray(freqs, dtype=np.float64)
    if freqs.ndim != 1 or not np.isfinite(freqs).all():
        raise ValueError("frequencies must be a 1-D array of finite numbers")
    order = np.argsort(-freqs, kind="stable")
    ranks = np.empty(len(freqs), dtype=np.int64)
    ranks[order] = np.arange(len(freqs))
    return ranks


def frequency_ranks(words: Sequence[str], lang: str = "en") -> np.ndarray:
    """Frequency rank of each word: 0 = most frequent.

    The paper counted word frequencies in Wikipedia; we use ``wordfreq``'s English frequencies (a blend of
    Wikipedia, subtitles, news, books, web text and more), which rank words very similarly and need no
    download. Words that wordfreq has never seen get frequency 0 and therefore come last; ties (including
    all those zeros) are broken by position in ``words``, so the ranks are deterministic.
    """
    return ranks_from_frequencies(word_frequencies(words, lang))


# The paper prints the last bucket as "[5K,1K)": a typo for [5K, ∞), i.e. every word from rank 5000 on.
RANK_BUCKETS: tuple[tuple[int, int | None], ...] = (
    (0, 100),
    (100, 500),
    (500, 5000),
    (5000, None),
)


def _short(n: int) -> str:
    return f"{n // 1000}K" if n >= 1000 and n % 1000 == 0 else str(n)


def bucket_labels(
    buckets: Sequence[tuple[int, int | None]] = RANK_BUCKETS,
) -> list[str]:
    """Column labels such as ``"[0,100)"`` and ``"[5K,…)"``."""
    return [f"[{_short(lo)},{'…' if hi is None else _short(hi)})" for lo, hi in buckets]


def assign_buckets(
    ranks: np.ndarray, buckets: Sequence[tuple[int, int | None]] = RANK_BUCKETS
) -> np.ndarray:
    """Bucket index of every rank, ``-1`` for a rank that no bucket covers."""
    ranks = np.asarray(ranks)
    out = np.full(ranks.shape, -1, dtype=np.int64)
    for b, (lo, hi) in enumerate(buckets):
        inside = (ranks >= lo) if hi is None else (ranks >= lo) & (ranks < hi)
        out[inside & (out == -1)] = b
    return out


# ----------------------------------------------------------------------------- the table


def _row_names(ks: Sequence[int]) -> list[str]:
    return (
        ["mean ℓ2 norm"]
        + [f"k-NN ℓ2 distance, k={k}" for k in ks]
        + [f"k-NN dot product, k={k}" for k in ks]
        + ["words"]
    )


def frequency_table(
    E: np.ndarray,
    words: Sequence[str],
    ks: Sequence[int] = (3, 5, 7),
    buckets: Sequence[tuple[int, int | None]] = RANK_BUCKETS,
    frequencies: Sequence[float] | None = None,
    chunk: int = 2048,
    unknown: str = "last",
) -> pd.DataFrame:
    """Table 1 of Li et al. (2020) for the embedding matrix ``E`` whose row ``i`` embeds ``words[i]``.

    Only whole-word rows are used (:func:`whole_word_vocab`). They are ranked by frequency among
    themselves — wordfreq's English frequencies, or ``frequencies`` (aligned with ``words``) if given,
    e.g. counts from your own corpus — and grouped into rank ``buckets``. Neighbours are searched among
    all whole-word rows, as in the paper. Each cell is a mean over the words of one bucket: the ℓ2 norm,
    and, for each ``k``, the mean over the k ℓ2-nearest neighbours of the distance and of the dot product.
    The last row, ``words``, counts the words in each bucket. Words of frequency 0 (unknown to
    wordfreq, or absent from your counts) rank last with ``unknown="last"``; ``unknown="drop"``
    leaves them out of the table and of the neighbour search (:func:`known_word_rows`).
    """
    E = check_matrix(E, "E", min_rows=2)
    if not ks or min(ks) < 1:
        raise ValueError(f"ks must be positive integers, got {ks}")
    keep, freqs = known_word_rows(E, words, frequencies, unknown)
    if len(keep) <= max(ks):
        raise ValueError(
            f"only {len(keep)} whole words, need more than max(ks) = {max(ks)}"
        )
    X = E[keep]
    which = assign_buckets(ranks_from_frequencies(freqs), buckets)

    nb = knn(X, max(ks), chunk=chunk)
    stats = [np.linalg.norm(X, axis=1)]
    stats += [nb.dist[:, :k].mean(axis=1) for k in ks]
    stats += [nb.dot[:, :k].mean(axis=1) for k in ks]
    columns = {}
    for b, label in enumerate(bucket_labels(buckets)):
        members = which == b
        means = [float(s[members].mean()) if members.any() else np.nan for s in stats]
        columns[label] = means + [int(members.sum())]
    return pd.DataFrame(columns, index=_row_names(ks))


def published_table1() -> pd.DataFrame:
    """The paper's bert-base numbers, shaped like :func:`frequency_table` (``words`` is NaN: not reported)."""
    return pd.DataFrame(
        {label: [*vals, np.nan] for label, vals in LI_TABLE1.items()},
        index=_row_names((3, 5, 7)),
    )


def known_word_rows(
    E: np.ndarray,
    words: Sequence[str],
    frequencies: Sequence[float] | None = None,
    unknown: str = "last",
) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the whole words of ``E`` and their frequencies (wordfreq's unless given).

    ``unknown="last"`` keeps words of frequency 0 (they rank last); ``unknown="drop"`` removes them —
    e.g. the IPA letters, Cyrillic and CJK characters of BERT's vocabulary that wordfreq does not know.
    """
    E = check_matrix(E, "E")
    if len(words) != E.shape[0]:
        raise ValueError(f"E has {E.shape[0]} rows but {len(words)} words were given")
    if unknown not in ("last", "drop"):
        raise ValueError(f"unknown must be 'last' or 'drop', got {unknown!r}")
    keep = np.array(whole_word_vocab(words), dtype=np.int64)
    if frequencies is None:
        freqs = word_frequencies([words[i] for i in keep])
    else:
        if len(frequencies) != len(words):
            raise ValueError(
                f"frequencies has {len(frequencies)} entries but words has {len(words)}"
            )
        freqs = np.asarray(frequencies, dtype=np.float64)[keep]
    if unknown == "drop":
        keep, freqs = keep[freqs > 0], freqs[freqs > 0]
    return keep, freqs


def frequency_norm_correlation(
    E: np.ndarray,
    words: Sequence[str],
    frequencies: Sequence[float] | None = None,
    unknown: str = "last",
) -> Any:  # scipy's SignificanceResult (scipy is untyped here)
    """Spearman correlation between word frequency and embedding norm over the whole-word rows.

    Returns scipy's result, which unpacks as ``(rho, p)``. A negative ``rho`` means frequent words have
    smaller norms, as Li et al. found for BERT. Frequencies are wordfreq's unless ``frequencies`` is given;
    ``unknown`` as in :func:`known_word_rows`.
    """
    E = check_matrix(E, "E", min_rows=3)
    keep, freqs = known_word_rows(E, words, frequencies, unknown)
    return scipy.stats.spearmanr(freqs, np.linalg.norm(E[keep], axis=1))


def table1_comparison(
    tables: dict[str, pd.DataFrame],
    rows: Sequence[str] = (
        "mean ℓ2 norm",
        "k-NN ℓ2 distance, k=5",
        "k-NN dot product, k=5",
    ),
    paper: str = "paper: bert-base",
) -> pd.DataFrame:
    """Selected rows of several :func:`frequency_table` results, one line per (statistic, model), with
    the paper's bert-base row first and a last column ``rare / frequent`` (last bucket ÷ first): a
    scale-free summary of the trend, > 1 where rare words have the larger value, as in the paper."""
    if not tables:
        raise ValueError("table1_comparison needs at least one table")
    everything = {paper: published_table1(), **tables}
    missing = [r for r in rows if r not in everything[paper].index]
    if missing:
        raise ValueError(
            f"unknown rows {missing}; choose from {list(everything[paper].index[:-1])}"
        )
    out = pd.concat(
        {
            row: pd.DataFrame({m: t.loc[row] for m, t in everything.items()}).T
            for row in rows
        }
    )
    out["rare / frequent"] = out.iloc[:, -1] / out.iloc[:, 0]
    return out


def side_by_side(ours: pd.DataFrame, name: str) -> pd.DataFrame:
    """Our table beside the paper's bert-base Table 1: one (ours, paper) column pair per bucket, rounded."""
    both = pd.concat(
        {
            name: ours.drop(index="words"),
            "paper (bert-base)": published_table1().drop(index="words"),
        },
        axis=1,
    )
    return both.swaplevel(axis=1)[list(ours.columns)].round(2)


def norm_by_corpus_count(
    E: np.ndarray,
    E_init: np.ndarray,
    counts: np.ndarray,
    rows: Sequence[int] | np.ndarray,
    edges: Sequence[int] = (0, 1, 5, 20, 100, 1000, 10_000),
    labels: Sequence[str] | None = None,
) -> pd.DataFrame:
    """What pretraining did to each row of an embedding matrix, grouped by the token's corpus count.

    For the ``rows`` (e.g. whole words) whose count falls in ``[edges[i], edges[i+1])`` (the last
    group open-ended): how many, the mean norm before (``E_init``) and after (``E``) training, and
    the mean pairwise cosine of their displacements ``E − E_init`` — near 1 when the rows of a group
    all moved the same way (a common push), near 0 when each went its own way. ``labels`` (one per
    edge) name the groups instead of their count ranges.
    """
    E, E_init = check_matrix(E, "E"), check_matrix(E_init, "E_init")
    if E.shape != E_init.shape or len(counts) != len(E):
        raise ValueError(
            f"E {E.shape}, E_init {E_init.shape} and counts ({len(counts)}) must agree"
        )
    if labels is not None and len(labels) != len(edges):
        raise ValueError(f"{len(labels)} labels for {len(edges)} groups")
    rows = np.asarray(rows, dtype=np.int64)
    c = np.asarray(counts)[rows]
    D = (E - E_init)[rows].astype(np.float64)
    out = {}
    for i, (lo, hi) in enumerate(zip(edges, list(edges[1:]) + [None])):
        m = (c >= lo) if hi is None else (c >= lo) & (c < hi)
        if m.sum() < 2:
            continue
        u = D[m] / np.maximum(np.linalg.norm(D[m], axis=1, keepdims=True), 1e-30)
        total = u.sum(axis=0)
        label = (
            f"{lo}" if hi == lo + 1 else (f"≥ {lo}" if hi is None else f"{lo}–{hi - 1}")
        )
        out[label if labels is None else labels[i]] = {
            "tokens": int(m.sum()),
            "norm before": float(np.linalg.norm(E_init[rows][m], axis=1).mean()),
            "norm after": float(np.linalg.norm(E[rows][m], axis=1).mean()),
            "displacement norm": float(np.linalg.norm(D[m], axis=1).mean()),
            "displacements' mean cosine": float(
                (total @ total - m.sum()) / (m.sum() * (m.sum() - 1))
            ),
        }
    return pd.DataFrame(out).T.rename_axis("corpus count")


def drift_along(
    E: np.ndarray,
    E_init: np.ndarray,
    counts: np.ndarray,
    rows: Sequence[int] | np.ndarray,
    direction: np.ndarray,
    edges: Sequence[int] = (0, 1, 5, 20, 100, 1000, 10_000),
    labels: Sequence[str] | None = None,
) -> pd.Series:
    """Which way each corpus-count group of :func:`norm_by_corpus_count` moved: the cosine between
    the group's mean displacement ``mean(E − E_init)`` and ``direction`` (e.g. the mean of the
    vectors the MLM softmax reads, the way a target is pulled). Same groups and labels as
    :func:`norm_by_corpus_count` (``labels`` too); +1: the group moved along ``direction``, −1: against it."""
    E, E_init = check_matrix(E, "E"), check_matrix(E_init, "E_init")
    direction = np.asarray(direction, dtype=np.float64)
    if E.shape != E_init.shape or len(counts) != len(E):
        raise ValueError(
            f"E {E.shape}, E_init {E_init.shape} and counts ({len(counts)}) must agree"
        )
    if direction.shape != (E.shape[1],) or not np.linalg.norm(direction) > 0:
        raise ValueError(f"direction must be a non-zero vector of length {E.shape[1]}")
    names = norm_by_corpus_count(E, E_init, counts, rows, edges, labels).index
    rows = np.asarray(rows, dtype=np.int64)
    c = np.asarray(counts)[rows]
    D = (E - E_init)[rows].astype(np.float64)
    unit = direction / np.linalg.norm(direction)
    out: dict[int, float] = {}
    for lo, hi in zip(edges, list(edges[1:]) + [None]):
        m = (c >= lo) if hi is None else (c >= lo) & (c < hi)
        if m.sum() < 2:
            continue
        mean = D[m].mean(axis=0)
        out[len(out)] = float(mean @ unit / max(np.linalg.norm(mean), 1e-30))
    return pd.Series(
        out.values(), index=names, name="cos(mean displacement, direction)"
    )


# ----------------------------------------------------------------------------- frequency in sentence vectors


def mean_log_frequency(
    token_ids: Sequence[Sequence[int]], frequency: np.ndarray
) -> np.ndarray:
    """Each sentence's mean log10 word frequency: ``token_ids[s]`` holds sentence ``s``'s token ids,
    ``frequency[i]`` token ``i``'s frequency (e.g. wordfreq's), 0 for a token to leave out (word
    pieces, symbols, words wordfreq does not know). NaN for a sentence with no token left."""
    frequency = np.asarray(frequency, dtype=np.float64)
    if frequency.ndim != 1 or not np.isfinite(frequency).all() or (frequency < 0).any():
        raise ValueError("frequency must be a 1-D array of finite numbers >= 0")
    out = np.full(len(token_ids), np.nan)
    for s, ids in enumerate(token_ids):
        f = frequency[np.asarray(ids, dtype=np.int64)]
        if (f > 0).any():
            out[s] = np.log10(f[f > 0]).mean()
    return out


def sentence_frequency_axis(
    X: np.ndarray, token_ids: Sequence[Sequence[int]], frequency: np.ndarray
) -> tuple[float, int]:
    """Is the top principal direction of sentence vectors ``X`` (one row per sentence) a
    word-frequency axis? |Spearman ρ| between each sentence's coordinate on that direction (rows
    centred) and its words' :func:`mean_log_frequency`, with the number of sentences used
    (those with no word of known frequency are left out first). 1: the direction ranks the
    sentences exactly by how frequent their words are; near 0: unrelated."""
    from bertflow_mini.geometry.contextual import top_direction_frequency

    X = check_matrix(X, "X")
    if len(token_ids) != len(X):
        raise ValueError(
            f"one list of token ids per row of X ({len(X)}), got {len(token_ids)}"
        )
    m = mean_log_frequency(token_ids, frequency)
    known = np.isfinite(m)
    return top_direction_frequency(X[known], m[known]), int(known.sum())
