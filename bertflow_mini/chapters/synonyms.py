"""Swap a word for a WordNet synonym of another frequency, and see how far the sentence vector moves.

Li et al. argue that word frequency biases where a word's embedding sits; if so, two synonyms of
different frequency should pull a sentence vector to different places. This module builds the test
behind Chapter 3's measurement: the synonym sets of WordNet 3.0 (:func:`wordnet_synsets`), the
single-token synonyms a vocabulary knows (:func:`synonym_map`), a short hand-checked list of clean
synonyms in matching inflections (:data:`CLEAN_SYNONYMS`, :func:`clean_synonym_map`), and, for real
sentences, one swap per sentence with the log-frequency gap it makes (:func:`synonym_swaps`).
The cosine between each sentence and its swapped twin is then a function of that gap:
:func:`gap_correlation` measures Spearman's ρ between the two with intervals that treat the swaps of
one word pair as one cluster (:func:`pair_labels`) and use Spearman's own Fisher variance
(:func:`spearman_half_width`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertflow_mini.data.layout import data_root
from bertflow_mini.data.wordnet import WORDNET_FILES
from bertflow_mini.data.wordnet import open_text as _open_text

_WORD = re.compile(r"[A-Za-z]+")
# "galore(ip)": a syntactic marker on some adjectives
_ADJ_MARKER = re.compile(r"\([a-z]+\)$")


def parse_synset_line(line: str) -> list[str]:
    """The lemmas of one ``wndb(5WN)`` synset line, lower-case, ``_`` for multi-word lemmas kept.

    Format: ``offset lex_filenum ss_type w_cnt word lex_id [word lex_id …] p_cnt … | gloss`` with
    ``w_cnt`` in hexadecimal.
    """
    fields = line.split(" | ", 1)[0].split()
    if len(fields) < 6:
        raise ValueError(f"not a synset line: {line[:60]!r}")
    n_words = int(fields[3], 16)
    return [_ADJ_MARKER.sub("", fields[4 + 2 * i]).lower() for i in range(n_words)]


def wordnet_synsets(root: str | Path | None = None) -> list[list[str]]:
    """Every synset of WordNet 3.0 (nouns, verbs, adjectives, adverbs) as its list of lemmas."""
    folder = data_root(root, need="wordnet") / "wordnet"
    out = []
    for name in WORDNET_FILES:
        with _open_text(folder, name) as f:
            out += [parse_synset_line(line) for line in f if not line.startswith("  ")]
    return out


def synonym_map(
    synsets: Iterable[Sequence[str]], vocab: set[str]
) -> dict[str, list[str]]:
    """For every single-word lemma in ``vocab``, its synonyms (same synset) that are in ``vocab`` too,
    sorted and without the word itself."""
    out: dict[str, set[str]] = {}
    for lemmas in synsets:
        usable = sorted({w for w in lemmas if w in vocab and w.isalpha()})
        for w in usable:
            out.setdefault(w, set()).update(u for u in usable if u != w)
    return {w: sorted(s) for w, s in sorted(out.items()) if s}


#: Pairs that mean the same in almost any sentence and share part of speech and inflection, so a
#: swap changes the word's frequency and little else: the base forms share a WordNet 3.0 synset,
#: inflected forms follow their base. Each pair is used in both directions.
CLEAN_SYNONYMS: tuple[tuple[str, str], ...] = (
    ("car", "automobile"),
    ("cars", "automobiles"),
    ("kid", "child"),
    ("kids", "children"),
    ("photo", "photograph"),
    ("photos", "photographs"),
    ("couch", "sofa"),
    ("big", "large"),
    ("fast", "quick"),
    ("quickly", "rapidly"),
    ("start", "begin"),
    ("starts", "begins"),
    ("started", "began"),
    ("talk", "speak"),
    ("talking", "speaking"),
    ("talks", "speaks"),
    ("shouting", "yelling"),
    ("shout", "yell"),
    ("buy", "purchase"),
    ("bought", "purchased"),
    ("jump", "leap"),
    ("jumping", "leaping"),
    ("jumps", "leaps"),
    ("plane", "airplane"),
    ("bike", "bicycle"),
    ("bikes", "bicycles"),
    ("motorcycle", "motorbike"),
    ("sea", "ocean"),
    ("rock", "stone"),
    ("rocks", "stones"),
    ("movie", "film"),
    ("movies", "films"),
    ("television", "tv"),
    ("happy", "glad"),
    ("sick", "ill"),
    ("puppy", "pup"),
    ("pig", "hog"),
    ("attempt", "try"),
    ("attempts", "tries"),
)


def clean_synonym_map(
    vocab: set[str], pairs: Iterable[tuple[str, str]] = CLEAN_SYNONYMS
) -> dict[str, list[str]]:
    """:data:`CLEAN_SYNONYMS` (both directions) restricted to pairs whose two words are both in
    ``vocab`` — a map in the shape :func:`synonym_swaps` takes."""
    out: dict[str, set[str]] = {}
    for a, b in pairs:
        if a in vocab and b in vocab:
            out.setdefault(a, set()).add(b)
            out.setdefault(b, set()).add(a)
    return {w: sorted(s) for w, s in sorted(out.items())}


@dataclass(frozen=True)
class Swap:
    """One sentence with one word replaced by a synonym; ``gap`` = log10 f(synonym) − log10 f(word)."""

    sentence: str
    swapped: str
    word: str
    synonym: str
    gap: float


def synonym_swaps(
    sentences: Sequence[str],
    synonyms: dict[str, list[str]],
    frequency: Callable[[str], float],
    max_frequency: float = 1e-3,
    seed: int = 0,
) -> list[Swap]:
    """At most one :class:`Swap` per sentence: a random eligible word, a random synonym of it.

    A word is eligible when it has a synonym, both have frequency > 0 and the word's frequency is at
    most ``max_frequency`` (this skips function words such as "in", whose WordNet synsets — "inch",
    "Indiana" — are not the sense in the sentence). The swap keeps a capital first letter, and an
    article just before it follows the new word ("a car" → "an automobile").
    """
    rng = np.random.default_rng(seed)
    out = []
    for sentence in sentences:
        spans = [
            m
            for m in _WORD.finditer(sentence)
            if _eligible(m.group().lower(), synonyms, frequency, max_frequency)
        ]
        if not spans:
            continue
        m = spans[rng.integers(len(spans))]
        word = m.group().lower()
        options = [s for s in synonyms[word] if frequency(s) > 0]
        synonym = options[rng.integers(len(options))]
        new = synonym.capitalize() if m.group()[0].isupper() else synonym
        swapped = _fix_article(sentence[: m.start()], new) + new + sentence[m.end() :]
        gap = float(np.log10(frequency(synonym)) - np.log10(frequency(word)))
        out.append(Swap(sentence, swapped, word, synonym, gap))
    return out


_ARTICLE = re.compile(r"\b([Aa])(n?)(\s+)$")


def _fix_article(before: str, word: str) -> str:
    """``before`` with a final "a"/"an" made to agree with ``word`` (by its first letter)."""
    m = _ARTICLE.search(before)
    if m is None:
        return before
    article = m.group(1) + ("n" if word[:1].lower() in "aeiou" else "")
    return before[: m.start()] + article + m.group(3)


def _eligible(
    word: str,
    synonyms: dict[str, list[str]],
    frequency: Callable[[str], float],
    max_frequency: float,
) -> bool:
    f = frequency(word) if word in synonyms else 0.0
    return 0 < f <= max_frequency and any(frequency(s) > 0 for s in synonyms[word])


# ------------------------------------------------------------- does the cosine fall with the gap?
#: Fieller, Hartley & Pearson (1957): the Fisher-z of Spearman's ρ has variance ≈ 1.06 / (n − 3).
SPEARMAN_FISHER_VARIANCE = 1.06


def pair_labels(swaps: Sequence[Swap]) -> np.ndarray:
    """One label per swap naming its unordered word pair ("car/automobile" = "automobile/car"):
    swaps of one pair share their |gap| exactly, so they are one cluster, not independent draws."""
    return np.array(["/".join(sorted((s.word, s.synonym))) for s in swaps])


def spearman_half_width(n: int, level_z: float = 1.96) -> float:
    """Half-width of the approximate 95 % interval of Spearman's ρ near 0 from ``n`` independent
    pairs: z · √(1.06 / (n − 3)) (Fisher's transformation with Spearman's variance)."""
    if n < 4:
        raise ValueError(f"need at least 4 independent observations, got {n}")
    return float(level_z * np.sqrt(SPEARMAN_FISHER_VARIANCE / (n - 3)))


@dataclass(frozen=True)
class GapCorrelation:
    """Spearman's ρ between |gap| and cosine over the swaps, with intervals that respect the pairs.

    ``low``/``high``: percentile interval of a bootstrap that resamples *word pairs* (clusters);
    ``pair_rho``: ρ between each pair's |gap| and its mean cosine, ± ``pair_half_width``
    (:func:`spearman_half_width` of the number of pairs). With fewer than 4 word pairs (a data set
    cut by ``$BERTFLOW_MAX_PAIRS``) the intervals and ``pair_rho`` are NaN: too few to say."""

    rho: float
    n: int
    pairs: int
    low: float
    high: float
    pair_rho: float
    pair_half_width: float

    @property
    def excludes_zero(self) -> bool:
        """True when the pair-clustered interval lies on one side of 0."""
        return self.low > 0 or self.high < 0


def _pair_bootstrap(
    x: np.ndarray,
    ys: Sequence[np.ndarray],
    members: list[np.ndarray],
    n_resamples: int,
    seed: int,
) -> np.ndarray:
    """Spearman's ρ(x, y) for each of ``ys`` on ``n_resamples`` draws of whole clusters (the rows of
    ``members``), one row per draw; a draw where some ρ is undefined (a constant) is left out."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(seed)
    k, draws = len(members), []
    for _ in range(n_resamples):
        idx = np.concatenate([members[c] for c in rng.integers(0, k, k)])
        rx = rankdata(x[idx])
        rx = rx - rx.mean()
        rho = []
        for y in ys:
            ry = rankdata(y[idx])
            ry = ry - ry.mean()
            denom = np.sqrt((rx * rx).sum() * (ry * ry).sum())
            rho.append((rx * ry).sum() / denom if denom > 0 else np.nan)
        if np.isfinite(rho).all():
            draws.append(rho)
    return np.array(draws)


def _check(
    gap_size: np.ndarray,
    series: dict[str, np.ndarray],
    pairs: np.ndarray,
    level: float,
    n_resamples: int,
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """The inputs of :func:`gap_correlation` and :func:`gap_correlation_change` as arrays: 1-D
    of one length, finite, and a bootstrap that can run."""
    x = np.asarray(gap_size, dtype=np.float64)
    ys = [np.asarray(v, dtype=np.float64) for v in series.values()]
    pairs = np.asarray(pairs)
    shapes = [a.shape for a in (x, *ys, pairs)]
    if x.ndim != 1 or len(set(shapes)) != 1:
        names = ", ".join(["gap_size", *series]) + " and pairs"
        raise ValueError(f"{names} must be 1-D of one length: {shapes}")
    if not all(np.isfinite(a).all() for a in (x, *ys)):
        raise ValueError(f"gap_size and {' and '.join(series)} must be finite")
    if not 0 < level < 1 or n_resamples < 1:
        raise ValueError(
            f"need 0 < level < 1 and n_resamples >= 1, got {level}, {n_resamples}"
        )
    return x, ys, pairs


def gap_correlation(
    gap_size: np.ndarray,
    cosine: np.ndarray,
    pairs: np.ndarray,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> GapCorrelation:
    """:class:`GapCorrelation` of ``cosine`` with ``gap_size``, swaps clustered by ``pairs``."""
    from scipy.stats import spearmanr

    x, (y,), pairs = _check(gap_size, {"cosine": cosine}, pairs, level, n_resamples)
    names, cluster = np.unique(pairs, return_inverse=True)
    k = len(names)
    # too few clusters to resample or to take Fisher's interval of: no interval
    if k < 4:
        rho = spearmanr(x, y).statistic if len(x) > 1 else np.nan
        return GapCorrelation(float(rho), len(x), k, np.nan, np.nan, np.nan, np.nan)
    members = [np.flatnonzero(cluster == c) for c in range(k)]
    draws = _pair_bootstrap(x, [y], members, n_resamples, seed)[:, 0]
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    pair_gap = np.array([x[m].mean() for m in members])
    pair_cos = np.array([y[m].mean() for m in members])
    return GapCorrelation(
        rho=float(spearmanr(x, y).statistic),
        n=len(x),
        pairs=k,
        low=float(low),
        high=float(high),
        pair_rho=float(spearmanr(pair_gap, pair_cos).statistic),
        pair_half_width=spearman_half_width(k),
    )


def gap_correlation_change(
    gap_size: np.ndarray,
    before: np.ndarray,
    after: np.ndarray,
    pairs: np.ndarray,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """How much a post-processing changes :func:`gap_correlation`'s ρ: ρ(|gap|, ``after``) − ρ(|gap|,
    ``before``) over the same swaps, with the percentile interval of a bootstrap that resamples word
    pairs and recomputes both ρ on each draw (the two share their swaps, so their noise is shared
    too). Returns ``(change, low, high)``; NaN bounds below 4 word pairs."""
    from scipy.stats import spearmanr

    x, (a, b), pairs = _check(
        gap_size, {"before": before, "after": after}, pairs, level, n_resamples
    )
    change = float(spearmanr(x, b).statistic - spearmanr(x, a).statistic)
    names, cluster = np.unique(pairs, return_inverse=True)
    if len(names) < 4:
        return change, float("nan"), float("nan")
    members = [np.flatnonzero(cluster == c) for c in range(len(names))]
    rho = _pair_bootstrap(x, [a, b], members, n_resamples, seed)
    draws = rho[:, 1] - rho[:, 0]
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return change, float(low), float(high)


def clustered_se(values: np.ndarray, clusters: np.ndarray) -> float:
    """The standard error of ``values.mean()`` when values of one cluster (the swaps of one word
    pair) are not independent: the cluster-robust (sandwich) estimate,
    ``√(k/(k−1) · Σ_c (Σ_{i∈c} (v_i − v̄))²) / n`` over ``k`` clusters and ``n`` values."""
    v = np.asarray(values, dtype=np.float64)
    clusters = np.asarray(clusters)
    if v.ndim != 1 or clusters.shape != v.shape or len(v) == 0:
        raise ValueError("values and clusters must be 1-D of one, non-zero length")
    names, cluster = np.unique(clusters, return_inverse=True)
    if len(names) < 2:
        raise ValueError("need at least 2 clusters")
    sums = np.bincount(cluster, weights=v - v.mean())
    k = len(names)
    return float(np.sqrt(k / (k - 1) * (sums**2).sum()) / len(v))
