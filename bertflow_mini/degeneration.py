"""Representation degeneration (Gao et al., ICLR 2019), made small enough to watch happen on a CPU.

Gao et al. explain why word embeddings trained through a softmax end up in a narrow cone, rare words
farthest out. Take the cross-entropy loss of one context with hidden state ``h`` and target ``y``::

    −log softmax(W h)_y = −w_yᵀh + log Σ_j exp(w_jᵀh)

A token ``x`` that is never (or rarely) a target only ever appears inside the log-sum-exp, so its
gradient is ``Σ_i p(x|h_i) h_i``: descent pushes ``w_x`` *away from every hidden state at once*. If the
hidden states all lie on one side of a hyperplane through the origin (the origin is not in their
convex hull), there is a direction ``u`` with ``uᵀh_i < 0`` for all ``i``, the loss keeps falling along
``u`` and ``‖w_x‖`` grows without bound. All rare tokens feel the same push, so they drift the same way.

Four pieces, in the order of the chapter:

(a) the convex-hull condition and one unseen token (:func:`origin_in_convex_hull`,
    :func:`unseen_token_dynamics`, :func:`make_hidden_states`);
(b) a whole Zipf-distributed vocabulary in a softmax toy (:func:`train_zipf_softmax`);
(c) a tiny BERT trained from scratch with masked language modelling (:func:`train_tiny_mlm`);
(d) Gao et al.'s remedy, a penalty on the mean pairwise cosine (:func:`cosine_regularizer`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import scipy.optimize
import scipy.special
import scipy.stats
import torch
import torch.nn.functional as F

from bertflow_mini._checks import check_matrix, check_tensor
from bertflow_mini._progress import tqdm
from bertflow_mini._threads import torch_threads

# ============================================================================ (a) convex hull, unseen token


def origin_in_convex_hull(H: np.ndarray) -> bool:
    """Is the origin a convex combination of the rows of ``H``?

    A feasibility linear programme: find ``λ ≥ 0`` with ``Σλ = 1`` and ``Hᵀλ = 0``. If there is none, the
    separating-hyperplane theorem gives a ``u`` with ``uᵀh_i < 0`` for every row — the situation in which
    an unseen token's embedding runs off to infinity.
    """
    H = check_matrix(H, "H")
    n, d = H.shape
    A_eq = np.vstack([H.T, np.ones((1, n))])
    b_eq = np.concatenate([np.zeros(d), [1.0]])
    res = scipy.optimize.linprog(np.zeros(n), A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status == 0:
        return True
    if res.status == 2:
        return False
    raise RuntimeError(f"linprog failed: {res.message}")


def min_norm_point(H: np.ndarray) -> np.ndarray:
    """The point of the convex hull of the rows of ``H`` closest to the origin (zero if the origin is inside).

    The quadratic programme ``min ‖Hᵀλ‖²`` over the simplex (λ ≥ 0, Σλ = 1), solved as non-negative
    least squares (Lawson–Hanson): ``min ‖[Hᵀ; w·1ᵀ] λ − [0; w]‖`` with λ ≥ 0, where the heavily
    weighted last row enforces Σλ = 1. Exact in a finite number of steps, and fast for hundreds of points.
    """
    H = check_matrix(H, "H").astype(np.float64)
    w = 1e4 * (1.0 + np.abs(H).max())
    A = np.vstack([H.T, np.full((1, H.shape[0]), w)])
    b = np.concatenate([np.zeros(H.shape[1]), [w]])
    lam, _ = scipy.optimize.nnls(A, b, maxiter=50 * A.shape[1])
    if lam.sum() <= 0:
        raise RuntimeError("min-norm point: the non-negative least-squares solve returned λ = 0")
    return H.T @ (lam / lam.sum())


def optimal_direction(H: np.ndarray) -> np.ndarray:
    """The unit ``u`` minimising ``max_i uᵀh_i``: the direction an unseen token's embedding heads to.

    By minimax duality it is ``−p/‖p‖`` for the min-norm point ``p`` of the hull, and then
    ``max_i uᵀh_i = −‖p‖`` (the margin equals the distance). Gradient descent on the unseen token's loss
    — a logistic loss on separable data — converges in direction to exactly this max-margin ``u``
    (Soudry et al., 2018), though only logarithmically fast. Raises if the origin is in the hull.
    """
    p = min_norm_point(H)
    norm = np.linalg.norm(p)
    if norm < 1e-8 * max(1.0, np.abs(H).max()):
        raise ValueError("the origin is inside the convex hull of H: no direction has u·h < 0 for all h")
    return -p / norm


def make_hidden_states(n: int, d: int, origin_inside: bool, seed: int = 0, margin: float = 0.5) -> np.ndarray:
    """``n`` hidden states in ``d`` dimensions, with the origin inside their convex hull or not.

    Outside: Gaussian points whose component along a random unit ``u`` is replaced by ``−(|z| + margin)``,
    so ``uᵀh ≤ −margin`` for every point (a guaranteed separation). Inside: plain Gaussian points
    (``n > d`` needed), redrawn in the rare case the LP says the origin escaped their hull.
    """
    if n < 1 or d < 1:
        raise ValueError(f"n and d must be positive, got n={n}, d={d}")
    rng = np.random.default_rng(seed)
    if not origin_inside:
        u = rng.normal(size=d)
        u /= np.linalg.norm(u)
        g = rng.normal(size=(n, d))
        z = g @ u
        return g - np.outer(z + np.abs(z) + margin, u)
    if n <= d:
        raise ValueError(f"the origin can be inside the hull of n points in d dims only if n > d (n={n}, d={d})")
    for _ in range(100):
        H = rng.normal(size=(n, d))
        if origin_in_convex_hull(H):
            return H
    raise RuntimeError(f"could not draw {n} points around the origin in {d} dims; use more points")


@dataclass
class UnseenTokenRun:
    """Trajectory of an unseen token's embedding ``w`` under gradient descent (index = step, 0 = init)."""

    norms: np.ndarray            # ‖w_t‖
    loss: np.ndarray             # mean_i log(1 + exp(w_tᵀh_i − c_i)): the part of the loss that depends on w
    cos_to_final: np.ndarray     # cosine(w_t, w_final)
    cos_to_optimal: np.ndarray   # cosine(w_t, u*), NaN when the origin is inside the hull (no u* exists)
    w: np.ndarray                # final embedding
    u: np.ndarray | None         # optimal direction u* (None when the origin is inside)


def unseen_token_dynamics(
    H: np.ndarray, W_seen: np.ndarray, steps: int = 5000, lr: float = 1.0, seed: int = 0, init_scale: float = 0.1
) -> UnseenTokenRun:
    """Gradient descent on the embedding ``w`` of a token that is never a target.

    The hidden states ``H`` (n×d) and the seen tokens' embeddings ``W_seen`` (V×d) stay fixed. With
    ``c_i = log Σ_j exp(w_jᵀh_i)`` over the seen tokens, the cross-entropy of context ``i`` is
    ``−w_{y_i}ᵀh_i + c_i + log(1 + exp(wᵀh_i − c_i))`` — only the last term involves ``w``, and it does not
    depend on which seen token was the target. Its gradient is ``mean_i σ(wᵀh_i − c_i) h_i``.
    """
    H = check_matrix(H, "H")
    W_seen = check_matrix(W_seen, "W_seen", dim=H.shape[1])
    if steps < 1 or lr <= 0:
        raise ValueError(f"need steps >= 1 and lr > 0, got steps={steps}, lr={lr}")
    c = scipy.special.logsumexp(H @ W_seen.T, axis=1)
    w = np.random.default_rng(seed).normal(size=H.shape[1]) * init_scale
    ws = np.empty((steps + 1, H.shape[1]))
    loss = np.empty(steps + 1)
    for t in range(steps + 1):
        z = H @ w - c
        ws[t], loss[t] = w, np.logaddexp(0.0, z).mean()
        if t < steps:
            w = w - lr * (H.T @ scipy.special.expit(z)) / len(H)
    norms = np.linalg.norm(ws, axis=1)
    unit = ws / np.maximum(norms[:, None], 1e-300)
    u = None if origin_in_convex_hull(H) else optimal_direction(H)
    return UnseenTokenRun(
        norms=norms, loss=loss, cos_to_final=unit @ unit[-1],
        cos_to_optimal=np.full(steps + 1, np.nan) if u is None else unit @ u, w=w, u=u,
    )


# ============================================================================ (d) the cosine regulariser


def cosine_regularizer(E: torch.Tensor) -> torch.Tensor:
    """Mean pairwise cosine similarity of the rows of ``E``, in O(n·d) instead of O(n²·d).

    With unit rows ``ê_i`` and ``s = Σ_i ê_i``: ``‖s‖² = Σ_i Σ_j ê_iᵀê_j = n + Σ_{i≠j} cos(e_i, e_j)``, so
    the mean over the ``n(n−1)`` ordered pairs is ``(‖s‖² − n) / (n(n−1))``. (We subtract ``Σ‖ê_i‖²``,
    which is ``n`` unless a row is exactly zero.) Adding ``γ ×`` this to the loss is Gao et al.'s
    remedy: it pays the embeddings to spread out in direction. Differentiable.
    """
    E = check_tensor(E, "E")
    n = E.shape[0]
    if n < 2:
        raise ValueError(f"need at least 2 rows for pairwise cosines, got {n}")
    U = F.normalize(E, dim=1)
    s = U.sum(dim=0)
    return (s @ s - (U * U).sum()) / (n * (n - 1))


# ============================================================================ (b) a Zipf vocabulary


@dataclass
class ZipfRun:
    """A trained softmax toy: token embeddings, how often each token was a target, and the loss curve."""

    W: np.ndarray            # (vocab_size, dim) token embeddings
    H: np.ndarray            # (n_contexts, dim) context vectors
    counts: np.ndarray       # times each token occurred as a target in the training corpus
    zipf_p: np.ndarray       # the Zipf marginal the corpus was drawn from
    history: pd.DataFrame    # step, loss (cross-entropy, nats), mean_cosine of W


def train_zipf_softmax(
    vocab_size: int = 1000,
    dim: int = 16,
    n_contexts: int = 200,
    steps: int = 400,
    zipf_s: float = 1.0,
    seed: int = 0,
    *,
    n_samples: int = 20_000,
    rank: int = 8,
    lr: float = 0.03,
    cosine_reg: float = 0.0,
    track_every: int = 50,
    threads: int | None = 1,
    progress: bool = False,
) -> ZipfRun:
    """Train context vectors ``H`` and token embeddings ``W`` (logits ``H Wᵀ``) on a Zipf-distributed corpus.

    The data: token ``x`` has marginal weight ``π_x ∝ (x + 1)^(−zipf_s)``; context ``c`` prefers tokens by
    a rank-``rank`` random affinity, ``p(x|c) ∝ π_x exp(a_cᵀb_x)``. We draw ``n_samples`` (context, token)
    pairs — a *finite* corpus, so the tail tokens occur a handful of times or never, which is what starves
    them of "pull" gradients — and minimise the corpus cross-entropy (full batch on the count matrix)
    with Adam, plus ``cosine_reg ×`` :func:`cosine_regularizer` of ``W``. Adam, as in real language-model
    training, moves a parameter at a similar pace whatever the size of its gradient, so the rare tokens'
    small but one-sided push shows within a few hundred steps. ``threads`` as in :func:`train_tiny_mlm`.

    What to look at afterwards: against frequency (``counts``), the norm of each row of ``W``, its
    k-NN distance (:func:`bertflow_mini.frequency.knn`) and its projection on the mean context vector
    ``mean(H)``: rare tokens end up far out, sparse, and on the side facing away from the contexts.
    """
    if min(vocab_size, dim, n_contexts, steps, n_samples, rank) < 1:
        raise ValueError("vocab_size, dim, n_contexts, steps, n_samples and rank must be positive")
    rng = np.random.default_rng(seed)
    zipf_p = (np.arange(1, vocab_size + 1) ** -float(zipf_s))
    zipf_p /= zipf_p.sum()
    A = rng.normal(size=(n_contexts, rank)) / np.sqrt(rank)
    B = rng.normal(size=(vocab_size, rank))
    cond = scipy.special.softmax(np.log(zipf_p)[None, :] + A @ B.T, axis=1)
    joint = (cond / n_contexts).ravel()
    pairs = rng.choice(joint.size, size=n_samples, p=joint / joint.sum())
    counts_cx = np.bincount(pairs, minlength=joint.size).reshape(n_contexts, vocab_size)

    with torch_threads(threads):
        gen = torch.Generator().manual_seed(seed)
        Hp = torch.nn.Parameter(torch.randn(n_contexts, dim, generator=gen) / np.sqrt(dim))
        Wp = torch.nn.Parameter(torch.randn(vocab_size, dim, generator=gen) / np.sqrt(dim))
        N = torch.as_tensor(counts_cx, dtype=torch.float32)
        opt = torch.optim.Adam([Hp, Wp], lr=lr)
        rows = []
        for step in tqdm(range(steps + 1), disable=not progress, desc="zipf softmax"):
            ce = -(N * torch.log_softmax(Hp @ Wp.T, dim=1)).sum() / N.sum()
            reg = cosine_regularizer(Wp)
            if step % track_every == 0 or step == steps:
                rows.append({"step": step, "loss": ce.item(), "mean_cosine": reg.item()})
            if step == steps:
                break
            opt.zero_grad()
            (ce + cosine_reg * reg).backward()
            opt.step()
    return ZipfRun(W=Wp.detach().numpy().copy(), H=Hp.detach().numpy().copy(), counts=counts_cx.sum(axis=0),
                   zipf_p=zipf_p, history=pd.DataFrame(rows))


# ============================================================================ (c) a tiny BERT, from scratch


@dataclass
class MLMRun:
    """A tiny masked language model and what happened to its word embeddings during training.

    The model's vocabulary is restricted to the tokens of the corpus: row ``r`` of its embedding matrix
    is the tokenizer's token ``token_ids[r]``. Rows ``0 … n_special−1`` are [PAD], [UNK], [CLS], [SEP], [MASK].
    """

    model: torch.nn.Module       # transformers.BertForMaskedLM, input and output embeddings tied
    token_ids: np.ndarray        # tokenizer id of each model row
    counts: np.ndarray           # corpus count of each model row's token (0 for the special rows)
    n_special: int
    history: pd.DataFrame        # step, loss (mean MLM loss since the previous row), mean_cosine, spearman_freq_norm
    seconds: float               # wall time of the training loop

    @property
    def embeddings(self) -> np.ndarray:
        """The word embeddings of the corpus tokens (special rows dropped), aligned with ``counts[n_special:]``."""
        return self.model.get_input_embeddings().weight.detach().numpy()[self.n_special:].copy()


def _embedding_geometry(E: torch.Tensor, counts: np.ndarray) -> tuple[float, float]:
    """Mean pairwise cosine, and Spearman(corpus frequency, norm), of the corpus-token rows."""
    E = E.detach()
    rho = scipy.stats.spearmanr(counts, E.norm(dim=1).numpy()).statistic
    return float(cosine_regularizer(E)), float(rho)


def _mask_tokens(ids: torch.Tensor, eligible: torch.Tensor, mask_id: int, first_word: int, vocab: int,
                 gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking: pick 15% of the eligible positions (at least one per sequence); of those, 80% become
    [MASK], 10% a random corpus token, 10% stay. Returns (corrupted ids, chosen positions)."""
    score = torch.rand(ids.shape, generator=gen).masked_fill(~eligible, 2.0)
    chosen = score < 0.15
    first = score.argmin(dim=1)                       # every sequence predicts at least one token
    chosen[torch.arange(len(ids)), first] |= eligible[torch.arange(len(ids)), first]
    r = torch.rand(ids.shape, generator=gen)
    corrupted = ids.clone()
    corrupted[chosen & (r < 0.8)] = mask_id
    swap = chosen & (r >= 0.8) & (r < 0.9)
    corrupted[swap] = torch.randint(first_word, vocab, (int(swap.sum()),), generator=gen)
    return corrupted, chosen


def _mlm_loop(model, ids: torch.Tensor, eligible: torch.Tensor, counts: np.ndarray, n_sp: int, mask_id: int, *,
              steps: int, batch_size: int, lr: float, seed: int, track_every: int, cosine_reg: float,
              progress: bool) -> pd.DataFrame:
    """The training loop of :func:`train_tiny_mlm`; returns the tracked history."""
    emb = model.get_input_embeddings().weight
    attention = ids != 0
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(seed)
    order, pos, window, history = torch.randperm(len(ids), generator=gen), 0, [], []
    model.train()

    def record(step: int) -> None:  # the geometry now, and the mean loss since the last record
        cos, rho = _embedding_geometry(emb[n_sp:], counts[n_sp:])
        loss_now = float(np.mean(window)) if window else float("nan")
        history.append({"step": step, "loss": loss_now, "mean_cosine": cos, "spearman_freq_norm": rho})
        window.clear()

    for step in tqdm(range(steps), disable=not progress, desc="tiny MLM"):
        if step % track_every == 0:
            record(step)
        if pos + batch_size > len(order):                      # next epoch
            order, pos = torch.randperm(len(ids), generator=gen), 0
        batch = order[pos: pos + batch_size]
        pos += batch_size
        width = int(attention[batch].sum(dim=1).max())          # trim the padding this batch does not need
        b_ids, b_att = ids[batch, :width], attention[batch, :width]
        corrupted, chosen = _mask_tokens(b_ids, eligible[batch, :width], mask_id, n_sp, emb.shape[0], gen)
        hidden = model.bert(input_ids=corrupted, attention_mask=b_att.long()).last_hidden_state
        loss = F.cross_entropy(model.cls(hidden[chosen]), b_ids[chosen])   # output layer only where predicted
        total = loss + cosine_reg * cosine_regularizer(emb[n_sp:]) if cosine_reg else loss
        opt.zero_grad()
        total.backward()
        opt.step()
        window.append(loss.item())
    record(steps)
    model.eval()
    return pd.DataFrame(history)


def train_tiny_mlm(
    sentences: Sequence[str],
    tokenizer,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 2,
    steps: int = 300,
    batch_size: int = 64,
    max_length: int = 32,
    lr: float = 2e-3,
    seed: int = 0,
    track_every: int = 25,
    cosine_reg: float = 0.0,
    dropout: float = 0.0,
    threads: int | None = 1,
    progress: bool = True,
) -> MLMRun:
    """Pre-train a tiny BERT (``transformers.BertForMaskedLM``) on ``sentences`` and track its embeddings.

    As in BERT: input and output embeddings are tied, 15% of tokens are selected with the 80/10/10 rule,
    AdamW (weight decay 0.01). Differences, for a run of a minute on a CPU: the vocabulary is restricted
    to the tokens that occur in the corpus (ids remapped, and the 10% random replacements drawn from
    them). That shrinks the softmax from 30522 rows to a few thousand; the rows left out belong to tokens
    that are never a target, which the softmax could only push away (part (a)), and which the measures
    ignore anyway. The output layer is evaluated only at the selected positions, the learning rate is
    constant, there is no next-sentence task, and dropout is off by default.

    Every ``track_every`` steps we record the mean MLM loss, the mean pairwise cosine of the corpus
    tokens' embeddings and the Spearman correlation of their corpus frequency with their norm.
    ``cosine_reg = γ`` adds ``γ ×`` :func:`cosine_regularizer` of those embeddings to the loss.
    Deterministic for a given ``seed``.

    ``threads``: torch CPU threads during training (restored afterwards). A model this small runs as
    fast on one thread, and on a CPU shared with other work extra threads can make it ten times slower;
    ``None`` keeps torch's setting.
    """
    from transformers import BertConfig, BertForMaskedLM

    if steps < 1 or batch_size < 1 or track_every < 1:
        raise ValueError("steps, batch_size and track_every must be positive")
    specials = [tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.cls_token_id,
                tokenizer.sep_token_id, tokenizer.mask_token_id]
    if None in specials or len(set(specials)) != 5:
        raise ValueError("the tokenizer needs distinct [PAD], [UNK], [CLS], [SEP] and [MASK] tokens (a BERT tokenizer)")
    encoded = tokenizer(list(sentences), truncation=True, max_length=max_length)["input_ids"]
    encoded = [seq for seq in encoded if any(t not in specials for t in seq)]
    if not encoded:
        raise ValueError("no sentence has any token besides [CLS]/[SEP]; pass non-empty sentences")

    # Remap the tokenizer's ids onto a small vocabulary: the 5 special tokens (new ids 0-4, in the order
    # of `specials`), then the corpus tokens.
    flat = np.concatenate([np.asarray(seq) for seq in encoded])
    corpus_ids = np.setdiff1d(np.unique(flat), specials)
    token_ids = np.concatenate([specials, corpus_ids]).astype(np.int64)
    remap = np.full(max(len(tokenizer), int(token_ids.max()) + 1), 1, dtype=np.int64)   # unknown -> [UNK]
    remap[token_ids] = np.arange(len(token_ids))
    counts = np.bincount(remap[flat], minlength=len(token_ids))
    counts[: len(specials)] = 0
    n_sp, vocab = len(specials), len(token_ids)

    length = max(len(seq) for seq in encoded)
    ids = torch.zeros((len(encoded), length), dtype=torch.int64)            # [PAD] is row 0
    for i, seq in enumerate(encoded):
        ids[i, : len(seq)] = torch.as_tensor(remap[np.asarray(seq)])
    eligible = ids >= n_sp                                                  # never predict [CLS]/[SEP]/[PAD]/[UNK]

    config = BertConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=4 * hidden, max_position_embeddings=max(max_length, length), type_vocab_size=1,
        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout, pad_token_id=0,
        tie_word_embeddings=True,
    )
    with torch.random.fork_rng(devices=[]), torch_threads(threads):
        torch.manual_seed(seed)                  # weight init (and dropout, if any) without touching global state
        model = BertForMaskedLM(config)
        assert model.get_output_embeddings().weight is model.get_input_embeddings().weight, "embeddings must be tied"
        t0 = time.perf_counter()
        history = _mlm_loop(model, ids, eligible, counts, n_sp, mask_id=specials.index(tokenizer.mask_token_id),
                            steps=steps, batch_size=batch_size, lr=lr, seed=seed, track_every=track_every,
                            cosine_reg=cosine_reg, progress=progress)
        seconds = time.perf_counter() - t0
    return MLMRun(model=model, token_ids=token_ids, counts=counts, n_special=n_sp, history=history, seconds=seconds)
