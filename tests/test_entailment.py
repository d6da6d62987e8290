"""The unsupervised entailment test: AUC, SICK's entailment labels, QNLI's loader and its failure."""
from __future__ import annotations

import numpy as np
import pytest

from bertflow_mini.evaluation import entailment as ent


def test_auc_equals_the_fraction_of_correctly_ordered_pairs():
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=60), 1)  # rounding makes ties, which count one half
    labels = (rng.random(60) < 0.4).astype(int)
    pos, neg = scores[labels == 1], scores[labels == 0]
    want = np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg]) * 100
    assert ent.auc(scores, labels) == pytest.approx(want)
    assert ent.auc(np.array([1.0, 2, 3, 4]), np.array([0, 0, 1, 1])) == 100.0
    with pytest.raises(ValueError):
        ent.auc(np.ones(3), np.ones(3))
    with pytest.raises(ValueError):
        ent.auc(np.array([np.nan, 1]), np.array([0, 1]))


def test_sick_entailment_labels_match_a_count_of_the_raw_file():
    from conftest import DATA_DIR, need

    need(DATA_DIR / "sick")
    pairs = ent.load_sick_entailment("test")
    lines = (DATA_DIR / "sick" / "SICK_test_annotated.txt").read_text(encoding="utf-8").splitlines()[1:]
    assert len(pairs) == len(lines) == 4927
    assert pairs.labels.sum() == sum(line.endswith("\tENTAILMENT") for line in lines)
    assert pairs.first[0] == lines[0].split("\t")[1]
    with pytest.raises(ValueError):
        ent.load_sick_entailment("dev")


def test_qnli_reads_the_glue_layout(tmp_path):
    folder = tmp_path / "glue" / "QNLI"
    folder.mkdir(parents=True)
    rows = ["index\tquestion\tsentence\tlabel", "0\tWho?\tHe did.\tentailment",
            "1\tWhen?\tIt rained.\tnot_entailment", "2\tWhere?\tHere.\tentailment"]
    for name in ("train.tsv", "dev.tsv"):
        (folder / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    pairs = ent.load_qnli("dev", root=tmp_path)
    assert pairs.first == ["Who?", "When?", "Where?"] and pairs.labels.tolist() == [1, 0, 1]
    (folder / "dev.tsv").write_text(rows[0] + "\n0\tWho?\tHe did.\tmaybe\n", encoding="utf-8")
    with pytest.raises(ValueError, match="entailment"):
        ent.load_qnli("dev", root=tmp_path)
    with pytest.raises(ValueError):
        ent.load_qnli("test", root=tmp_path)


def test_qnli_offline_is_one_error_naming_the_variable_and_the_url(tmp_path, monkeypatch):
    from bertflow_mini.data import datasets as data

    monkeypatch.setitem(data.URLS, "QNLI", "http://127.0.0.1:9/blocked/QNLIv2.zip")
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "empty"))
    with pytest.raises(data.DataNotFoundError) as err:
        ent.load_qnli("dev")
    assert "glue/QNLI" in str(err.value) and "QNLIv2.zip" in str(err.value) and "BERTFLOW_DATA" in str(err.value)
    assert data.URLS["QNLI"] != "https://dl.fbaipublicfiles.com/glue/data/QNLIv2.zip"  # the patch held
    monkeypatch.undo()
    assert data.URLS["QNLI"] == "https://dl.fbaipublicfiles.com/glue/data/QNLIv2.zip"  # GLUE's official archive


def test_cosine_auc_is_perfect_when_entailing_pairs_are_copies():
    from bertflow_mini.postprocess.whitening import Whitening

    rng = np.random.default_rng(0)
    vocab = {f"s{i}": rng.normal(size=8) for i in range(40)}
    vocab.update({f"t{i}": vocab[f"s{i}"] * 2 for i in range(20)})  # t_i points where s_i does
    first = [f"s{i}" for i in range(40)]
    second = [f"t{i}" if i < 20 else f"s{(i + 1) % 40}" for i in range(40)]
    pairs = ent.LabelledPairs("toy", first, second, np.r_[np.ones(20), np.zeros(20)].astype(int))
    embed = lambda s: np.stack([vocab[x] for x in s])
    assert ent.cosine_auc(pairs, embed) == 100.0
    fitted_on = []

    class Spy(Whitening):
        def fit(self, X):
            fitted_on.append(len(X))
            return super().fit(X)

    assert 0 <= ent.cosine_auc(pairs, embed, Spy()) <= 100
    assert fitted_on == [len(pairs.sentences())] == [60]  # the paper's target fit: every sentence once


def test_sick_entailment_keeps_the_same_first_pairs_as_sick_r_under_the_pair_cap(monkeypatch):
    """$BERTFLOW_MAX_PAIRS caps SICK's entailment pairs exactly as it caps the SICK-R split that
    the chapter encodes (the oracle: load_sts, a separate parser of the same file)."""
    from conftest import DATA_DIR, need

    from bertflow_mini.data import load_sts

    need(DATA_DIR / "sick")
    monkeypatch.setenv("BERTFLOW_MAX_PAIRS", "7")
    pairs, sts = ent.load_sick_entailment("test"), load_sts("SICK-R", "test")
    assert len(pairs) == len(sts) == 7
    assert (pairs.first, pairs.second) == (list(sts.sent1), list(sts.sent2))
    monkeypatch.delenv("BERTFLOW_MAX_PAIRS")
    assert len(ent.load_sick_entailment("test")) == 4927
