"""How often each token of a vocabulary occurred in a model's pretraining corpus.

The book's own checkpoints carry exact counts (:func:`token_counts`); for any other model the counts
are estimated from wordfreq's English word frequencies and the corpus size
(:func:`estimated_token_counts`, BERT's 3.3 B words by default). A count is not how often the model
was trained on a token: :func:`target_counts` gives how often, in expectation, it was a masked target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bertflow_mini.encoders import pretrain
from bertflow_mini.encoders.checkpoints import checkpoint_token_counts
from bertflow_mini.encoders.mlm import MASK_RATE
from bertflow_mini.encoders.names import source_of
from bertflow_mini.encoders.spec import parse_name
from bertflow_mini.geometry.frequency import word_frequencies

#: Words in BERT's pretraining corpus: BooksCorpus (800 M) + English Wikipedia (2,500 M), Devlin et al. 2019.
BERT_CORPUS_WORDS = 3_300_000_000
#: Google's recipe: 1 M steps of 256 sequences, "approximately 40 epochs over the 3.3 billion word
#: corpus" (Devlin et al. 2019, A.2); MultiBERTs ran the same batches for 2 M steps.
BERT_STEPS, BERT_EPOCHS = 1_000_000, 40


def estimated_token_counts(
    vocab: Sequence[str], corpus_words: float = BERT_CORPUS_WORDS
) -> np.ndarray:
    """An *estimate* of how often each token of a WordPiece ``vocab`` occurred in a corpus of
    ``corpus_words`` words: wordfreq's English frequency of the token (``##`` stripped) times
    ``corpus_words``, rounded; ``[unused…]`` tokens, which BERT's vocabulary reserves and its corpus
    never contains, and tokens wordfreq does not know count 0."""
    counts = np.rint(
        word_frequencies([t.removeprefix("##") for t in vocab]) * corpus_words
    )
    counts = counts.astype(np.int64)
    counts[[t.startswith("[unused") for t in vocab]] = 0
    return counts


def token_counts(
    model: str, vocab: Sequence[str], corpus_words: float = BERT_CORPUS_WORDS
) -> tuple[np.ndarray, str]:
    """How often each token of ``vocab`` occurred in ``model``'s pretraining corpus, and what that
    number is: the counts a checkpoint pretrained by this package carries (``scratch-bert``), else
    :func:`estimated_token_counts` for any other model."""
    try:
        counts = checkpoint_token_counts(model)
    except FileNotFoundError:
        estimate = estimated_token_counts(vocab, corpus_words)
        return estimate, f"estimated: wordfreq frequency x {corpus_words:,.0f} words"
    if len(counts) != len(vocab):
        raise ValueError(
            f"{model}'s token counts cover {len(counts)} tokens, the vocabulary has {len(vocab)}"
        )
    return counts, f"{model}'s pretraining-corpus counts"


def target_counts(
    model: str, vocab: Sequence[str], corpus_words: float = BERT_CORPUS_WORDS
) -> tuple[np.ndarray, str]:
    """How many times, in expectation, each token of ``vocab`` was a masked target in ``model``'s
    pretraining, and what that number is. For a checkpoint pretrained by this package, from the run
    itself (:func:`bertflow_mini.encoders.pretrain.expected_targets`: count × epochs seen × masking
    rate); for any other model an estimate, :func:`estimated_token_counts` × the epochs of Google's
    recipe (40; a MultiBERTs checkpoint's share of them by its step) × the masking rate."""
    counts, source = token_counts(model, vocab, corpus_words)
    if source.startswith("estimated"):
        spec = parse_name(model)
        steps = spec.step_k * 1000 if spec.kind == "multiberts" else BERT_STEPS
        epochs = BERT_EPOCHS * steps / BERT_STEPS
        return counts * (epochs * MASK_RATE), (
            f"estimated: {source.removeprefix('estimated: ')} x {epochs:g} epochs "
            f"(Google's recipe) x {MASK_RATE:.0%} masking"
        )
    folder = source_of(model)
    facts, step = pretrain.checkpoint_run(folder)
    epochs = pretrain.sentence_draws(facts, step)
    return pretrain.expected_targets(folder), (
        f"{model}'s expected masked-target counts: corpus count x {epochs:.2f} epoch "
        f"x {MASK_RATE:.0%} masking"
    )


def target_groups(
    counts: np.ndarray,
    targets: np.ndarray,
    thresholds: Sequence[float] = (1, 10, 100, 1_000),
) -> tuple[list[int], list[str]]:
    """Corpus-count ``edges`` and ``labels`` (for :func:`~bertflow_mini.geometry.frequency.norm_by_corpus_count`
    and :func:`~bertflow_mini.geometry.token_geometry.count_groups`) that group tokens by their
    expected masked-target count (``targets``, proportional to ``counts``, as
    :func:`target_counts` gives them) at ``thresholds``: count 0, expected under the first
    threshold, between two thresholds, at or above the last. Each label gives both, e.g.
    ``"under 1 (count 1–14)"``; groups no whole count falls into are left out."""
    counts, targets = np.asarray(counts), np.asarray(targets, dtype=np.float64)
    seen = counts > 0
    if counts.shape != targets.shape or not seen.any():
        raise ValueError("counts and targets must have one shape and some counts > 0")
    per = float(targets[seen].sum() / counts[seen].sum())
    if per <= 0 or not np.allclose(targets, counts * per, rtol=1e-9, atol=0):
        raise ValueError(
            "targets must be a positive multiple of counts (expected targets)"
        )
    # the first count whose expected targets reach each threshold
    starts = [max(1, math.ceil(t / per - 1e-9)) for t in thresholds]
    edges = [0, 1]
    lower: list[float | None] = [None, None]
    upper: list[float | None] = [None, None]
    for t, start in zip(thresholds, starts):
        if start == edges[-1]:  # the group below this threshold holds no whole count
            lower[-1] = t
            continue
        upper[-1] = upper[-1] if upper[-1] is not None else t
        edges.append(start)
        lower.append(t)
        upper.append(None)
    labels = ["0 (count 0)"]
    for i in range(1, len(edges)):
        lo, hi = lower[i], upper[i]
        span = (
            f"count ≥ {edges[i]:,}"
            if i == len(edges) - 1
            else f"count {edges[i]:,}–{edges[i + 1] - 1:,}"
        )
        if lo is None:
            what = f"under {hi:,}"
        elif hi is None:
            what = f"≥ {lo:,}"
        else:
            what = f"{lo:,}–{hi:,}"
        labels.append(f"{what} ({span})".replace("count 1–1)", "count 1)"))
    return edges, labels
