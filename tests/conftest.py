"""Shared test fixtures: the local mirror, a private embedding cache per test, a tiny BERT made
offline, and a small copy of the real STS data for fast end-to-end runs."""
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

DATA_DIR = Path(os.environ["BERTFLOW_DATA"])
TOKENIZER_DIR = Path(os.environ["BERTFLOW_MODELS"]) / "bert-base-uncased-tokenizer"
MINILM_DIR = Path(os.environ["BERTFLOW_MODELS"]) / "all-MiniLM-L6-v2"

# Property tests (hypothesis): modest and deadline-free by default, so they stay fast on a busy
# 2-core machine; no example database written into the checkout. For a longer hunt:
#   pytest tests/test_properties.py --hypothesis-profile=thorough
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover - hypothesis is a test requirement
    pass
else:
    _hypothesis_settings.register_profile("bertflow", max_examples=30, deadline=None, database=None)
    _hypothesis_settings.register_profile("thorough", max_examples=1000, deadline=None, database=None)
    _hypothesis_settings.load_profile("bertflow")

#: Tests with these markers run the chapters against the real (warm) user cache.
REAL_CACHE_MARKERS = ("notebook", "browser")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "notebook: executes the book's chapters (uses the real embedding cache)")


def need(path: Path) -> None:
    """Skip when the mirror is absent (a reader's machine); CI always has it, so there it fails."""
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must have the local mirror, but {path} is missing")
        pytest.skip(f"local mirror not found at {path}")


@pytest.fixture(autouse=True)
def _private_cache(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own empty embedding/data cache (its ``tmp_path``), never ~/.cache and never
    another test's: a test cannot pass or fail because of what an earlier test cached.

    Tests marked ``notebook`` or ``browser`` keep the real cache: they check the chapters as
    ``make test`` runs them, on the cache that ``make cache`` warmed.
    """
    if any(request.node.get_closest_marker(m) for m in REAL_CACHE_MARKERS):
        return
    monkeypatch.setenv("BERTFLOW_CACHE", str(request.getfixturevalue("tmp_path") / "cache"))


@pytest.fixture()
def one_torch_thread():
    """Tiny models run fastest on one thread, and far faster than on an oversubscribed CPU."""
    from bertflow_mini._threads import torch_threads

    with torch_threads(1):
        yield


def save_tiny_bert(out: Path, seed: int = 0, layers: int = 2) -> Path:
    """A randomly initialised BERT with bert-base-uncased's real vocabulary and config, shrunk to
    ``layers`` layers × 32 wide, saved in Hugging Face format under ``out`` — the bert-base code path, offline."""
    need(TOKENIZER_DIR)
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    config = BertConfig.from_pretrained(TOKENIZER_DIR)
    assert config.vocab_size == 30522 and config.num_hidden_layers == 12  # really bert-base's config
    config.update(dict(hidden_size=32, num_hidden_layers=layers, num_attention_heads=2, intermediate_size=64))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertModel(config).eval()
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(TOKENIZER_DIR).save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A tiny bert-base-shaped BERT (see :func:`save_tiny_bert`) in a folder named ``tiny-bert``."""
    return save_tiny_bert(tmp_path_factory.mktemp("models") / "tiny-bert")


#: Pairs per file in :func:`mini_data`: STS-B and SICK-R splits, and each subset of STS12.
MINI_PAIRS = {"stsb": 24, "sick": 24, "sts12": 8}


@pytest.fixture(scope="session")
def mini_data(tmp_path_factory) -> Path:
    """A data mirror in the real layout holding the first lines of the real STS-B, SICK and STS12
    files (:data:`MINI_PAIRS` pairs per file): real sentences and gold scores, seconds to encode."""
    need(DATA_DIR / "sts" / "STSBenchmark")
    need(DATA_DIR / "sick")
    need(DATA_DIR / "sts" / "STS12")
    root = tmp_path_factory.mktemp("mini-data")

    def head(src: Path, dst: Path, n: int) -> None:
        dst.parent.mkdir(parents=True, exist_ok=True)
        with open(src, encoding="utf-8") as f:
            dst.write_text("".join(line for _, line in zip(range(n), f)), encoding="utf-8")

    for f in sorted((DATA_DIR / "sts" / "STSBenchmark").glob("sts-*.csv")):
        head(f, root / "sts" / "STSBenchmark" / f.name, MINI_PAIRS["stsb"])
    for f in sorted((DATA_DIR / "sick").glob("SICK_*.txt")):
        head(f, root / "sick" / f.name, MINI_PAIRS["sick"] + 1)  # + the header line
    for f in sorted((DATA_DIR / "sts" / "STS12").glob("STS.*.txt")):
        head(f, root / "sts" / "STS12" / f.name, MINI_PAIRS["sts12"])
    if (DATA_DIR / "glove").is_dir():
        (root / "glove").symlink_to(DATA_DIR / "glove")  # the GloVe baseline, unchanged
    return root


def raw_pairs(root: Path, task: str, split: str) -> list[tuple[str, str, float]]:
    """(sentence 1, sentence 2, gold) read straight from a mirror's STS-B or SICK file, without the
    package's loaders: an independent view of the data for oracles."""
    if task == "STSB":
        lines = (root / "sts" / "STSBenchmark" / f"sts-{split}.csv").read_text(encoding="utf-8").splitlines()
        return [(f[5], f[6], float(f[4])) for f in (line.split("\t") for line in lines)]
    name = {"train": "SICK_train.txt", "trial": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}[split]
    lines = (root / "sick" / name).read_text(encoding="utf-8").splitlines()[1:]
    return [(f[1], f[2], float(f[3])) for f in (line.split("\t") for line in lines)]
