"""The grammar of model names (encoders.spec), the cache of trained runs (encoders.runs), and the
rule that a lookup never trains: building is the explicit step (names.build, the CLI, setup)."""

from __future__ import annotations

import hashlib
import json

import pytest

from bertflow_mini.encoders import names, pretrain, simcse
from bertflow_mini.encoders.runs import (
    NotBuiltError,
    run_folder,
    run_key,
    write_run_log,
)
from bertflow_mini.encoders.spec import ModelSpec, parse_name


@pytest.mark.parametrize(
    "name, expected",
    [
        ("glove-6B-50d", ModelSpec("glove-6B-50d", "glove")),
        ("scratch-bert", ModelSpec("scratch-bert", "scratch", percent=100)),
        ("scratch-bert@25", ModelSpec("scratch-bert@25", "scratch", percent=25)),
        ("scratch-bert@0", ModelSpec("scratch-bert@0", "scratch", percent=0)),
        (
            "scratch-bert@0+simcse-seed2",
            ModelSpec("scratch-bert@0+simcse-seed2", "simcse", "scratch-bert@0", 2),
        ),
        (
            "org/x+simcse",
            ModelSpec("org/x+simcse", "simcse", "org/x", 0),
        ),
        (
            "bert-base-uncased@0-trunc-seed3",
            ModelSpec(
                "bert-base-uncased@0-trunc-seed3",
                "random",
                "bert-base-uncased",
                3,
                init="trunc",
            ),
        ),
        (
            "google/multiberts-seed_2-step_20k",
            ModelSpec(
                "google/multiberts-seed_2-step_20k", "multiberts", seed=2, step_k=20
            ),
        ),
        ("bert-mini", ModelSpec("bert-mini", "miniature")),
        ("bert-base-uncased", ModelSpec("bert-base-uncased", "hub")),
    ],
)
def test_every_form_of_name_parses_into_what_it_means(name, expected):
    assert parse_name(name) == expected


def test_only_pretraining_and_simcse_count_as_training():
    trains = {
        name: parse_name(name).trains
        for name in (
            "scratch-bert",
            "x+simcse",
            "x@0",
            "bert-mini",
            "bert-base-uncased",
            "glove-6B-50d",
        )
    }
    assert trains == {
        "scratch-bert": True,
        "x+simcse": True,
        "x@0": False,
        "bert-mini": False,
        "bert-base-uncased": False,
        "glove-6B-50d": False,
    }


def test_hub_ids_of_the_hub_kinds():
    assert parse_name("multiberts-seed_0-step_200k").hub_id == (
        "google/multiberts-seed_0-step_200k"
    )
    assert parse_name("bert-small").hub_id == "google/bert_uncased_L-4_H-512_A-8"
    assert parse_name("bert-base-uncased").hub_id is None


def test_a_run_key_is_the_sha256_of_the_sorted_json(tmp_path):
    payload = {"b": 1, "a": [2, "x"]}
    text = (
        '{"a": [2, "x"], "b": 1}'  # written out by hand: sorted keys, json's separators
    )
    assert run_key(payload) == hashlib.sha256(text.encode()).hexdigest()[:12]
    assert run_folder("m", payload, "-cuda").name == f"m-{run_key(payload)}-cuda"
    write_run_log(tmp_path, "facts.json", {"k": 1}, [{"step": 1, "loss": 0.5}])
    assert (tmp_path / "training_log.csv").read_text().splitlines() == [
        "step,loss",
        "1,0.5",
    ]
    assert json.loads((tmp_path / "facts.json").read_text()) == {"k": 1}


def no_training(*args, **kwargs):
    raise AssertionError("a lookup started training")


def test_looking_up_an_unbuilt_model_never_trains_and_says_how_to_build(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))  # a mirror without them
    monkeypatch.setattr(pretrain, "pretrain", no_training)
    monkeypatch.setattr(simcse, "train_simcse", no_training)
    for name in ("scratch-bert", "scratch-bert@25"):
        with pytest.raises(NotBuiltError, match=r"python -m bertflow_mini pretrain"):
            names.resolve_model(name)
        with pytest.raises(NotBuiltError, match=rf"bf\.build\('{name}'\)"):
            names.load_encoder(name, device="cpu")
    with pytest.raises(NotBuiltError, match="simcse --models scratch-bert\\+simcse"):
        names.resolve_model("scratch-bert+simcse")
    with pytest.raises(NotBuiltError, match="nor is its base scratch-bert"):
        names.resolve_model("scratch-bert+simcse-seed1")
    assert not list((tmp_path / "cache" / "models").glob("scratch-bert*"))


def test_build_pretrains_with_a_message_then_the_lookup_finds_it(
    tiny_bert_dir, tmp_path, monkeypatch, capsys
):
    import shutil

    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))

    def fake_pretrain(recipe, progress=True):
        shutil.copytree(tiny_bert_dir, pretrain.run_dir(recipe) / "pct-100")

    monkeypatch.setattr(pretrain, "pretrain", fake_pretrain)
    names.build("scratch-bert")
    assert "pretraining it now (about" in capsys.readouterr().out
    folder = names.resolve_model("scratch-bert")
    assert folder == str(pretrain.run_dir(pretrain.DEFAULT) / "pct-100")
    monkeypatch.setattr(pretrain, "pretrain", no_training)
    names.build("scratch-bert")  # built: nothing to do, nothing said
    assert capsys.readouterr().out == ""


def test_setup_is_the_chapters_build_step(tiny_bert_dir, tmp_path, monkeypatch, capsys):
    import shutil

    from bertflow_mini.chapters.chapter import setup

    (tmp_path / "mirror").mkdir()
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path / "mirror"))
    monkeypatch.setattr(
        pretrain,
        "pretrain",
        lambda recipe, progress=True: shutil.copytree(
            tiny_bert_dir, pretrain.run_dir(recipe) / "pct-100"
        ),
    )
    assert setup("scratch-bert").model == "scratch-bert"
    out = capsys.readouterr().out.splitlines()
    # the release first (unreachable here), then pretraining, then the set-up's lines
    assert out[0].startswith("scratch-bert: fetching the book's released weights")
    assert any(
        line.startswith("scratch-bert: not in the cache nor in the book's release")
        for line in out
    )
    assert out[-3].startswith("model : scratch-bert  (the book's model") and out[
        -3
    ].endswith("[this machine's cache]")
