"""A lookup reads local folders and nothing else: :func:`resolve_model` of any name, on an empty
cache with no mirror, no Hugging Face cache and no network, opens no connection (the network is
not even probed), writes no file, and either answers (a hub id needs no download to be named) or
says the model is not built yet. Building (``bf.build``) is where downloads and training happen."""

from __future__ import annotations

import socket

import pytest

from bertflow_mini.encoders.names import resolve_model
from bertflow_mini.encoders.runs import NotBuiltError

#: One name of every form of the grammar (bertflow_mini.encoders.spec), each with what an empty
#: machine answers: a hub id, or "not built" (None).
NAMES = {
    "scratch-bert": None,
    "scratch-bert@25": None,
    "scratch-bert@0": None,
    "scratch-bert+simcse": None,
    "scratch-bert@0+simcse-seed2": None,
    "bert-base-uncased": "bert-base-uncased",
    "all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2",
    "someone/some-model": "someone/some-model",
    "bert-mini": "google/bert_uncased_L-4_H-256_A-4",
    "multiberts-seed_1-step_20k": "google/multiberts-seed_1-step_20k",
    "bert-base-uncased@0": None,
    "bert-base-uncased@0-trunc-seed2": None,
    "bert-mini@0": None,
    "multiberts-seed_0-step_0k@0": None,
    "bert-base-uncased+simcse": None,
    "someone/some-model+simcse-seed1": None,
}


@pytest.fixture()
def no_network(monkeypatch, tmp_path):
    """No mirror, an empty Hugging Face cache, and every connection refused and recorded."""
    monkeypatch.delenv("BERTFLOW_MODELS", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    import huggingface_hub.constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    attempts: list[object] = []

    def refuse(*args, **kwargs):
        attempts.append(args[1] if len(args) > 1 else args)
        raise OSError("network refused by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


@pytest.mark.parametrize("name", NAMES)
def test_a_lookup_on_an_empty_machine_reads_only_local_folders(
    name, no_network, tmp_path
):
    files_before = {p for p in tmp_path.rglob("*") if p.is_file()}
    if NAMES[name] is None:
        with pytest.raises(NotBuiltError, match=r"not built yet.*bf\.build"):
            resolve_model(name)
    else:
        assert resolve_model(name) == NAMES[name]
    assert no_network == [], f"{name}: the lookup tried the network: {no_network}"
    assert {p for p in tmp_path.rglob("*") if p.is_file()} == files_before
