"""The one map from a model name to a folder (bertflow_mini.encoders.names): random-init controls of any
model's own shape, the BERT miniatures' shapes, MultiBERTs, scratch-bert's checkpoints, and the errors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import TOKENIZER_DIR, save_tiny_bert
from safetensors.numpy import load_file

from bertflow_mini.encoders import names, pretrain
from bertflow_mini.encoders.names import (
    checkpoints_along_training,
    control_of,
    multiberts,
    parameter_count,
    resolve_model,
)
from bertflow_mini.encoders.pretrain import DEFAULT, run_dir
from bertflow_mini.encoders.random_init import config_without_weights
from bertflow_mini.encoders.runs import NotBuiltError
from bertflow_mini.encoders.spec import ModelSpec, parse_name


def built(name: str) -> str:
    """Build ``name`` (the explicit step), then look it up."""
    names.build(name)
    return resolve_model(name)


def weights_digest(folder: str | Path) -> str:
    """SHA-256 over every tensor of a checkpoint folder's safetensors, by name."""
    h = hashlib.sha256()
    for file in sorted(Path(folder).glob("*.safetensors")):
        for key, value in sorted(load_file(file).items()):
            h.update(key.encode())
            h.update(value.tobytes())
    return h.hexdigest()


def config_of(folder: str | Path) -> dict:
    return json.loads((Path(folder) / "config.json").read_text())


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A mirror holding a small bert-base-shaped model under a name of its own."""
    save_tiny_bert(
        tmp_path / "mirror" / "small-bert",
        seed=7,
        layers=3,
        hidden=48,
        heads=3,
        intermediate=96,
    )
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path / "mirror"))
    return tmp_path / "mirror"


def test_a_random_init_control_has_the_models_own_shape_fresh_weights_and_is_bit_identical_when_rebuilt(
    mirror, tmp_path, monkeypatch
):
    # a lookup builds nothing: it says how to build
    with pytest.raises(NotBuiltError, match=r"bf\.build\('small-bert@0'\)"):
        resolve_model("small-bert@0")
    assert not list((tmp_path / "cache" / "models").glob("small-bert*"))
    control = built("small-bert@0")
    ours, base = config_of(control), config_of(mirror / "small-bert")
    for key in (
        "num_hidden_layers",
        "hidden_size",
        "num_attention_heads",
        "intermediate_size",
        "vocab_size",
    ):
        assert ours[key] == base[key], key
    assert weights_digest(control) != weights_digest(
        mirror / "small-bert"
    )  # not the pretrained weights
    assert (Path(control) / "tokenizer.json").is_file() or (
        Path(control) / "vocab.txt"
    ).is_file()
    monkeypatch.setenv(
        "BERTFLOW_CACHE", str(tmp_path / "another-cache")
    )  # built again from nothing
    again = built("small-bert@0")
    assert again != control and weights_digest(again) == weights_digest(control)
    seed1 = built("small-bert@0-seed1")
    assert weights_digest(seed1) != weights_digest(control)
    assert not list(
        Path(again).parent.glob(".*partial")
    )  # built atomically: nothing half-written left


def test_the_control_of_bert_base_is_built_offline_from_its_config_alone(
    tmp_path, monkeypatch
):
    """No weights are mirrored for bert-base-uncased: its config (beside the tokenizer) is enough."""
    monkeypatch.setenv("BERTFLOW_MODELS", str(TOKENIZER_DIR.parent))
    assert not (TOKENIZER_DIR.parent / "bert-base-uncased").exists()
    calls = []
    # the 440 MB build: not here
    monkeypatch.setattr(
        names, "random_init", lambda base, seed=0, init="hf": calls.append((base, seed))
    )
    with pytest.raises(NotBuiltError, match="bert-base-uncased@0-seed2 is not built"):
        resolve_model("bert-base-uncased@0-seed2")
    names.build("bert-base-uncased@0-seed2")
    assert calls == [("bert-base-uncased", 2)]
    config, tokenizer = config_without_weights("bert-base-uncased")
    assert (
        config.num_hidden_layers,
        config.hidden_size,
        config.num_attention_heads,
    ) == (12, 768, 12)
    assert Path(tokenizer) == TOKENIZER_DIR.resolve()


@pytest.mark.parametrize(
    "name, shape",
    [
        ("bert-tiny", (2, 128, 2, 512)),
        ("bert-mini", (4, 256, 4, 1024)),
        ("bert-small", (4, 512, 8, 2048)),
        ("bert-medium", (8, 512, 8, 2048)),
    ],
)
def test_the_bert_miniatures_shapes_are_turc_et_als(name, shape, monkeypatch):
    monkeypatch.setenv("BERTFLOW_MODELS", str(TOKENIZER_DIR.parent))
    config, _ = config_without_weights(name)
    assert (
        config.num_hidden_layers,
        config.hidden_size,
        config.num_attention_heads,
        config.intermediate_size,
    ) == shape
    layers, hidden = shape[:2]
    assert (
        resolve_model(name)
        == f"google/bert_uncased_L-{layers}_H-{hidden}_A-{hidden // 64}"
    )  # the hub id


def test_googles_truncated_initialiser_draws_inside_two_sd_with_the_truncated_normals_spread(
    mirror, tmp_path, monkeypatch
):
    from scipy.stats import truncnorm

    folder = built("small-bert@0-trunc-seed1")
    std = config_of(folder)["initializer_range"]
    tensors = load_file(Path(folder) / "model.safetensors")
    weights = np.concatenate(
        [
            v.ravel()
            for k, v in tensors.items()
            if k.endswith(".weight") and "LayerNorm" not in k
        ]
    )
    assert np.abs(weights).max() <= 2 * std
    assert weights.std() == pytest.approx(
        std * truncnorm(-2, 2).std(), rel=0.01
    )  # 0.88 sd, not 1
    assert weights.mean() == pytest.approx(0, abs=1e-4)
    for key, value in tensors.items():
        if "LayerNorm" in key:
            assert (value == (1 if key.endswith(".weight") else 0)).all(), key
        elif key.endswith(".bias"):
            assert (value == 0).all(), key
    hf = load_file(Path(built("small-bert@0-seed1")) / "model.safetensors")
    assert (
        max(np.abs(v).max() for k, v in hf.items() if "LayerNorm" not in k) > 2 * std
    )  # untruncated: it can fail
    assert (
        json.loads((Path(folder) / "random_init.json").read_text())["init"] == "trunc"
    )
    assert weights_digest(built("small-bert@0-trunc-seed2")) != weights_digest(folder)
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / "another-cache"))
    assert weights_digest(built("small-bert@0-trunc-seed1")) == weights_digest(
        folder
    )  # rebuilt identically
    with pytest.raises(ValueError, match="init="):
        names.random_init("small-bert", 0, init="xavier")


def bert_parameters(
    layers: int,
    hidden: int,
    intermediate: int,
    vocab: int = 30522,
    positions: int = 512,
    types: int = 2,
) -> int:
    """BertModel's parameters counted by hand: embeddings and their LayerNorm, per layer four attention
    projections, its LayerNorm, the feed-forward pair and its LayerNorm, then the pooler."""
    embeddings = (vocab + positions + types) * hidden + 2 * hidden
    layer = (
        4 * (hidden * hidden + hidden)
        + 2 * hidden
        + 2 * hidden * intermediate
        + intermediate
        + hidden
        + 2 * hidden
    )
    return embeddings + layers * layer + hidden * hidden + hidden


def test_parameter_counts_match_the_hand_count_and_the_loaded_weights(
    mirror, monkeypatch
):
    assert (
        bert_parameters(12, 768, 3072) == 109_482_240
    )  # bert-base-uncased, as Hugging Face reports it
    monkeypatch.setenv("BERTFLOW_MODELS", str(TOKENIZER_DIR.parent))
    assert (
        parameter_count("bert-base-uncased")
        == parameter_count("bert-base-uncased@0")
        == 109_482_240
    )
    assert parameter_count("bert-mini") == bert_parameters(
        4, 256, 1024
    )  # Turc et al.'s "11.3M"
    monkeypatch.setenv("BERTFLOW_MODELS", str(mirror))
    from transformers import AutoModel

    loaded = sum(
        p.numel() for p in AutoModel.from_pretrained(mirror / "small-bert").parameters()
    )
    config = config_of(mirror / "small-bert")
    assert (
        parameter_count("small-bert@25")
        == loaded
        == bert_parameters(
            3,
            48,
            96,
            vocab=config["vocab_size"],
            positions=config["max_position_embeddings"],
        )
    )
    # scratch-bert: its folder, not a pretraining run
    monkeypatch.setattr(
        pretrain,
        "checkpoint_folder",
        lambda percent=100, recipe=None: mirror / "small-bert",
    )
    assert parameter_count("scratch-bert@0") == loaded
    with pytest.raises(ValueError, match="GloVe"):
        parameter_count("glove-6B-50d")


def test_scratch_bert_at_0_is_its_pretraining_runs_step_0_not_a_new_draw(
    monkeypatch, tmp_path
):
    monkeypatch.setenv(
        "BERTFLOW_MODELS", str(tmp_path)
    )  # a mirror without scratch-bert
    folder = run_dir(DEFAULT) / "pct-000"
    folder.mkdir(parents=True)
    built = []
    monkeypatch.setattr(names, "random_init", lambda *a, **k: built.append(a))
    assert resolve_model("scratch-bert@0") == str(folder)
    assert built == []


def test_multiberts_names_resolve_to_the_mirror_else_the_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))
    assert (
        resolve_model("multiberts-seed_0-step_200k")
        == "google/multiberts-seed_0-step_200k"
    )
    assert (
        resolve_model("google/multiberts-seed_3-step_0k")
        == "google/multiberts-seed_3-step_0k"
    )
    (tmp_path / "multiberts-seed_0-step_20k").mkdir()
    assert resolve_model("google/multiberts-seed_0-step_20k") == str(
        (tmp_path / "multiberts-seed_0-step_20k").resolve()
    )
    assert multiberts(20) == "google/multiberts-seed_0-step_20k"
    # Sellam et al. (2022): a checkpoint every 20k steps up to 200k, then every 100k up to 2M; the
    # rule, asked of every step from 0 to 2,100k (in thousands), decides what multiberts() accepts
    released = [
        k
        for k in range(2101)
        if (k < 200 and k % 20 == 0) or (200 <= k <= 2000 and k % 100 == 0)
    ]

    def accepts(step_k: int) -> bool:
        try:
            return multiberts(step_k).endswith(f"-step_{step_k}k")
        except ValueError:
            return False

    assert [k for k in range(2101) if accepts(k)] == released and len(released) == 29
    for bad in [dict(step_k=30), dict(step_k=20, seed=5)]:
        with pytest.raises(ValueError, match="seeds 0-4"):
            multiberts(**bad)


def test_sweeps_and_controls_by_model():
    assert [n for _, n in checkpoints_along_training("scratch-bert")] == [
        "scratch-bert@0",
        "scratch-bert@25",
        "scratch-bert@50",
        "scratch-bert@100",
    ]
    sweep = [n for _, n in checkpoints_along_training("bert-base-uncased")]
    assert (
        sweep[0] == "google/multiberts-seed_0-step_0k"
        and sweep[-1] == "bert-base-uncased"
    )
    assert [n for _, n in checkpoints_along_training("all-MiniLM-L6-v2")] == [
        "all-MiniLM-L6-v2@0",
        "all-MiniLM-L6-v2",
    ]
    assert control_of("bert-base-uncased") == "bert-base-uncased@0"
    assert control_of("bert-base-uncased", seed=2) == "bert-base-uncased@0-seed2"
    assert control_of("bert-mini", 0, "trunc") == "bert-mini@0-trunc"
    # the name control_of writes is the one the grammar reads
    assert parse_name(control_of("bert-mini", 3, "trunc")) == ModelSpec(
        "bert-mini@0-trunc-seed3", "random", "bert-mini", 3, init="trunc"
    )
    with pytest.raises(ValueError, match="init="):
        control_of("bert-mini", init="xavier")
    with pytest.raises(ValueError, match="GloVe"):
        control_of("glove-6B-50d")


def test_bad_names_say_what_was_given(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no such folder .*/nonexistent/path"):
        resolve_model("/nonexistent/path")
    with pytest.raises(FileNotFoundError, match="no such folder"):
        resolve_model("./not-here")
    with pytest.raises(ValueError, match="GloVe baseline"):
        resolve_model("glove-6B-50d")
    import huggingface_hub.constants

    monkeypatch.setattr(
        huggingface_hub.constants, "HF_HUB_OFFLINE", True
    )  # no retries against the network
    # a lookup only says it is not built; building it reads the hub, which is unreachable
    with pytest.raises(NotBuiltError, match="not built yet"):
        resolve_model("some-org/unmirrored@0")
    with pytest.raises(OSError) as err:
        names.build("some-org/unmirrored@0")
    assert "BERTFLOW_MODELS" in str(
        err.value
    ) and "https://huggingface.co/some-org/unmirrored" in str(err.value)


def test_the_default_model_is_the_variables_else_scratch_bert_in_colab_and_online_too(
    monkeypatch,
):
    """No probe of the hub decides it: the text describes scratch-bert's outputs, so a reader
    runs scratch-bert unless they name another model, on a laptop online and in Colab alike."""
    import socket
    import sys
    import types

    from bertflow_mini.data import downloads

    monkeypatch.setenv("BERTFLOW_MODEL_NAME", "all-MiniLM-L6-v2")
    assert names.default_model() == "all-MiniLM-L6-v2"
    monkeypatch.setenv("BERTFLOW_MODEL_NAME", "")
    assert names.default_model() == "scratch-bert"
    monkeypatch.delenv("BERTFLOW_MODEL_NAME")
    monkeypatch.delenv("BERTFLOW_MODELS", raising=False)  # no mirror either

    class Connection:
        def close(self) -> None:
            pass

    # online: every connection opens
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: Connection())
    downloads.forget_hub_probes()
    assert downloads.hub_reachable()
    assert names.default_model() == names.BOOK_MODEL == "scratch-bert"
    # Colab: google.colab importable, and the hub answers
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert downloads.in_colab() and downloads.hub_reachable()
    assert names.default_model() == "scratch-bert"
    monkeypatch.setenv("BERTFLOW_MODEL_NAME", names.PAPER_MODEL)
    assert names.default_model() == "bert-base-uncased"
    downloads.forget_hub_probes()
