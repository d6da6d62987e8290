"""Unsupervised SimCSE: the loss against a hand computation, determinism, the cache and the names."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch
from conftest import StopTraining

from bertflow_mini._io import cache_dir
from bertflow_mini.encoders import names, simcse
from bertflow_mini.encoders.pooling import pool
from bertflow_mini.encoders.runs import NotBuiltError
from bertflow_mini.encoders.spec import parse_name

TINY = simcse.SimCSEConfig(steps=3, batch_size=4, lr=1e-3, max_length=16)


def test_loss_is_cross_entropy_of_cosines_over_temperature_by_hand():
    rng = np.random.default_rng(0)
    z1, z2 = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    u1 = z1 / np.linalg.norm(z1, axis=1, keepdims=True)
    u2 = z2 / np.linalg.norm(z2, axis=1, keepdims=True)
    logits = u1 @ u2.T / 0.05
    want = np.mean([np.log(np.exp(row).sum()) - row[i] for i, row in enumerate(logits)])
    got = simcse.simcse_loss(torch.tensor(z1), torch.tensor(z2), 0.05).item()
    assert got == pytest.approx(want, rel=1e-9)


def test_loss_limits_identical_rows_give_log_b_and_matched_orthogonal_rows_give_zero():
    same = torch.ones(8, 4)
    assert simcse.simcse_loss(same, same).item() == pytest.approx(np.log(8), rel=1e-6)
    eye = torch.eye(4, dtype=torch.float64)
    assert simcse.simcse_loss(eye, 3 * eye, temperature=0.01).item() < 1e-40 + 1e-12
    with pytest.raises(ValueError):
        simcse.simcse_loss(torch.ones(1, 4), torch.ones(1, 4))
    with pytest.raises(ValueError):
        simcse.simcse_loss(eye, eye, temperature=0.0)


def base_and_seed(name: str) -> tuple[str, int] | None:
    """What the grammar says a SimCSE name is made from; None for any other name."""
    spec = parse_name(name)
    return (spec.base, spec.seed) if spec.kind == "simcse" else None


def test_names():
    assert base_and_seed("scratch-bert+simcse") == ("scratch-bert", 0)
    assert base_and_seed("scratch-bert@0+simcse") == ("scratch-bert@0", 0)
    assert base_and_seed("scratch-bert+simcse-seed1") == ("scratch-bert", 1)
    assert base_and_seed("scratch-bert@0-seed3+simcse-seed12") == (
        "scratch-bert@0-seed3",
        12,
    )
    assert (
        base_and_seed("+simcse") is None and base_and_seed("all-MiniLM-L6-v2") is None
    )
    with pytest.raises(ValueError, match="checkpoints of scratch-bert"):
        base_and_seed("scratch-bert@0-seed3")  # scratch-bert@0 is the run's own step 0


def test_the_default_configs_cache_key_is_unchanged():
    # the key of SimCSE's default config for a fixed base fingerprint when the cache helper was
    # shared (a changed key would fine-tune every cached model again)
    assert simcse.DEFAULT.key("abc123") == "cc848db30542"
    assert simcse.config_for(2).key("abc123") == "3294724618ef"


@pytest.mark.parametrize("base", ["scratch-bert", "scratch-bert@0-seed3", "org/x"])
@pytest.mark.parametrize("seed", [0, 1, 2, 10])
def test_seed_names_round_trip(base, seed):
    name = simcse.simcse_name(base, seed)
    assert name.startswith(base + "+simcse") and name.endswith(
        str(seed) if seed else ""
    )
    assert base_and_seed(name) == (base, seed)
    assert simcse.simcse_name(*base_and_seed(name)) == name


@pytest.mark.parametrize(
    "name", ["x+simcse-seed0", "x+simcse-seed01", "x+simcse-seedx", "x+simcse-2"]
)
def test_a_malformed_seed_tail_is_an_error_naming_the_forms(name):
    with pytest.raises(ValueError, match=r"\+simcse-seed<k>") as err:
        parse_name(name)
    assert repr(name) in str(err.value)


@pytest.mark.parametrize("seed", [-1, 1.0, True, "1"])
def test_a_seed_must_be_a_non_negative_integer(seed):
    with pytest.raises(ValueError, match="seed"):
        simcse.simcse_name("x", seed)
    with pytest.raises(ValueError, match="seed"):
        simcse.config_for(seed)


def test_seed_zero_keeps_the_seedless_names_cache_folder_and_other_seeds_get_their_own():
    fingerprint = "0123456789ab"
    plain = (
        simcse.SimCSEConfig()
    )  # the config every cached seed-0 model was trained with
    assert simcse.config_for(0) == plain
    assert simcse.config_for(0).key(fingerprint) == plain.key(fingerprint)
    folder = simcse.run_dir("scratch-bert+simcse", fingerprint, simcse.config_for(0))
    assert folder.name == f"scratch-bert+simcse-{plain.key(fingerprint)}"
    assert folder == simcse.run_dir(
        "scratch-bert+simcse", fingerprint
    )  # no config: seed 0
    seeded = {
        simcse.run_dir(
            simcse.simcse_name("scratch-bert", s), fingerprint, simcse.config_for(s)
        )
        for s in (0, 1, 2)
    }
    assert len(seeded) == 3
    one = simcse.run_dir("scratch-bert+simcse-seed1", fingerprint, simcse.config_for(1))
    assert one.name.startswith("scratch-bert+simcse-seed1-")
    assert simcse.config_for(1).key(fingerprint) != plain.key(fingerprint)


def test_the_book_runs_three_seeds_on_its_model_and_control_one_elsewhere():
    book = names.BOOK_MODEL
    assert names.simcse_seeds(book) == names.simcse_seeds(names.control_of(book))
    assert len(names.simcse_seeds(book)) >= 3 and names.simcse_seeds(book)[0] == 0
    assert names.simcse_seeds("bert-base-uncased") == (0,)
    assert names.simcse_seeds(names.control_of(book, seed=3)) == (0,)


def weights_hash(model) -> str:
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().numpy().tobytes())
    return h.hexdigest()


SENTENCES = [
    f"sentence number {i} is about {w}"
    for i, w in enumerate(["cats", "dogs", "rain", "sun", "tea", "jam"] * 3)
]


def tuned(tiny_bert_dir, config: simcse.SimCSEConfig):
    from bertflow_mini.encoders.names import load_encoder

    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    losses = simcse.train_simcse(
        enc.model, enc.tokenizer, SENTENCES, config, progress=False
    )
    return enc.model, losses


def test_training_is_deterministic_and_leaves_the_callers_random_state(
    tiny_bert_dir, one_torch_thread
):
    torch.manual_seed(123)
    before = torch.get_rng_state()
    m1, l1 = tuned(tiny_bert_dir, TINY)
    assert torch.equal(torch.get_rng_state(), before)
    m2, l2 = tuned(tiny_bert_dir, TINY)
    m3, _ = tuned(tiny_bert_dir, simcse.SimCSEConfig(**{**TINY.__dict__, "seed": 1}))
    assert weights_hash(m1) == weights_hash(m2) and l1 == l2
    assert weights_hash(m1) != weights_hash(m3)
    assert len(l1) == TINY.steps and np.isfinite(l1).all() and not m1.training
    from bertflow_mini.encoders.names import load_encoder

    assert weights_hash(m1) != weights_hash(
        load_encoder(str(tiny_bert_dir), device="cpu").model
    )


def test_training_lowers_the_loss_on_a_fixed_batch(tiny_bert_dir, one_torch_thread):
    from bertflow_mini.encoders.mlm import tokenize
    from bertflow_mini.encoders.names import load_encoder

    config = simcse.SimCSEConfig(steps=30, batch_size=8, lr=1e-3, max_length=16)
    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    data = tokenize(SENTENCES[:8], enc.tokenizer, 16).batch(range(8))

    def loss_on_batch(model) -> float:
        model.train()
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            both = model(
                input_ids=torch.cat([data.ids, data.ids]),
                attention_mask=torch.cat([data.attention, data.attention]),
                output_hidden_states=True,
            ).hidden_states
            z = pool(both, torch.cat([data.attention, data.attention]), config.pooling)
        return simcse.simcse_loss(*z.chunk(2)).item()

    before = loss_on_batch(enc.model)
    simcse.train_simcse(enc.model, enc.tokenizer, SENTENCES, config, progress=False)
    assert loss_on_batch(enc.model) < before


def test_too_few_sentences_is_an_error(tiny_bert_dir):
    from bertflow_mini.encoders.names import load_encoder

    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    with pytest.raises(ValueError, match="batch_size"):
        simcse.train_simcse(enc.model, enc.tokenizer, SENTENCES[:3], TINY)


def test_name_resolves_to_a_cached_folder_keyed_by_base_and_config(
    tiny_bert_dir, mini_data, monkeypatch, one_torch_thread, capsys
):

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    monkeypatch.setattr(simcse, "DEFAULT", TINY)
    # a lookup never trains; the build step does, and says so
    with pytest.raises(NotBuiltError, match="bf.build"):
        names.resolve_model("tiny-bert+simcse")
    with pytest.raises(NotBuiltError, match="bf.build"):
        names.training_log_of("tiny-bert+simcse")
    assert not list(cache_dir("models").glob("tiny-bert+simcse*"))
    names.build("tiny-bert+simcse")
    assert "fine-tuning tiny-bert with SimCSE" in capsys.readouterr().out
    folder = names.resolve_model("tiny-bert+simcse")
    fingerprint = names.load_encoder("tiny-bert", device="cpu").fingerprint
    assert folder == str(simcse.run_dir("tiny-bert+simcse", fingerprint, TINY))
    assert not list(
        cache_dir("models").glob(".*partial")
    )  # nothing half-written left behind
    losses, info = names.training_log_of("tiny-bert+simcse")
    assert len(losses) == TINY.steps and info["base_fingerprint"] == fingerprint

    def no_training(*args, **kwargs):
        raise AssertionError("trained again although the cache holds the model")

    monkeypatch.setattr(simcse, "train_simcse", no_training)
    enc = names.load_encoder("tiny-bert+simcse", device="cpu")
    assert enc.name == "tiny-bert+simcse" and enc.fingerprint != fingerprint
    other = simcse.SimCSEConfig(**{**TINY.__dict__, "lr": 2e-3})
    run = "tiny-bert+simcse"
    assert simcse.run_dir(run, fingerprint, other) != simcse.run_dir(
        run, fingerprint, TINY
    )
    assert simcse.run_dir(run, "another-base", TINY) != simcse.run_dir(
        run, fingerprint, TINY
    )


def test_simcse_method_in_reproduce_is_the_tuned_encoder_without_post_processing(
    tiny_bert_dir, mini_data, monkeypatch, one_torch_thread
):
    from bertflow_mini.encoders.names import load_encoder
    from bertflow_mini.evaluation import reproduce as rp

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    monkeypatch.setattr(simcse, "DEFAULT", TINY)
    base = load_encoder("tiny-bert", device="cpu")
    tuned_enc = names.simcse_encoder(base)
    assert names.simcse_encoder(base) is tuned_enc  # loaded once
    evaluation = rp.Evaluation(base, progress=False)
    got = rp.evaluate_method(
        base, "STSB", "first-last-avg", "simcse", evaluation=evaluation
    )
    want = rp.evaluate_method(
        tuned_enc, "STSB", "first-last-avg", "none", progress=False
    )
    assert got.wmean == want.wmean
    white = rp.evaluate_method(
        base, "STSB", "first-last-avg", "simcse+whitening", evaluation=evaluation
    )
    assert (
        white.wmean
        == rp.evaluate_method(
            tuned_enc, "STSB", "first-last-avg", "whitening", progress=False
        ).wmean
    )
    plain = rp.evaluate_method(
        base, "STSB", "first-last-avg", "whitening", evaluation=evaluation
    )
    assert plain.wmean != white.wmean  # the base's whitening is not the tuned model's
    table = rp.reproduce(
        base,
        methods=["none", "simcse", "simcse+flow"],
        tasks=["STSB"],
        seeds=2,
        progress=False,
    )
    assert table.mean.loc["simcse", "STSB"] == got.wmean
    assert (
        table.std.loc["simcse+flow", "STSB"] > 0
    )  # the flow after SimCSE still runs every seed
    assert rp.split_method("simcse+whitening-8") == (True, "whitening-8")
    assert rp.split_method("whitening") == (False, "whitening")
    with pytest.raises(ValueError):
        names.simcse_encoder(load_encoder("glove-6B-50d"))


def test_method_geometry_uses_the_tables_fits_and_matches_gao_et_als_measurement_by_hand(
    tiny_bert_dir, mini_data, monkeypatch, one_torch_thread
):
    from bertflow_mini.data import load_sts
    from bertflow_mini.encoders.encoder import encode
    from bertflow_mini.encoders.names import load_encoder
    from bertflow_mini.evaluation import reproduce as rp
    from bertflow_mini.geometry.alignment import (
        method_geometry,
        stsb_alignment_uniformity,
    )
    from bertflow_mini.geometry.isotropy import iso_score
    from bertflow_mini.postprocess import whitening

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    monkeypatch.setattr(simcse, "DEFAULT", TINY)
    base = load_encoder("tiny-bert", device="cpu")
    fits = []
    real_fit = whitening.Whitening.fit
    monkeypatch.setattr(
        whitening.Whitening,
        "fit",
        lambda self, X: fits.append(len(X)) or real_fit(self, X),
    )
    evaluation = rp.Evaluation(base, progress=False)
    got = method_geometry(evaluation, ["none", "whitening", "simcse"])
    evaluation.score("STSB", "first-last-avg", "whitening")
    assert len(fits) == 1  # one whitening, shared by the geometry and the STS table

    every = rp.embed_task(
        base, "STSB", progress=False
    ).vectors  # the table's fitting set
    white = real_fit(whitening.Whitening(), every)
    sentences = load_sts("STSB", "test").sentences()
    for method, embed in {
        "none": lambda s: encode(base, s, progress=False),
        "whitening": lambda s: white.transform(encode(base, s, progress=False)),
        "simcse": lambda s: encode(names.simcse_encoder(base), s, progress=False),
    }.items():
        want = stsb_alignment_uniformity(embed)
        assert got.loc[method, "alignment"] == pytest.approx(
            want["alignment"], rel=1e-6
        )
        assert got.loc[method, "uniformity"] == pytest.approx(
            want["uniformity"], rel=1e-6
        )
        assert got.loc[method, "IsoScore"] == pytest.approx(
            iso_score(embed(sentences)), rel=1e-6
        )
    assert got.loc["whitening", "IsoScore"] > got.loc["none", "IsoScore"]


def weight_files(folder) -> dict[str, str]:
    from pathlib import Path

    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in Path(folder).iterdir()
        if p.suffix in (".safetensors", ".bin")
    }


def test_a_seed_name_trains_its_own_deterministic_model(
    tiny_bert_dir, mini_data, monkeypatch, one_torch_thread, tmp_path
):
    from bertflow_mini.evaluation.reproduce import Evaluation

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    monkeypatch.setattr(simcse, "DEFAULT", TINY)
    for tail in ("", "-seed1"):
        names.build(f"tiny-bert+simcse{tail}")
    zero, one = (names.resolve_model(f"tiny-bert+simcse{t}") for t in ("", "-seed1"))
    base = names.load_encoder("tiny-bert", device="cpu")
    seed1 = simcse.SimCSEConfig(**{**TINY.__dict__, "seed": 1})
    assert one == str(simcse.run_dir("tiny-bert+simcse-seed1", base.fingerprint, seed1))
    assert zero == str(simcse.run_dir("tiny-bert+simcse", base.fingerprint, TINY))
    assert weight_files(zero) != weight_files(one)
    _, info = names.training_log_of("tiny-bert+simcse-seed1")
    assert info["config"] == {**TINY.__dict__, "seed": 1}
    assert info["base_fingerprint"] == base.fingerprint

    tuned = names.simcse_encoder(base, seed=1)
    assert tuned.name == "tiny-bert+simcse-seed1" and tuned.source == one
    assert weights_hash(tuned.model) != weights_hash(names.simcse_encoder(base).model)
    evaluation = Evaluation(base, progress=False)
    assert evaluation.simcse(1).encoder is tuned and evaluation.simcse(
        1
    ) is evaluation.simcse(1)
    assert evaluation.simcse().encoder is names.simcse_encoder(base)

    # the same seed, trained again from scratch in another cache: the same weights, byte for byte
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / "second-cache"))
    again = simcse.train_and_save(
        base, "tiny-bert+simcse-seed1", simcse.config_for(1), progress=False
    )
    assert str(again) != one and weight_files(again) == weight_files(one)


def test_the_time_estimate_grows_with_the_network_outside_its_embeddings():
    from transformers import BertConfig, BertModel

    from bertflow_mini.encoders.simcse import cpu_minutes

    with torch.device("meta"):  # shapes only, no memory
        base = BertModel(BertConfig())  # bert-base: 12 x 768, 3072 wide
        small = BertModel(
            BertConfig(
                hidden_size=64,
                num_hidden_layers=1,
                num_attention_heads=2,
                intermediate_size=128,
            )
        )
    # per layer 4 x (768^2 + 768) + 2 x 768 x 3072 + 3072 + 768 + 2 x 2 x 768 = 7,087,872; pooler 590,592
    assert cpu_minutes(base) == pytest.approx(
        120 * 0.065 * (12 * 7_087_872 + 590_592) / 1e6 / 60
    )
    assert cpu_minutes(small) == pytest.approx(
        120 * 0.9 / 60
    )  # a small network: the fixed rate


def test_fine_tuning_threads_do_not_follow_the_callers_setting(
    tiny_bert_dir, mini_data, monkeypatch, one_torch_thread, training_threads
):
    # like pretraining: the thread count changes the trained bits
    record, seen = training_threads
    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    monkeypatch.setattr(simcse, "DEFAULT", TINY)
    monkeypatch.setattr(simcse, "train_simcse", record)
    with pytest.raises(StopTraining):
        names.build("tiny-bert+simcse")
    assert seen == [2] and torch.get_num_threads() == 1
