"""Another similarity function instead of another space: Mahalanobis cosine, per-dimension
standardisation and BERTScore-style greedy token matching.

**Mahalanobis cosine is cosine after whitening.** With the fitted mean ``μ`` and covariance
``Σ = U Λ Uᵀ``, whitening maps ``x ↦ (x − μ) W`` with ``W = U Λ^{-1/2}``, and ``W Wᵀ = U Λ^{-1} Uᵀ
= Σ^{-1}``. So for any two vectors the dot product after whitening is
``(a − μ) W Wᵀ (b − μ)ᵀ = (a − μ)ᵀ Σ^{-1} (b − μ)``, the Mahalanobis inner product, and dividing by
the two norms gives :func:`mahalanobis_cosine`. A new similarity function that equals a linear map
of the space followed by cosine is not a new idea; :func:`mahalanobis_cosine` computes it with a
linear solve, never building ``W``, so the equality is a real check.

**Standardisation** (Timkey & van Schijndel 2021, "All bark and no bite"): a few "rogue" dimensions
with huge variance dominate cosine; dividing every dimension by its standard deviation (after
centring) gives each the same say. It is whitening without the rotation: the covariance's diagonal
is set to 1, its off-diagonal left alone.

**BERTScore** (Zhang et al. 2020) compares the two sentences' *token* vectors instead of two
averages: each token of one sentence is matched to its most similar token of the other (greedy, by
cosine), and the matches are averaged with IDF weights, so rare words count more. Precision matches
the tokens of ``b`` into ``a``, recall those of ``a`` into ``b``, and F1 is their harmonic mean. No
linear map of the sentence vector gives this: a max over token pairs is not a function of the two
means. Zhang et al. take IDF from the test set's reference sentences and drop [CLS]/[SEP]; we
drop them too and take IDF from the sentences being scored, both sides (no labels).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from bertflow_mini._checks import check_matrix
from bertflow_mini.evaluation.lexical import document_idf
from bertflow_mini.evaluation.vectors import cosine_matrix

if TYPE_CHECKING:
    import pandas as pd

    from bertflow_mini.data.pairs import STSPairs
    from bertflow_mini.encoders.encoder import Encoder
    from bertflow_mini.evaluation.methods import PostProcessor


# ---------------------------------------------------------------------------------------- Mahalanobis
def mahalanobis_cosine(
    a: np.ndarray, b: np.ndarray, mean: np.ndarray, cov: np.ndarray
) -> np.ndarray:
    """Row-wise ``(a−μ)ᵀ Σ⁻¹ (b−μ) / (‖a−μ‖_Σ⁻¹ ‖b−μ‖_Σ⁻¹)`` for two ``(n, d)`` matrices (a Cholesky
    solve). Raises ``ValueError`` when ``cov`` is not positive definite."""
    a = check_matrix(a, "a").astype(np.float64)
    b = check_matrix(b, "b", dim=a.shape[1]).astype(np.float64)
    if a.shape != b.shape:
        raise ValueError(
            f"a and b must have the same shape, got {a.shape} and {b.shape}"
        )
    cov = np.asarray(cov, dtype=np.float64)
    if cov.shape != (a.shape[1], a.shape[1]):
        raise ValueError(f"cov must be ({a.shape[1]}, {a.shape[1]}), got {cov.shape}")
    import scipy.linalg

    try:
        factor = scipy.linalg.cho_factor(cov)
    except np.linalg.LinAlgError as err:
        raise ValueError(
            f"cov is not positive definite, so it has no inverse ({err}); a covariance fitted on "
            f"fewer rows than its {len(cov)} dimensions is singular"
        ) from None
    a, b = a - mean, b - mean
    inner = np.einsum("ij,ij->i", a, scipy.linalg.cho_solve(factor, b.T).T)
    norm_a = np.sqrt(np.einsum("ij,ij->i", a, scipy.linalg.cho_solve(factor, a.T).T))
    norm_b = np.sqrt(np.einsum("ij,ij->i", b, scipy.linalg.cho_solve(factor, b.T).T))
    result: np.ndarray = inner / np.maximum(norm_a * norm_b, 1e-300)
    return result


# ---------------------------------------------------------------------------------------- standardisation
class Standardisation:
    """``x ↦ (x − μ) / σ`` per dimension: the post-processor interface (``fit`` / ``transform``)."""

    def __init__(self) -> None:
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None

    def fit(self, X: np.ndarray) -> Standardisation:
        x = check_matrix(X, "X", min_rows=2).astype(np.float64)
        self.mean, self.std = x.mean(axis=0), x.std(axis=0, ddof=1)
        if (self.std == 0).any():
            raise ValueError(
                f"X has {int((self.std == 0).sum())} constant column(s): nothing to standardise by"
            )
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        if self.mean is None:
            raise RuntimeError("Standardisation.transform called before fit")
        x = check_matrix(X, "X", dim=len(self.mean))
        result: np.ndarray = ((x.astype(np.float64) - self.mean) / self.std).astype(
            x.dtype, copy=False
        )
        return result


# ---------------------------------------------------------------------------------------- BERTScore
@dataclass
class TokenVectors:
    """The content-token vectors of each sentence (no [CLS]/[SEP]/[PAD]) and their token ids."""

    vectors: list[np.ndarray]  # one (n_tokens, d) array per sentence
    ids: list[np.ndarray]  # one (n_tokens,) array per sentence

    def stacked(self) -> np.ndarray:
        """Every token vector of every sentence, one row each (to fit a post-processor on)."""
        return np.concatenate(self.vectors)

    def select(self, rows: Sequence[int]) -> TokenVectors:
        """The sentences ``rows``, in that order (repeats allowed)."""
        return TokenVectors(
            [self.vectors[i] for i in rows], [self.ids[i] for i in rows]
        )

    def mapped(self, post: PostProcessor | None) -> TokenVectors:
        """The same tokens with every vector passed through a fitted post-processor."""
        if post is None:
            return self
        out = post.transform(self.stacked())
        cuts = np.cumsum([len(v) for v in self.vectors])[:-1]
        return TokenVectors(np.split(out, cuts), self.ids)


def token_vectors(
    encoder: Encoder,
    sentences: Sequence[str],
    pooling: str = "first-last-avg",
    *,
    max_length: int = 64,
    batch_size: int = 64,
    keep_special: bool = False,
) -> TokenVectors:
    """Per-token vectors of ``sentences``: the same layers the sentence pooling averages, per token
    (their mean is the sentence vector when ``keep_special``; BERTScore drops [CLS] and [SEP]).

    Batches of similar length (:func:`bertflow_mini.encoders.encoder.hidden_state_batches`) on one
    CPU thread (:mod:`bertflow_mini._threads`); the result is in input order."""
    from bertflow_mini._threads import torch_threads
    from bertflow_mini.encoders.encoder import hidden_state_batches
    from bertflow_mini.encoders.pooling import pooling_layers

    encoder.require_transformer("token_vectors")
    assert encoder.tokenizer is not None
    layers = list(
        pooling_layers(pooling if pooling != "cls" else "last-avg", encoder.n_layers)
    )
    tok, special = encoder.tokenizer, set(encoder.tokenizer.all_special_ids)
    sentences = list(sentences)
    vectors: list[np.ndarray] = [np.empty(0)] * len(sentences)
    ids: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * len(sentences)
    cpu = torch.device(encoder.device).type == "cpu"
    with torch_threads(1 if cpu else None):
        batches = hidden_state_batches(encoder, sentences, max_length, batch_size)
        for rows, batch, hs in batches:
            h = torch.stack([hs[i] for i in layers]).mean(0).float().cpu().numpy()
            for i, row, idx in zip(rows, h, batch["input_ids"].cpu().numpy()):
                keep = np.array([keep_special or t not in special for t in idx])
                keep &= idx != tok.pad_token_id
                vectors[i], ids[i] = row[keep], idx[keep]
    return TokenVectors(vectors, ids)


def token_idf(ids: Sequence[np.ndarray], smooth: bool = True) -> dict[int, float]:
    """IDF of each token id over the "documents" ``ids``: ``log((M + 1) / (df + 1))`` (Zhang et al.'s;
    :func:`bertflow_mini.evaluation.lexical.document_idf`, as the word IDF of the baselines)."""
    if len(ids) == 0:
        raise ValueError("token_idf needs at least one sentence")
    return cast(
        dict[int, float], document_idf([doc.tolist() for doc in ids], smooth=smooth)
    )


def greedy_match(
    a: np.ndarray, b: np.ndarray, wa: np.ndarray, wb: np.ndarray
) -> tuple[float, float, float]:
    """BERTScore (precision, recall, F1) of token matrices ``a`` (reference) and ``b`` (candidate).

    ``R = Σ_i wa_i max_j cos(a_i, b_j) / Σ wa``, ``P`` the same from ``b`` into ``a``, ``F = 2PR/(P+R)``.
    """
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both sentences need at least one token")
    sims = cosine_matrix(a, b)
    wa, wb = np.asarray(wa, np.float64), np.asarray(wb, np.float64)
    # every token in every sentence: IDF 0, fall back to plain means
    if wa.sum() <= 0 or wb.sum() <= 0:
        wa, wb = np.ones_like(wa), np.ones_like(wb)
    recall = float((wa * sims.max(axis=1)).sum() / wa.sum())
    precision = float((wb * sims.max(axis=0)).sum() / wb.sum())
    f1 = (
        2 * precision * recall / (precision + recall)
        if precision + recall != 0
        else 0.0
    )
    return precision, recall, f1


def bertscore(
    first: TokenVectors, second: TokenVectors, idf: dict[int, float] | None = None
) -> np.ndarray:
    """BERTScore F1 of each pair (``first[i]``, ``second[i]``); ``idf=None`` weighs every token 1."""
    if len(first.vectors) != len(second.vectors):
        raise ValueError(
            f"{len(first.vectors)} first sentences but {len(second.vectors)} second ones"
        )

    def weights(ids: np.ndarray) -> np.ndarray:
        return (
            np.ones(len(ids))
            if idf is None
            else np.array([idf.get(int(t), 0.0) for t in ids])
        )

    return np.array(
        [
            greedy_match(a, b, weights(ia), weights(ib))[2]
            for a, b, ia, ib in zip(
                first.vectors, second.vectors, first.ids, second.ids
            )
        ]
    )


def subsample_pairs(pairs: STSPairs, n: int, seed: int = 0) -> STSPairs:
    """At most ``n`` pairs of an :class:`bertflow_mini.data.STSPairs`, drawn without replacement and
    kept in their original order (subsets stay subsets, so ``wmean`` still applies)."""
    from bertflow_mini.data import STSPairs

    if n < 3:
        raise ValueError(f"n must be at least 3 (Spearman needs 3 pairs), got {n}")
    if len(pairs) <= n:
        return pairs
    keep = np.sort(np.random.default_rng(seed).choice(len(pairs), n, replace=False))
    return STSPairs(
        pairs.task,
        pairs.split,
        [pairs.sent1[i] for i in keep],
        [pairs.sent2[i] for i in keep],
        pairs.scores[keep],
        [pairs.subsets[i] for i in keep],
    )


@dataclass
class SampledSimilarities:
    """The sampled test pairs of each task and, for every row of
    :func:`bertscore_similarities` (a similarity function), the similarity of each of those pairs:
    ``table()`` scores them; paired comparisons of two rows resample them."""

    #: task -> the sampled STSPairs
    pairs: dict[str, Any]
    #: row name -> task -> one similarity per sampled pair
    rows: dict[str, dict[str, np.ndarray]]

    def table(self) -> pd.DataFrame:
        """Spearman × 100 (``wmean``) of every row on every task, plus ``Avg.``."""
        import pandas as pd

        from bertflow_mini.evaluation.sts import score_similarities, with_average

        scores = {
            row: {t: score_similarities(self.pairs[t], s).wmean for t, s in by.items()}
            for row, by in self.rows.items()
        }
        return with_average(pd.DataFrame(scores).T)


def bertscore_similarities(
    encoder: Encoder,
    tasks: Sequence[str],
    max_pairs: int = 1000,
    pooling: str = "first-last-avg",
    seed: int = 0,
) -> SampledSimilarities:
    """One similarity per sampled test pair for each similarity function: sentence cosine
    (raw, standardised, whitened) and BERTScore F1 with IDF (raw tokens, standardised, whitened),
    on at most ``max_pairs`` test pairs per task (:func:`subsample_pairs`, ``seed``).

    Every post-processor is fitted on the distinct sentences of the sampled pairs (sentence rows)
    or on their tokens (token rows), without labels; IDF counts those sentences."""
    from bertflow_mini.data import load_sts
    from bertflow_mini.evaluation.reproduce import embed_task
    from bertflow_mini.evaluation.sts import cosine_after
    from bertflow_mini.postprocess.whitening import Whitening

    posts: dict[str, Callable[[], Any]] = {
        "raw": lambda: None,
        "standardised": Standardisation,
        "whitened": Whitening,
    }
    sampled: dict[str, Any] = {}
    rows: dict[str, dict[str, np.ndarray]] = {}
    for task in tasks:
        pairs = subsample_pairs(load_sts(task, "test"), max_pairs, seed)
        sampled[task] = pairs
        sentences = pairs.sentences()
        row = {s: i for i, s in enumerate(sentences)}
        # the cached vectors
        vecs = embed_task(encoder, task, pooling, progress=False)(sentences)
        tokens = token_vectors(encoder, sentences, pooling)
        idf = token_idf(tokens.ids)
        first, second = [row[s] for s in pairs.sent1], [row[s] for s in pairs.sent2]
        for name, make in posts.items():
            rows.setdefault(f"cosine, {name}", {})[task] = cosine_after(
                vecs[first], vecs[second], make(), fit_on=vecs
            )
            post = make()
            t = tokens.mapped(None if post is None else post.fit(tokens.stacked()))
            rows.setdefault(f"BERTScore F1 (IDF), {name}", {})[task] = bertscore(
                t.select(first), t.select(second), idf
            )
    return SampledSimilarities(sampled, rows)
