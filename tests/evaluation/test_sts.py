"""The STS harness: cosine and Spearman against scipy, the two aggregations, real-data scoring and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cosine as scipy_cosine_distance
from scipy.stats import spearmanr

from bertflow_mini.cli import main
from bertflow_mini.data import STSPairs, load_sts
from bertflow_mini.evaluation.sts import (
    evaluate_embedder,
    results_table,
    score_pairs,
    score_similarities,
    spearman,
    sts_table,
    subset_table,
    task_average,
    with_average,
)


def test_a_sentence_with_no_known_word_scores_zero_instead_of_stopping_the_table():
    # a GloVe sentence of unknown words is the zero vector: its pair has cosine 0
    pairs = _pairs([1.0, 2.0, 3.0, 4.0], ["s"] * 4)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    a[3] = 0.0
    want = score_similarities(
        pairs, [1 - scipy_cosine_distance(x, y) for x, y in zip(a[:3], b[:3])] + [0.0]
    )
    assert score_pairs(pairs, a, b) == want


def test_score_pairs_needs_one_embedding_per_pair_on_each_side():
    pairs = _pairs([1.0, 2.0, 3.0], ["s"] * 3)
    with pytest.raises(ValueError, match="TOY: 3 pairs but 3 / 2 embeddings"):
        score_pairs(pairs, np.ones((3, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="TOY: 3 pairs but 4 / 4 embeddings"):
        score_pairs(pairs, np.ones((4, 2)), np.ones((4, 2)))


def test_evaluate_reads_the_test_split_under_the_root_it_is_given(mini_data):
    from conftest import MINI_PAIRS

    from bertflow_mini.evaluation.sts import evaluate

    # $BERTFLOW_DATA still names the full mirror: only an honoured root gives the mini mirror's counts.
    results = evaluate(
        lambda s: np.random.default_rng(0).normal(size=(len(s), 4)),
        ["STSB", "SICK-R"],
        root=mini_data,
    )
    assert [r.n_pairs for r in results] == [MINI_PAIRS["stsb"], MINI_PAIRS["sick"]]


def test_spearman_agrees_with_scipy_including_ties():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 5, size=200).astype(float)  # many ties, like STS gold scores
    y = x + rng.normal(scale=2.0, size=200)
    assert spearman(y, x) == pytest.approx(spearmanr(y, x).statistic * 100, abs=1e-10)
    with pytest.raises(ValueError):
        spearman(np.array([1.0, np.nan, 3.0]), np.array([1.0, 2.0, 3.0]))


def _pairs(scores, subsets):
    n = len(scores)
    return STSPairs(
        "TOY",
        "test",
        [f"l{i}" for i in range(n)],
        [f"r{i}" for i in range(n)],
        np.asarray(scores, float),
        list(subsets),
    )


def test_wmean_and_all_aggregations_by_hand():
    rng = np.random.default_rng(2)
    n1, n2 = 40, 120
    gold = np.concatenate([rng.uniform(0, 5, n1), rng.uniform(0, 5, n2)])
    subsets = ["a"] * n1 + ["b"] * n2
    # left vectors fixed, right vectors rotated by an angle that shrinks with gold (plus noise):
    angle = np.pi / 2 * (1 - gold / 5) + rng.normal(scale=0.3, size=n1 + n2)
    left = np.stack([np.ones_like(angle), np.zeros_like(angle)], 1)
    right = np.stack([np.cos(angle), np.sin(angle)], 1)
    res = score_pairs(_pairs(gold, subsets), left, right)
    cos = np.cos(angle)
    ra = spearmanr(cos[:n1], gold[:n1]).statistic * 100
    rb = spearmanr(cos[n1:], gold[n1:]).statistic * 100
    assert res.subsets == {"a": (n1, pytest.approx(ra)), "b": (n2, pytest.approx(rb))}
    assert res.wmean == pytest.approx((n1 * ra + n2 * rb) / (n1 + n2))
    assert res.all == pytest.approx(spearmanr(cos, gold).statistic * 100)
    table = results_table([res], "wmean")
    assert table.loc["ours", "TOY"] == pytest.approx(res.wmean) and table.loc[
        "ours", "Avg."
    ] == pytest.approx(res.wmean)
    assert list(subset_table([res])["subset"]) == ["a", "b"]


def _two_scales():
    """Two subsets each perfectly ranked, but one subset's similarities are all higher than the
    other's while its gold scores are lower (cosines built from unit vectors at known angles)."""
    gold = np.array([1, 2, 3, 4, 5, 0.1, 0.2, 0.3, 0.4, 0.5])
    sims = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.91, 0.92, 0.93, 0.94, 0.95])
    left = np.stack([np.ones(10), np.zeros(10)], 1)
    right = np.stack([sims, np.sqrt(1 - sims**2)], 1)
    return score_pairs(_pairs(gold, ["x"] * 5 + ["y"] * 5), left, right)


def test_all_and_wmean_disagree_when_subsets_live_on_different_scales():
    # wmean is 100, pooled "all" is far below: by hand, gold ranks 6..10,1..5 vs sim ranks 1..10
    res = _two_scales()
    d2 = sum(
        (g - r) ** 2 for g, r in zip([6, 7, 8, 9, 10, 1, 2, 3, 4, 5], range(1, 11))
    )
    assert res.wmean == pytest.approx(100.0) and res.all == pytest.approx(
        100 * (1 - 6 * d2 / (10 * 99))
    )


@pytest.mark.slow
@pytest.mark.warm_cache
def test_cli_on_the_mirror_model_reaches_its_published_sts_b_quality(capsys):
    """The one real-model end-to-end check: data, tokenizer, model, pooling, cache and CLI together.

    all-MiniLM-L6-v2 is fine-tuned for similarity; its model card and SBERT's benchmarks put it
    above 80 Spearman on the STS-B test set with mean pooling. A broken pooling, tokenizer or
    pairing gets nowhere near that. It reads the real cache (``warm_cache``: ``make test`` runs it
    after ``make cache``, whose ``encode`` wrote these vectors); on a cold cache it encodes them.
    """
    from conftest import MINILM_DIR, need

    need(MINILM_DIR)
    from bertflow_mini.encoders.names import load_encoder
    from bertflow_mini.evaluation.reproduce import Evaluation

    assert (
        main(
            [
                "sts",
                "--model",
                "all-MiniLM-L6-v2",
                "--pooling",
                "last-avg",
                "--tasks",
                "STS-B",
                "--json",
            ]
        )
        == 0
    )
    (res,) = json.loads(capsys.readouterr().out)["results"]
    # STS-B is one set: both aggregations agree
    assert res["n_pairs"] == 1379 and res["wmean"] == res["all"]
    assert 80.0 < res["all"] < 90.0
    # CLS of a mean-pooling-trained model is much worse: the pooling really changes the vectors.
    # (one forward pass filled the cache with every pooling: no second one here)
    enc = load_encoder("all-MiniLM-L6-v2", device="cpu")
    cls = Evaluation(enc, progress=False).score("STSB", "cls")
    assert cls.all < res["all"] - 2


def _alone(model, tokenizer, sentence: str, layers: tuple[int, ...]) -> np.ndarray:
    """One sentence run alone (no padding), its token mean of each hidden state in ``layers``, averaged."""
    import torch

    batch = tokenizer([sentence], truncation=True, max_length=64, return_tensors="pt")
    with torch.no_grad():
        hs = model(**batch, output_hidden_states=True).hidden_states
    return np.mean([hs[i][0].double().mean(0).numpy() for i in layers], axis=0)


def test_cli_sts_json_equals_a_direct_computation(
    tiny_bert_dir, mini_data, monkeypatch, capsys
):
    """``sts --json`` on a tiny BERT and the first pairs of the real STS-B and SICK test files, against
    the same numbers computed directly: transformers for the vectors, scipy for cosine and Spearman."""
    from conftest import MINI_PAIRS
    from transformers import AutoModel, AutoTokenizer

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    assert (
        main(
            [
                "sts",
                "--model",
                str(tiny_bert_dir),
                "--pooling",
                "1,-1",
                "--tasks",
                "STSB SICK-R",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["pooling"] == [1, -1] and [r["task"] for r in out["results"]] == [
        "STSB",
        "SICK-R",
    ]

    model, tokenizer = (
        AutoModel.from_pretrained(tiny_bert_dir).eval(),
        AutoTokenizer.from_pretrained(tiny_bert_dir),
    )
    for result, task in zip(out["results"], ["STSB", "SICK-R"]):
        pairs = load_sts(task, "test", root=mini_data)
        assert (
            result["n_pairs"]
            == len(pairs)
            == MINI_PAIRS["stsb" if task == "STSB" else "sick"]
        )
        cos = [
            1
            - scipy_cosine_distance(
                _alone(model, tokenizer, a, (1, 2)), _alone(model, tokenizer, b, (1, 2))
            )
            for a, b in zip(pairs.sent1, pairs.sent2)
        ]
        want = spearmanr(cos, pairs.scores).statistic * 100
        assert result["all"] == pytest.approx(want, abs=1e-6) and result[
            "wmean"
        ] == pytest.approx(want, abs=1e-6)


def test_cli_missing_model_is_one_clear_error(capsys, monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))
    assert main(["sts", "--model", "no-such-model", "--tasks", "STSB"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("error:") and "BERTFLOW_MODELS" in err and "Traceback" not in err
    )


def test_tables_default_to_wmean_and_name_their_columns():
    res = _two_scales()
    # the papers' default: wmean
    assert results_table([res]).loc["ours", "TOY"] == pytest.approx(100.0)
    assert results_table([res], "all", name="pooled").loc[
        "pooled", "TOY"
    ] == pytest.approx(res.all)
    with pytest.raises(ValueError, match="wmean"):
        results_table([res], "mean")
    subsets = subset_table([res])
    # the CLI indexes by these names
    assert list(subsets.columns) == [
        "task",
        "subset",
        "pairs",
        "spearman",
    ]
    assert subsets.values.tolist() == [
        ["TOY", "x", 5, pytest.approx(100.0)],
        ["TOY", "y", 5, pytest.approx(100.0)],
    ]


def test_embedded_looks_sentences_up_and_evaluate_embedder_embeds_each_once():
    from bertflow_mini.evaluation.sts import Embedded

    emb = Embedded(["a", "b"], np.array([[1.0, 0.0], [0.0, 2.0]]))
    np.testing.assert_array_equal(emb(["b", "a", "b"]), [[0, 2], [1, 0], [0, 2]])
    with pytest.raises(KeyError, match="1 sentence"):
        emb(["c"])
    with pytest.raises(ValueError, match="2 sentences but 1 vectors"):
        Embedded(["a", "b"], np.ones((1, 2)))
    calls = []
    pairs = STSPairs(
        "TOY",
        "test",
        ["a", "b", "a"],
        ["b", "c", "c"],
        np.array([1.0, 2.0, 3.0]),
        ["t"] * 3,
    )
    # cosines 0.71, 0.71, 0: ties ranked
    vecs = {
        "a": [1.0, 0.0],
        "b": [1.0, 1.0],
        "c": [0.0, 1.0],
    }
    res = evaluate_embedder(
        lambda s: calls.append(list(s)) or np.array([vecs[x] for x in s]), pairs
    )
    assert calls == [["a", "b", "c"]]  # distinct sentences, first-seen order, one call
    assert res.all == pytest.approx(
        100 * spearmanr([2**-0.5, 2**-0.5, 0.0], [1, 2, 3]).statistic
    )


def test_the_sts_table_is_the_mean_and_sd_over_runs_with_each_runs_average():
    """Two runs of one row, by hand: means (2, 3, 4), each run's average (2 and 4) → Avg. 3, and the
    sd of the runs (ddof=1) on every column, the average's included."""
    table = sts_table({"row": [[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]]}, ["X", "Y", "Z"], 2)
    assert list(table.mean.columns) == ["X", "Y", "Z", "Avg."]
    np.testing.assert_allclose(table.mean.loc["row"], [2.0, 3.0, 4.0, 3.0])
    np.testing.assert_allclose(table.std.loc["row"], [2**0.5] * 4)
    assert table.formatted().loc["row", "Avg."] == "3.00 ± 1.41"
    one = sts_table({"a": [[1.0, 2.0]], "b": [[4.0, 8.0]]}, ["X", "Y"])
    np.testing.assert_array_equal(one.mean["Avg."], [1.5, 6.0])
    np.testing.assert_array_equal(one.std.to_numpy(), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="want \\(runs, 2\\)"):
        sts_table({"a": [[1.0, 2.0, 3.0]]}, ["X", "Y"])


def test_the_average_skips_a_dataset_a_paper_did_not_report():
    table = pd.DataFrame({"X": [70.0, 1.0], "Y": [np.nan, 2.0], "Z": [80.0, 6.0]})
    assert list(with_average(table)["Avg."]) == [75.0, 3.0]
    rng = np.random.default_rng(0)
    scores = rng.uniform(0, 100, size=(5, 7))
    np.testing.assert_array_equal(task_average(scores), scores.mean(1))


def test_the_table_of_real_scores_is_scipy_spearman_and_its_mean():
    """``results_table`` on two toy datasets: each cell is scipy's Spearman × 100 of the cosines,
    and ``Avg.`` their mean."""
    rng = np.random.default_rng(3)
    results = []
    for task in ("T1", "T2"):
        gold = rng.uniform(0, 5, size=30)
        angle = np.pi / 2 * (1 - gold / 5) + rng.normal(scale=0.4, size=30)
        left = np.stack([np.ones(30), np.zeros(30)], 1)
        right = np.stack([np.cos(angle), np.sin(angle)], 1)
        pairs = STSPairs(task, "test", list("a" * 30), list("b" * 30), gold, ["s"] * 30)
        results.append(score_pairs(pairs, left, right))
        want = spearmanr(np.cos(angle), gold).statistic * 100
        assert results[-1].all == pytest.approx(want)
    table = results_table(results, "all")
    assert table.loc["ours", "Avg."] == pytest.approx(
        (results[0].all + results[1].all) / 2
    )
