"""What pretraining earns: published minus our control (bert-base), and ours minus ours with a paired
bootstrap (every other model). Oracles: the published numbers as transcribed, means and sds
recomputed with :mod:`statistics`, Spearman from scipy on hand-drawn resamples."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from bertflow_mini.chapters import plotting
from bertflow_mini.data import TASKS, STSPairs
from bertflow_mini.evaluation import controls as C
from bertflow_mini.evaluation import earned as E
from bertflow_mini.evaluation import measured as M
from bertflow_mini.evaluation.published import published_table
from bertflow_mini.evaluation.scale import scale_gaps, step_zero


def write_controls(path, scores: dict[tuple, float]) -> None:
    """``scores``: (pooling, method, task, seed) -> score, all for bert-base with HF's init."""
    records = [
        {
            "shape": "bert-base",
            "init": "hf",
            "seed": seed,
            "pooling": pooling,
            "method": method,
            "task": task,
            "score": s,
        }
        for (pooling, method, task, seed), s in scores.items()
    ]
    path.write_text(json.dumps({"records": records}))


@pytest.fixture()
def controls(tmp_path):
    rng = np.random.default_rng(0)
    scores = {
        (p, m, t, seed): float(rng.uniform(30, 70))
        for p in ("last-avg", "first-last-avg")
        for m in ("none", "whitening", "flow")
        for t in TASKS
        for seed in (0, 1, 2)
    }
    # seed 2 lacks one dataset: no Avg. for it
    del scores[("first-last-avg", "flow", "STS12", 2)]
    path = tmp_path / "controls.json"
    write_controls(path, scores)
    return path, scores


def test_published_minus_control_by_hand(controls):
    path, scores = controls
    table = E.earned("bert-base-uncased", controls=path)
    pub = published_table(model="bert-base-uncased")
    for _, row in table.iterrows():
        fit = "-" if row["method"] == "none" else "target"
        # SBERT's bert-base row is pooled under "all"
        p = pub[
            (pub["pooling"] == row["pooling"])
            & (pub["method"] == row["method"])
            & (pub["fit"] == fit)
            & (pub["aggregation"] == "wmean")
        ]
        assert len(p) == 1
        seeds = (
            [
                s
                for s in (0, 1, 2)
                if all((row["pooling"], row["method"], t, s) in scores for t in TASKS)
            ]
            if row["task"] == "Avg."
            else [
                s
                for s in (0, 1, 2)
                if (row["pooling"], row["method"], row["task"], s) in scores
            ]
        )
        ours = (
            [
                statistics.mean(
                    scores[(row["pooling"], row["method"], t, s)] for t in TASKS
                )
                for s in seeds
            ]
            if row["task"] == "Avg."
            else [
                scores[(row["pooling"], row["method"], row["task"], s)] for s in seeds
            ]
        )
        published = (
            statistics.mean(p.iloc[0][list(TASKS)])
            if row["task"] == "Avg."
            else p.iloc[0][row["task"]]
        )
        assert row["pretrained"] == pytest.approx(published)
        assert row["control"] == pytest.approx(statistics.mean(ours))
        assert row["control_sd"] == pytest.approx(statistics.stdev(ours))
        assert row["control_seeds"] == len(ours)
        assert row["earned"] == pytest.approx(published - statistics.mean(ours))
        assert np.isnan(row["low"]) and "their harness" in row["pretrained_source"]
    # what the papers publish for bert-base: raw at both poolings, whitening and flow at first-last only
    cells = set(zip(table["pooling"], table["method"]))
    assert cells == {
        ("last-avg", "none"),
        ("first-last-avg", "none"),
        ("first-last-avg", "whitening"),
        ("first-last-avg", "flow"),
    }
    assert len(table) == 4 * (len(TASKS) + 1)
    flow_avg = table[(table["method"] == "flow") & (table["task"] == "Avg.")].iloc[0]
    assert flow_avg["control_seeds"] == 2  # seed 2 lacks STS12


def test_a_missing_control_cell_is_nan_not_zero(tmp_path):
    path = tmp_path / "controls.json"
    write_controls(
        path, {("first-last-avg", "whitening", "STSB", s): 67.0 + s for s in (0, 1, 2)}
    )
    table = E.earned("bert-base-uncased", tasks=["STSB", "SICK-R"], controls=path)
    stsb = table[(table["task"] == "STSB") & (table["method"] == "whitening")].iloc[0]
    assert stsb["control"] == pytest.approx(68.0) and stsb[
        "control_sd"
    ] == pytest.approx(1.0)
    # Su et al. 2021, bert-base-whitening, STS-B
    assert stsb["earned"] == pytest.approx(71.34 - 68.0)
    sick = table[(table["task"] == "SICK-R") & (table["method"] == "whitening")].iloc[0]
    assert (
        np.isnan(sick["control"])
        and np.isnan(sick["earned"])
        and sick["control_seeds"] == 0
    )


def test_missing_results_file_says_where(tmp_path):
    with pytest.raises(FileNotFoundError, match="controls.json.*live=True"):
        E.earned_published(controls=tmp_path / "controls.json")


def test_without_the_file_the_control_is_computed_live(
    tmp_path, mini_data, monkeypatch, one_torch_thread
):
    """Colab: no committed file, so bert-base's control is measured now: init seeds 0, 1, 2 of the
    mirror's bert-base (here a 2-layer, 32-wide stand-in, as the fake Colab mirror serves)."""
    from conftest import save_tiny_bert

    from bertflow_mini.encoders import load_encoder
    from bertflow_mini.evaluation.reproduce import evaluate_method

    save_tiny_bert(tmp_path / "mirror" / "bert-base-uncased")
    monkeypatch.setenv("BERTFLOW_MODELS", str(tmp_path / "mirror"))
    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    table = E.earned(
        "bert-base-uncased",
        ["STSB"],
        ["last-avg"],
        ["none"],
        controls=tmp_path / "no.json",
    )
    names = [
        "bert-base-uncased@0",
        "bert-base-uncased@0-seed1",
        "bert-base-uncased@0-seed2",
    ]
    seeds = [
        evaluate_method(
            load_encoder(n), "STSB", "last-avg", "none", progress=False
        ).wmean
        for n in names
    ]
    # the mirror's shape, not bert-base's
    assert load_encoder(names[1]).model.config.hidden_size == 32
    row = table.iloc[0]
    assert (
        len(table) == 1
        and row["control_seeds"] == 3
        and "live" in row["control_source"]
    )
    assert row["control"] == pytest.approx(statistics.mean(seeds))
    assert row["control_sd"] == pytest.approx(statistics.stdev(seeds))
    # Li et al. 2020, last-avg, STS-B
    assert row["earned"] == pytest.approx(47.29 - statistics.mean(seeds))


def test_the_google_init_control_is_read_and_labelled_apart_from_hugging_faces(
    tmp_path,
):
    path = tmp_path / "controls.json"
    hf = [
        {
            "shape": "bert-base",
            "init": "hf",
            "seed": s,
            "pooling": "first-last-avg",
            "method": "whitening",
            "task": "STSB",
            "score": 67.0 + s,
        }
        for s in (0, 1, 2)
    ]
    trunc = [{**r, "init": "trunc", "score": 69.0 + 2 * r["seed"]} for r in hf]
    path.write_text(json.dumps({"records": hf + trunc}))
    kwargs = {
        "tasks": ["STSB"],
        "poolings": ["first-last-avg"],
        "methods": ["whitening"],
        "controls": path,
    }
    ours, google = (
        E.earned("bert-base-uncased", **kwargs).iloc[0],
        E.earned("bert-base-uncased", init="trunc", **kwargs).iloc[0],
    )
    assert ours["control"] == pytest.approx(68.0) and google[
        "control"
    ] == pytest.approx(71.0)
    assert google["control_sd"] == pytest.approx(2.0) and google[
        "earned"
    ] == pytest.approx(71.34 - 71.0)
    assert (
        "truncated" in google["control_source"]
        and "@0-trunc" in google["control_source"]
    )
    assert (
        google["checkpoint"] != ours["checkpoint"]
        and "Hugging Face" in ours["control_source"]
    )
    with pytest.raises(ValueError, match="init="):
        E.earned("bert-base-uncased", init="xavier", **kwargs)
    from bertflow_mini.encoders.spec import INITIALISERS

    # the tables' labels cover exactly the initialisers names builds
    assert tuple(E.INITS) == INITIALISERS


def test_a_nan_score_in_the_file_is_an_error(tmp_path):
    path = tmp_path / "controls.json"
    write_controls(path, {("last-avg", "none", "STSB", 0): float("nan")})
    with pytest.raises(ValueError, match="NaN"):
        M.controls_table(path)


def test_pretrain_seed_spread(tmp_path):
    seeds = {
        str(s): {"last-avg": {"whitening": {"STSB": v, "Avg.": v - 1}}}
        for s, v in enumerate((63.8, 65.1, 64.8))
    }
    path = tmp_path / "seeds.json"
    path.write_text(json.dumps({"seeds": seeds}))
    sd, n = C.pretrain_seed_spread("last-avg", "whitening", "STSB", path)
    assert n == 3 and sd == pytest.approx(statistics.stdev([63.8, 65.1, 64.8]))
    assert np.isnan(C.pretrain_seed_spread("last-avg", "whitening", "SICK-R", path)[0])
    # a model whose seeds were not measured gets none, not scratch-bert's
    other = C.pretrain_seed_spread(
        "last-avg", "whitening", "STSB", path, model="bert-base-uncased"
    )
    assert np.isnan(other[0]) and other[1] == 0


# -------------------------------------------------------------------------- both sides ours
class FakeEvaluation:
    """What :func:`earned_live` asks of an Evaluation, on fixed similarities."""

    def __init__(self, pairs: dict[str, STSPairs], sims: dict[str, np.ndarray]):
        self._pairs, self._sims = pairs, sims

    def pairs(self, task):
        return self._pairs[task]

    def similarities(self, task, pooling, method="none", fit="target", seed=0):
        return self._sims[task] if method == "none" else -(self._sims[task] ** 2)

    def score(self, task, pooling, method="none", fit="target", seed=0):
        from bertflow_mini.evaluation.sts import score_similarities

        return score_similarities(
            self._pairs[task], self.similarities(task, pooling, method)
        )


def fake_models(n: int = 60):
    rng = np.random.default_rng(1)
    pairs, a, b = {}, {}, {}
    for task in ("STSB", "SICK-R"):
        gold = rng.uniform(0, 5, n)
        pairs[task] = STSPairs(task, "test", ["s"] * n, ["t"] * n, gold, ["test"] * n)
        # the "pretrained" model follows the gold scores better
        a[task] = gold + rng.normal(0, 1.0, n)
        b[task] = gold + rng.normal(0, 3.0, n)
    return pairs, FakeEvaluation(pairs, a), FakeEvaluation(pairs, b), a, b


def test_ours_minus_ours_with_a_hand_bootstrap(tmp_path):
    pairs, ev_a, ev_b, a, b = fake_models()
    R = 300
    table = E.earned_live(
        "toy",
        ["STSB", "SICK-R"],
        ["last-avg"],
        ["none"],
        checkpoints=[("100%", "a")],
        control="b",
        evaluations={"a": ev_a, "b": ev_b},
        n_resamples=R,
        seed=5,
        controls=tmp_path / "none.json",
    )
    assert list(table.columns) == E.COLUMNS and list(table["task"]) == [
        "STSB",
        "SICK-R",
        "Avg.",
    ]
    by_hand = {}
    for i, task in enumerate(("STSB", "SICK-R")):
        g = pairs[task].scores
        observed = 100 * (
            spearmanr(a[task], g).statistic - spearmanr(b[task], g).statistic
        )
        # one subset: plain draws
        draws = np.random.default_rng(5 + i).integers(0, len(g), (R, len(g)))
        diffs = np.array(
            [
                100
                * (
                    spearmanr(a[task][d], g[d]).statistic
                    - spearmanr(b[task][d], g[d]).statistic
                )
                for d in draws
            ]
        )
        by_hand[task] = (observed, diffs)
        row = table[table["task"] == task].iloc[0]
        assert row["earned"] == pytest.approx(observed)
        assert row["pretrained"] - row["control"] == pytest.approx(observed)
        assert (row["low"], row["high"]) == pytest.approx(
            tuple(np.percentile(diffs, [2.5, 97.5]))
        )
    avg = table[table["task"] == "Avg."].iloc[0]
    assert avg["earned"] == pytest.approx(np.mean([v[0] for v in by_hand.values()]))
    mean_diffs = np.mean([v[1] for v in by_hand.values()], axis=0)
    assert (avg["low"], avg["high"]) == pytest.approx(
        tuple(np.percentile(mean_diffs, [2.5, 97.5]))
    )
    # sd 1 vs sd 3 noise on 60 pairs: the gain is far outside the noise
    assert avg["low"] > 0


def test_plot_earned_one_panel_per_pooling(controls):
    import matplotlib

    matplotlib.use("Agg")
    table = E.earned("bert-base-uncased", controls=controls[0])
    axes = plotting.plot_earned(table, "STSB")
    assert [ax.get_title() for ax in axes] == ["last-avg, STSB", "first-last-avg, STSB"]
    # methods published per pooling
    assert len(axes[1].containers) == 3 and len(axes[0].containers) == 1
    with pytest.raises(ValueError, match="no rows for task 'STS99'"):
        plotting.plot_earned(table, "STS99")


# ---------------------------------------------------------------------------------------- the scale curve
def _scale_file(tmp_path, scores: dict) -> Path:
    """A scale.json holding ``scores[(steps, seed, checkpoint, task)]`` for last-avg whitening."""
    records = [
        {
            "corpus": "dictionary+sts",
            "layers": 4,
            "hidden": 256,
            "steps": steps,
            "seed": seed,
            "checkpoint": checkpoint,
            "pooling": "last-avg",
            "method": "whitening",
            "task": task,
            "score": score,
            "epochs": steps / 1000,
            "wordpieces": steps * 1000,
            "held_out_loss": 6.0,
        }
        for (steps, seed, checkpoint, task), score in scores.items()
    ]
    path = tmp_path / "scale.json"
    path.write_text(json.dumps({"what": "test", "records": records}))
    return path


def test_scale_gaps_by_hand(tmp_path):
    from bertflow_mini.data import TASKS

    scores = {}
    for seed, (trained, control) in enumerate([(64.0, 66.0), (65.0, 66.5)]):
        for i, task in enumerate(TASKS):
            scores[(1500, seed, "pct-100", task)] = trained + i
            scores[(1500, seed, "pct-000", task)] = control + i
    scores[(3000, 0, "pct-100", "STSB")] = (
        67.0  # one seed, one dataset: no Avg. row for it
    )
    scores[(3000, 0, "pct-000", "STSB")] = 66.0
    scores[(3000, 0, "pct-100", "SICK-R")] = (
        70.0  # no control: dropped, not a gap against NaN
    )
    gaps = scale_gaps(M.scale_curve(_scale_file(tmp_path, scores)))
    first = gaps[gaps["steps"] == 1500].set_index("task")
    assert list(first.index) == [*TASKS, "Avg."]
    assert first.loc["STSB", "gap"] == pytest.approx(np.mean([64 - 66, 65 - 66.5]))
    assert first.loc["STSB", "gap_sd"] == pytest.approx(statistics.stdev([-2.0, -1.5]))
    assert first.loc["Avg.", "pretrained"] == pytest.approx(
        np.mean([64, 65]) + np.mean(range(7))
    )
    assert first.loc["Avg.", "seeds"] == 2
    second = gaps[gaps["steps"] == 3000]
    assert list(second["task"]) == ["STSB"] and second["gap"].item() == pytest.approx(
        1.0
    )
    assert (
        np.isnan(second["gap_sd"].item()) and second["wordpieces"].item() == 3_000_000
    )
    fig = plotting.plot_scale_curve(
        M.scale_curve(_scale_file(tmp_path, scores)),
        tasks=("STSB",),
        methods=("whitening",),
    )
    (ax,) = fig.axes
    # the pretrained line and its control
    assert ax.get_xscale() == "log" and len(ax.lines) >= 2


def test_step_zero_is_one_control_per_seed_and_rejects_runs_that_disagree(tmp_path):
    scores = {}
    for seed, control in enumerate([66.0, 67.0]):
        for i, task in enumerate(TASKS):
            scores[(1500, seed, "pct-000", task)] = control + i
            scores[(1500, seed, "pct-100", task)] = 60.0
    # a longer run of seed 0 starts from the same network
    scores[(3000, 0, "pct-000", "STSB")] = 66.0
    zero = step_zero(M.scale_curve(_scale_file(tmp_path, scores)))
    by = zero.set_index(["seed", "task"])["score"]
    # one row per seed and task, the 3000-step run's copy not counted twice
    assert len(zero) == 2 * (len(TASKS) + 1)
    assert by[(0, "STSB")] == 66.0 and by[(1, "SICK-R")] == 68.0
    # Avg.: the mean of control + 0..6
    assert by[(1, "Avg.")] == pytest.approx(67.0 + 3.0)
    scores[(3000, 0, "pct-000", "STSB")] = 65.0
    with pytest.raises(ValueError, match="disagree at step 0"):
        step_zero(M.scale_curve(_scale_file(tmp_path, scores)))


def test_plot_scale_curve_by_steps_in_the_book_colours(tmp_path):
    scores = {(1500, 0, "pct-000", "STSB"): 66.0, (1500, 0, "pct-100", "STSB"): 64.0}
    scores |= {(3000, 0, "pct-100", "STSB"): 65.0}
    curve = M.scale_curve(_scale_file(tmp_path, scores))
    fig = plotting.plot_scale_curve(
        curve, tasks=("STSB",), methods=("whitening",), x="steps"
    )
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1,500"]
    assert ax.get_xlabel() == "pretraining steps"
    # the run's line and the control's in whitening's colour
    colours = {mpl.colors.to_hex(line.get_color()) for line in ax.lines}
    assert colours == {plotting.COLORS["whitening"]}
    with pytest.raises(ValueError, match="'wordpieces' or 'steps'"):
        plotting.plot_scale_curve(curve, x="epochs")


def test_scale_curve_rejects_nan_and_names_a_missing_file(tmp_path):
    path = _scale_file(tmp_path, {(1500, 0, "pct-100", "STSB"): float("nan")})
    with pytest.raises(ValueError, match="NaN"):
        M.scale_curve(path)
    with pytest.raises(FileNotFoundError, match="experiments/scale_curve.py"):
        M.scale_curve(tmp_path / "missing.json")


def test_with_average_adds_a_mean_only_where_all_seven_datasets_are():
    from bertflow_mini.data import TASKS

    rows = [{"seed": 0, "task": t, "score": float(i)} for i, t in enumerate(TASKS)]
    # seed 1 lacks one dataset
    rows += [{"seed": 1, "task": t, "score": 10.0} for t in TASKS[:-1]]
    out = C.with_average(pd.DataFrame(rows), ["seed"])
    avg = out[out["task"] == "Avg."]
    # mean of 0..6
    assert avg["seed"].tolist() == [0] and avg["score"].item() == pytest.approx(3.0)
    assert len(out) == len(rows) + 1


def test_the_top_level_api_reads_the_shipped_measurements_and_refuses_unknown_names():
    """``bf.NAME`` (the chapters' way in) gives working objects; a name it lacks is an AttributeError."""
    import bertflow_mini as bf

    assert bf.SCALE_FILE.exists()
    assert set(bf.earned("bert-base-uncased")["task"]) >= {"STSB", "Avg."}
    with pytest.raises(AttributeError, match="No bertflow_mini attribute nothing"):
        bf.nothing  # noqa: B018
