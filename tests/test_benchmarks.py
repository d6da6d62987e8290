"""Smoke tests: each script in benchmarks/ (speed) and experiments/ (the book's measurements) runs end
to end on a tiny input and prints its table. They check that the scripts still work with the
package, not how fast anything is or what the measurements are."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS, EXPERIMENTS = REPO / "benchmarks", REPO / "experiments"


def load(name: str) -> ModuleType:
    """Import ``benchmarks/<name>.py`` or ``experiments/<name>.py`` as a module (neither folder is a
    package)."""
    path = (
        BENCHMARKS / f"{name}.py"
        if name.startswith("bench_")
        else EXPERIMENTS / f"{name}.py"
    )
    spec = importlib.util.spec_from_file_location(f"script_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_script_has_a_smoke_test():
    smoke_tested = {
        name.removeprefix("test_").removesuffix("_smoke")
        for name in globals()
        if name.endswith("_smoke")
    }
    scripts = {p.stem for p in BENCHMARKS.glob("bench_*.py")} | {
        p.stem for p in EXPERIMENTS.glob("*.py")
    }
    assert scripts - {"common"} == smoke_tested


def test_the_experiments_write_where_the_package_reads():
    """Each experiment's default output is the shipped file :mod:`bertflow_mini.evaluation.measured`
    loads (the same path once the package is the checkout's), so a rerun updates what the wheel ships."""
    from bertflow_mini.evaluation import measured

    defaults = {
        ("controls", "RESULTS_FILE"): measured.CONTROLS_FILE,
        ("controls", "EARNED_OUT"): measured.EARNED_FILE,
        ("scale_curve", "RESULTS_FILE"): measured.SCALE_FILE,
        ("scratch_bert", "RESULTS_FILE"): measured.PRETRAIN_SEEDS_FILE,
    }
    shipped_folder = REPO / "bertflow_mini" / "evaluation" / "results"
    for (name, constant), shipped in defaults.items():
        # the checkout's package
        assert Path(str(shipped)).resolve().parent == shipped_folder
        assert (
            getattr(load(name), constant).resolve() == Path(str(shipped)).resolve()
        ), (name, constant)
        assert shipped.is_file(), shipped


def test_bench_encode_smoke(tiny_bert_dir, capsys):
    load("bench_encode").main(["--smoke", "--model", str(tiny_bert_dir)])
    out = capsys.readouterr().out
    assert "model tiny-bert, 16 sentences" in out
    for row in (
        "naive loop (fixed batches, no cache)",
        "encode, cold (no cache)",
        "encode, warm cache",
    ):
        assert re.search(re.escape(row) + r"\s+\d+\.\d\d\s+\d+\s+\d+\.\dx", out), row
    assert "peak resident memory" in out and "target (cold >= 1.5x naive)" in out


@pytest.mark.warm_cache  # packs the release from the cache, builds the wheel and a virtualenv
def test_bench_colab_smoke(capsys, tmp_path):
    """A set-up cell timed in the simulated Colab runtime: the book's model fetched, not trained."""
    r = load("bench_colab").main(["--smoke", "--out", str(tmp_path / "minutes.json")])
    assert set(r["chapters"]) == {"99"} and r["chapters"]["99"] > 0
    assert "chapter 99:" in capsys.readouterr().out
    assert not (tmp_path / "minutes.json").exists()


def test_bench_flow_smoke(capsys):
    pytest.importorskip("normflows")
    load("bench_flow").main(["--smoke"])
    out = capsys.readouterr().out
    assert out.startswith("data: synthetic 320 × 16")
    for row in (
        "flow fit (ours)",
        "flow fit (normflows reference)",
        "whitening fit",
        "streaming whitening fit (1000-row batches)",
        "all-but-the-top fit",
    ):
        assert row in out, row
    assert "flow: 10 steps" in out  # 320 rows / batch 32
    assert "normflows reference / ours =" in out


def test_bench_knn_smoke(capsys):
    from conftest import DATA_DIR, MINILM_DIR, need

    need(MINILM_DIR)
    need(DATA_DIR / "glove")
    load("bench_knn").main(["--smoke"])
    out = capsys.readouterr().out
    assert "frequency_table, 5000×32 random float32" in out
    assert (
        "frequency_table, all-MiniLM-L6-v2 (5000, 384)" in out
        and "frequency_table, GloVe (5000, 50)" in out
    )
    assert (
        out.count("Spearman(frequency, norm):") == 2
        and out.count("k-NN dot product, k=7") == 3
    )


#: A 1-layer, 32-wide pretraining recipe, as ``--set`` arguments (the corpus is each test's).
TINY_RECIPE = [
    arg
    for field in (
        "layers=1",
        "hidden=32",
        "heads=2",
        "intermediate=64",
        "positions=64",
        "batch_size=8",
    )
    for arg in ("--set", field)
]


def test_bench_pretrain_smoke(mini_data, monkeypatch, capsys):
    """Our loop against transformers.Trainer, 2 steps of a 1-layer, 32-wide recipe (given by --set)."""
    from conftest import TOKENIZER_DIR, need

    # the Trainer peer needs the `bench` extra (accelerate, transformers >= 5.2); `make
    # test-floors` installs only the runtime floors
    pytest.importorskip("accelerate")
    need(TOKENIZER_DIR)
    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    load("bench_pretrain").main(
        ["--speed-steps", "2", *TINY_RECIPE, "--set", "corpus=sts"]
    )
    out = capsys.readouterr().out
    assert "speed, 2 steps of batch 8" in out and "ours / Trainer =" in out
    assert re.search(r"transformers\.Trainer\s+\d+\.\d\d", out)
    with pytest.raises(SystemExit, match="no recipe field 'depth'"):
        load("bench_pretrain").main(["--set", "depth=3"])


def test_scratch_bert_smoke(mini_data, monkeypatch, capsys, tmp_path):
    """The whole experiment (BERT-likeness, the STS curve, the seed spread and the table) with a
    1-layer, 32-wide recipe (given by --set) pretrained for 4 steps on the mini mirror's STS sentences."""
    from conftest import TOKENIZER_DIR, need

    need(TOKENIZER_DIR)
    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    results = tmp_path / "seeds.json"
    load("scratch_bert").main(
        [
            "--steps",
            "4",
            "--seeds",
            "2",
            "--results",
            str(results),
            *TINY_RECIPE,
            "--set",
            "corpus=sts",
        ]
    )
    out = capsys.readouterr().out
    for title in (
        "BERT-likeness (seed 0)",
        "STS-B test, last-avg, Spearman x 100",
        "last-avg, 100% checkpoints over seeds 0, 1: mean and sd",
        "7 datasets, last-avg, target fit, wmean",
        "published, bert-base",
    ):
        assert title in out, title
    assert "word overlap" in out
    record = json.loads(results.read_text())
    assert (
        sorted(record["seeds"]) == ["0", "1"] and "--set layers=1" in record["command"]
    )
    assert record["command"].startswith("experiments/scratch_bert.py ")
    for seed in record["seeds"].values():
        assert set(seed) == {"held_out_loss", "last-avg", "first-last-avg"}
        assert set(seed["last-avg"]) == {"none", "whitening", "flow"}
    from bertflow_mini.evaluation.controls import pretrain_seed_spread

    # the package reads what it wrote
    sd, n = pretrain_seed_spread("last-avg", "whitening", "STSB", results)
    scores = [s["last-avg"]["whitening"]["STSB"] for s in record["seeds"].values()]
    assert n == 2 and sd == pytest.approx(abs(scores[0] - scores[1]) / 2**0.5)
    with pytest.raises(SystemExit, match="no recipe field 'depth'"):
        load("scratch_bert").main(["--set", "depth=3"])
    # a file against itself
    table = load("scratch_bert").compare_seed_files([str(results), str(results)])
    assert (table["second - first"] == 0).all() and set(table["beyond the spread"]) == {
        "no"
    }
    with pytest.raises(SystemExit, match="two result files"):
        load("scratch_bert").main(["--compare", str(results)])


def test_controls_smoke(mini_data, monkeypatch, capsys, tmp_path, one_torch_thread):
    """experiments/controls.py on the mini mirror: a random BERT-Tiny, 2 init seeds, then the
    baselines; every cell lands in the results file once, and a rerun computes nothing."""
    from conftest import TOKENIZER_DIR, need

    need(TOKENIZER_DIR)
    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    bench = load("controls")
    results = tmp_path / "controls.json"
    args = [
        "--shapes",
        "tiny",
        "--seeds",
        "0",
        "1",
        "--tasks",
        "STSB",
        "--methods",
        "none",
        "whitening",
        "--results",
        str(results),
    ]
    bench.main(args)
    out = capsys.readouterr().out
    records = json.loads(results.read_text())["records"]
    assert len(records) == 2 * 2 * 2  # seeds x poolings x methods
    assert {r["model"] for r in records} == {"bert-tiny@0", "bert-tiny@0-seed1"}
    assert "last-avg: Spearman x 100, mean ± sd over init seeds" in out
    bench.main(args)
    assert "('bert-tiny', 'hf', 0" in out
    # a rerun scores (and prints) no cell again
    assert "('bert-tiny'" not in capsys.readouterr().out
    bench.main(
        [
            "--baselines",
            "--shapes",
            "tiny",
            "--tasks",
            "STSB",
            "--results",
            str(results),
        ]
    )
    shapes = {r["shape"] for r in json.loads(results.read_text())["records"]}
    assert {
        "random Gaussian vectors, width 128",
        "word-embedding rows of bert-tiny@0",
        "input-embedding output (hidden_states[0]) of bert-tiny@0",
        "IDF-weighted word overlap (IDF over the dataset's sentences)",
    } <= shapes


def test_scale_curve_smoke(mini_data, monkeypatch, capsys, tmp_path, one_torch_thread):
    """experiments/scale_curve.py with a 1-layer, 32-wide recipe on the mini mirror's STS sentences: two
    run lengths of 4 and 8 steps, each scored beside its step 0, the figure drawn; a rerun scores nothing."""
    from conftest import TOKENIZER_DIR, need

    need(TOKENIZER_DIR)
    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / "cache"))
    results, figure = tmp_path / "scale.json", tmp_path / "scale.png"
    args = [
        "--corpus",
        "sts",
        "--steps",
        "4",
        "8",
        "--tasks",
        "STSB",
        "--methods",
        "none",
        "whitening",
        "--results",
        str(results),
        "--figure",
        str(figure),
        *TINY_RECIPE,
    ]
    bench = load("scale_curve")
    bench.main(args)
    out = capsys.readouterr().out
    records = json.loads(results.read_text())["records"]
    # run lengths x checkpoints x poolings x methods
    assert len(records) == 2 * 2 * 2 * 2
    assert {r["steps"] for r in records} == {4, 8} and {
        r["checkpoint"] for r in records
    } == {"pct-100", "pct-000"}
    assert {r["sequences"] for r in records} == {32, 64}
    assert "sts, 1 layers x 32: pretrained (pct-100) and its control (pct-000)" in out
    assert figure.stat().st_size > 0
    bench.main(args)
    assert "('sts', 1, 32" not in capsys.readouterr().out  # nothing scored twice
