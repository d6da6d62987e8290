"""Encoders: name resolution, offline loading of a bert-base-shaped model, poolings against a hand
computation, the layer-indexing pitfall, batching invariance, and the on-disk cache."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bertflow_mini import models
from bertflow_mini.models import encode, encode_layers, load_encoder, pooling_layers, resolve_model

SENTENCES = [
    "A man is playing a guitar.",
    "The quick brown fox jumps over the lazy dog while the farmer watches from the porch.",
    "Hi.",
    "A woman is slicing a tomato on a wooden board.",
]


@pytest.fixture()
def tiny(tiny_bert_dir, monkeypatch):
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    return load_encoder("tiny-bert", device="cpu")


def hand_pooled(enc, sentence: str) -> dict:
    """Hidden states of one sentence alone (no padding at all), pooled by explicit loops."""
    batch = enc.tokenizer([sentence], return_tensors="pt")
    with torch.no_grad():
        hs = enc.model(**batch, output_hidden_states=True).hidden_states
    n_tokens = batch["input_ids"].shape[1]
    mean = lambda h: sum(h[0, t] for t in range(n_tokens)) / n_tokens  # noqa: E731
    L = len(hs) - 1
    return {
        "cls": hs[L][0, 0],
        "last-avg": mean(hs[L]),
        "first-last-avg": (mean(hs[1]) + mean(hs[L])) / 2,
        "last2avg": (mean(hs[L - 1]) + mean(hs[L])) / 2,
        (0, L): (mean(hs[0]) + mean(hs[L])) / 2,
    }


def test_resolution_prefers_the_mirror_then_the_hub(tiny_bert_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    assert resolve_model("tiny-bert") == str(tiny_bert_dir.resolve())
    assert resolve_model("some-org/tiny-bert") == str(tiny_bert_dir.resolve())  # hub ids map by short name
    assert resolve_model(str(tiny_bert_dir)) == str(tiny_bert_dir.resolve())  # a folder is itself
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))
    assert resolve_model("all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    assert resolve_model("bert-base-uncased") == "bert-base-uncased"


def test_default_model_is_the_mirror_model_offline_else_bert_base(monkeypatch, tmp_path):
    from conftest import MINILM_DIR, need

    need(MINILM_DIR)
    monkeypatch.setenv("BERTFLOW_MODELS", str(MINILM_DIR.parent))
    assert models.default_model() == "all-MiniLM-L6-v2"
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))
    assert models.default_model() == "bert-base-uncased"
    monkeypatch.delenv("BERTFLOW_MODELS")
    assert models.default_model() == "bert-base-uncased"


def test_offline_without_mirror_names_the_env_var_and_the_url(monkeypatch, tmp_path):
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))
    import huggingface_hub.constants

    # No network here: tell the hub client so, or it spends most of a minute on retries first.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(OSError) as err:
        load_encoder("bert-base-uncased")
    msg = str(err.value)
    assert "BERTFLOW_MODELS" in msg and "https://huggingface.co/bert-base-uncased" in msg


def test_tiny_bert_loads_offline_with_a_weights_fingerprint(tiny, tiny_bert_dir):
    assert tiny.name == "tiny-bert" and tiny.n_layers == 2 and tiny.dim == 32
    assert tiny.tokenizer.vocab_size == 30522
    again = load_encoder(str(tiny_bert_dir))
    assert again.fingerprint == tiny.fingerprint and len(tiny.fingerprint) == 16


@pytest.mark.parametrize("pooling", ["cls", "last-avg", "first-last-avg", "last2avg", (0, -1)])
def test_poolings_match_a_hand_computation_despite_padding(tiny, pooling):
    # Encoded together, the short sentences are padded to the long one's length; the result must
    # equal each sentence run alone with a plain Python mean over its own tokens.
    got = encode(tiny, SENTENCES, pooling, cache=False, progress=False)
    key = (0, tiny.n_layers) if pooling == (0, -1) else pooling
    want = np.stack([hand_pooled(tiny, s)[key].numpy() for s in SENTENCES])
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_the_layer_indexing_pitfall(tiny):
    # hidden_states[0] is the embedding output; [1] is the first transformer layer. BERT-flow's
    # "last2avg" averaged [1] and [-1] — our "first-last-avg" — not the last two layers.
    L = tiny.n_layers
    assert pooling_layers("first-last-avg", L) == (1, L)
    assert pooling_layers("last2avg", L) == (L - 1, L)
    per_layer = encode_layers(tiny, SENTENCES, cache=False, progress=False)
    assert per_layer.shape == (L + 1, len(SENTENCES), tiny.dim)
    first_last = encode(tiny, SENTENCES, "first-last-avg", cache=False, progress=False)
    np.testing.assert_allclose(first_last, (per_layer[1] + per_layer[L]) / 2, atol=1e-5)
    with_embeddings = encode(tiny, SENTENCES, (0, L), cache=False, progress=False)
    assert not np.allclose(first_last, with_embeddings, atol=1e-3)


def test_order_duplicates_and_batch_size_do_not_change_vectors(tiny):
    sents = SENTENCES + [SENTENCES[0]]
    a = encode(tiny, sents, "last-avg", batch_size=2, cache=False, progress=False)
    b = encode(tiny, sents[::-1], "last-avg", batch_size=64, cache=False, progress=False)[::-1]
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_array_equal(a[0], a[-1])
    assert a.dtype == np.float32 and a.shape == (5, 32)


def test_truncation_at_max_length(tiny):
    long = " ".join(["word"] * 200)
    full = encode(tiny, [long], "last-avg", max_length=512, cache=False, progress=False)
    cut = encode(tiny, [long], "last-avg", max_length=8, cache=False, progress=False)
    hand = hand_pooled(tiny, " ".join(["word"] * 6))["last-avg"].numpy()  # [CLS] + 6 words + [SEP]
    np.testing.assert_allclose(cut[0], hand, atol=1e-5)
    assert not np.allclose(full, cut, atol=1e-3)


def test_cache_is_used_keyed_and_rebuilt_when_corrupt(tiny, monkeypatch):
    first = encode(tiny, SENTENCES, "last-avg", progress=False)
    cls_fresh = encode(tiny, SENTENCES, "cls", cache=False, progress=False)
    files = list(models.cache_dir("embeddings").glob("tiny-bert-*.npy"))
    assert len(files) == 1
    assert not list(models.cache_dir("embeddings").glob(".*.tmp"))  # no temp file left behind

    def no_model(*a, **k):
        raise AssertionError("the model ran although the cache holds this result")

    real_run = models._run_model
    monkeypatch.setattr(models, "_run_model", no_model)
    np.testing.assert_array_equal(encode(tiny, SENTENCES, "last-avg", progress=False), first)
    # one entry holds every pooling of these sentences: no second forward pass for CLS or a layer tuple
    np.testing.assert_array_equal(encode(tiny, SENTENCES, "cls", progress=False), cls_fresh)
    assert encode(tiny, SENTENCES, (0, 1), progress=False).shape == (len(SENTENCES), tiny.dim)
    with pytest.raises(AssertionError):  # another max_length is another key
        encode(tiny, SENTENCES, "last-avg", max_length=16, progress=False)
    with pytest.raises(AssertionError):  # so is another set of sentences
        encode(tiny, SENTENCES[:2], "last-avg", progress=False)
    monkeypatch.setattr(models, "_run_model", real_run)

    files[0].write_bytes(b"\x93NUMPY garbage")  # a truncated write from some older crash
    with pytest.warns(UserWarning, match="corrupt"):
        rebuilt = encode(tiny, SENTENCES, "last-avg", progress=False)
    np.testing.assert_allclose(rebuilt, first, atol=1e-6)
    assert np.load(files[0]).shape == (tiny.n_layers + 2, len(SENTENCES), tiny.dim)  # rewritten, loadable


@pytest.mark.parametrize(
    "bad, pooling",
    [([], "last-avg"), ("just one string", "last-avg"), (["ok", 3], "last-avg"), (["ok"], "max"), (["ok"], (7,))],
)
def test_bad_input_is_a_value_error(tiny, bad, pooling):
    with pytest.raises(ValueError):
        encode(tiny, bad, pooling, cache=False, progress=False)


def test_hub_reachable_tells_an_open_port_from_a_closed_one():
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    assert models.hub_reachable("127.0.0.1", port=port, timeout=1.0) is True
    server.close()
    assert models.hub_reachable("127.0.0.1", port=port, timeout=1.0) is False
