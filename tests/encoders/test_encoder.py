"""Encoders: name resolution, offline loading of a bert-base-shaped model, poolings against a hand
computation, the layer-indexing pitfall, batching invariance, and the on-disk cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bertflow_mini._io import cache_dir
from bertflow_mini.encoders import encoder as models
from bertflow_mini.encoders import names
from bertflow_mini.encoders.encoder import encode, encode_layers, encode_with_dropout
from bertflow_mini.encoders.names import load_encoder, resolve_model
from bertflow_mini.encoders.pooling import (
    parse_pooling,
    pool,
    pooling_grid,
    pooling_layers,
)

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

    # element-wise max / min by explicit comparison, token after token
    def big(h):
        return torch.tensor(
            [max(float(h[0, t, j]) for t in range(n_tokens)) for j in range(h.shape[2])]
        )  # noqa: E731

    def small(h):
        return torch.tensor(
            [min(float(h[0, t, j]) for t in range(n_tokens)) for j in range(h.shape[2])]
        )  # noqa: E731

    L = len(hs) - 1
    return {
        "cls": hs[L][0, 0],
        "last-avg": mean(hs[L]),
        "first-last-avg": (mean(hs[1]) + mean(hs[L])) / 2,
        "last2avg": (mean(hs[L - 1]) + mean(hs[L])) / 2,
        (0, L): (mean(hs[0]) + mean(hs[L])) / 2,
        "max": big(hs[L]),
        "min": small(hs[L]),
        "max-last2-avg": (big(hs[L - 1]) + big(hs[L])) / 2,
        "min-last2-concat": torch.cat([small(hs[L - 1]), small(hs[L])]),
        "mean-last2-concat": torch.cat([mean(hs[L - 1]), mean(hs[L])]),
        "cls-last2-avg": (hs[L - 1][0, 0] + hs[L][0, 0]) / 2,
        "cls-last2-concat": torch.cat([hs[L - 1][0, 0], hs[L][0, 0]]),
    }


def test_resolution_prefers_the_mirror_then_the_hub(
    tiny_bert_dir, monkeypatch, tmp_path
):
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    assert resolve_model("tiny-bert") == str(tiny_bert_dir.resolve())
    assert resolve_model("some-org/tiny-bert") == str(
        tiny_bert_dir.resolve()
    )  # hub ids map by short name
    assert resolve_model(str(tiny_bert_dir)) == str(
        tiny_bert_dir.resolve()
    )  # a folder is itself
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))
    assert resolve_model("all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    assert resolve_model("bert-base-uncased") == "bert-base-uncased"


def test_default_model_is_scratch_bert_with_or_without_a_mirror(monkeypatch, tmp_path):
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))
    assert names.default_model() == "scratch-bert"
    monkeypatch.delenv("BERTFLOW_MODELS")
    assert names.default_model() == "scratch-bert"


def test_offline_without_mirror_names_the_env_var_and_the_url(monkeypatch, tmp_path):
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))
    import huggingface_hub.constants

    # No network here: tell the hub client so, or it spends most of a minute on retries first.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(OSError) as err:
        load_encoder("bert-base-uncased")
    msg = str(err.value)
    assert (
        "BERTFLOW_MODELS" in msg and "https://huggingface.co/bert-base-uncased" in msg
    )


def test_tiny_bert_loads_offline_with_a_weights_fingerprint(tiny, tiny_bert_dir):
    assert tiny.name == "tiny-bert" and tiny.n_layers == 2 and tiny.dim == 32
    assert tiny.tokenizer.vocab_size == 30522
    again = load_encoder(str(tiny_bert_dir))
    assert again.fingerprint == tiny.fingerprint and len(tiny.fingerprint) == 16


GRID_SAMPLE = [
    "max",
    "min",
    "max-last2-avg",
    "min-last2-concat",
    "mean-last2-concat",
    "cls-last2-avg",
    "cls-last2-concat",
]


@pytest.mark.parametrize(
    "pooling", ["cls", "last-avg", "first-last-avg", "last2avg", (0, -1)] + GRID_SAMPLE
)
def test_poolings_match_a_hand_computation_despite_padding(tiny, pooling):
    # Encoded together, the short sentences are padded to the long one's length; the result must
    # equal each sentence run alone with a plain Python mean over its own tokens.
    got = encode(tiny, SENTENCES, pooling, cache=False, progress=False)
    key = (0, tiny.n_layers) if pooling == (0, -1) else pooling
    want = np.stack([hand_pooled(tiny, s)[key].numpy() for s in SENTENCES])
    np.testing.assert_allclose(got, want, atol=1e-5)


def block_outputs(enc, sentence: str) -> dict:
    """The embedding module's output and each transformer block's output for one sentence alone,
    captured by forward hooks on the modules themselves — not read from the ``hidden_states`` list,
    whose indexing is the pitfall under test."""
    captured: dict = {}

    def keep(key):
        def hook(module, inputs, output):
            captured[key] = (output[0] if isinstance(output, tuple) else output)[
                0
            ].detach()

        return hook

    blocks = list(enc.model.encoder.layer)
    handles = [enc.model.embeddings.register_forward_hook(keep("embeddings"))]
    handles += [block.register_forward_hook(keep(k)) for k, block in enumerate(blocks)]
    try:
        with torch.no_grad():
            enc.model(**enc.tokenizer([sentence], return_tensors="pt"))
    finally:
        for handle in handles:
            handle.remove()
    assert len(captured) == len(blocks) + 1
    return captured


def test_the_layer_indexing_pitfall(tmp_path):
    # BERT-flow's "last2avg" averaged the first and the last transformer *blocks* (the official code
    # reads all_encoder_layers[0], a block output); SimCSE's first version averaged the *embedding
    # output* and the last block instead. Each named pooling must average exactly the blocks it names;
    # with 3 blocks, "first", "second-to-last" and "last" are three different ones.
    from conftest import save_tiny_bert

    tiny = load_encoder(
        str(save_tiny_bert(tmp_path / "tiny-bert-3", layers=3)), device="cpu"
    )
    assert tiny.n_layers == 3
    got = {
        p: encode(tiny, SENTENCES, p, cache=False, progress=False)
        for p in ("first-last-avg", "last2avg", "last-avg", (0, -1))
    }
    first, last = 0, tiny.n_layers - 1  # block indices
    for i, sentence in enumerate(SENTENCES):
        out = {
            k: v.mean(0).numpy() for k, v in block_outputs(tiny, sentence).items()
        }  # token means
        np.testing.assert_allclose(
            got["first-last-avg"][i], (out[first] + out[last]) / 2, atol=1e-5
        )
        np.testing.assert_allclose(
            got["last2avg"][i], (out[last - 1] + out[last]) / 2, atol=1e-5
        )
        np.testing.assert_allclose(got["last-avg"][i], out[last], atol=1e-5)
        np.testing.assert_allclose(
            got[(0, -1)][i], (out["embeddings"] + out[last]) / 2, atol=1e-5
        )
    assert not np.allclose(
        got["first-last-avg"], got["last2avg"], atol=1e-3
    )  # the hooks tell them apart
    assert not np.allclose(got["first-last-avg"], got[(0, -1)], atol=1e-3)
    per_layer = encode_layers(tiny, SENTENCES, cache=False, progress=False)
    assert per_layer.shape == (tiny.n_layers + 1, len(SENTENCES), tiny.dim)


def test_named_poolings_pick_the_layers_of_a_12_layer_bert():
    # hidden_states of bert-base: index 0 = embedding output, 1 … 12 = the blocks' outputs.
    assert pooling_layers("first-last-avg", 12) == (
        1,
        12,
    )  # BERT-flow's "last2avg", really
    assert pooling_layers("last2avg", 12) == (11, 12)
    assert pooling_layers("last-avg", 12) == pooling_layers("cls", 12) == (12,)
    assert pooling_layers((0, -1), 12) == (0, 12) and pooling_layers((-13,), 12) == (0,)
    for bad in [(13,), (-14,), ()]:
        with pytest.raises(ValueError):
            pooling_layers(bad, 12)


def test_the_pooling_grid_names_every_combination_once():
    grid = pooling_grid(4)
    assert (
        len(grid) == len(set(grid)) == 4 * 2 * 4
    )  # tokens x (avg, concat) x last 1..4
    assert parse_pooling("mean-last1-avg", 4) == parse_pooling("last-avg", 4)
    assert parse_pooling("mean-last2-avg", 4) == parse_pooling("last2avg", 4)
    assert parse_pooling("max", 4) == parse_pooling("max-last1-avg", 4)
    assert parse_pooling("cls-last3-concat", 4).layers == (2, 3, 4)
    assert parse_pooling("min-last4-concat", 4).combine == "concat"
    for bad in ["max-last0-avg", "max-last5-avg", "median", "mean-last2-sum", "MAX"]:
        with pytest.raises(ValueError):
            parse_pooling(bad, 4)


def test_concatenation_is_wider_and_averaging_is_its_mean(tiny):
    cat = encode(tiny, SENTENCES, "max-last2-concat", cache=False, progress=False)
    avg = encode(tiny, SENTENCES, "max-last2-avg", cache=False, progress=False)
    assert cat.shape == (len(SENTENCES), 2 * tiny.dim) and avg.shape == (
        len(SENTENCES),
        tiny.dim,
    )
    np.testing.assert_allclose(
        (cat[:, : tiny.dim] + cat[:, tiny.dim :]) / 2, avg, atol=1e-6
    )
    mx, mn = (
        encode(tiny, SENTENCES, p, cache=False, progress=False) for p in ("max", "min")
    )
    mean = encode(tiny, SENTENCES, "last-avg", cache=False, progress=False)
    assert (mn <= mean + 1e-6).all() and (
        mean <= mx + 1e-6
    ).all()  # a mean lies between min and max


@pytest.mark.parametrize("pooling", ["last-avg", "cls", "first-last-avg"] + GRID_SAMPLE)
def test_pool_on_a_padded_batch_agrees_with_encode(tiny, pooling):
    batch = tiny.tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        hs = tiny.model(**batch, output_hidden_states=True).hidden_states
    got = pool(hs, batch["attention_mask"], pooling).numpy()
    np.testing.assert_allclose(
        got, encode(tiny, SENTENCES, pooling, cache=False, progress=False), atol=1e-5
    )


def test_order_duplicates_and_batch_size_do_not_change_vectors(tiny):
    sents = SENTENCES + [SENTENCES[0]]
    a = encode(tiny, sents, "last-avg", batch_size=2, cache=False, progress=False)
    b = encode(
        tiny, sents[::-1], "last-avg", batch_size=64, cache=False, progress=False
    )[::-1]
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_array_equal(a[0], a[-1])
    assert a.dtype == np.float32 and a.shape == (5, 32)


def test_truncation_at_max_length(tiny):
    long = " ".join(["word"] * 200)
    full = encode(tiny, [long], "last-avg", max_length=512, cache=False, progress=False)
    cut = encode(tiny, [long], "last-avg", max_length=8, cache=False, progress=False)
    hand = hand_pooled(tiny, " ".join(["word"] * 6))[
        "last-avg"
    ].numpy()  # [CLS] + 6 words + [SEP]
    np.testing.assert_allclose(cut[0], hand, atol=1e-5)
    assert not np.allclose(full, cut, atol=1e-3)


def test_cache_is_used_keyed_and_rebuilt_when_corrupt(tiny, monkeypatch):
    first = encode(tiny, SENTENCES, "last-avg", progress=False)
    cls_fresh = encode(tiny, SENTENCES, "cls", cache=False, progress=False)
    files = list(cache_dir("embeddings").glob("tiny-bert-*.npy"))
    assert len(files) == 1
    assert not list(cache_dir("embeddings").glob(".*.tmp"))  # no temp file left behind

    def no_model(*a, **k):
        raise AssertionError("the model ran although the cache holds this result")

    real_run = models._run_model
    monkeypatch.setattr(models, "_run_model", no_model)
    np.testing.assert_array_equal(
        encode(tiny, SENTENCES, "last-avg", progress=False), first
    )
    # one entry holds every pooling of these sentences: no second forward pass for CLS or a layer tuple
    np.testing.assert_array_equal(
        encode(tiny, SENTENCES, "cls", progress=False), cls_fresh
    )
    assert encode(tiny, SENTENCES, (0, 1), progress=False).shape == (
        len(SENTENCES),
        tiny.dim,
    )
    with pytest.raises(AssertionError):  # another max_length is another key
        encode(tiny, SENTENCES, "last-avg", max_length=16, progress=False)
    with pytest.raises(AssertionError):  # so is another set of sentences
        encode(tiny, SENTENCES[:2], "last-avg", progress=False)

    # max, min and other layers' CLS live in a second entry, written once, on first use
    real_extremes = models._run_model_extremes
    monkeypatch.setattr(models, "_run_model_extremes", no_model)
    with pytest.raises(AssertionError):
        encode(tiny, SENTENCES, "max", progress=False)
    monkeypatch.setattr(models, "_run_model_extremes", real_extremes)
    monkeypatch.setattr(models, "_run_model", real_run)
    extreme_fresh = {
        p: encode(tiny, SENTENCES, p, cache=False, progress=False)
        for p in ("max", "min", "cls-last2-concat")
    }
    encode(tiny, SENTENCES, "max", progress=False)
    assert len(list(cache_dir("embeddings").glob("tiny-bert-*.npy"))) == 2
    monkeypatch.setattr(models, "_run_model", no_model)
    monkeypatch.setattr(models, "_run_model_extremes", no_model)
    for p, want in extreme_fresh.items():
        np.testing.assert_array_equal(encode(tiny, SENTENCES, p, progress=False), want)
    np.testing.assert_array_equal(
        encode(tiny, SENTENCES, "last-avg", progress=False), first
    )
    monkeypatch.setattr(models, "_run_model_extremes", real_extremes)
    monkeypatch.setattr(models, "_run_model", real_run)

    files[0].write_bytes(
        b"\x93NUMPY garbage"
    )  # a truncated write from some older crash
    with pytest.warns(UserWarning, match="corrupt"):
        rebuilt = encode(tiny, SENTENCES, "last-avg", progress=False)
    np.testing.assert_allclose(rebuilt, first, atol=1e-6)
    assert np.load(files[0]).shape == (
        tiny.n_layers + 2,
        len(SENTENCES),
        tiny.dim,
    )  # rewritten, loadable


@pytest.mark.parametrize(
    "bad, pooling",
    [
        ([], "last-avg"),
        ("just one string", "last-avg"),
        (["ok", 3], "last-avg"),
        (["ok"], "median"),
        (["ok"], (7,)),
        (["ok"], "max-last9-avg"),
    ],
)
def test_bad_input_is_a_value_error(tiny, bad, pooling):
    with pytest.raises(ValueError):
        encode(tiny, bad, pooling, cache=False, progress=False)


def _rewrite_weights_in_place(folder, scale: float = 0.5) -> None:
    """Perturb every weight of the checkpoint in ``folder`` and save it back: same name, same files,
    same sizes — only the numbers change (as after re-training or a fresh download)."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(folder)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g))
    model.save_pretrained(folder)


def test_cache_is_invalidated_when_weights_change_under_the_same_name(
    tmp_path, monkeypatch
):
    from conftest import save_tiny_bert

    folder = save_tiny_bert(tmp_path / "models" / "tiny-bert")
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path / "models"))
    weights = sorted(folder.glob("*.safetensors"))
    sizes = [w.stat().st_size for w in weights]
    before = encode(
        load_encoder("tiny-bert", device="cpu"), SENTENCES, "last-avg", progress=False
    )

    _rewrite_weights_in_place(folder)
    assert [
        w.stat().st_size for w in sorted(folder.glob("*.safetensors"))
    ] == sizes  # only the values differ
    enc = load_encoder("tiny-bert", device="cpu")
    after = encode(enc, SENTENCES, "last-avg", progress=False)
    fresh = encode(enc, SENTENCES, "last-avg", cache=False, progress=False)
    assert not np.allclose(after, before, atol=1e-3)  # not the stale cache entry ...
    np.testing.assert_allclose(
        after, fresh, atol=1e-6
    )  # ... but the new weights' vectors
    assert (
        len(list(cache_dir("embeddings").glob("tiny-bert-*.npy"))) == 2
    )  # one entry per weights


def test_cache_is_invalidated_when_weights_change_with_the_same_mtime(
    tmp_path, monkeypatch
):
    import os

    from conftest import save_tiny_bert

    folder = save_tiny_bert(tmp_path / "models" / "tiny-bert")
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path / "models"))
    weights = sorted(folder.glob("*.safetensors"))
    stamps = [(w.stat().st_atime_ns, w.stat().st_mtime_ns) for w in weights]
    before = encode(
        load_encoder("tiny-bert", device="cpu"), SENTENCES, "last-avg", progress=False
    )
    _rewrite_weights_in_place(folder)
    for w, ns in zip(weights, stamps):
        os.utime(w, ns=ns)  # what `cp -p` or `rsync -t` of another checkpoint does
    after = encode(
        load_encoder("tiny-bert", device="cpu"), SENTENCES, "last-avg", progress=False
    )
    assert not np.allclose(after, before, atol=1e-3)


def test_cache_is_keyed_by_the_tokenizer_and_the_package_version(tmp_path, monkeypatch):
    from conftest import save_tiny_bert

    from bertflow_mini.encoders import cache

    folder = save_tiny_bert(tmp_path / "models" / "tiny-bert")
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path / "models"))
    cased = ["The Cat sat.", "A DOG ran far."]
    lower = encode(
        load_encoder("tiny-bert", device="cpu"), cased, "last-avg", progress=False
    )
    # the same weights behind a tokenizer that keeps case: other token ids, so another entry
    config = folder / "tokenizer_config.json"
    config.write_text(
        config.read_text().replace('"do_lower_case": true', '"do_lower_case": false')
    )
    keeps_case = load_encoder("tiny-bert", device="cpu")
    assert not keeps_case.tokenizer.do_lower_case
    kept = encode(keeps_case, cased, "last-avg", progress=False)
    assert not np.allclose(kept, lower, atol=1e-3)
    np.testing.assert_allclose(
        kept,
        encode(keeps_case, cased, "last-avg", cache=False, progress=False),
        atol=1e-6,
    )
    entries = sorted(cache_dir("embeddings").glob("tiny-bert-*.npy"))
    assert len(entries) == 2
    # the same tokenizer loaded again finds its entry; another package version does not
    again = load_encoder("tiny-bert", device="cpu")
    encode(again, cased, "last-avg", progress=False)
    assert sorted(cache_dir("embeddings").glob("tiny-bert-*.npy")) == entries
    monkeypatch.setattr(cache, "__version__", "0.0.0-other")
    encode(again, cased, "last-avg", progress=False)
    assert len(list(cache_dir("embeddings").glob("tiny-bert-*.npy"))) == 3


def test_encoding_with_dropout_is_seeded_noisy_per_occurrence_and_leaves_the_model_in_eval(
    tiny,
):
    sentences = (
        SENTENCES[:3] + SENTENCES[:1]
    )  # a duplicate, as in the official pair list
    state = torch.random.get_rng_state()
    a = encode_with_dropout(tiny, sentences, "first-last-avg", seed=3, progress=False)
    assert torch.equal(
        state, torch.random.get_rng_state()
    )  # the global RNG is untouched
    assert not tiny.model.training
    b = encode_with_dropout(tiny, sentences, "first-last-avg", seed=3, progress=False)
    np.testing.assert_array_equal(a, b)
    c = encode_with_dropout(tiny, sentences, "first-last-avg", seed=4, progress=False)
    assert not np.allclose(a, c)
    assert not np.allclose(a[0], a[3])  # each occurrence has its own mask
    clean = encode(tiny, sentences, "first-last-avg", cache=False, progress=False)
    assert not np.allclose(a, clean, atol=1e-4)


def test_encoding_with_dropout_is_cached_by_everything_that_decides_the_masks(
    tiny, monkeypatch
):
    """A second call with the same list, seed, batch size and rates reads the cache (the model
    is not run) and returns the same vectors; a changed seed, batch size, order or rate is a new
    entry, computed afresh."""
    import bertflow_mini.encoders.encoder as encoder_module

    sentences = SENTENCES[:3] + SENTENCES[:1]
    first = encode_with_dropout(tiny, sentences, "last-avg", seed=3, progress=False)
    fresh = encode_with_dropout(
        tiny, sentences, "last-avg", seed=3, cache=False, progress=False
    )
    np.testing.assert_array_equal(first, fresh)
    calls = []
    real_run = encoder_module._run_model
    monkeypatch.setattr(
        encoder_module,
        "_run_model",
        lambda *a, **k: calls.append(a[1]) or real_run(*a, **k),
    )
    again = encode_with_dropout(
        tiny, sentences, "first-last-avg", seed=3, progress=False
    )
    assert calls == []  # another pooling of the same draw: from the cache
    np.testing.assert_array_equal(
        again,
        encode_with_dropout(
            tiny, sentences, "first-last-avg", seed=3, cache=False, progress=False
        ),
    )
    calls.clear()
    encode_with_dropout(tiny, sentences, "last-avg", seed=4, progress=False)
    encode_with_dropout(
        tiny, sentences, "last-avg", seed=3, batch_size=2, progress=False
    )
    encode_with_dropout(tiny, sentences[::-1], "last-avg", seed=3, progress=False)
    for module in tiny.model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    at_p0 = encode_with_dropout(tiny, sentences, "last-avg", seed=3, progress=False)
    assert len(calls) == 4
    assert not np.allclose(at_p0, first, atol=1e-4)


def test_encoding_with_dropout_at_p0_is_the_plain_encoding(tiny):
    for module in tiny.model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    for pooling in ["first-last-avg", "last-avg", "cls"]:
        noisy = encode_with_dropout(tiny, SENTENCES, pooling, progress=False)
        clean = encode(tiny, SENTENCES, pooling, cache=False, progress=False)
        np.testing.assert_allclose(noisy, clean, atol=1e-5)


def test_encoding_with_dropout_refuses_what_it_cannot_do(tiny):
    with pytest.raises(ValueError, match="only mean poolings"):
        encode_with_dropout(tiny, SENTENCES, "max", progress=False)
    with pytest.raises(ValueError):
        encode_with_dropout(tiny, ["ok", float("nan")], progress=False)
