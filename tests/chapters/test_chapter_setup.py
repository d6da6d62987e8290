"""Each chapter's set-up cell: it says which model, data and device produced the page, and seeds every
random generator a chapter uses, so reruns print the same numbers."""

from __future__ import annotations

import random

import matplotlib
import numpy as np
import pytest
import torch

from bertflow_mini.chapters import seed_everything, setup

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


def test_setup_with_the_mirror_names_model_data_device_and_seeds(
    tiny_bert_dir, monkeypatch, capsys
):
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    monkeypatch.setenv("BERTFLOW_DATA", "/some/mirror")
    random.seed(99)  # whatever state a previous cell left
    assert setup("tiny-bert", seed=3) == "tiny-bert"
    after_setup = draws()
    seed_everything(3)
    # setup(seed=3) left every generator exactly as seed_everything(3) does
    assert after_setup == draws()
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0]
        == "model : tiny-bert  (named in the chapter) [local mirror ($BERTFLOW_MODELS)]"
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
    assert setup("bert-base-uncased") == "bert-base-uncased"
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0]
        == "model : bert-base-uncased  (named in the chapter) [Hugging Face hub (bert-base-uncased)]"
    )
    assert out[1] == "data  : the hub / official URLs (cached)"


def test_setup_default_is_scratch_bert_from_this_machines_cache(
    tiny_bert_dir, tmp_path, monkeypatch, capsys
):
    import shutil

    from bertflow_mini._io import cache_dir
    from bertflow_mini.encoders.pretrain import DEFAULT, run_dir

    (tmp_path / "mirror").mkdir()
    # a mirror without scratch-bert
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path / "mirror"))
    # the test's private cache (conftest)
    assert run_dir(DEFAULT).is_relative_to(cache_dir())
    # stands in for the pretrained one
    shutil.copytree(tiny_bert_dir, run_dir(DEFAULT) / "pct-100")
    monkeypatch.delenv("BERTFLOW_MODEL_NAME", raising=False)
    assert setup() == "scratch-bert"
    first = capsys.readouterr().out.splitlines()[0]
    # no cache path: nothing a reader can open
    assert first == (
        "model : scratch-bert  (a local mirror is configured ($BERTFLOW_MODELS): the book's own model) "
        "[built on this machine]"
    )


def test_the_default_model_is_the_env_var_then_the_book_model_offline_then_bert_base_in_colab(
    monkeypatch,
):
    from bertflow_mini.encoders import names

    monkeypatch.setenv("BERTFLOW_MODEL_NAME", "all-MiniLM-L6-v2")
    assert (
        names.default_model() == "all-MiniLM-L6-v2"
        and "BERTFLOW_MODEL_NAME" in names.why_default()
    )
    monkeypatch.delenv("BERTFLOW_MODEL_NAME")
    monkeypatch.setenv("BERTFLOW_MODELS", "/a/mirror")
    monkeypatch.setattr(names, "hub_reachable", lambda: True)
    # a mirror is configured: the project's machines, CI
    assert names.default_model() == "scratch-bert"
    monkeypatch.delenv("BERTFLOW_MODELS")
    # Colab: no mirror, the hub answers
    assert names.default_model() == "bert-base-uncased"
    monkeypatch.setattr(names, "hub_reachable", lambda: False)
    # offline without a mirror: trained here
    assert names.default_model() == "scratch-bert"


def test_a_claim_fails_the_chapter_for_the_book_model_and_is_a_visible_note_for_any_other(
    capsys,
):
    from bertflow_mini.chapters import chapter as chapter_setup
    from bertflow_mini.chapters.chapter import ClaimError, claim

    chapter_setup._STATE["model"] = "scratch-bert"
    assert claim(2 > 1, "two beats one") is True
    with pytest.raises(
        ClaimError, match="the control beats the model.*no longer holds"
    ):
        claim(False, "the control beats the model", "66.2 vs 63.8")
    chapter_setup._STATE["model"] = "bert-base-uncased"
    assert claim(False, "the control beats the model", "63.0 vs 67.1") is False
    out = capsys.readouterr().out
    assert out.startswith(
        "NOTE: the text says 'the control beats the model', written for scratch-bert; "
        "on bert-base-uncased this does not hold: 63.0 vs 67.1"
    )
    chapter_setup._STATE["model"] = "scratch-bert"


def test_gathered_claims_print_nothing_where_they_fail_and_one_summary_at_the_end(
    capsys,
):
    from bertflow_mini.chapters import chapter as chapter_setup
    from bertflow_mini.chapters.chapter import claim, claims_summary, gather_claims

    chapter_setup._STATE["model"] = "bert-base-uncased"
    chapter_setup._NOTES.clear()
    gather_claims()
    try:
        assert claim(True, "three beats two") is True
        assert claim(False, "the control beats the model", "63.0 vs 67.1") is False
        assert claim(False, "the cone is wide", "row 1\nrow 2\nrow 3") is False
        assert claim(False, "a dict as detail", {"a": 1.5, "b": "x" * 100}) is False
        # a reader re-running a cell: the same sentence once, with the latest measurement
        assert claim(False, "the control beats the model", "62.9 vs 67.1") is False
        assert capsys.readouterr().out == ""
        claims_summary(max_lines=2)
    finally:
        gather_claims(False)
        chapter_setup._STATE["model"] = "scratch-bert"
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[:9] == [
        "What differs on bert-base-uncased: 3 sentences of the text, written for "
        "scratch-bert, do not hold here.",
        "",
        "1. the control beats the model",
        "   62.9 vs 67.1",
        "",
        "2. the cone is wide",
        "   row 1",
        "   row 2",
        "   ... (1 more line)",
    ]
    # a long detail is wrapped to a notebook's width, and nothing of it is lost
    assert lines[10] == "3. a dict as detail"
    assert all(len(line) <= 99 for line in lines[11:])
    wrapped = "".join(line.strip() for line in lines[11:]).replace(" ", "")
    assert wrapped == str({"a": 1.5, "b": "x" * 100}).replace(" ", "")
    assert "three beats two" not in out
    claims_summary()  # the book's own model: every claim held, or the chapter stopped
    assert "the model the text was written for" in capsys.readouterr().out


def test_setup_starts_a_chapter_with_no_gathered_notes(monkeypatch, capsys):
    from bertflow_mini.chapters import chapter as chapter_setup

    chapter_setup._NOTES["left over from another chapter"] = ""
    monkeypatch.setenv("BERTFLOW_MODEL_NAME", "bert-base-uncased")
    monkeypatch.setattr(chapter_setup, "resolve_model", lambda name: "hub-name")
    try:
        chapter_setup.setup()
        capsys.readouterr()
        chapter_setup.claims_summary()
    finally:
        chapter_setup._STATE["model"] = "scratch-bert"
    assert capsys.readouterr().out == (
        "Every sentence the hidden checks guard holds on bert-base-uncased as well.\n"
    )


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


def shipped_budget() -> dict:
    """The shipped Colab budget, read as JSON (the oracle for the set-up's time line)."""
    import json
    from importlib.resources import files

    text = (
        files("bertflow_mini.evaluation") / "results" / "colab-budget.json"
    ).read_text()
    return json.loads(text)


@pytest.fixture
def cpu_without_cap(monkeypatch, tmp_path):
    """bert-base on a CPU with no mirror and no cap; the cap setup() may set is undone after."""
    from bertflow_mini.chapters import chapter as chapter_setup
    from bertflow_mini.data.pairs import MAX_PAIRS_ENV

    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path))
    monkeypatch.delenv("BERTFLOW_DATA", raising=False)
    # recorded first, so that the cap setup() writes is removed afterwards
    monkeypatch.setenv(MAX_PAIRS_ENV, "1")
    monkeypatch.delenv(MAX_PAIRS_ENV)
    monkeypatch.delenv("BERTFLOW_QUICK", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setattr(chapter_setup, "default_device", lambda: "cpu")
    yield chapter_setup
    chapter_setup._STATE["model"] = "scratch-bert"


@pytest.mark.parametrize("how", ["argument", "variable"])
def test_quick_mode_sets_the_cap_and_says_the_run_is_quick(
    cpu_without_cap, monkeypatch, capsys, how
):
    import os

    budget = shipped_budget()
    pairs = budget["quick"]["pairs"]
    if how == "variable":
        monkeypatch.setenv("BERTFLOW_QUICK", "1")
    cpu_without_cap.setup(
        "bert-base-uncased", quick=True if how == "argument" else None
    )
    assert os.environ["BERTFLOW_MAX_PAIRS"] == str(pairs)
    from bertflow_mini.data import max_pairs

    assert max_pairs() == pairs
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == (
        f"data  : only the first {pairs} pairs of each split ($BERTFLOW_MAX_PAIRS): a quick run, "
        "not the book's numbers"
    )
    quick = [c["quick_cpu_s"]["total"] / 60 for c in budget["chapters"].values()]
    assert lines[-2] == (
        "time  : quick run (bf.setup(quick=True)): a chapter takes about "
        f"{round(min(quick))}-{round(max(quick))} min on Colab's CPU"
    )
    assert lines[-1].startswith(
        "        with bert-base-uncased (estimated; the full run"
    )


def test_a_full_run_of_bert_base_on_a_cpu_prints_the_chapters_minutes(
    cpu_without_cap, monkeypatch, capsys
):
    budget = shipped_budget()["chapters"]["06"]
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/reader/book/06-sts-evaluation.ipynb")
    cpu_without_cap.setup("bert-base-uncased")
    time, quick = capsys.readouterr().out.splitlines()[-2:]
    assert time.startswith(
        f"time  : chapter 6 takes about {round(budget['cpu_s']['total'] / 60)} min on Colab's CPU"
    )
    assert time.endswith(f"a T4 GPU about {round(budget['t4_s']['total'] / 60)});")
    assert quick.startswith("        bf.setup(quick=True) runs the first ")
    assert quick.endswith(f"in about {round(budget['quick_cpu_s']['total'] / 60)} min")
    # the Colab edition names its chapter: the argument wins over what the front end says
    seven = shipped_budget()["chapters"]["07"]["cpu_s"]["total"] / 60
    cpu_without_cap.setup("bert-base-uncased", chapter="07")
    last = capsys.readouterr().out.splitlines()[-2]
    assert last.startswith(
        f"time  : chapter 7 takes about {round(seven)} min on Colab's CPU"
    )


def test_quick_mode_is_off_unless_asked_and_a_bad_variable_is_named(
    cpu_without_cap, monkeypatch
):
    assert not cpu_without_cap.quick_requested()
    monkeypatch.setenv("BERTFLOW_QUICK", "0")
    assert not cpu_without_cap.quick_requested() and cpu_without_cap.quick_requested(
        True
    )
    monkeypatch.setenv("BERTFLOW_QUICK", "soon")
    with pytest.raises(
        ValueError, match=r"\$BERTFLOW_QUICK must be 1/true/yes.*'soon'"
    ):
        cpu_without_cap.quick_requested()


def test_a_model_without_a_budget_prints_no_time(
    cpu_without_cap, tiny_bert_dir, monkeypatch, capsys
):
    # the book's pages: their set-up output (checked by nbval) has no time line
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    cpu_without_cap.setup("tiny-bert")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].startswith("device: cpu")
