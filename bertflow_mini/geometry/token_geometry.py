"""The output layer of a pretrained checkpoint, measured: is it a cone, and where are the unseen tokens?

``scratch-bert`` ties its decoder to its input embeddings: row ``x`` is both token ``x``'s input
vector and the ``w_x`` of ``p(x|h) ∝ exp(hᵀw_x + b_x)``. Its checkpoints carry every token's corpus
count, so tokens never a target (count 0: Gao et al.'s *unseen* tokens) can be told apart.

It measures the cone (:func:`cone_measures`, :func:`top_singular_share`, uncentred), the unseen
tokens (:func:`count_groups`, :func:`negative_direction_share`, :func:`logit_attribution`), the
per-token offset a shared direction gives every logit (:func:`shared_offsets`,
:func:`offset_frequency`) and where the component shared by all token vectors comes from
(:func:`common_component_by_stage`, :func:`repeat_share`), and how averaging a sentence's tokens
keeps that component (:func:`pooled_token_vectors`, :func:`averaged_share`).

Defined for Chapter 4 (``book/04-representation-degeneration.ipynb``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd
import scipy.special
import scipy.stats
import torch

from bertflow_mini._checks import check_matrix
from bertflow_mini.encoders.encoder import tokenized
from bertflow_mini.geometry.corpus_counts import estimated_token_counts
from bertflow_mini.geometry.isotropy import explained_variance_top, mean_random_cosine

if TYPE_CHECKING:
    from transformers import BertForMaskedLM, PreTrainedTokenizerBase

    from bertflow_mini.encoders.encoder import Encoder

#: Corpus-count groups of :func:`count_groups`: [0, 1) is "unseen", [1, 2) "seen once", …
COUNT_EDGES = (0, 1, 2, 10, 100, 1_000, 10_000)


@dataclass
class OutputLayer:
    """A checkpoint's tied output layer and its training corpus' token counts (all indexed by token id)."""

    name: str
    embeddings: np.ndarray  # (V, d): input embeddings = decoder weights w_x
    bias: np.ndarray  # (V,): the decoder's output bias b_x
    counts: np.ndarray  # (V,): how often x occurs in the training corpus
    special: (
        np.ndarray
    )  # (V,) bool: [PAD], [UNK], [CLS], [SEP], [MASK] — left out of every measure
    counts_from: str = (
        "the training corpus"  # or :data:`ESTIMATED` (see :func:`load_output_layer`)
    )

    @property
    def seen(self) -> np.ndarray:
        """Tokens the corpus contains: targets of the MLM loss."""
        result: np.ndarray = (self.counts > 0) & ~self.special
        return result

    @property
    def unseen(self) -> np.ndarray:
        """Tokens the corpus never contains: never a target, so the softmax only ever pushes them."""
        result: np.ndarray = (self.counts == 0) & ~self.special
        return result


def output_layer(
    model: BertForMaskedLM,
    counts: np.ndarray,
    special_ids: Sequence[int],
    name: str = "",
) -> OutputLayer:
    """The :class:`OutputLayer` of a ``BertForMaskedLM`` (whose decoder must be tied to its embeddings)."""
    # torch types a submodule's attribute as Tensor | Module: an embedding's weight is a Tensor
    E = cast(torch.Tensor, model.get_input_embeddings().weight)
    if model.get_output_embeddings().weight.data_ptr() != E.data_ptr():  # type: ignore[no-untyped-call]  # unannotated in transformers
        raise ValueError("the model's decoder is not tied to its input embeddings")
    counts = np.asarray(counts)
    if counts.shape != (E.shape[0],):
        raise ValueError(
            f"counts must have one entry per token ({E.shape[0]}), got shape {counts.shape}"
        )
    special = np.zeros(len(counts), dtype=bool)
    special[list(special_ids)] = True
    return OutputLayer(
        name=name,
        embeddings=E.detach().double().cpu().numpy().copy(),
        bias=model.cls.predictions.bias.detach().double().cpu().numpy().copy(),
        counts=counts,
        special=special,
    )


#: :attr:`OutputLayer.counts_from` of a checkpoint whose corpus counts are not known.
ESTIMATED = (
    "wordfreq × 3.3 B words (an estimate: the model's corpus counts are not published)"
)


def load_output_layer(name: str) -> OutputLayer:
    """:func:`output_layer` of a checkpoint by name (``"scratch-bert@25"``, a MultiBERTs step, …),
    with its token counts: exact for checkpoints pretrained by :mod:`bertflow_mini.encoders.pretrain`
    (``counts_from`` = ``"the training corpus"``), else
    :func:`~bertflow_mini.geometry.corpus_counts.estimated_token_counts` (``counts_from`` =
    :data:`ESTIMATED`: an estimate, so the chapter says so)."""
    from bertflow_mini.encoders.checkpoints import checkpoint_token_counts, load_mlm
    from bertflow_mini.encoders.loading import load_tokenizer
    from bertflow_mini.encoders.names import source_of

    tokenizer = load_tokenizer(source_of(name), name)
    try:
        counts, source = checkpoint_token_counts(name), "the training corpus"
    except FileNotFoundError:
        vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        counts, source = estimated_token_counts(vocab), ESTIMATED
    layer = output_layer(load_mlm(name), counts, tokenizer.all_special_ids, name=name)
    layer.counts_from = source
    return layer


def checkpoint_step(name: str) -> int | None:
    """The pretraining step of a checkpoint along :func:`~bertflow_mini.encoders.checkpoints_along_training`:
    the book's recipe for ``scratch-bert@p``, the name for MultiBERTs (``…-step_20k`` → 20,000);
    None where it is not known (a released model, an ``@0`` control counts as 0)."""
    import json
    import re

    from bertflow_mini.encoders import pretrain
    from bertflow_mini.encoders.spec import parse_name

    spec = parse_name(name)
    if spec.kind == "scratch":
        folder = pretrain.checkpoint_folder()
        recipe = json.loads((folder / "recipe.json").read_text())["recipe"]
        step: int = round(recipe["steps"] * spec.percent / 100)
        return step
    found = re.search(r"step_(\d+)k$", name)
    if found:
        return int(found.group(1)) * 1000
    return 0 if name.endswith("@0") else None


def top_singular_share(E: np.ndarray, k: int = 1) -> float:
    """``Σ_{i≤k} σ_i² / Σ_i σ_i²`` for the singular values of ``E`` itself, not centred (k/d if isotropic).

    The ``σ_i²`` are the eigenvalues of the d×d Gram matrix ``EᵀE``: cheaper than an SVD of ``E``.
    """
    x = check_matrix(E, "E", min_rows=2).astype(np.float64)
    if not 1 <= k <= min(x.shape):
        raise ValueError(f"k must be between 1 and {min(x.shape)}, got {k}")
    s2 = np.clip(np.linalg.eigvalsh(x.T @ x)[::-1], 0.0, None)
    return float(s2[:k].sum() / s2.sum())


def cone_measures(layer: OutputLayer, seed: int = 0) -> dict[str, float]:
    """The cone measures of one checkpoint, over its non-special tokens (Spearman over seen tokens)."""
    E = layer.embeddings
    keep, seen, unseen = ~layer.special, layer.seen, layer.unseen
    norms = np.linalg.norm(E, axis=1)
    return {
        "mean cosine": mean_random_cosine(E[keep], seed=seed),
        "top-1 singular share": top_singular_share(E[keep], 1),
        "top-1 PC variance share": explained_variance_top(E[keep], 1),
        "Spearman(count, norm)": float(
            scipy.stats.spearmanr(layer.counts[seen], norms[seen]).statistic
        ),
        "norm seen": float(norms[seen].mean()),
        "norm unseen": float(norms[unseen].mean()),
        "bias seen": float(layer.bias[seen].mean()),
        "bias unseen": float(layer.bias[unseen].mean()),
    }


def geometry_table(layers: dict[str, OutputLayer], seed: int = 0) -> pd.DataFrame:
    """One row of :func:`cone_measures` per named checkpoint."""
    if not layers:
        raise ValueError("geometry_table needs at least one output layer")
    return pd.DataFrame(
        {name: cone_measures(layer, seed) for name, layer in layers.items()}
    ).T


def _group_label(lo: int, hi: float) -> str:
    if hi == lo + 1:
        return "unseen (0)" if lo == 0 else f"{lo:,}"
    return f"≥ {lo:,}" if np.isinf(hi) else f"{lo:,}–{int(hi) - 1:,}"


def count_groups(
    layer: OutputLayer,
    edges: Sequence[int] = COUNT_EDGES,
    seed: int = 0,
    labels: Sequence[str] | None = None,
    H: np.ndarray | None = None,
) -> pd.DataFrame:
    """Per corpus-count group ``[edges[i], edges[i+1])`` (the last open): tokens, mean norm and its
    standard error (sd/√n), mean output bias, mean cosine of two of its tokens; with inputs ``H``,
    also the share of the group's embeddings that are uniformly negative directions of them
    (:func:`negative_direction_share`). Empty groups are left out; ``labels`` (one per edge) name
    the groups instead of their count ranges."""
    bounds: list[float] = [*edges, np.inf]
    if any(b <= a for a, b in pairwise(bounds)) or bounds[0] < 0:
        raise ValueError(
            f"edges must be non-negative and increasing, got {list(edges)}"
        )
    if labels is not None and len(labels) != len(edges):
        raise ValueError(f"{len(labels)} labels for {len(edges)} groups")
    E, keep, rows = layer.embeddings, ~layer.special, {}
    for i, (lo, hi) in enumerate(zip(edges, bounds[1:])):
        group = keep & (layer.counts >= lo) & (layer.counts < hi)
        if group.sum() < 2:
            continue
        norms = np.linalg.norm(E[group], axis=1)
        rows[_group_label(lo, hi) if labels is None else labels[i]] = {
            "tokens": int(group.sum()),
            "mean norm": float(norms.mean()),
            "norm s.e.": float(norms.std(ddof=1) / np.sqrt(len(norms))),
            "mean bias": float(layer.bias[group].mean()),
            "mean cosine within": mean_random_cosine(E[group], seed=seed),
        }
        if H is not None:
            rows[list(rows)[-1]]["uniformly negative"] = negative_direction_share(
                E[group], H
            )
    return pd.DataFrame(rows).T.astype({"tokens": int})


@torch.no_grad()
def softmax_inputs(
    model: BertForMaskedLM,
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[str],
    max_length: int = 64,
) -> np.ndarray:
    """The vectors ``h`` the MLM softmax reads (the head's dense → GELU → LayerNorm applied to the last
    layer), one per real token of ``sentences`` ([CLS] and [SEP] included, padding not), as float64."""
    if not sentences:
        raise ValueError("softmax_inputs needs at least one sentence")
    batch = tokenized(tokenizer, sentences, max_length, next(model.parameters()).device)
    last = model.bert(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
    ).last_hidden_state
    h = model.cls.predictions.transform(last)
    result: np.ndarray = h[batch["attention_mask"].bool()].double().cpu().numpy()
    return result


def negative_direction_share(W: np.ndarray, H: np.ndarray) -> float:
    """The fraction of rows ``w`` of ``W`` with ``wᵀh < 0`` for every row ``h`` of ``H``: uniformly
    negative directions of ``H`` in Gao et al.'s sense."""
    W, H = check_matrix(W, "W"), check_matrix(H, "H")
    if W.shape[1] != H.shape[1]:
        raise ValueError(f"W {W.shape} and H {H.shape} differ in width")
    return float(((W @ H.T).max(axis=1) < 0).mean())


# ---------------------------------------------------------------- where the logits' fall came from


def _log_softmax_rows(L: np.ndarray) -> np.ndarray:
    result: np.ndarray = L - scipy.special.logsumexp(L, axis=1, keepdims=True)
    return result


def logit_attribution(
    H: np.ndarray, before: OutputLayer, after: OutputLayer, chunk: int = 256
) -> pd.DataFrame:
    """How much of the fall of the unseen tokens' scores from ``before`` to ``after`` came from their
    embeddings and how much from their output biases, at the softmax inputs ``H`` (rows ``h``).

    Three columns, rows ``embedding`` and ``bias``:

    * ``raw logit change``: mean over unseen tokens ``x`` and rows ``h`` of ``hᵀ(w_x' − w_x)``, and the
      mean ``b_x' − b_x``;
    * ``relative to seen tokens``: the same minus the seen tokens' mean change — a shift shared by
      every token changes no probability, so only what the unseen tokens moved beyond it counts;
    * ``log-probability (nats)``: the mean ``log p(x|h)`` of the unseen tokens under ``after`` minus
      the same with every unseen token's embedding (or bias) put back to ``before``: what that part of
      the change did to the probabilities themselves (the full softmax, special tokens included).
    """
    H = check_matrix(H, "H").astype(np.float64)
    if before.embeddings.shape != after.embeddings.shape:
        raise ValueError("before and after must be output layers of the same shape")
    check_matrix(after.embeddings, "after.embeddings", dim=H.shape[1])
    unseen, seen = after.unseen, after.seen
    if not unseen.any() or not seen.any():
        raise ValueError("the attribution needs both seen and unseen tokens")
    dW = after.embeddings - before.embeddings
    db = after.bias - before.bias
    move = (H @ dW[unseen].T).mean(), (H @ dW[seen].T).mean()
    W1, b1 = after.embeddings, after.bias
    logp = {"after": 0.0, "embedding": 0.0, "bias": 0.0}
    for start in range(0, len(H), chunk):
        Hc = H[start : start + chunk]
        L = Hc @ W1.T + b1
        logp["after"] += _log_softmax_rows(L)[:, unseen].sum()
        for part, (W_u, b_u) in {
            "embedding": (before.embeddings[unseen], b1[unseen]),
            "bias": (W1[unseen], before.bias[unseen]),
        }.items():
            reset = L.copy()
            reset[:, unseen] = Hc @ W_u.T + b_u
            logp[part] += _log_softmax_rows(reset)[:, unseen].sum()
    n = len(H) * unseen.sum()
    return pd.DataFrame(
        {
            "raw logit change": [move[0], db[unseen].mean()],
            "relative to seen tokens": [
                move[0] - move[1],
                db[unseen].mean() - db[seen].mean(),
            ],
            "log-probability (nats)": [
                (logp["after"] - logp["embedding"]) / n,
                (logp["after"] - logp["bias"]) / n,
            ],
        },
        index=["embedding", "bias"],
    )


# ---------------------------------------------------------------- the shared direction's offset


def shared_offsets(layer: OutputLayer, H: np.ndarray) -> np.ndarray:
    """Each token's score at the mean softmax input, ``w_xᵀh̄ + b_x`` with ``h̄ = mean(H)``.

    Every logit splits as ``w_xᵀh + b_x = w_xᵀ(h − h̄) + (w_xᵀh̄ + b_x)``: the second term is the same
    in every context, a per-token offset — a learned log-prior that can encode the token's frequency.
    """
    H = check_matrix(H, "H", dim=layer.embeddings.shape[1]).astype(np.float64)
    result: np.ndarray = layer.embeddings @ H.mean(axis=0) + layer.bias
    return result


def offset_frequency(layer: OutputLayer, H: np.ndarray) -> dict[str, float]:
    """How much of a token's corpus frequency its :func:`shared_offsets` carries.

    Over seen tokens: Spearman ρ(count, offset); the least-squares slope and Pearson r of the offset
    on ``log count`` (slope 1 would make the offset a log-frequency up to a constant, the
    ``log p(x)`` term of an MLM's logit); and the unseen tokens' mean offset minus the seen ones'.
    """
    offset = shared_offsets(layer, H)
    seen, unseen = layer.seen, layer.unseen
    if seen.sum() < 3:
        raise ValueError("need at least 3 seen tokens")
    fit = scipy.stats.linregress(np.log(layer.counts[seen]), offset[seen])
    return {
        "ρ(count, offset)": float(
            scipy.stats.spearmanr(layer.counts[seen], offset[seen]).statistic
        ),
        "slope on log count": float(fit.slope),
        "Pearson r": float(fit.rvalue),
        "unseen − seen offset": float(offset[unseen].mean() - offset[seen].mean())
        if unseen.any()
        else float("nan"),
    }


# ---------------------------------------------------------------- a component shared by all tokens


def _common(X: np.ndarray) -> dict[str, float]:
    mean = X.mean(axis=0)
    return {
        "mean ‖x‖": float(np.linalg.norm(X, axis=1).mean()),
        "‖mean x‖": float(np.linalg.norm(mean)),
        "‖mean‖² / mean ‖x‖²": float(mean @ mean / (X * X).sum(axis=1).mean()),
    }


@torch.no_grad()
def common_component_by_stage(
    model: BertForMaskedLM,
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[str],
    max_length: int = 64,
) -> pd.DataFrame:
    """How large the component shared by all token vectors is at each stage of a ``BertForMaskedLM``,
    over the real tokens of ``sentences``: from the word embeddings alone, through the embedding
    block (word + position + token-type, LayerNorm) and every layer, to the softmax input ``h``
    (the head's dense → GELU, then its LayerNorm). Columns: mean ‖x‖, ‖mean x‖ and
    ‖mean x‖² / mean ‖x‖² (0 for vectors with no common part, 1 for identical ones)."""
    if not sentences:
        raise ValueError("common_component_by_stage needs at least one sentence")
    batch = tokenized(tokenizer, sentences, max_length, next(model.parameters()).device)
    mask = batch["attention_mask"].bool()
    out = model.bert(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        output_hidden_states=True,
    )
    head = model.cls.predictions.transform
    dense = head.transform_act_fn(head.dense(out.hidden_states[-1]))
    stages = {
        "word embeddings": model.bert.embeddings.word_embeddings(batch["input_ids"]),
        "embedding block": out.hidden_states[0],
        **{
            f"after layer {i}": hs
            for i, hs in enumerate(out.hidden_states[1:], start=1)
        },
        "head: dense + GELU": dense,
        "softmax input h": head.LayerNorm(dense),
    }
    return pd.DataFrame(
        {k: _common(v[mask].double().cpu().numpy()) for k, v in stages.items()}
    ).T


def repeat_share(token_ids: Sequence[int]) -> float:
    """``Σ_x f_x²`` for the token frequencies ``f`` of a sample of token occurrences: the chance that
    two random positions hold the same token. Random token vectors, independent and of equal
    expected norm, have ``E‖mean‖² / E‖x‖² = Σ_x f_x²``: the common component that repeats alone
    give them."""
    ids = np.asarray(token_ids).ravel()
    if ids.size == 0:
        raise ValueError("repeat_share needs at least one token")
    f = np.unique(ids, return_counts=True)[1] / ids.size
    return float(f @ f)


@torch.no_grad()
def pooled_token_vectors(
    encoder: Encoder,
    sentences: Sequence[str],
    layers: Sequence[int] = (1, -1),
    max_length: int = 64,
    batch_size: int = 64,
) -> tuple[np.ndarray, np.ndarray]:
    """The token vectors a mean pooling over ``layers`` averages, one row per real token ([CLS] and
    [SEP] included, padding not), and the index of the sentence each row belongs to. The default
    ``(1, -1)`` is ``first-last-avg``: the mean of a sentence's rows is its pooled vector."""
    encoder.require_transformer("pooled_token_vectors")
    assert encoder.model is not None and encoder.tokenizer is not None
    if not sentences:
        raise ValueError("pooled_token_vectors needs at least one sentence")
    rows, owners = [], []
    for start in range(0, len(sentences), batch_size):
        part = list(sentences[start : start + batch_size])
        batch = tokenized(encoder.tokenizer, part, max_length, encoder.device)
        hs = encoder.model(**batch, output_hidden_states=True).hidden_states
        vectors = torch.stack([hs[i] for i in layers]).mean(dim=0)
        mask = batch["attention_mask"].bool()
        rows.append(vectors[mask].double().cpu().numpy())
        owners.append(start + torch.nonzero(mask)[:, 0].cpu().numpy())
    return np.concatenate(rows), np.concatenate(owners)


def averaged_share(token_share: float, lengths: Sequence[int]) -> float:
    """The share ``‖mean‖² / mean ‖x‖²`` that sentence vectors get by averaging ``lengths[j]`` token
    vectors each, when the token vectors have share ``token_share`` (a common component ``c``) and
    their remainders are uncorrelated: the mean keeps ``c`` while the remainder's energy shrinks
    by ``1/n``, so ``s / (s + (1 − s)·mean(1/n_j))``."""
    n = np.asarray(lengths, dtype=float)
    if n.size == 0 or (n < 1).any() or not 0 <= token_share <= 1:
        raise ValueError("averaged_share needs a share in [0, 1] and lengths ≥ 1")
    s = float(token_share)
    if s == 0:
        return 0.0
    return s / (s + (1 - s) * float(np.mean(1 / n)))
