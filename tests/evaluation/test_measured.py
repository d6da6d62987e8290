"""The measurements shipped with the package: what the experiments wrote is what the package loads,
from the checkout and from a built wheel installed away from it. Oracle: the files parsed here
with ``json``/``csv`` alone, never through :mod:`bertflow_mini.evaluation.measured`."""

from __future__ import annotations

import csv
import fnmatch
import json
import subprocess
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

from bertflow_mini.evaluation import measured

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "bertflow_mini" / "evaluation" / "results"
SHAPES = ("bert-tiny", "bert-mini", "bert-small", "bert-medium", "bert-base")


def expected_counts() -> dict:
    """What the checkout's result files hold, read with the standard library only."""
    controls = json.loads((SHIPPED / "controls.json").read_text())["records"]
    seeds = {
        f"{shape}/{init}": sorted(
            {r["seed"] for r in controls if (r["shape"], r["init"]) == (shape, init)}
        )
        for shape in SHAPES
        for init in ("hf", "trunc")
    }
    bert_base = [r for r in controls if r["shape"] == "bert-base" and r["init"] == "hf"]
    scale = json.loads((SHIPPED / "scale.json").read_text())["records"]
    with open(SHIPPED / "earned.csv", newline="") as f:
        earned_rows = list(
            csv.DictReader(line for line in f if not line.startswith("#"))
        )
    return {
        "controls": len(controls),
        "seeds": {k: v for k, v in seeds.items() if v},
        "bert_base_tasks": sorted({r["task"] for r in bert_base}),
        "scale": len(scale),
        "scale_runs": sorted({f"{r['corpus']}/{r['steps']}" for r in scale}),
        "earned": len(earned_rows),
        "earned_models": sorted({r["model"] for r in earned_rows}),
        "pretrain_seeds": sorted(
            json.loads((SHIPPED / "pretrain-seeds.json").read_text())["seeds"]
        ),
        "dictionary_seeds": sorted(
            json.loads((SHIPPED / "pretrain-seeds-dictionary.json").read_text())[
                "seeds"
            ]
        ),
    }


#: Run where the package is installed: every shipped result through the package's own loaders.
LOADER = r"""
import json, sys
import bertflow_mini as bf
from bertflow_mini.evaluation import measured

t = bf.controls_table()
seeds = {}
for (shape, init), g in t.groupby(["shape", "init"]):
    if shape in __SHAPES__:
        seeds[f"{shape}/{init}"] = sorted(int(s) for s in set(g["seed"]))
base = t[(t["shape"] == "bert-base") & (t["init"] == "hf")]
curve = bf.scale_curve()
gaps = bf.scale_gaps(curve)
earned = bf.earned_table()
mean, sd, n = bf.control_summary("bert-base", "first-last-avg", "whitening", "Avg.")
live = bf.earned("bert-base-uncased")  # the shipped controls, not a live computation
print(json.dumps({
    "file": bf.__file__,
    "controls": len(t),
    "seeds": seeds,
    "bert_base_tasks": sorted(set(base["task"])),
    "scale": len(curve),
    "scale_runs": sorted({f"{c}/{s}" for c, s in zip(curve["corpus"], curve["steps"])}),
    "gap_runs": sorted({f"{c}/{s}" for c, s in zip(gaps["corpus"], gaps["steps"])}),
    "earned": len(earned),
    "earned_models": sorted(set(earned["model"])),
    "pretrain_seeds": sorted(bf.pretrain_seeds()["seeds"]),
    "dictionary_seeds": sorted(bf.pretrain_seeds(measured.DICTIONARY_SEEDS_FILE)["seeds"]),
    "control_avg_seeds": n,
    "live_sources": sorted(set(live["control_source"].str.split(":").str[0])),
    "harness_rows": len(bf.harness_spread()),
}))
""".replace("__SHAPES__", repr(SHAPES))


def test_the_shipped_files_load_with_their_real_counts():
    """From the checkout: the loaders see every record the experiments wrote."""
    want = expected_counts()
    assert want["seeds"]["bert-base/hf"] == [0, 1, 2] and want["seeds"][
        "bert-base/trunc"
    ] == [0, 1, 2]
    assert set(want["seeds"]) >= {f"{s}/hf" for s in SHAPES}
    assert len(want["bert_base_tasks"]) == 7
    assert len(measured.controls_table()) == want["controls"]
    assert len(measured.scale_curve()) == want["scale"]
    assert len(measured.earned_table()) == want["earned"]
    assert (
        sorted(measured.pretrain_seeds()["seeds"])
        == want["pretrain_seeds"]
        == ["0", "1", "2"]
    )


def test_every_shipped_file_is_package_data_and_nothing_reads_the_repository():
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"][
        "setuptools"
    ]["package-data"]
    globs = patterns["bertflow_mini.evaluation"]
    files = sorted(p.name for p in SHIPPED.iterdir())
    assert files, "no shipped results"
    assert all(any(fnmatch.fnmatch(f"results/{f}", g) for g in globs) for f in files), (
        files,
        globs,
    )
    for constant in (
        "CONTROLS_FILE",
        "EARNED_FILE",
        "PRETRAIN_SEEDS_FILE",
        "DICTIONARY_SEEDS_FILE",
        "SCALE_FILE",
        "COLAB_BUDGET_FILE",
    ):
        assert getattr(measured, constant).name in files, constant
    for path in (REPO / "bertflow_mini").rglob("*.py"):
        text = path.read_text()
        assert "parents[2]" not in text and "benchmarks/results" not in text, path


def test_the_colab_budget_covers_every_chapter_and_adds_up():
    """Every chapter counted; each total is the sum of its parts (encode, fits, other work,
    downloads) as the benchmark wrote them, and the goals are the issue's 5 and 30 minutes."""
    data = json.loads((SHIPPED / "colab-budget.json").read_text())
    chapters = sorted(p.name[:2] for p in (REPO / "book").glob("[0-9][0-9]-*.ipynb"))
    assert sorted(data["chapters"]) == chapters and not data["failed"]
    assert data["budget_s"] == {"gpu": 300, "cpu": 1800}
    table = measured.colab_budget()
    assert list(table.index) == chapters
    for number, c in data["chapters"].items():
        for device, column in (
            ("cpu_s", "Colab CPU (min)"),
            ("t4_s", "T4 (min)"),
            ("quick_cpu_s", "quick CPU (min)"),
        ):
            parts = c[device]
            assert parts["total"] == pytest.approx(
                sum(v for k, v in parts.items() if k != "total")
            )
            assert table.loc[number, column] == pytest.approx(parts["total"] / 60)
        assert c["gb"] == pytest.approx(sum(c["downloads"].values()))
        # the lower-bound part is a part of the quick total
        lower = table.attrs["quick_lower_bound_min"][number]
        assert lower == pytest.approx(c["quick_cpu_s"]["other"] / 60)
        assert 0 <= lower <= table.loc[number, "quick CPU (min)"]
    assert (table["T4 (min)"] < table["Colab CPU (min)"]).all()


def test_every_chapter_fits_the_cpu_goal_in_a_quick_run():
    """The quick run's cap keeps every chapter within 30 minutes on Colab's CPU, and a quick run
    never takes longer than the full one."""
    data = json.loads((SHIPPED / "colab-budget.json").read_text())
    assert data["quick"]["pairs"] >= 1
    for number, c in data["chapters"].items():
        assert c["quick_cpu_s"]["total"] <= data["budget_s"]["cpu"], number
        assert c["quick_cpu_s"]["total"] <= c["cpu_s"]["total"] + 1e-9, number


def test_the_readme_table_shows_the_shipped_budget():
    """The README's T4, Colab CPU, quick CPU and download columns are the shipped estimates, as
    rounded there (T4 to 0.1 min, CPU minutes whole, GB to 0.01), and it names the quick cap."""
    import re

    data = json.loads((SHIPPED / "colab-budget.json").read_text())
    readme = (REPO / "README.md").read_text()
    assert (
        "| chapter | open in Colab | T4 (min) | Colab CPU (min) | quick CPU (min) | "
        "download (GB) |" in readme
    )
    rows = dict(
        re.findall(r"^\| (\d) .*\| ([\d.]+ \| \d+ \| \d+ \| [\d.]+) \|$", readme, re.M)
    )
    want = {
        str(
            int(number)
        ): f"{c['t4_s']['total'] / 60:.1f} | {c['cpu_s']['total'] / 60:.0f} | "
        f"{c['quick_cpu_s']['total'] / 60:.0f} | {c['gb']:.2f}"
        for number, c in data["chapters"].items()
    }
    assert rows == want
    assert f"cut to its first {data['quick']['pairs']} pairs" in readme


def test_a_missing_file_is_named_with_its_writer(tmp_path):
    with pytest.raises(
        FileNotFoundError, match="scale.json.*experiments/scale_curve.py"
    ):
        measured.scale_curve(tmp_path / "scale.json")
    (tmp_path / "bad.json").write_text(
        json.dumps({"records": [{"score": float("inf")}]})
    )
    with pytest.raises(ValueError, match="NaN or infinite"):
        measured.controls_table(tmp_path / "bad.json")


@pytest.mark.slow
def test_the_built_wheel_ships_every_result_and_reads_them_outside_the_checkout(
    tmp_path,
):
    """Build the wheel from a copy of the package, install it into a fresh virtualenv (the project's
    dependencies reached through a .pth line, so nothing is reinstalled and the checkout's editable
    install is not), and load every result from a directory outside the checkout."""
    from colab_mirror import build_wheel, wheel_venv

    start = time.perf_counter()
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = {p.name for p in SHIPPED.iterdir()} - {
        Path(n).name for n in names if "/results/" in n
    }
    assert not missing, f"not in the wheel: {sorted(missing)}"
    assert "bertflow_mini/chapters/answers.json" in names  # the exercises' self-checks
    venv = tmp_path / "venv"
    python = wheel_venv(venv, wheel)
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONHASHSEED": "0",
        "BERTFLOW_CACHE": str(tmp_path / "cache"),
        "MPLBACKEND": "Agg",
    }
    run = subprocess.run(
        [python, "-c", LOADER],
        cwd=away,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])

    assert Path(got.pop("file")).is_relative_to(venv), (
        "imported the checkout, not the wheel"
    )
    want = expected_counts()
    assert {k: got[k] for k in want} == want
    assert got["gap_runs"] == want["scale_runs"]
    assert got["control_avg_seeds"] == len(want["seeds"]["bert-base/hf"]) == 3
    # read from the wheel, not computed live
    assert got["live_sources"] == ["ours, controls.json"]
    assert got["harness_rows"] > 0
    print(f"wheel built, installed and read in {time.perf_counter() - start:.1f} s")
