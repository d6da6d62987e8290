"""Chapter 1's bridge to a real BERT: read ``log p(x)`` and ``log p(x|c)`` off an MLM head.

BERT's masked-LM head is not the bare softmax of the derivation. For the last-layer vector ``h_c`` at
a ``[MASK]`` it computes (``transformers``' ``BertLMPredictionHead``)::

    h̃_c = LayerNorm(GELU(W h_c + a))          # a dense "transform" layer, d → d
    logit_x = h̃_cᵀ w_x + b_x                  # w_x = the *input* embedding of x (tied), b_x a bias

So the identity ``logit ≈ log p(x|c) + λ_c`` holds for ``h̃_c``, not for ``h_c``, and the frequency
term ``log p(x)`` has a natural home in the bias ``b_x``. This module measures both on a pretrained
checkpoint, against counts of the corpus it was trained on:

* :func:`head_by_hand` — the head's logits recomputed from its parts (checked against the model);
* :func:`bias_vs_frequency` — ``b_x`` against ``log count(x)`` over the tokens the corpus contains;
* :func:`corpus_token_counts` — token counts of a corpus, for a model that does not carry its own
  (any model but ``scratch-bert``: the book's corpus then stands in for the model's unavailable one);
* :func:`frequent_contexts` and :func:`context_logits` — for the most frequent contexts
  ``c = (left token, right token)``, the corpus ``log p(x|c)`` from trigram counts, and the MLM's
  logits at a ``[MASK]`` between the two, averaged over the context's occurrences;
* :func:`held_out_sequences` and :func:`locate_contexts` — the sentences the model never trained
  on, and the same contexts found in them, so that the probe reads unseen sentences.

Defined for Chapter 1 (``book/01-mlm-and-pmi.ipynb``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import scipy.special
import scipy.stats
import torch

from bertflow_mini.encoders.checkpoints import checkpoint_token_counts, load_mlm  # noqa: F401 (chapters' names)
from bertflow_mini.encoders.mlm import pad_batch
from bertflow_mini.encoders.names import BOOK_MODEL

if TYPE_CHECKING:
    from transformers import BertForMaskedLM, PreTrainedTokenizerBase

    from bertflow_mini.encoders.pretrain import Recipe


def head_by_hand(
    model: BertForMaskedLM, hidden: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(h̃, logits)`` for last-layer vectors ``hidden`` (n, d): ``h̃ = LayerNorm(GELU(W h + a))``,
    ``logits = h̃ Eᵀ + b`` with ``E`` the (tied) input embeddings and ``b`` the output bias."""
    head = model.cls.predictions
    t = head.transform
    h_tilde = t.LayerNorm(torch.nn.functional.gelu(t.dense(hidden)))
    # torch types a submodule's attribute as Tensor | Module: an embedding's weight is a Tensor
    E = cast(torch.Tensor, model.get_input_embeddings().weight)
    return h_tilde, h_tilde @ E.T + head.bias


def output_bias(model: BertForMaskedLM) -> np.ndarray:
    """The MLM head's per-token output bias ``b_x``, shape (vocab,)."""
    result: np.ndarray = (
        model.cls.predictions.bias.detach().cpu().numpy().astype(np.float64)
    )
    return result


def bias_vs_frequency(bias: np.ndarray, counts: np.ndarray) -> dict[str, float]:
    """How well ``b_x`` tracks ``log count(x)`` over tokens with a positive count: Spearman, Pearson,
    least-squares slope; and the mean bias of seen and of never-seen tokens."""
    bias, counts = (
        np.asarray(bias, dtype=np.float64),
        np.asarray(counts, dtype=np.float64),
    )
    if bias.shape != counts.shape or bias.ndim != 1:
        raise ValueError(
            f"bias {bias.shape} and counts {counts.shape} must be 1-D of equal length"
        )
    seen = counts > 0
    if seen.sum() < 3:
        raise ValueError("fewer than 3 tokens with a positive count")
    logc = np.log(counts[seen])
    return {
        "spearman": float(scipy.stats.spearmanr(bias[seen], logc).statistic),
        "pearson": float(scipy.stats.pearsonr(bias[seen], logc).statistic),
        "slope": float(np.polyfit(logc, bias[seen], 1)[0]),
        "tokens seen": int(seen.sum()),
        "mean b seen": float(bias[seen].mean()),
        "mean b unseen": float(bias[~seen].mean()) if (~seen).any() else float("nan"),
    }


def corpus_token_counts(
    seqs: Sequence[np.ndarray], vocab_size: int, special_ids: Sequence[int]
) -> np.ndarray:
    """How often each token id occurs in the token-id sequences ``seqs``, special tokens counted as 0:
    what :func:`bertflow_mini.encoders.pretrain.pretrain` saves beside a checkpoint, for any corpus."""
    flat = (
        np.concatenate([np.asarray(s, dtype=np.int64) for s in seqs])
        if len(seqs)
        else np.zeros(0, np.int64)
    )
    if flat.size and (flat.min() < 0 or flat.max() >= vocab_size):
        raise ValueError(
            f"token ids must lie in [0, {vocab_size}); got {flat.min()} … {flat.max()}"
        )
    counts = np.bincount(flat, minlength=vocab_size)
    counts[list(special_ids)] = 0
    return counts


# ---------------------------------------------------------------------------------------- contexts
@dataclass
class Contexts:
    """Frequent contexts ``c = (left, right)`` and the tokens ``x`` seen between them.

    ``counts[k, x]`` = how often ``left[k] x right[k]`` occurs; ``occurrences[k]`` = the (sequence,
    position of x) pairs where context ``k`` occurs."""

    left: np.ndarray
    right: np.ndarray
    counts: np.ndarray  # (n_contexts, vocab)
    occurrences: list[np.ndarray]  # each (n_k, 2)

    def log_p_x_given_c(self, min_count: int = 1) -> np.ndarray:
        """Corpus ``log p(x|c) = log N[c, x] − log N[c]``; ``−inf`` where ``N[c, x] < min_count``."""
        N = self.counts.astype(np.float64)
        with np.errstate(divide="ignore"):
            out: np.ndarray = np.log(N) - np.log(N.sum(axis=1, keepdims=True))
        out[N < min_count] = -np.inf
        return out


def _trigrams(seqs: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """(left, middle, right, sequence, position) of every inner token of every sequence."""
    parts: list[list[np.ndarray]] = [[], [], [], [], []]
    for n, s in enumerate(seqs):
        s = np.asarray(s, dtype=np.int64)
        if len(s) < 3:
            continue
        pos = np.arange(1, len(s) - 1)
        for part, values in zip(
            parts, (s[:-2], s[1:-1], s[2:], np.full(len(pos), n), pos)
        ):
            part.append(values)
    if not parts[0]:
        raise ValueError("no sequence has an inner token")
    return tuple(np.concatenate(p) for p in parts)


def frequent_contexts(
    seqs: Sequence[np.ndarray], vocab_size: int, n_contexts: int = 100
) -> Contexts:
    """The ``n_contexts`` most frequent ``(left, right)`` token pairs around an inner token of ``seqs``
    (token-id sequences starting with [CLS] and ending with [SEP], so the middle token is never one of
    them), with the counts of every token seen between them. Ties go to the smaller ids."""
    trigrams = _trigrams(seqs)
    keys, freq = np.unique(trigrams[0] * vocab_size + trigrams[2], return_counts=True)
    chosen = keys[np.lexsort((keys, -freq))[:n_contexts]]  # most frequent first
    return _located(trigrams, chosen, vocab_size)


def locate_contexts(seqs: Sequence[np.ndarray], contexts: Contexts) -> Contexts:
    """The same contexts ``(left, right)``, in the same order, counted and located in other
    sequences ``seqs`` (held-out ones, say); a context absent from them gets no occurrence."""
    vocab_size = contexts.counts.shape[1]
    chosen = contexts.left * vocab_size + contexts.right
    return _located(_trigrams(seqs), chosen, vocab_size)


def _located(
    trigrams: tuple[np.ndarray, ...], chosen: np.ndarray, vocab_size: int
) -> Contexts:
    """The contexts with keys ``left * vocab_size + right`` (in the order of ``chosen``), counted
    over ``trigrams`` (what :func:`_trigrams` returns)."""
    left, mid, right, seq, pos = trigrams
    key = left * vocab_size + right
    by_key = np.argsort(chosen)
    slot = np.clip(np.searchsorted(chosen[by_key], key), 0, len(chosen) - 1)
    hit = chosen[by_key][slot] == key
    # the context index of every trigram that has a chosen context
    rows = by_key[slot[hit]]
    counts = np.zeros((len(chosen), vocab_size), dtype=np.int64)
    np.add.at(counts, (rows, mid[hit]), 1)
    where = np.stack([seq[hit], pos[hit]], axis=1)
    order = np.argsort(rows, kind="stable")
    occ = np.split(
        where[order], np.cumsum(np.bincount(rows, minlength=len(chosen)))[:-1]
    )
    return Contexts(chosen // vocab_size, chosen % vocab_size, counts, occ)


@dataclass
class ContextLogits:
    """The MLM at a [MASK] in each context, averaged over (up to ``per_context``) occurrences."""

    mean_logits: np.ndarray  # (n_contexts, vocab): mean over occurrences of the logits
    # (n_contexts, vocab): log of the mean predicted probability
    log_mixture: np.ndarray
    cos_mask_vs_pooled: (
        float  # mean cosine of h_c at the [MASK] and the sentence's mean-pooled vector
    )
    cos_mask_vs_other: float  # the same with another sentence's (half the occurrences away): a baseline
    # the same with the mean over the sentence's other positions: the [MASK]'s own vector left out
    cos_mask_vs_rest: float
    # the baseline for that one, like for like: the other sentence's mean without *its* [MASK]
    cos_mask_vs_other_rest: float
    n_occurrences: int
    # per masked sentence (in job order), the cosines the four means above average:
    # keys "pooled", "other", "rest", "other rest"
    cos_each: dict[str, np.ndarray]
    # (2, n_contexts, vocab): log_mixture from each context's even and odd occurrences
    # (by the order they were drawn; -inf in a half with none): for a split-half reliability
    log_mixture_halves: np.ndarray


@torch.no_grad()
def context_logits(
    model: BertForMaskedLM,
    seqs: Sequence[np.ndarray],
    contexts: Contexts,
    *,
    mask_id: int,
    pad_id: int,
    special_ids: Sequence[int],
    per_context: int = 16,
    seed: int = 0,
    batch_size: int = 128,
) -> ContextLogits:
    """Mask the middle token of up to ``per_context`` random occurrences of each context, run the MLM,
    and average its logits (and its probabilities) at the [MASK] per context. Also compares ``h_c`` at
    the [MASK] with the mean of the sentence's last-layer vectors (every position of the masked
    sentence, [CLS], [MASK] and [SEP] included: the same forward pass), with that mean less the
    [MASK]'s own vector (the mean over the other positions), and, as baselines, with the two same
    means of the sentence half the list of occurrences away (another context's): its full mean, and
    its mean without its own [MASK] (the like-for-like baseline of the second). The averages of
    each context's even and odd occurrences are kept apart too (``log_mixture_halves``), to
    measure how noisy the average over so few sentences is."""
    rng = np.random.default_rng(seed)
    jobs = []
    for k, occ in enumerate(contexts.occurrences):
        take = occ[rng.permutation(len(occ))[:per_context]]
        jobs += [(k, int(n), int(p)) for n, p in take]
    n_ctx, vocab = contexts.counts.shape
    sums = np.zeros((n_ctx, vocab))
    mix = np.full((n_ctx, vocab), -np.inf)
    halves = np.full((2, n_ctx, vocab), -np.inf)
    seen = np.zeros(n_ctx)
    at_mask, pooled_all, rest_all = [], [], []
    for start in range(0, len(jobs), batch_size):
        part = jobs[start : start + batch_size]
        masked = []
        for _, n, p in part:
            s = np.array(seqs[n], dtype=np.int64)
            s[p] = mask_id
            masked.append(s)
        b = pad_batch(masked, pad_id, special_ids)
        device = next(
            model.parameters()
        ).device  # the model's device: a GPU when there is one
        attention = b.attention.to(device)
        hidden = model.bert(
            input_ids=b.ids.to(device), attention_mask=attention
        ).last_hidden_state
        rows = torch.arange(len(part), device=device)
        h = hidden[rows, torch.tensor([p for _, _, p in part], device=device)]
        logits = model.cls(h).double().cpu().numpy()
        logp = scipy.special.log_softmax(logits, axis=1)
        m = attention.unsqueeze(-1).float()
        pooled = (hidden * m).sum(1) / m.sum(1)
        rest = ((hidden * m).sum(1) - h) / (m.sum(1) - 1)  # the [MASK] left out
        at_mask.append(torch.nn.functional.normalize(h, dim=1).double().cpu().numpy())
        pooled_all.append(
            torch.nn.functional.normalize(pooled, dim=1).double().cpu().numpy()
        )
        rest_all.append(
            torch.nn.functional.normalize(rest, dim=1).double().cpu().numpy()
        )
        for (k, _, _), lg, lp in zip(part, logits, logp):
            sums[k] += lg
            mix[k] = np.logaddexp(mix[k], lp)
            half = int(seen[k]) % 2
            halves[half, k] = np.logaddexp(halves[half, k], lp)
            seen[k] += 1
    if (seen == 0).any():
        raise ValueError("a context has no occurrence")
    h_all, pooled = np.concatenate(at_mask), np.concatenate(pooled_all)
    rest = np.concatenate(rest_all)
    shift = len(jobs) // 2
    each = {
        "pooled": (h_all * pooled).sum(1),
        "other": (h_all * np.roll(pooled, shift, axis=0)).sum(1),
        "rest": (h_all * rest).sum(1),
        "other rest": (h_all * np.roll(rest, shift, axis=0)).sum(1),
    }
    return ContextLogits(
        mean_logits=sums / seen[:, None],
        log_mixture=mix - np.log(seen)[:, None],
        cos_mask_vs_pooled=float(each["pooled"].mean()),
        cos_mask_vs_other=float(each["other"].mean()),
        cos_mask_vs_rest=float(each["rest"].mean()),
        cos_mask_vs_other_rest=float(each["other rest"].mean()),
        n_occurrences=len(jobs),
        cos_each=each,
        log_mixture_halves=halves
        - np.log(np.maximum(np.stack([np.ceil(seen / 2), np.floor(seen / 2)]), 1))[
            :, :, None
        ],
    )


# ---------------------------------------------------------------------------------------- corpus
def _pack(seqs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sequences as one flat int32 array and the offsets where each starts (plus the end)."""
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    flat = (
        np.concatenate([np.asarray(s, dtype=np.int32) for s in seqs])
        if len(seqs)
        else np.zeros(0, np.int32)
    )
    return flat, np.concatenate([[0], np.cumsum(lengths)])


def _unpack(flat: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    return [flat[a:b] for a, b in zip(offsets[:-1], offsets[1:])]


def held_out_sequences(recipe: Recipe | None = None) -> tuple[list[np.ndarray], int]:
    """The token ids of the sentences a ``scratch-bert`` recipe holds out (the share
    :func:`training_sequences` leaves out), minus any whose ids equal a training sequence's (two
    sentences that differ only in case or accents tokenise alike under an uncased vocabulary); and
    how many were dropped for that."""
    from bertflow_mini.data.corpus import corpus_sentences, split_held_out
    from bertflow_mini.encoders import pretrain
    from bertflow_mini.encoders.mlm import tokenize

    recipe = recipe or pretrain.DEFAULT
    _, held = split_held_out(corpus_sentences(recipe.corpus), recipe.held_out)
    seqs = tokenize(held, pretrain.load_tokenizer(), recipe.max_length).seqs
    seen = {np.asarray(s, dtype=np.int64).tobytes() for s in training_sequences(recipe)}
    kept = [s for s in seqs if np.asarray(s, dtype=np.int64).tobytes() not in seen]
    return kept, len(seqs) - len(kept)


def model_token_counts(
    model_name: str,
    mlm: BertForMaskedLM,
    seqs: Sequence[np.ndarray],
    tokenizer: PreTrainedTokenizerBase,
) -> tuple[np.ndarray, str]:
    """How often each of ``mlm``'s tokens occurred in its training data, and where the counts come from.

    A ``scratch-bert`` checkpoint stores its own corpus' counts; for any other model, whose corpus is
    not at hand, the book's corpus (the token ids ``seqs``) stands in, and the returned description
    says so. Counts indexed by another vocabulary would be meaningless, hence the error."""
    if mlm.config.vocab_size != len(tokenizer):
        raise ValueError(
            f"{model_name} has {mlm.config.vocab_size:,} token ids, the book's tokenizer "
            f"{len(tokenizer):,}: no token counts for it"
        )
    if model_name.startswith(BOOK_MODEL):
        return checkpoint_token_counts(
            model_name
        ), f"{model_name}'s own training corpus"
    counts = corpus_token_counts(seqs, len(tokenizer), tokenizer.all_special_ids)
    return counts, (
        f"the book's corpus (WordNet glosses + STS/SICK), standing in for {model_name}'s "
        "own, which is not at hand"
    )


def training_sequences(
    recipe: Recipe | None = None, *, cache: bool = True
) -> list[np.ndarray]:
    """The token ids of the sentences a ``scratch-bert`` recipe trains on (its corpus minus the
    held-out share), tokenised exactly as :func:`bertflow_mini.encoders.pretrain.pretrain` does. Tokenising
    ~200k sentences takes a while on a small CPU, so the result is cached, keyed by the recipe."""
    from bertflow_mini._io import atomic_path, cache_dir
    from bertflow_mini.data.corpus import corpus_sentences, split_held_out
    from bertflow_mini.encoders import pretrain
    from bertflow_mini.encoders.mlm import tokenize

    recipe = recipe or pretrain.DEFAULT
    path = cache_dir("corpus") / f"{pretrain.NAME}-{recipe.key()}-train-ids.npz"
    if cache and path.is_file():
        with np.load(path) as f:
            return _unpack(f["flat"], f["offsets"])
    train, _ = split_held_out(corpus_sentences(recipe.corpus), recipe.held_out)
    seqs = tokenize(train, pretrain.load_tokenizer(), recipe.max_length).seqs
    if cache:
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, **dict(zip(("flat", "offsets"), _pack(seqs))))  # type: ignore[arg-type]
    return seqs
