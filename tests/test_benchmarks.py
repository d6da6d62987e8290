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


def test_bench_colab_smoke(capsys):
    """Throughput of bert-base's random-init twin and MiniLM from the mirror: no chapter run."""
    r = load("bench_colab").main(["--smoke"])
    out = capsys.readouterr().out
    assert "tokens/s per CPU second" in out and "CPU ms per row and epoch" in out
    assert re.search(r"a step on 2 rows: \d+ kernels, [\d.]+ CPU ms", out)
    assert "checkpoint load (3x96" in out and r["throughput"]["installs"]
    assert r["throughput"]["bert"]["sentences"] == 16
    # bert-base outside its embeddings, by hand: 12 layers of 7,087,872 and a 590,592 pooler
    assert r["throughput"]["bert"]["non_embedding_params"] == 12 * 7_087_872 + 590_592
    assert r["chapters"] == {}


def colab_rates() -> dict:
    """Rates for the budget's arithmetic, chosen so that every estimate is easy by hand."""
    return {
        "bert": {
            "shape": "12x768",
            "tokens_per_s": 100.0,
            "non_embedding_params": 10**6,
        },
        "minilm": {"shape": "6x384", "tokens_per_s": 1000.0, "non_embedding_params": 1},
        # 64 rows in batches of 32: 2 steps in 2 s, 1 s a step
        "flow": {"rows": 64, "batch": 32, "cpu_seconds": 2.0, "params": 1000},
        "flow_step": {"kernels_per_step": 700, "host_s_per_step": 0.004},
        "load": {"seconds": 1.5},
        "installs": ["a", "b", "c"],
    }


def colab_args(**changes):
    from types import SimpleNamespace

    defaults = dict(
        t4_efficiency=0.5,
        launch_us=10.0,
        colab_cores=1.0,
        pip_s=10.0,
        download_mb_s=50.0,
    )
    return SimpleNamespace(**{**defaults, **changes})


def test_bench_colab_prices_a_flow_step_on_a_t4_as_launches_or_flops():
    bench, rates = load("bench_colab"), colab_rates()
    # launch-bound: 700 kernels x 10 us + 4 ms on the host; its FLOPs (6 x 1,000 x 32) are nothing
    assert bench.t4_flow_step_s(rates, 32, colab_args()) == pytest.approx(0.011)
    # a flow large enough to be compute-bound: 6 x 1e9 params x 32 rows at 0.5 x 8.1 TFLOPS
    rates["flow"]["params"] = 10**9
    assert bench.t4_flow_step_s(rates, 32, colab_args()) == pytest.approx(
        6e9 * 32 / 4.05e12
    )


def test_bench_colab_estimates_a_chapter_by_hand():
    """One chapter's counted work priced by hand: tokens, flow steps, loads, installs, downloads."""
    bench = load("bench_colab")
    work = {
        "tokens": {"bert-base-uncased|3x96": 1000},
        "train_tokens": {},
        "fits": [
            # ceil(100 / 32) x 2 epochs = 8 steps at 96 wide (768 in Colab): 1 s each on the CPU
            {"n": 100, "d": 96, "epochs": 2, "s": 9.0},
            # 2 steps at another width: its own measured 0.5 s on the CPU
            {"n": 10, "d": 2, "epochs": 1, "batch": 5, "s": 0.5},
        ],
        "forward_s": 3.0,
        "fit_s": 9.5,
        "kernel_cpu_s": 20.5,  # 8 s of other work
        "loaded": ["bert-base-uncased", "bert-base-uncased"],
    }
    r = bench.estimate(work, colab_rates(), colab_args(), "00", share=0.1)
    assert r["fit_steps"] == 10 and r["loads"] == 2 and r["gb"] == 0.44
    # 10 s encoding + 8.5 s fits + 8 s other + 2 x 1.5 s loads + 3 x 10 s installs + 440 MB at 50 MB/s
    assert r["cpu_s"]["total"] == pytest.approx(10 + 8.5 + 8 + 3 + 30 + 8.8)
    # 1,000 tokens x 2 x 1e6 FLOPs at 4.05 TFLOPS; 10 steps x 11 ms
    assert r["t4_s"]["encode"] == pytest.approx(2e9 / 4.05e12)
    assert r["t4_s"]["fits"] == pytest.approx(0.11)
    assert r["t4_s"]["total"] == pytest.approx(2e9 / 4.05e12 + 0.11 + 8 + 3 + 30 + 8.8)
    # a quick run keeping a tenth of the pairs: encoding and fits a tenth, the rest whole
    assert r["quick_cpu_s"]["total"] == pytest.approx(1 + 0.85 + 8 + 3 + 30 + 8.8)


def test_bench_colab_counts_the_kernels_a_profiled_op_launches():
    from types import SimpleNamespace as Op

    bench = load("bench_colab")

    def op(name, *children):
        return Op(name=name, cpu_children=list(children))

    # a fused optimizer op: once, whatever it runs inside on the CPU
    assert (
        bench.launches(op("aten::_foreach_add_", op("aten::add_"), op("aten::add_")))
        == 1
    )
    # linear = a transpose (a view) + addmm, whose bias copy is part of it
    linear = op("aten::linear", op("aten::t"), op("aten::addmm", op("aten::copy_")))
    assert bench.launches(linear) == 1
    # a dtype cast: the copy, not the allocation
    cast = op(
        "aten::to", op("aten::_to_copy", op("aten::empty_strided"), op("aten::copy_"))
    )
    assert bench.launches(cast) == 1
    # an autograd node: the kernels it calls
    backward = op("MulBackward0", op("aten::mul"), op("aten::mul"))
    assert bench.launches(backward) == 2 and bench.launches(op("aten::view")) == 0


def test_bench_colab_quick_share_is_the_pairs_a_cap_keeps():
    bench = load("bench_colab")
    assert bench.kept_share({"big": 1000, "small": 50}, 100) == pytest.approx(
        150 / 1050
    )
    assert bench.kept_share({"big": 1000, "small": 50}, 5000) == 1.0


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
