"""Shared test fixtures: the local mirror, a private embedding cache per test, tiny BERTs made
offline (a checkpoint folder and an in-memory masked LM), and a small copy of the real STS data for
fast end-to-end runs."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pooch  # noqa: F401  (see below)
import pytest

# pooch gives its logger a StreamHandler on sys.stderr when it is first imported. Imported here,
# under pytest's session-long capture, that stream outlives every test; first imported inside a
# test using capsys, it would be that test's buffer, closed afterwards, and a later download's
# "Downloading data from ..." would print a logging error into another test's stderr.

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
    _hypothesis_settings.register_profile(
        "bertflow", max_examples=30, deadline=None, database=None
    )
    _hypothesis_settings.register_profile(
        "thorough", max_examples=1000, deadline=None, database=None
    )
    _hypothesis_settings.load_profile("bertflow")

#: Tests with these markers (declared in pyproject.toml) run the chapters against the real, warm user cache.
REAL_CACHE_MARKERS = ("notebook", "browser", "warm_cache")


def random_sts_pairs(task: str, n: int, subsets: list[str], seed: int):
    """``n`` STS pairs of ``task`` with uniform random gold scores in [0, 5] and placeholder sentences:
    for tests of scoring and resampling, which never read the sentences."""
    from bertflow_mini.data import STSPairs

    gold = np.random.default_rng(seed).uniform(0, 5, n)
    words = [f"s{i}" for i in range(2 * n)]
    return STSPairs(task, "test", words[:n], words[n:], gold, subsets)


def noisy(gold, scale: float, seed: int):
    """``gold`` plus Gaussian noise of sd ``scale``: a similarity that ranks the pairs imperfectly."""
    return gold + np.random.default_rng(seed).normal(0, scale, len(gold))


def need(path: Path) -> None:
    """Skip when the mirror is absent (a reader's machine); CI always has it, so there it fails."""
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must have the local mirror, but {path} is missing")
        pytest.skip(f"local mirror not found at {path}")


@pytest.fixture(autouse=True)
def _private_cache(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test gets its own empty embedding/data cache (its ``tmp_path``), never ~/.cache and never
    another test's: a test cannot pass or fail because of what an earlier test cached. The book's
    release is an address that refuses at once: no test reaches the network.

    Tests marked ``notebook``, ``browser`` or ``warm_cache`` keep the real cache: they check the
    chapters (or the CLI) as ``make test`` runs them, on the cache that ``make cache`` warmed.
    """
    if any(request.node.get_closest_marker(m) for m in REAL_CACHE_MARKERS):
        return
    monkeypatch.setenv(
        "BERTFLOW_CACHE", str(request.getfixturevalue("tmp_path") / "cache")
    )
    # the book's release, where a build would fetch from: refused at once (the discard port)
    monkeypatch.setenv("BERTFLOW_RELEASE", "http://127.0.0.1:9/")


class StopTraining(Exception):
    """Raised by :func:`training_threads`' stand-in for a training loop."""


@pytest.fixture()
def training_threads():
    """A stand-in for a training loop that records torch's thread count, then stops the run:
    ``(record, seen)``; patch ``record`` over the loop and read ``seen`` afterwards."""
    import torch

    seen: list[int] = []

    def record(*args, **kwargs):
        seen.append(torch.get_num_threads())
        raise StopTraining

    return record, seen


@pytest.fixture()
def one_torch_thread():
    """Tiny models run fastest on one thread, and far faster than on an oversubscribed CPU."""
    from bertflow_mini._threads import torch_threads

    with torch_threads(1):
        yield


def save_tiny_bert(
    out: Path,
    seed: int = 0,
    layers: int = 2,
    hidden: int = 32,
    heads: int = 2,
    intermediate: int = 64,
) -> Path:
    """A randomly initialised BERT with bert-base-uncased's real vocabulary, tokenizer and config, shrunk
    to ``layers`` layers × ``hidden`` wide, saved in Hugging Face format under ``out``: the bert-base
    code path, offline. ``hidden=768, heads=12, intermediate=3072`` keeps bert-base's width."""
    need(TOKENIZER_DIR)
    import torch
    from transformers import BertConfig, BertModel

    config = BertConfig.from_pretrained(TOKENIZER_DIR)
    # really bert-base's config
    assert config.vocab_size == 30522 and config.num_hidden_layers == 12
    config.update(
        dict(
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=intermediate,
        )
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertModel(config).eval()
    return save_with_bert_tokenizer(model, out)


def save_with_bert_tokenizer(model, out: Path) -> Path:
    """``model`` saved in Hugging Face format under ``out``, beside bert-base-uncased's tokenizer."""
    need(TOKENIZER_DIR)
    from transformers import AutoTokenizer

    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(TOKENIZER_DIR).save_pretrained(out)
    return out


def tiny_mlm(vocab: int = 30522, hidden: int = 16, layers: int = 1, tie: bool = True):
    """A randomly initialised ``BertForMaskedLM`` in memory: ``layers`` layers × ``hidden`` wide (2 heads,
    a 2 × ``hidden`` feed-forward, 64 positions) over ``vocab`` tokens (30522: bert-base-uncased's, so
    its tokenizer fits), in eval mode. The output bias and the head's LayerNorm bias are drawn non-zero,
    so every part of the MLM head matters. Seeded (0) without touching the global generators."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=64,
        tie_word_embeddings=tie,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = BertForMaskedLM(config).eval()
        with torch.no_grad():
            model.cls.predictions.bias.normal_()
            model.cls.predictions.transform.LayerNorm.bias.normal_()
    return model


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A tiny bert-base-shaped BERT (see :func:`save_tiny_bert`) in a folder named ``tiny-bert``."""
    return save_tiny_bert(tmp_path_factory.mktemp("models") / "tiny-bert")


#: Pairs per file in :func:`mini_data`: STS-B and SICK-R splits, and each subset of STS12–16.
MINI_PAIRS = {"stsb": 24, "sick": 24, "sts": 8}
STS_YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")


@pytest.fixture(scope="session")
def mini_data(tmp_path_factory) -> Path:
    """A data mirror in the real layout holding the first lines of the real STS-B and SICK files and
    the first scored pairs of each STS12–16 subset (:data:`MINI_PAIRS` pairs per file): real
    sentences and gold scores, seconds to encode. GloVe is the real file."""
    for folder in ["sts/STSBenchmark", "sick", *(f"sts/{year}" for year in STS_YEARS)]:
        need(DATA_DIR / folder)
    root = tmp_path_factory.mktemp("mini-data")

    def write(dst: Path, lines: list[str]) -> None:
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    def lines(
        path: Path,
    ) -> list[str]:  # split at newlines only, as the loaders read (not at U+2028 …)
        with open(path, encoding="utf-8") as f:
            return f.read().removesuffix("\n").split("\n")

    for f in sorted((DATA_DIR / "sts" / "STSBenchmark").glob("sts-*.csv")):
        write(root / "sts" / "STSBenchmark" / f.name, lines(f)[: MINI_PAIRS["stsb"]])
    for f in sorted((DATA_DIR / "sick").glob("SICK_*.txt")):
        # + the header line
        write(root / "sick" / f.name, lines(f)[: MINI_PAIRS["sick"] + 1])
    # SentEval's subsets (the folders hold more, e.g. STS12's ALL)
    from bertflow_mini.data.pairs import (
        STS_SUBSETS,
    )

    for year in STS_YEARS:
        prefix = "STS2016" if year == "STS16" else "STS"
        for subset in STS_SUBSETS[year]:
            input_file = DATA_DIR / "sts" / year / f"{prefix}.input.{subset}.txt"
            gold_file = input_file.with_name(f"{prefix}.gs.{subset}.txt")
            scored = [
                (p, g) for p, g in zip(lines(input_file), lines(gold_file)) if g.strip()
            ][: MINI_PAIRS["sts"]]
            write(root / "sts" / year / input_file.name, [p for p, _ in scored])
            write(root / "sts" / year / gold_file.name, [g for _, g in scored])
    if (DATA_DIR / "glove").is_dir():
        (root / "glove").symlink_to(DATA_DIR / "glove")  # the GloVe baseline, unchanged
    return root


def raw_pairs(root: Path, task: str, split: str) -> list[tuple[str, str, float]]:
    """(sentence 1, sentence 2, gold) read straight from a mirror's STS-B or SICK file, without the
    package's loaders: an independent view of the data for oracles."""
    if task == "STSB":
        lines = (
            (root / "sts" / "STSBenchmark" / f"sts-{split}.csv")
            .read_text(encoding="utf-8")
            .split("\n")[:-1]
        )
        return [(f[5], f[6], float(f[4])) for f in (line.split("\t") for line in lines)]
    name = {
        "train": "SICK_train.txt",
        "trial": "SICK_trial.txt",
        "test": "SICK_test_annotated.txt",
    }[split]
    lines = (root / "sick" / name).read_text(encoding="utf-8").split("\n")[1:-1]
    return [(f[1], f[2], float(f[3])) for f in (line.split("\t") for line in lines)]


def raw_sts_year(root: Path, year: str) -> dict[str, list[tuple[str, str, float]]]:
    """Per subset of ``year`` (STS12–16), the scored (sentence 1, sentence 2, gold) read straight from
    a mirror's files, without the package's loaders. Subsets in the folder's file-name order."""
    prefix = "STS2016" if year == "STS16" else "STS"
    out = {}
    for gold_file in sorted((root / "sts" / year).glob(f"{prefix}.gs.*.txt")):
        subset = gold_file.name[len(prefix) + 4 : -4]
        if subset == "ALL":  # STS12 ships the concatenation of its subsets too
            continue
        golds = gold_file.read_text(encoding="utf-8").split("\n")
        inputs = (
            gold_file.with_name(f"{prefix}.input.{subset}.txt")
            .read_text(encoding="utf-8")
            .split("\n")
        )
        out[subset] = [
            (*i.split("\t")[:2], float(g)) for i, g in zip(inputs, golds) if g.strip()
        ]
    return out


@pytest.fixture()
def _restore_global_state():
    """A chapter's set-up seeds the global generators, styles matplotlib and may set torch's
    thread count: give all of it back afterwards."""
    import random

    import matplotlib
    import numpy as np
    import torch

    py, np_state, torch_state = (
        random.getstate(),
        np.random.get_state(),
        torch.get_rng_state(),
    )
    threads = torch.get_num_threads()
    with matplotlib.rc_context():
        yield
    random.setstate(py)
    np.random.set_state(np_state)
    torch.set_rng_state(torch_state)
    torch.set_num_threads(threads)


# ----------------------------------------------------------------------------- chapters
def tags(cell: dict) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def directive_fences(markdown: str) -> list[tuple[str, str]]:
    """Each directive fence in ``markdown`` as (info, content), e.g. ``("{dropdown} Solution",
    "…")``: markdown-it's parse (the CommonMark reference), nested fences included."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.colon_fence import colon_fence_plugin

    md = MarkdownIt("commonmark").use(colon_fence_plugin)
    infos, todo = [], [markdown]
    while todo:
        for token in md.parse(todo.pop()):
            if token.type in ("fence", "colon_fence") and token.info.startswith("{"):
                infos.append((token.info.strip(), token.content))
                todo.append(token.content)
    return infos


def exercise_section(nb: dict) -> dict | None:
    """The Exercises section of a chapter: its markdown text and its code cells (None if none)."""
    text, code, inside = [], [], False
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            if re.search(r"^#+\s*Exercises", src, re.M):
                inside = True
                src = src[re.search(r"^#+\s*Exercises", src, re.M).start() :]
            if inside and re.search(r"^#+\s*References", src, re.M):
                text.append(src[: re.search(r"^#+\s*References", src, re.M).start()])
                break
            if inside:
                text.append(src)
        elif inside:
            code.append(cell)
    return {"text": "\n".join(text), "code": code} if inside else None


# ----------------------------------------------------------------------------- browser
def chromium_driver():
    """Debian's headless Chromium with no network at all (skipped where it is not installed)."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        if os.environ.get("CI"):
            pytest.fail(
                "CI must have Debian's chromium and chromium-driver (make test installs them)"
            )
        pytest.skip(
            "headless Chromium not installed (apt-get install chromium chromium-driver)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,2000",
        "--allow-file-access-from-files",
        # no network at all: any http(s) request fails, so a page that needs one shows it
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
    ):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=opts)


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for a test module."""
    drv = chromium_driver()
    yield drv
    drv.quit()
