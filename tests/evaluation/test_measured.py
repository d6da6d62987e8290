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
        "COLAB_MINUTES_FILE",
    ):
        assert getattr(measured, constant).name in files, constant
    for path in (REPO / "bertflow_mini").rglob("*.py"):
        text = path.read_text()
        assert "parents[2]" not in text and "benchmarks/results" not in text, path


def test_the_colab_minutes_cover_every_chapter_and_the_readme_shows_them():
    """Every chapter timed, the README's column is the shipped minutes (whole minutes), and a
    file with a missing or negative time is refused."""
    import re

    minutes = measured.colab_minutes()
    chapters = sorted(p.name[:2] for p in (REPO / "book").glob("[0-9][0-9]-*.ipynb"))
    assert list(minutes.index) == chapters
    readme = (REPO / "README.md").read_text()
    rows = dict(re.findall(r"^\| (\d) [^|]*\| [^|]*\| (\d+) \|$", readme, re.M))
    assert rows == {str(int(n)): f"{m:.0f}" for n, m in minutes.items()}


def test_colab_minutes_refuse_a_bad_file(tmp_path):
    bad = tmp_path / "colab-minutes.json"
    bad.write_text(json.dumps({"machine": {}, "chapters": {"00": 3.0, "01": -1.0}}))
    with pytest.raises(ValueError, match="not positive"):
        measured.colab_minutes(bad)


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
    assert "bertflow_mini/__init__.pyi" in names  # bf.NAME's list, read at import
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
