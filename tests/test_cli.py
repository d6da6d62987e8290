"""``python -m bertflow_mini encode``: fills the embedding cache so that later runs need no model."""
from __future__ import annotations

import numpy as np
import pytest

from bertflow_mini.encoders import encoder as models
from bertflow_mini.encoders import names
from bertflow_mini.cli import main


def test_encode_fills_the_cache_for_every_sentence_of_each_task(tiny_bert_dir, mini_data, monkeypatch, capsys):
    from conftest import raw_pairs

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    assert main(["encode", "--model", "tiny-bert", "--tasks", "STS-B SICK"]) == 0

    # Distinct sentences of every split, counted from the raw files.
    def distinct(task: str, splits: tuple[str, ...]) -> list[str]:
        return list(dict.fromkeys(s for split in splits for a, b, _ in raw_pairs(mini_data, task, split) for s in (a, b)))

    stsb, sick = distinct("STSB", ("train", "dev", "test")), distinct("SICK-R", ("train", "trial", "test"))
    assert capsys.readouterr().out.splitlines() == [
        f"tiny-bert STSB: {len(stsb)} sentences encoded (cached)",
        f"tiny-bert SICK-R: {len(sick)} sentences encoded (cached)",
    ]
    assert len(list(models.cache_dir("embeddings").glob("tiny-bert-*.npy"))) == 2  # one entry per dataset

    # Now every pooling of those sentences comes from the cache: the model never runs.
    enc = names.load_encoder("tiny-bert", device="cpu")
    fresh = models.encode(enc, stsb, "cls", cache=False, progress=False)

    def no_model(*args, **kwargs):
        raise AssertionError("the model ran although `encode` filled the cache")

    monkeypatch.setattr(models, "_run_model", no_model)
    np.testing.assert_array_equal(models.encode(enc, stsb, "cls", progress=False), fresh)
    assert models.encode(enc, sick, "last2avg", progress=False).shape == (len(sick), enc.dim)
    with pytest.raises(AssertionError, match="filled the cache"):  # a sentence it was not asked for
        models.encode(enc, stsb + ["a sentence in no dataset"], "cls", progress=False)


def test_encode_with_a_missing_dataset_is_one_clear_error(tiny_bert_dir, tmp_path, monkeypatch, capsys):
    from bertflow_mini.data import datasets as data

    for key in data.URLS:  # no download either
        monkeypatch.setitem(data.URLS, key, f"http://127.0.0.1:9/blocked/{key}")
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "empty"))
    assert main(["encode", "--model", str(tiny_bert_dir), "--tasks", "STS12"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "STS12" in err and "Traceback" not in err


def test_simcse_command_trains_once_then_encodes_and_reproduce_prints_the_simcse_rows(
        tiny_bert_dir, mini_data, monkeypatch, capsys, one_torch_thread):
    from bertflow_mini.encoders import simcse

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    monkeypatch.setattr(simcse, "DEFAULT", simcse.SimCSEConfig(steps=2, batch_size=4, max_length=16))
    assert main(["simcse", "--models", "tiny-bert", "--tasks", "STS-B", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "tiny-bert+simcse: 2 steps" in out
    assert "tiny-bert+simcse: 1 datasets encoded (cached), and with tiny-bert" in out
    assert len(list(models.cache_dir("embeddings").glob("tiny-bert+simcse-*.npy"))) == 1
    assert len(list(models.cache_dir("embeddings").glob("tiny-bert-*.npy"))) == 1

    monkeypatch.setattr(simcse, "train_simcse", lambda *a, **k: pytest.fail("trained twice"))
    assert main(["reproduce", "--model", "tiny-bert", "--tasks", "STS-B", "--methods",
                 "none,whitening,simcse,simcse+whitening", "--json"]) == 0
    import json

    result = json.loads(capsys.readouterr().out)
    assert list(result["mean"]) == ["none", "whitening", "simcse", "simcse+whitening"]
    from bertflow_mini.evaluation.reproduce import evaluate_method

    tuned = names.load_encoder("tiny-bert+simcse", device="cpu")
    want = evaluate_method(tuned, "STSB", "first-last-avg", "none", progress=False).wmean
    assert result["mean"]["simcse"]["STSB"] == pytest.approx(want)
