"""The no-semantics controls every gain is shown beside: plain word overlap, and any similarity scored."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from bertflow_mini.data import STSPairs
from bertflow_mini.evaluation.sts import score_similarities, word_overlap


def test_word_overlap_by_hand():
    got = word_overlap(
        ["A man is playing a guitar.", "Dogs run!", "", "x"],
        ["A man plays the guitar", "cats sleep", "", "X."],
    )
    # {a, man, is, playing, guitar} vs {a, man, plays, the, guitar}: 3 shared of 7
    assert got.tolist() == pytest.approx([3 / 7, 0.0, 0.0, 1.0])


def test_score_similarities_against_scipy():
    rng = np.random.default_rng(0)
    gold, sims = rng.uniform(0, 5, 40), rng.normal(size=40)
    pairs = STSPairs(
        "STS12", "test", ["s"] * 40, ["t"] * 40, gold, ["A"] * 25 + ["B"] * 15
    )
    r = score_similarities(pairs, sims)
    a, b = (
        spearmanr(sims[:25], gold[:25]).statistic,
        spearmanr(sims[25:], gold[25:]).statistic,
    )
    assert r.wmean == pytest.approx(100 * (25 * a + 15 * b) / 40)
    assert r.all == pytest.approx(100 * spearmanr(sims, gold).statistic)
    with pytest.raises(ValueError, match="40 pairs"):
        score_similarities(pairs, sims[:-1])


def test_word_overlap_on_stsb_matches_the_issues_measurement():
    """Measured independently when the control was proposed: Jaccard of word sets, STS-B test, 56.5."""
    from conftest import SHARED, need

    need(SHARED / "data" / "sts")
    from bertflow_mini.evaluation.reproduce import word_overlap_row

    row = word_overlap_row(["STSB"])
    assert row.loc["word overlap (no model)", "STSB"] == pytest.approx(56.5, abs=0.05)


# ------------------------------------------------------------------ the baselines with no semantics
def test_idf_weights_by_hand():
    from bertflow_mini.evaluation.lexical import idf_weights

    idf = idf_weights(["a b", "A c.", "a"])  # N = 3: df(a) = 3, df(b) = df(c) = 1
    assert idf == pytest.approx(
        {"a": 1.0, "b": np.log(4 / 2) + 1, "c": np.log(4 / 2) + 1}
    )


def test_idf_overlap_by_hand():
    from bertflow_mini.evaluation.lexical import idf_overlap

    idf = {"a": 1.0, "b": 2.0, "c": 3.0}
    got = idf_overlap(
        ["a b", "a b", "zz a", "", "b"], ["a c", "B, a!", "a", "", "c"], idf
    )
    # {a,b} vs {a,c}: 1 / 6; equal sets: 1; zz unseen weighs the most (3): 1 / 4; empty: 0; disjoint: 0
    assert got.tolist() == pytest.approx([1 / 6, 1.0, 1 / 4, 0.0, 0.0])
    with pytest.raises(ValueError, match="equally long"):
        idf_overlap(["a"], [], idf)


def test_idf_overlap_with_equal_weights_is_word_overlap():
    from bertflow_mini.evaluation.lexical import idf_overlap

    rng = np.random.default_rng(0)
    words = ["the", "cat", "dog", "runs", "a", "man", "plays", "x1"]
    s1 = [" ".join(rng.choice(words, rng.integers(1, 6))) for _ in range(50)]
    s2 = [" ".join(rng.choice(words, rng.integers(1, 6))) for _ in range(50)]
    equal = {w: 2.5 for w in words}
    assert idf_overlap(s1, s2, equal) == pytest.approx(word_overlap(s1, s2))


def test_random_token_vectors_are_fixed_per_seed_and_id():
    from bertflow_mini.evaluation.lexical import random_token_vectors

    a = random_token_vectors([5, 7], 64, seed=3)
    b = random_token_vectors([7, 9, 5], 64, seed=3)
    # whatever else is asked for
    assert np.array_equal(a[0], b[2]) and np.array_equal(a[1], b[0])
    assert not np.allclose(random_token_vectors([5], 64, seed=4), a[0])
    wide = random_token_vectors(range(200), 768)
    unit = wide / np.linalg.norm(wide, axis=1, keepdims=True)
    cos = unit @ unit.T
    off = np.abs(cos[~np.eye(200, dtype=bool)])
    # nearly orthogonal: E|cos| ~ 0.029
    assert off.mean() < 0.05 and np.allclose(np.diag(cos), 1)
    with pytest.raises(ValueError, match="dim"):
        random_token_vectors([1], 0)


def test_bag_of_vectors_by_hand():
    from bertflow_mini.evaluation.lexical import bag_of_vectors

    table = np.array([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]])
    got = bag_of_vectors([[0, 1], [2], [], [1, 1, 0]], table)
    np.testing.assert_allclose(
        got, [[0.5, 1.0], [4.0, 4.0], [0.0, 0.0], [1 / 3, 4 / 3]]
    )
    assert np.array_equal(
        bag_of_vectors([[0, 1], [2]], lambda ids: table[list(ids)]), got[:2]
    )
    with pytest.raises(ValueError, match="NaN"):
        bag_of_vectors([[0]], np.array([[np.nan, 1.0]]))


def test_token_ids_leave_out_cls_and_sep():
    from conftest import TOKENIZER_DIR, need

    need(TOKENIZER_DIR)
    from transformers import AutoTokenizer

    from bertflow_mini.evaluation.lexical import token_ids

    tok = AutoTokenizer.from_pretrained(TOKENIZER_DIR)
    ids = token_ids(["A man plays.", ""], tok)
    assert ids == [tok.convert_tokens_to_ids(["a", "man", "plays", "."]), []]


def test_control_summary_by_hand(tmp_path):
    import json

    from bertflow_mini.data import TASKS
    from bertflow_mini.evaluation.controls import control_summary

    def record(init, seed, task, score):
        return {
            "shape": "s", "init": init, "seed": seed, "pooling": "p", "method": "m",
            "task": task, "model": "-", "score": score, "fit": "target",
            "aggregation": "wmean",
        }  # fmt: skip

    # seeds 0 and 1 on every dataset (seed 1 three points higher); seed 2 on STS-B only;
    # another initialiser's seed 0 far off
    records = [
        record("hf", s, t, 10.0 * i + 3 * s)
        for s in (0, 1)
        for i, t in enumerate(TASKS)
    ]
    records += [record("hf", 2, "STSB", 90.0), record("trunc", 0, "STSB", -50.0)]
    path = tmp_path / "controls.json"
    path.write_text(json.dumps({"what": "toy", "records": records}))
    stsb = 10.0 * list(TASKS).index("STSB")
    mean, sd, n = control_summary("s", "p", "m", "STSB", path=path)
    assert (mean, n) == (pytest.approx((stsb + stsb + 3 + 90) / 3), 3)
    assert sd == pytest.approx(np.std([stsb, stsb + 3, 90.0], ddof=1))
    # one seed: its own score, no sd; the other initialiser is never mixed in
    assert control_summary("s", "p", "m", "STSB", path=path, seed=0)[0] == stsb
    assert np.isnan(control_summary("s", "p", "m", "STSB", path=path, seed=0)[1])
    assert control_summary("s", "p", "m", "STSB", init="trunc", path=path) == (
        -50.0,
        pytest.approx(np.nan, nan_ok=True),
        1,
    )
    # Avg.: only seeds with all seven datasets (seed 2 has one)
    avg = np.mean([10.0 * i for i in range(len(TASKS))])
    assert control_summary("s", "p", "m", "Avg.", path=path)[::2] == (
        pytest.approx(avg + 1.5),
        2,
    )
    assert control_summary("s", "p", "m", "Avg.", path=path, seed=1)[
        0
    ] == pytest.approx(avg + 3)
    assert np.isnan(control_summary("s", "p", "m", "Avg.", path=path, seed=2)[0])
