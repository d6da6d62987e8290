"""Shared test fixtures: the local mirror, a private embedding cache, and a tiny BERT made offline."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# Point the package at the mirror beside the checkout unless the caller already chose one.
os.environ.setdefault("BERTFLOW_DATA", str(SHARED / "data"))
os.environ.setdefault("BERTFLOW_MODELS", str(SHARED / "models"))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MPLBACKEND", "Agg")

TOKENIZER_DIR = Path(os.environ["BERTFLOW_MODELS"]) / "bert-base-uncased-tokenizer"
MINILM_DIR = Path(os.environ["BERTFLOW_MODELS"]) / "all-MiniLM-L6-v2"


def need(path: Path) -> None:
    """Skip when the mirror is absent (a reader's machine); CI always has it, so there it fails."""
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must have the local mirror, but {path} is missing")
        pytest.skip(f"local mirror not found at {path}")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Each test session writes its embedding cache to a temporary folder, never to ~/.cache."""
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture()
def one_torch_thread():
    """Tiny models run fastest on one thread, and far faster than on an oversubscribed CPU."""
    from bertflow_mini._threads import torch_threads

    with torch_threads(1):
        yield


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A randomly initialised BERT with bert-base-uncased's real vocabulary and config, shrunk to 2
    layers × 32 wide, saved in Hugging Face format — the bert-base code path, offline."""
    need(TOKENIZER_DIR)
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    config = BertConfig.from_pretrained(TOKENIZER_DIR)
    assert config.vocab_size == 30522 and config.num_hidden_layers == 12  # really bert-base's config
    config.update(dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64))
    torch.manual_seed(0)
    model = BertModel(config).eval()
    out = tmp_path_factory.mktemp("models") / "tiny-bert"
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(TOKENIZER_DIR).save_pretrained(out)
    return out
