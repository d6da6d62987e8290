"""Each chapter's set-up cell: it says which model, data and device produced the page, and seeds every
random generator a chapter uses, so reruns print the same numbers."""

from __future__ import annotations

import random
import warnings

import matplotlib
import numpy as np
import pytest
import torch

from bertflow_mini.chapters import Chapter, seed_everything, setup
from bertflow_mini.chapters.claims import ClaimError

# setup() styles matplotlib and seeds the global generators: every test gives both back afterwards
pytestmark = pytest.mark.usefixtures("_restore_global_state")  # tests/conftest.py


def draws() -> tuple[float, float, float]:
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def test_seed_everything_seeds_python_numpy_and_torch():
    # The oracle: each library's own generator, seeded independently.
    want = (
        random.Random(7).random(),
        float(np.random.RandomState(7).rand()),
        float(torch.rand(1, generator=torch.Generator().manual_seed(7))),
    )
    seed_everything(7)
    assert draws() == want
    seed_everything(8)
    assert all(a != b for a, b in zip(draws(), want))


NOT_THE_BOOKS = "the text describes scratch-bert's outputs; a sentence that does not hold here says so"


@pytest.fixture
def scratch_bert_cache(tiny_bert_dir, tmp_path, monkeypatch):
    """A mirror holding tiny-bert but not scratch-bert, whose pretrained checkpoint the test's
    private cache (conftest) holds, as a run on this machine leaves it (tiny-bert stands in)."""
    import shutil

    from bertflow_mini._io import cache_dir
    from bertflow_mini.chapters import chapter as chapter_setup
    from bertflow_mini.data.pairs import MAX_PAIRS_ENV
    from bertflow_mini.encoders.pretrain import DEFAULT, run_dir

    mirror = tmp_path / "mirror"
    shutil.copytree(tiny_bert_dir, mirror / "tiny-bert")
    monkeypatch.setenv("BERTFLOW_MODELS", str(mirror))
    assert run_dir(DEFAULT).is_relative_to(cache_dir())
    shutil.copytree(tiny_bert_dir, run_dir(DEFAULT) / "pct-100")
    monkeypatch.delenv("BERTFLOW_MODEL_NAME", raising=False)
    monkeypatch.delenv(MAX_PAIRS_ENV, raising=False)
    return chapter_setup


def test_setup_with_the_mirror_names_model_data_device_and_seeds(
    tiny_bert_dir, monkeypatch, capsys
):
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    monkeypatch.setenv("BERTFLOW_DATA", "/some/mirror")
    monkeypatch.delenv("BERTFLOW_MAX_PAIRS", raising=False)
    random.seed(99)  # whatever state a previous cell left
    filters = list(warnings.filters)
    assert setup("tiny-bert", seed=3) == Chapter(model="tiny-bert", seed=3)
    # the reader's warning filters are as they were
    assert warnings.filters == filters
    after_setup = draws()
    seed_everything(3)
    # setup(seed=3) left every generator exactly as seed_everything(3) does
    assert after_setup == draws()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        f"model : tiny-bert  ({NOT_THE_BOOKS}) [local mirror ($BERTFLOW_MODELS)]"
    )
    assert lines[1] == "data  : local mirror ($BERTFLOW_DATA)"
    device = "cuda" if torch.cuda.is_available() else "cpu"
    assert lines[2].startswith(
        f"device: {device}   torch {torch.__version__.split('+')[0]}"
    ) and lines[2].endswith("seed 3")
    # the book's figure style is on
    assert matplotlib.rcParams["figure.figsize"] == [
        7.0,
        4.0,
    ]


def test_setup_without_a_mirror_says_the_hub_and_the_download_urls(
    tmp_path, monkeypatch, capsys
):
    # A reader's machine or Colab: no mirror, so the paper's model from the hub and data from the web.
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))
    monkeypatch.delenv("BERTFLOW_DATA")
    assert setup("bert-base-uncased").model == "bert-base-uncased"
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"model : bert-base-uncased  ({NOT_THE_BOOKS}) [Hugging Face hub (bert-base-uncased)]"
    )
    assert out[1] == "data  : the hub / official URLs (cached)"


def test_setup_default_is_scratch_bert_from_this_machines_cache(
    scratch_bert_cache, monkeypatch, capsys
):
    from bertflow_mini._io import cache_dir

    # on a CPU too: the book's model needs no advice on the runtime
    monkeypatch.setattr(scratch_bert_cache, "default_device", lambda: "cpu")
    assert setup() == Chapter(model="scratch-bert", seed=0)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == (
        "model : scratch-bert  (the book's model: its outputs are the ones the text describes) "
        "[this machine's cache]"
    )
    # no cache path: nothing a reader can open
    assert str(cache_dir()) not in out and "/" not in lines[0]
    assert len(lines) == 3 and lines[2].startswith("device: cpu")


def test_setup_runs_the_model_the_variable_names(
    scratch_bert_cache, monkeypatch, capsys
):
    monkeypatch.setenv("BERTFLOW_MODEL_NAME", "tiny-bert")
    assert setup().model == "tiny-bert"
    assert capsys.readouterr().out.startswith(f"model : tiny-bert  ({NOT_THE_BOOKS})")
    # a name given in the chapter wins over the variable
    assert setup("scratch-bert").model == "scratch-bert"


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_bert_base_on_a_cpu_gets_a_note_to_choose_a_gpu_runtime(
    scratch_bert_cache, monkeypatch, capsys, device
):
    """bert-base's size (a tiny network stands in under its name) gets the note on a CPU; a small
    model does not."""
    import os
    import shutil

    mirror = os.environ["BERTFLOW_MODELS"]
    shutil.copytree(f"{mirror}/tiny-bert", f"{mirror}/bert-base-uncased")
    monkeypatch.setattr(scratch_bert_cache, "default_device", lambda: device)
    for name, noted in (("bert-base-uncased", device == "cpu"), ("tiny-bert", False)):
        setup(name)
        lines = capsys.readouterr().out.splitlines()
        assert lines[2].startswith(f"device: {device} ")
        if noted:
            assert len(lines) == 4 and lines[3].startswith(f"note  : {name} ")
            assert "GPU" in lines[3]
        else:
            assert len(lines) == 3, lines


def test_a_cap_on_the_pairs_is_said_to_give_other_numbers_than_the_books(
    scratch_bert_cache, monkeypatch, capsys
):
    monkeypatch.setenv("BERTFLOW_MAX_PAIRS", "100")
    setup()
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("data  : only the first 100 pairs of each split")
    assert lines[2].endswith("not the book's numbers")
    assert lines[3].startswith("device: ")


def test_a_failing_claim_stops_the_book_model_and_prints_its_note_at_once_for_another(
    scratch_bert_cache, capsys
):
    other = setup("tiny-bert")
    capsys.readouterr()
    assert other.claim(2 > 1, "two beats one") is True
    assert capsys.readouterr().out == ""
    # each note is printed where its claim fails, under the cell, not kept for later
    assert other.claim(False, "the control beats the model", "63.0 vs 67.1") is False
    first = capsys.readouterr().out
    assert first.startswith("NOTE: ") and first.count("\n") == 1
    for said in (
        "'the control beats the model'",
        "scratch-bert",
        "tiny-bert",
        "63.0 vs 67.1",
    ):
        assert said in first
    assert other.claim(False, "the cone is wide", {"mean cosine": 0.2}) is False
    second = capsys.readouterr().out
    assert "'the cone is wide'" in second and "{'mean cosine': 0.2}" in second
    # the book's model: the prose was written for it, so a false sentence stops the chapter
    book = setup()
    capsys.readouterr()
    assert book.claim(True, "two beats one") is True
    with pytest.raises(ClaimError, match="the control beats the model.*66.2 vs 63.8"):
        book.claim(False, "the control beats the model", "66.2 vs 63.8")
    assert capsys.readouterr().out == ""
    # each chapter judges by its own model, whichever was set up last: no state is shared
    assert other.claim(False, "the cone is wide") is False
    assert "on tiny-bert" in capsys.readouterr().out


def test_a_chapter_is_a_frozen_value_and_its_model_decides_by_its_short_name(capsys):
    """A page that runs no model makes its own chapter; a hub id or a folder of the book's model
    is the book's model, any other name is not."""
    import dataclasses

    book = Chapter("scratch-bert")
    assert book == Chapter(model="scratch-bert", seed=0) and book.seed == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        book.model = "bert-base-uncased"
    for name in ("scratch-bert", "some-org/scratch-bert", "/models/scratch-bert/"):
        with pytest.raises(ClaimError, match=f"for {name} it no longer holds"):
            Chapter(name).claim(False, "a sentence")
    for name in ("bert-base-uncased", "scratch-bert@0", "scratch-bert+simcse"):
        assert Chapter(name).claim(False, "a sentence") is False
    assert capsys.readouterr().out.count("NOTE: the text says 'a sentence'") == 3


def test_glue_uses_myst_nb_when_installed_and_only_displays_without_it(monkeypatch):
    import builtins
    import sys
    import types

    from bertflow_mini import chapters as chapter

    calls = []
    fake = types.ModuleType("myst_nb")
    fake.glue = lambda name, value, display=True: calls.append(
        ("myst", name, value, display)
    )
    monkeypatch.setitem(sys.modules, "myst_nb", fake)
    chapter.glue("rho", 0.5, display=False)
    assert calls == [("myst", "rho", 0.5, False)]

    real_import = builtins.__import__

    def no_myst(name, *args, **kwargs):
        if name == "myst_nb":
            raise ImportError("no myst_nb in Colab")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_myst)
    shown = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda value: shown.append(value))
    chapter.glue("rho", 0.7)  # Colab: shown, not glued
    chapter.glue("rho", 0.9, display=False)  # hidden glue: nothing at all
    assert shown == [0.7] and len(calls) == 1


def test_glue_gives_myst_nb_plain_python_numbers(monkeypatch):
    import sys
    import types

    from bertflow_mini import chapters as chapter

    got = []
    fake = types.ModuleType("myst_nb")
    fake.glue = lambda name, value, display=True: got.append(value)
    monkeypatch.setitem(sys.modules, "myst_nb", fake)
    chapter.glue("x", np.float64(0.25), display=False)
    chapter.glue("n", np.int64(3), display=False)
    # formats as {glue:text}`x:.2f`
    assert got == [0.25, 3] and [type(v) for v in got] == [
        float,
        int,
    ]


def test_rounded_prints_no_negative_zero():
    import pandas as pd

    from bertflow_mini.chapters.chapter import rounded

    frame = pd.DataFrame({"a": [-0.0004, 0.126, -0.5], "b": [-0.04, 1.25, 2.0]})
    out = rounded(frame, {"a": 2, "b": 1})
    assert out["a"].tolist() == [0.0, 0.13, -0.5]
    assert out["b"].tolist() == [
        0.0,
        1.2,
        2.0,
    ]  # 1.25 rounds half to even, as pandas does
    assert not np.signbit(out.loc[0]).any()
    assert "-0.0" not in out.to_string()
    # the plain pandas rounding keeps the sign a reader would see
    assert "-0.0" in frame.round(2).to_string()
    series = rounded(pd.Series([-1e-9, 3.14159]), 3)
    assert series.tolist() == [0.0, 3.142] and not np.signbit(series.iloc[0])
