"""Tests for bertflow_mini.degeneration: hull LP, unseen-token dynamics, cosine regulariser, Zipf toy, tiny MLM."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.spatial
import torch

from bertflow_mini.degeneration import (
    cosine_regularizer,
    make_hidden_states,
    min_norm_point,
    optimal_direction,
    origin_in_convex_hull,
    train_tiny_mlm,
    train_zipf_softmax,
    unseen_token_dynamics,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ----------------------------------------------------------------------------- (a) convex hull

def test_hull_lp_on_hand_made_triangles():
    triangle = np.array([[1.0, 0.0], [-1.0, 1.0], [-1.0, -1.0]])
    assert origin_in_convex_hull(triangle)
    assert not origin_in_convex_hull(triangle + [3.0, 0.0])
    assert origin_in_convex_hull(np.array([[1.0, 1.0], [-1.0, -1.0]]))    # origin on a segment
    assert not origin_in_convex_hull(np.array([[1.0, 1.0], [2.0, 2.0]]))


def test_hull_lp_agrees_with_scipy_convex_hull_in_2d():
    rng = np.random.default_rng(0)
    answers = []
    for _ in range(60):
        P = rng.normal(size=(8, 2)) + rng.normal(scale=1.5, size=2)
        offsets = scipy.spatial.ConvexHull(P).equations[:, -1]   # facet normal·x + offset <= 0 inside
        if np.abs(offsets).min() < 1e-6:
            continue                                             # origin on the boundary: skip the tie
        expected = bool((offsets < 0).all())
        assert origin_in_convex_hull(P) == expected
        answers.append(expected)
    assert 10 < sum(answers) < len(answers) - 10                 # both cases were really exercised


def test_make_hidden_states_builds_both_cases():
    for seed in range(3):
        assert not origin_in_convex_hull(make_hidden_states(40, 6, origin_inside=False, seed=seed))
        assert origin_in_convex_hull(make_hidden_states(40, 6, origin_inside=True, seed=seed))
    with pytest.raises(ValueError, match="n > d"):
        make_hidden_states(3, 5, origin_inside=True)


def test_optimal_direction_is_max_margin():
    H = make_hidden_states(30, 4, origin_inside=False, seed=1)
    u = optimal_direction(H)
    p = min_norm_point(H)
    assert np.linalg.norm(u) == pytest.approx(1.0)
    # Duality certificate: margin of u equals distance of the hull to the origin, so both are optimal.
    assert (H @ u).max() == pytest.approx(-np.linalg.norm(p), rel=1e-5)
    V = np.random.default_rng(0).normal(size=(2000, 4))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    assert (V @ H.T).max(axis=1).min() >= (H @ u).max() - 1e-6
    with pytest.raises(ValueError, match="inside"):
        optimal_direction(make_hidden_states(30, 4, origin_inside=True, seed=1))


# ----------------------------------------------------------------------------- unseen token

def test_unseen_token_norm_grows_without_bound_when_origin_outside():
    H = make_hidden_states(50, 5, origin_inside=False, seed=0)
    W_seen = np.random.default_rng(1).normal(size=(20, 5))
    run = unseen_token_dynamics(H, W_seen, steps=20000, lr=1.0, seed=0)
    n = run.norms
    assert np.all(np.diff(n[100:]) > 0)                 # still growing at every step
    assert n[2000] - n[200] > 1.0 and n[20000] - n[2000] > 1.0   # ~log t: equal gains per decade
    assert np.all(np.diff(run.loss) < 0) and run.loss[-1] < 0.01 * run.loss[0]   # infimum 0, reached only at ∞
    assert run.cos_to_optimal[-1] > 0.98                # heading for the max-margin direction


def test_unseen_token_norm_stays_bounded_when_origin_inside():
    H = make_hidden_states(50, 5, origin_inside=True, seed=0)
    W_seen = np.random.default_rng(1).normal(size=(20, 5))
    run = unseen_token_dynamics(H, W_seen, steps=20000, lr=1.0, seed=0)
    assert run.norms.max() < 10.0
    assert abs(run.norms[-1] - run.norms[10000]) < 1e-6     # converged to a finite minimiser
    assert run.u is None and np.isnan(run.cos_to_optimal).all()


def test_unseen_token_gradient_matches_autograd():
    H = make_hidden_states(10, 3, origin_inside=False, seed=2)
    W_seen = np.random.default_rng(3).normal(size=(4, 3))
    lr = 0.5
    run = unseen_token_dynamics(H, W_seen, steps=1, lr=lr, seed=0)
    w0 = torch.tensor(np.random.default_rng(0).normal(size=3) * 0.1, requires_grad=True)
    Ht, Wt = torch.tensor(H), torch.tensor(W_seen)
    logits = torch.cat([Ht @ Wt.T, (Ht @ w0)[:, None]], dim=1)
    targets = torch.zeros(10, dtype=torch.long)         # any seen targets: w's gradient does not depend on them
    torch.nn.functional.cross_entropy(logits, targets).backward()
    np.testing.assert_allclose(run.w, (w0 - lr * w0.grad).detach().numpy(), rtol=1e-10)


# ----------------------------------------------------------------------------- (d) cosine regulariser

def test_cosine_regularizer_equals_brute_force():
    E = torch.randn(37, 9, generator=torch.Generator().manual_seed(0), dtype=torch.float64) + 0.5
    U = torch.nn.functional.normalize(E, dim=1)
    C = U @ U.T
    brute = (C.sum() - C.diagonal().sum()) / (37 * 36)
    assert cosine_regularizer(E).item() == pytest.approx(brute.item(), rel=1e-12)
    assert cosine_regularizer(torch.ones(5, 3)).item() == pytest.approx(1.0)
    assert cosine_regularizer(torch.tensor([[1.0, 0.0], [-1.0, 0.0]])).item() == pytest.approx(-1.0)
    E.requires_grad_(True)
    cosine_regularizer(E).backward()
    assert torch.isfinite(E.grad).all() and E.grad.abs().sum() > 0


def test_cosine_regularizer_rejects_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        cosine_regularizer(torch.tensor([[1.0, float("nan")], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="2 rows"):
        cosine_regularizer(torch.ones(1, 3))


# ----------------------------------------------------------------------------- (b) Zipf toy

def test_zipf_toy_rare_tokens_drift_against_the_contexts():
    run = train_zipf_softmax(vocab_size=300, dim=8, n_contexts=60, steps=150, n_samples=4000, seed=0)
    assert run.W.shape == (300, 8) and run.counts.sum() == 4000
    assert run.history["loss"].iloc[-1] < run.history["loss"].iloc[0] - 1.0
    mean_h = run.H.mean(axis=0) / np.linalg.norm(run.H.mean(axis=0))
    along = run.W @ mean_h
    frequent, rare = run.counts >= 50, run.counts <= 2
    assert frequent.sum() >= 5 and rare.sum() >= 50
    assert along[rare].mean() < 0 < along[frequent].mean()       # rare ones pushed to −mean(h)
    norms = np.linalg.norm(run.W, axis=1)
    assert norms[rare].mean() > norms[frequent].mean()


def test_zipf_toy_cosine_regularizer_spreads_embeddings():
    kw = dict(vocab_size=300, dim=8, n_contexts=60, steps=150, n_samples=4000, seed=0)
    plain = train_zipf_softmax(**kw).history["mean_cosine"].iloc[-1]
    reg = train_zipf_softmax(**kw, cosine_reg=1.0).history["mean_cosine"].iloc[-1]
    assert reg < plain - 0.02


# ----------------------------------------------------------------------------- (c) tiny MLM

WORDS = ("the a man woman dog cat child boy girl horse is runs plays eats sleeps walks sits "
         "on in under near park field street house ball food grass happy small big quickly").split()


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    """A real BertTokenizerFast over a small vocabulary (plus words the corpus never uses)."""
    from transformers import BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "unusedword", "another"] + WORDS
    folder = tmp_path_factory.mktemp("tok")
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return BertTokenizerFast.from_pretrained(folder)


def corpus(n: int = 300, seed: int = 0) -> list[str]:
    """Simple sentences with Zipf-like word choice, so some words are frequent and some rare."""
    rng = np.random.default_rng(seed)
    pick = lambda ws: ws[min(int(rng.zipf(1.6)) - 1, len(ws) - 1)]
    subj = ["man", "woman", "dog", "cat", "child", "boy", "girl", "horse"]
    verb = ["runs", "plays", "sits", "walks", "eats", "sleeps"]
    place = ["park", "field", "street", "house", "grass"]
    return [f"{pick(['the', 'a'])} {pick(subj)} {pick(verb)} {pick(['in', 'on', 'near', 'under'])} "
            f"the {pick(place)} ." for _ in range(n)]


MLM = dict(hidden=32, layers=1, heads=2, steps=60, batch_size=32, lr=3e-3, track_every=20, progress=False)


def test_tiny_mlm_trains_and_remaps_vocabulary(tokenizer):
    sents = corpus()
    run = train_tiny_mlm(sents, tokenizer, seed=0, **MLM)
    h = run.history
    assert list(h["step"]) == [0, 20, 40, 60]
    assert h["loss"].iloc[-1] < h["loss"].iloc[1] - 0.3            # learning, not noise
    used = tokenizer.convert_ids_to_tokens(run.token_ids[run.n_special:].tolist())
    words = [w for s in sents for w in s.split()]
    assert set(used) == set(words) and "unusedword" not in used
    assert dict(zip(used, run.counts[run.n_special:])) == {w: words.count(w) for w in set(words)}
    assert run.embeddings.shape == (len(used), 32)
    model = run.model
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight   # tied, as in BERT
    assert model.config.vocab_size == len(run.token_ids)


def test_tiny_mlm_is_deterministic(tokenizer):
    kw = dict(MLM, steps=20, track_every=10)
    a = train_tiny_mlm(corpus(100), tokenizer, seed=3, **kw)
    b = train_tiny_mlm(corpus(100), tokenizer, seed=3, **kw)
    c = train_tiny_mlm(corpus(100), tokenizer, seed=4, **kw)
    assert a.history.equals(b.history)
    np.testing.assert_array_equal(a.embeddings, b.embeddings)
    assert not np.array_equal(a.embeddings, c.embeddings)


def test_tiny_mlm_cosine_regularizer_lowers_mean_cosine(tokenizer):
    kw = dict(MLM, steps=40, track_every=40)
    plain = train_tiny_mlm(corpus(), tokenizer, seed=0, **kw).history["mean_cosine"].iloc[-1]
    reg = train_tiny_mlm(corpus(), tokenizer, seed=0, cosine_reg=1.0, **kw).history["mean_cosine"].iloc[-1]
    assert reg < plain - 0.1


def test_masking_follows_the_80_10_10_rule():
    from bertflow_mini.degeneration import _mask_tokens

    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 1000, (400, 50), generator=gen)
    eligible = torch.ones_like(ids, dtype=torch.bool)
    eligible[:, :2] = False                                            # e.g. [CLS] and padding
    corrupted, chosen = _mask_tokens(ids, eligible, mask_id=4, first_word=5, vocab=1000, gen=gen)
    assert not chosen[:, :2].any() and chosen.any(dim=1).all()        # only eligible, at least one per row
    assert chosen.float().sum() / eligible.sum() == pytest.approx(0.15, abs=0.01)
    masked = (corrupted == 4)[chosen].float().mean()
    swapped = ((corrupted != ids) & (corrupted != 4))[chosen].float().mean()
    kept = (corrupted == ids)[chosen].float().mean()
    assert masked == pytest.approx(0.8, abs=0.02) and swapped == pytest.approx(0.1, abs=0.015)
    assert kept == pytest.approx(0.1, abs=0.015)
    assert (corrupted[~chosen] == ids[~chosen]).all()
