"""The reproduce pipeline on real data with GloVe (fast, offline): fitting sets, post-processors,
the table's shape and arithmetic, the published rows, and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.distance import cosine as scipy_cosine_distance
from scipy.stats import spearmanr

from bertflow_mini.cli import main
from bertflow_mini.data import load_sts
from bertflow_mini.evaluation import methods
from bertflow_mini.evaluation import reproduce as rp
from bertflow_mini.evaluation.sts import score_pairs


@pytest.fixture(scope="module")
def glove():
    from bertflow_mini.encoders.names import load_encoder

    return load_encoder("glove-6B-50d")


def test_fitting_sets_follow_the_paper():
    stsb = rp.fitting_sentences("STS-B", "target")
    assert [t for t, _ in stsb] == ["STSB"]
    # target = train + dev + test, each sentence once
    n_all = len(
        set(
            s
            for sp in ("train", "dev", "test")
            for p in [load_sts("STSB", sp)]
            for s in p.sent1 + p.sent2
        )
    )
    assert len(stsb[0][1]) == n_all == len(set(stsb[0][1]))
    assert [t for t, _ in rp.fitting_sentences("SICK-R", "train")] == ["SICK-R"]
    train = set(load_sts("SICK-R", "train").sentences())
    assert set(rp.fitting_sentences("SICK-R", "train")[0][1]) == train
    # STS12 has no training split: fall back to the STS-B and SICK training sentences
    assert [t for t, _ in rp.fitting_sentences("STS12", "train")] == ["STSB", "SICK-R"]
    with pytest.raises(ValueError):
        rp.fitting_sentences("STS12", "nli")


def test_the_other_fit_never_sees_a_sentence_of_the_target():
    """``fit="other"`` plays the part of the paper's NLI fit: other datasets' training sentences only."""
    assert [t for t, _ in rp.fitting_sentences("STSB", "other")] == ["SICK-R"]
    assert [t for t, _ in rp.fitting_sentences("SICK-R", "other")] == ["STSB"]
    other = rp.fitting_sentences("STS12", "other")
    assert [t for t, _ in other] == ["STSB", "SICK-R"]
    years = set().union(
        *(
            load_sts(t, "test").sentences()
            for t in ("STS12", "STS13", "STS14", "STS15", "STS16")
        )
    )
    stsb_train = set(load_sts("STSB", "train").sentences())
    assert not years & set(other[0][1]) and not years & set(other[1][1])
    # STS-B was compiled from STS12-16: some of its training sentences are theirs, and are left out
    assert set(other[0][1]) == stsb_train - years and stsb_train & years
    # one fitting set for the five years
    assert rp.fitting_sentences("STS16", "other") == other


def test_postprocessors_by_name():
    from bertflow_mini.postprocess.whitening import AllButTheTop, Whitening

    assert methods.make_postprocessor("none") is None
    assert isinstance(methods.make_postprocessor("whitening"), Whitening)
    assert methods.make_postprocessor("whitening-16").k == 16
    assert isinstance(methods.make_postprocessor("abtt"), AllButTheTop)
    assert methods.make_postprocessor("abtt-3").n_components == 3
    assert methods.parse_method("whitening-256") == (
        "whitening",
        256,
    ) and methods.parse_method("flow") == ("flow", None)
    for bad in ("pca", "whitening-0", "whitening-x", "flow-3"):
        with pytest.raises(ValueError):
            methods.make_postprocessor(bad)


def test_a_method_is_one_entry_in_the_registry(glove, monkeypatch):
    class Negate:  # a stand-in post-processor: x -> -x leaves every cosine unchanged
        def fit(self, X):
            return self

        def transform(self, X):
            return -X

    monkeypatch.setitem(
        methods.POSTPROCESSORS, "negate", lambda k, seed, progress: Negate()
    )
    table = rp.reproduce(
        glove, "avg", ["none", "negate"], tasks=["STSB"], progress=False
    )
    assert table.mean.loc["negate", "STSB"] == pytest.approx(
        table.mean.loc["none", "STSB"]
    )


def test_a_table_parses_and_encodes_each_dataset_once(glove, monkeypatch):
    loads, encodes = [], []
    real_load, real_encode = rp.load_sts, rp.encode
    monkeypatch.setattr(
        rp,
        "load_sts",
        lambda task, split="test": (
            loads.append((task, split)) or real_load(task, split)
        ),
    )
    monkeypatch.setattr(
        rp,
        "encode",
        lambda enc, sents, pooling, **kw: (
            encodes.append(len(sents)) or real_encode(enc, sents, pooling, **kw)
        ),
    )
    rp.reproduce(
        glove,
        "avg",
        ["none", "whitening", "whitening-16", "abtt"],
        "target",
        ["STSB", "STS12"],
        progress=False,
    )
    assert sorted(loads) == [
        ("STS12", "test"),
        ("STSB", "dev"),
        ("STSB", "test"),
        ("STSB", "train"),
    ]
    assert len(encodes) == 2  # one call per dataset, whatever the number of methods


def test_evaluate_method_equals_doing_it_by_hand(glove):
    from bertflow_mini.encoders.glove import glove_embed
    from bertflow_mini.postprocess.whitening import Whitening

    pairs = load_sts("STSB", "test")
    got = rp.evaluate_method(
        glove, "STSB", "avg", "whitening", "target", progress=False
    )
    fit = rp.task_sentences("STSB")
    w = Whitening().fit(glove_embed(fit, glove.glove))
    want = score_pairs(
        pairs,
        w.transform(glove_embed(pairs.sent1, glove.glove)),
        w.transform(glove_embed(pairs.sent2, glove.glove)),
    )
    assert got.wmean == pytest.approx(want.wmean, abs=1e-6)


def test_glove_whitening_beats_raw_cosine_on_sts_b(glove):
    # The paper's claim, visible offline: an isotropy-restoring post-processor raises STS-B Spearman
    # of averaged GloVe vectors (whose mean vector dominates their cosines).
    table = rp.reproduce(
        glove, "avg", ["none", "whitening", "abtt"], "target", ["STSB"], progress=False
    )
    raw, white, abtt = (
        table.mean.loc[m, "STSB"] for m in ("none", "whitening", "abtt")
    )
    assert white > raw + 2 and abtt > raw
    assert list(table.mean.columns) == ["STSB", "Avg."]
    assert table.mean.loc["none", "Avg."] == pytest.approx(raw)
    assert (table.std.values == 0).all() and table.formatted().loc[
        "none", "STSB"
    ] == f"{raw:.2f}"


def test_seeds_give_mean_and_std_for_the_flow_only(monkeypatch, glove):
    calls = []

    def fake(self, task, pooling, method, fit, seed):
        calls.append((method, seed))
        return type("R", (), {"wmean": 50.0 + seed, "all": 0.0})()

    monkeypatch.setattr(rp.Evaluation, "score", fake)
    table = rp.reproduce(
        glove, "avg", ["none", "flow"], tasks=["STSB", "STS12"], seeds=3, progress=False
    )
    assert calls.count(("none", 0)) == 2 and [s for m, s in calls if m == "flow"] == [
        0,
        0,
        1,
        1,
        2,
        2,
    ]
    assert table.mean.loc["flow", "STSB"] == pytest.approx(51.0)
    assert table.std.loc["flow", "STSB"] == pytest.approx(np.std([50, 51, 52], ddof=1))
    assert table.formatted().loc["flow", "STSB"] == "51.00 ± 1.00"
    with pytest.raises(ValueError, match="aggregation"):
        rp.reproduce(glove, "avg", ["none"], aggregation="mean")


def test_rows_table_mixes_poolings_methods_and_fits(glove):
    ev = rp.Evaluation(glove, progress=False)
    rows = {
        "raw": ("avg", "none", "target"),
        "w target": ("avg", "whitening", "target"),
        "w train": ("avg", "whitening", "train"),
    }
    table = rp.rows_table(ev, rows, ["STSB"])
    assert list(table.mean.index) == list(rows)
    for label, (pooling, method, fit) in rows.items():
        assert (
            table.mean.loc[label, "STSB"]
            == rp.evaluate_method(glove, "STSB", pooling, method, fit).wmean
        )


def _scipy_spearman_of_cosines(left: np.ndarray, right: np.ndarray, gold) -> float:
    cos = [1 - scipy_cosine_distance(a, b) for a, b in zip(left, right)]
    return spearmanr(cos, gold).statistic * 100


def test_cli_reproduce_json_offline_with_glove(capsys, glove, mini_data, monkeypatch):
    from conftest import raw_pairs

    from bertflow_mini.encoders.glove import glove_embed

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    assert (
        main(
            [
                "reproduce",
                "--model",
                "glove-6B-50d",
                "--methods",
                "none,whitening-8",
                "--tasks",
                "STSB STS12",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert (
        out["pooling"] == "avg"
        and out["fit"] == "target"
        and set(out["mean"]) == {"none", "whitening-8"}
    )
    assert (
        set(out["mean"]["none"]) == {"STSB", "STS12", "Avg."} and out["published"] == {}
    )
    # The raw-cosine cell, recomputed from the test file itself with scipy.
    test = raw_pairs(mini_data, "STSB", "test")
    left, right = (glove_embed([p[i] for p in test], glove.glove) for i in (0, 1))
    assert out["mean"]["none"]["STSB"] == pytest.approx(
        _scipy_spearman_of_cosines(left, right, [p[2] for p in test]), abs=1e-6
    )
    row = out["mean"]["whitening-8"]
    assert row["Avg."] == pytest.approx((row["STSB"] + row["STS12"]) / 2)


def test_a_real_flow_fitted_on_training_sentences_only(glove, mini_data, monkeypatch):
    """``fit="train"`` with the real flow (no stand-in): STS-B's flow sees exactly STS-B's training
    sentences, STS12's sees the STS-B and SICK training sentences, and the STS-B cell is what fitting
    that flow by hand and scoring the test pairs with scipy gives."""
    from conftest import raw_pairs

    from bertflow_mini.encoders.glove import glove_embed
    from bertflow_mini.postprocess.flow import FlowTransform

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    fitted = []
    real_fit = FlowTransform.fit
    monkeypatch.setattr(
        FlowTransform,
        "fit",
        lambda self, X: fitted.append(np.array(X)) or real_fit(self, X),
    )
    table = rp.reproduce(
        glove, "avg", ["none", "flow"], "train", ["STSB", "STS12"], progress=False
    )

    def distinct(task: str) -> list[str]:  # first appearance, pair by pair
        return list(
            dict.fromkeys(
                s for a, b, _ in raw_pairs(mini_data, task, "train") for s in (a, b)
            )
        )

    stsb, sick = distinct("STSB"), distinct("SICK-R")
    # no test sentence, nothing twice
    assert [len(x) for x in fitted] == [
        len(stsb),
        len(stsb) + len(sick),
    ]
    np.testing.assert_array_equal(fitted[0], glove_embed(stsb, glove.glove))
    np.testing.assert_array_equal(fitted[1], glove_embed(stsb + sick, glove.glove))

    by_hand = FlowTransform(seed=0, progress=False).fit(glove_embed(stsb, glove.glove))
    test = raw_pairs(mini_data, "STSB", "test")
    left, right = (
        by_hand.transform(glove_embed([p[i] for p in test], glove.glove))
        for i in (0, 1)
    )
    want = _scipy_spearman_of_cosines(left, right, [p[2] for p in test])
    assert table.mean.loc["flow", "STSB"] == pytest.approx(want, abs=1e-6)
    # the flow really transformed
    assert table.mean.loc["flow", "STSB"] != table.mean.loc["none", "STSB"]


def test_default_methods_scale_the_truncation_like_the_whitening_paper():
    assert (
        methods.default_methods(768)[3] == "whitening-256"
        and methods.default_methods(1024)[3] == "whitening-384"
    )
    assert (
        methods.default_methods(384)[3] == "whitening-128"
        and methods.truncated_whitening(384) == "whitening-128"
        and methods.default_methods(50)[3] == "whitening-16"
    )


def test_a_shared_fitting_set_is_fitted_once(glove, monkeypatch):
    from bertflow_mini.postprocess import whitening

    fits = []
    real_fit = whitening.Whitening.fit
    monkeypatch.setattr(
        whitening.Whitening,
        "fit",
        lambda self, X: fits.append(len(X)) or real_fit(self, X),
    )
    table = rp.reproduce(
        glove, "avg", ["whitening"], "train", ["STS12", "STS13", "STSB"], progress=False
    )
    # STS12 and STS13 share the STS-B + SICK training sentences: one fit; STS-B has its own train split
    assert len(fits) == 2 and table.mean.shape == (1, 4)


def test_sts_and_reproduce_print_the_same_numbers(
    capsys, glove, mini_data, monkeypatch
):
    """``sts`` is ``reproduce``'s raw-cosine row: the same cells, aggregation by aggregation,
    and the same ``Avg.``."""
    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    tasks = ["--model", "glove-6B-50d", "--tasks", "STSB STS12 STS13", "--json"]
    assert main(["sts", *tasks]) == 0
    sts = {r["task"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    for aggregation in ("wmean", "all"):
        argv = ["reproduce", *tasks, "--methods", "none", "--aggregation", aggregation]
        assert main(argv) == 0
        row = json.loads(capsys.readouterr().out)["mean"]["none"]
        assert {t: row[t] for t in sts} == {t: sts[t][aggregation] for t in sts}
        assert row["Avg."] == pytest.approx(np.mean([sts[t][aggregation] for t in sts]))


def test_sts_encodes_with_the_max_length_it_is_given(
    capsys, tiny_bert_dir, mini_data, monkeypatch, one_torch_thread
):
    """``--max-length`` reaches the encoder: the cell is scipy's Spearman of the cosines of vectors
    encoded at that length, and differs from the paper's 64."""
    from conftest import raw_pairs

    from bertflow_mini.encoders.encoder import encode
    from bertflow_mini.encoders.names import load_encoder

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    argv = ["sts", "--model", "tiny-bert", "--tasks", "STSB", "--json"]
    cells = {}
    for length in ("10", "64"):
        assert main([*argv, "--max-length", length, "--batch-size", "5"]) == 0
        (cells[length],) = json.loads(capsys.readouterr().out)["results"]
    enc = load_encoder("tiny-bert", device="cpu")
    test = raw_pairs(mini_data, "STSB", "test")
    left, right = (
        encode(enc, [p[i] for p in test], max_length=10, cache=False, progress=False)
        for i in (0, 1)
    )
    want = _scipy_spearman_of_cosines(left, right, [p[2] for p in test])
    assert cells["10"]["all"] == pytest.approx(want, abs=1e-4)
    assert cells["10"]["all"] != pytest.approx(cells["64"]["all"], abs=1e-4)
