"""The exercises' self-checks: right and wrong answers, within tolerance, never revealing the key.

The heart of it is one table, :data:`NEAREST`: for every check ``ch.check`` knows, the answers a
student is most likely to give instead of the right one (the number the chapter itself prints, the
other unit, the un-normalised value, another seed's or another row's value), computed by the
package calls the chapter makes. Each check must accept the right answer and refuse every one of
them, on the book's model (its stored key, the warm cache) and on a random stand-in of
bert-base's shape (its answer computed on the spot).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import bertflow_mini as bf
from bertflow_mini.chapters import exercises, solvers
from bertflow_mini.chapters.chapter import Chapter
from bertflow_mini.chapters.claims import ClaimError
from bertflow_mini.chapters.exercises import _Answer

from .test_exercises_any_model import (  # noqa: F401 (fixtures, used by name)
    SHARED,
    SOLUTIONS,
    STAND_IN,
    _embedded,
    _vocab,
    stand_in,
    stand_in_mirrors,
)

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((REPO / "book").glob("[0-9][0-9]-*.ipynb"))
BOOK = "scratch-bert"
#: A chapter run on the book's model (stored answers), and one on the paper's (computed answers).
ON_BOOK = Chapter(model=BOOK, seed=0)
ON_PAPER = Chapter(model="bert-base-uncased", seed=0)


@pytest.fixture
def key(monkeypatch):
    """A private answer key: exercise 9.1 (a number), 9.2 (an array), 9.3 (a word), 9.4 (the same
    for every model), 9.5 (computed for any model but the book's, by a solver that counts its calls),
    9.6 (a tolerance only: computed for every model, the book's too)."""
    table = {
        "9.1": {"scratch-bert": _Answer(0.8125, atol=0.01, rtol=0.0)},
        "9.2": {"scratch-bert": _Answer([1.0, 2.0, 3.0], atol=0.0, rtol=0.01)},
        "9.3": {"scratch-bert": _Answer("whitening")},
        "9.4": {"*": _Answer(2.4, atol=0.01, rtol=0.0)},
        "9.5": {"scratch-bert": _Answer([50.0, 60.0], atol=1.0, rtol=0.0)},
        "9.6": {"scratch-bert": _Answer(atol=1e-5, rtol=0.0)},
    }
    calls: list[str] = []

    def solve_9_5(model: str) -> list[float]:
        calls.append(model)
        return [70.0, 40.0 + len(calls)]

    monkeypatch.setattr(exercises, "_answer_key", lambda: table)
    monkeypatch.setattr(exercises, "_BUILDS", {})

    def solve_9_6(model: str) -> float:
        calls.append(model)
        return 0.7638 if model == "scratch-bert" else 0.5

    monkeypatch.setattr(solvers, "_SOLVERS", {"9.5": solve_9_5, "9.6": solve_9_6})
    monkeypatch.setattr(solvers, "_SLOW", {"9.5": "a long fit"})
    monkeypatch.setattr(solvers, "_SOLVED", {})
    monkeypatch.delenv("BERTFLOW_MAX_PAIRS", raising=False)
    return calls


def test_a_right_answer_within_tolerance_is_right_and_the_key_is_never_printed(
    key, capsys
):
    assert ON_BOOK.check("9.1", 0.8199) is True
    assert ON_BOOK.check("9.2", [1.005, 2.0, 2.99]) is True
    assert ON_BOOK.check("9.3", "  Whitening ") is True
    out = capsys.readouterr().out
    assert (
        "right" in out
        and "0.8125" not in out
        and "whitening" not in out.lower().replace("9.3", "")
    )


def test_a_wrong_answer_says_not_yet_without_the_key(key, capsys):
    assert ON_BOOK.check("9.1", 0.83) is False  # 0.0175 > atol 0.01
    assert ON_BOOK.check("9.2", [1.0, 2.0]) is False
    assert ON_BOOK.check("9.2", [1.0, float("nan"), 3.0]) is False
    assert ON_BOOK.check("9.3", "flow") is False
    assert ON_BOOK.check("9.1", "a word") is False
    out = capsys.readouterr().out
    assert out.count("not yet") == 5 and "0.8125" not in out
    assert "expected shape (3,), got (2,)" in out  # a shape hint gives nothing away


def test_another_model_without_a_solver_is_told_there_is_no_answer(key, capsys):
    assert ON_PAPER.check("9.1", 0.8125) is None
    assert "no answer for bert-base-uncased" in capsys.readouterr().out


def test_an_answer_stored_for_every_model_serves_every_model_and_every_run(
    key, monkeypatch
):
    for model in ("scratch-bert", "bert-base-uncased", "org/other-model"):
        chapter = Chapter(model=model, seed=0)
        assert chapter.check("9.4", 2.405) is True
        assert chapter.check("9.4", 2.5) is False
    monkeypatch.setenv("BERTFLOW_MAX_PAIRS", "10")
    assert chapter.check("9.4", 2.4) is True
    assert key == []  # nothing computed


def test_the_book_model_reads_its_stored_key_and_another_model_computes_once(
    key, capsys
):
    assert ON_BOOK.check("9.5", [50.5, 59.5]) is True  # stored, not computed
    assert key == []
    # the solver says [70, 41]; within the book model's tolerance (atol 1) is right
    assert ON_PAPER.check("9.5", [70.0, 41.9]) is True
    assert ON_PAPER.check("9.5", [70.0, 42.5]) is False
    assert ON_PAPER.check("9.5", [50.0, 60.0]) is False  # the book model's answer
    assert key == ["bert-base-uncased"]
    out = capsys.readouterr().out
    assert out.count("computing the answer on bert-base-uncased (a long fit)") == 1
    assert "41" not in out and "70" not in out


def test_a_tolerance_without_a_value_is_computed_on_the_weights_in_use_even_for_the_book(
    key, capsys
):
    # 0.3 asks for more digits than two machines' pretraining of the book's model agree on
    assert exercises._stored("9.6", BOOK) is None
    assert ON_BOOK.check("9.6", 0.763805) is True
    assert ON_BOOK.check("9.6", 0.76382) is False  # 2e-5 off: beyond atol 1e-5
    assert key == ["scratch-bert"]  # computed once
    # the hidden cell holds the solution to what the solver computes, without showing it
    assert ON_BOOK.confirm("9.6", 0.7638) is True
    with pytest.raises(ClaimError, match="9.6") as failed:
        ON_BOOK.confirm("9.6", 0.7639)
    assert "0.7638" not in str(failed.value).replace("0.7639", "")
    assert "0.7638" not in capsys.readouterr().out


def test_a_quick_run_computes_even_the_book_models_answer_and_confirm_skips_the_key(
    key, monkeypatch
):
    monkeypatch.setenv("BERTFLOW_MAX_PAIRS", "10")
    assert exercises._stored("9.5", BOOK) is None
    assert ON_BOOK.check("9.5", [70.0, 41.0]) is True
    assert key == ["scratch-bert"]
    # the stored key is of the full data: a quick run's solution may differ from it
    assert ON_BOOK.confirm("9.5", [70.0, 41.0]) is True
    # another cap, another answer
    monkeypatch.setenv("BERTFLOW_MAX_PAIRS", "20")
    assert ON_BOOK.check("9.5", [70.0, 42.0]) is True
    assert key == ["scratch-bert", "scratch-bert"]


def test_a_solution_that_computes_nan_or_inf_asks_for_the_same(key):
    answer = _Answer([-0.04, float("inf"), float("nan")], atol=0.03, rtol=0.0)
    assert answer.accepts([-0.05, np.inf, np.nan])
    assert not answer.accepts([-0.05, -np.inf, np.nan])
    assert not answer.accepts([-0.05, np.inf, 0.0])
    assert not answer.accepts([-0.1, np.inf, np.nan])
    assert not _Answer(1.0, atol=0.5).accepts(np.inf)


def test_an_exercise_without_a_solver_cannot_be_solved(key):
    with pytest.raises(KeyError, match="has no solver; those that do: 9.5"):
        solvers._solve("9.1", "bert-base-uncased")


def test_an_unknown_exercise_is_a_clear_error(key):
    with pytest.raises(KeyError, match="9.1, 9.2, 9.3, 9.4, 9.5, 9.6"):
        ON_BOOK.check("9.9", 1.0)


def test_confirm_fails_the_chapter_when_the_solution_no_longer_computes_the_key(
    key,
):
    assert ON_BOOK.confirm("9.1", 0.815) is True
    with pytest.raises(ClaimError, match="9.1") as failed:
        ON_BOOK.confirm("9.1", 0.9)
    assert "0.8125" not in str(failed.value)  # the key stays out of the message
    with pytest.raises(ClaimError, match="9.4"):
        ON_BOOK.confirm("9.4", 2.5)


def test_confirm_on_another_model_notes_a_stale_shared_key_and_computes_nothing(
    key, capsys
):
    assert (
        ON_PAPER.confirm("9.5", [0.0, 0.0]) is True
    )  # no key of its own: nothing to pin
    assert ON_PAPER.confirm("9.4", 2.5) is False
    out = capsys.readouterr().out
    assert "NOTE" in out and "2.4" not in out
    assert key == []


def test_the_shipped_key_parses_and_every_entry_names_an_exercise_and_a_model():
    raw = json.loads(
        files("bertflow_mini.chapters").joinpath("answers.json").read_text()
    )
    table = exercises._answer_key()
    assert set(table) == {k for k in raw if not k.startswith("_")}
    assert not set(table) & set(exercises._BUILDS)  # a build has no stored value
    for exercise, by_model in table.items():
        chapter_no, _, number = exercise.partition(".")
        assert chapter_no.isdigit() and number.isdigit(), exercise
        assert by_model and all(isinstance(a, _Answer) for a in by_model.values())
        # an answer for every model, or the book model's (the others' are computed)
        assert set(by_model) in ({"*"}, {"scratch-bert"}), exercise


def test_nothing_public_hands_out_a_key():
    """Only check, confirm and solution are public in exercises (the chapter's methods call the
    first two with its model; the package exports only solution); nothing in solvers is."""
    for module, public in (
        (exercises, {"check", "confirm", "solution"}),
        (solvers, set()),
    ):
        defined = {
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and getattr(value, "__module__", None) == module.__name__
        }
        assert defined == public, module.__name__
    exported = {
        n
        for n in bf.__all__
        if getattr(getattr(bf, n), "__module__", None) == exercises.__name__
    }
    assert exported == {"solution"}


# ------------------------------------------------------------------ the chapters' exercises
def _cells(path: Path) -> list[dict]:
    """The cells of a chapter's Exercises section."""
    cells = json.loads(path.read_text("utf-8"))["cells"]
    start = next(
        i
        for i, c in enumerate(cells)
        if c["cell_type"] == "markdown"
        and re.search(r"^## Exercises", "".join(c["source"]), re.M)
    )
    return cells[start:]


def _is_solution(cell: dict) -> bool:
    """A solution cell as the editions recognise one (colab_edition._code_cell): a code cell of
    the Exercises tagged ``solution``, ``hide-cell`` or ``remove-cell``."""
    tags = set(cell["metadata"].get("tags", []))
    return cell["cell_type"] == "code" and bool(
        tags & {"solution", "hide-cell", "remove-cell"}
    )


def _assigned(source: str) -> set[str]:
    tree = ast.parse(source)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _checked(source: str) -> set[str]:
    """The names the answer of each ``ch.check(...)`` call in ``source`` reads."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "check"
        ):
            for arg in node.args[1:]:
                names |= {
                    n.id
                    for n in ast.walk(arg)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                }
    return names


def _check_calls(path: Path) -> set[str]:
    """The names every self-check of the chapter reads: the ``ch.check("…", answer)`` an
    exercise's text tells the student to run, and those in its code cells."""
    names = set()
    for cell in _cells(path):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for call in re.findall(r"`(ch\.check\([^`]*\))`", source):
                names |= _checked(call)
        elif not _is_solution(cell):
            names |= _checked(source)
    return names


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_self_check_reads_a_name_a_solution_assigns(path):
    """*Run all* runs the solutions: a check that read a solution's name would pass unanswered."""
    read = _check_calls(path)
    assert read, f"{path.name}: no self-check found"
    for cell in _cells(path):
        if _is_solution(cell):
            shared = read & _assigned("".join(cell["source"]))
            assert not shared, f"{path.name}: a solution assigns {sorted(shared)}"


def test_the_check_finder_sees_a_solution_that_assigns_the_checked_name(tmp_path):
    page = tmp_path / "09-toy.ipynb"
    cells = [
        (
            "markdown",
            {},
            '## Exercises\n\n**1 (code · homework).** `ch.check("9.1", x)`',
        ),
        ("code", {"tags": ["hide-cell"]}, "x, y = 1, 2"),
        (
            "code",
            {},
            "def build(v):\n    raise NotImplementedError\n\nch.check('9.2', build)",
        ),
        ("code", {"tags": ["remove-cell"]}, "def build(v):\n    return v"),
    ]
    nb = {"cells": [{"cell_type": t, "metadata": m, "source": s} for t, m, s in cells]}
    page.write_text(json.dumps(nb))
    assert _check_calls(page) == {"x", "build"}
    with pytest.raises(AssertionError, match=r"\['x'\]"):
        test_no_self_check_reads_a_name_a_solution_assigns(page)


def test_every_check_a_chapter_names_is_one_ch_check_knows_and_every_known_one_is_named():
    named = set()
    for path in CHAPTERS:
        for cell in _cells(path):
            named |= set(
                re.findall(r"ch\.check\(\s*[\"']([^\"']+)", "".join(cell["source"]))
            )
    assert named == set(KNOWN)


# ------------------------------------------------------- right and the nearest wrong answers
def _per_network(model: str, score: Callable[[str], float]) -> list[float]:
    return [score(name) for name in (model, bf.control_of(model))]


def near_0_3(model: str, right: Any) -> dict[str, Any]:
    from bertflow_mini.chapters import puzzle
    from bertflow_mini.geometry import isotropy as iso

    V = _embedded(model, "last-avg")(bf.load_sts("STSB", "test").sentences())
    U = V / np.linalg.norm(V, axis=1, keepdims=True)
    n, total = len(U), U.sum(axis=0) @ U.sum(axis=0)
    i, j = puzzle.random_pairs(n, 5000, seed=0)
    sample = bf.cosine_scores(V[i], V[j]).mean()
    return {
        "the chapter's 5,000 random pairs": sample,
        "those, as printed": round(float(sample), 2),
        "the pairs i = j included": total / n**2,
        "divided by n² instead of n(n - 1)": (total - n) / n**2,
        "the raw rows' share (not normalised)": iso.offset_share(V),
    }


def near_1_3(model: str, right: Any) -> dict[str, Any]:
    from scipy.stats import spearmanr

    from bertflow_mini.chapters import pmi

    joint = pmi.make_joint(200, 300, rank=8, seed=0)
    counts = pmi.counts_matrix(*pmi.sample_corpus(joint, 1_000_000, seed=0), 200, 300)
    PMI, log_px = pmi.pmi_matrix(joint), pmi.log_marginal(joint, axis=0)
    biased = pmi.train_softmax_on_counts(counts, dim=16, steps=500, seed=0, bias=True)
    plain = pmi.train_softmax_on_counts(counts, dim=16, steps=500, seed=0)
    hw = biased.H @ biased.W.T

    def r2(logits: np.ndarray, frequency: np.ndarray) -> float:
        return pmi.regress_logits_on_pmi(logits, PMI, frequency)["r2"]

    corr = np.corrcoef(biased.b, log_px)[0, 1]
    return {
        "Spearman, not Pearson": [spearmanr(biased.b, log_px).statistic, right[1]],
        "h·w regressed on PMI + log p(x)": [corr, r2(hw, log_px)],
        "the logits with the bias, on PMI alone": [
            corr,
            r2(biased.logits(), 0 * log_px),
        ],
        "the unbiased model's R² on PMI alone (printed)": [
            corr,
            r2(plain.logits(), 0 * log_px),
        ],
        "the prediction, all frequency in the bias": [1.0, 1.0],
    }


def near_2_3(model: str, right: Any) -> dict[str, Any]:
    test = bf.load_sts("STSB", "test")

    def scores(name: str, white: Any, columns: slice) -> float:
        e = _embedded(name, "first-last-avg")
        a, b = white.transform(e(test.sent1)), white.transform(e(test.sent2))
        return bf.score_pairs(test, a[:, columns], b[:, columns]).all

    def fitted(name: str, sentences: list[str] | None = None) -> Any:
        e = _embedded(name, "first-last-avg")
        return bf.Whitening().fit(e.vectors if sentences is None else e(sentences))

    return {
        "the 32 leading directions (printed)": _per_network(
            model, lambda n: scores(n, fitted(n), slice(32))
        ),
        "every direction (printed)": _per_network(
            model, lambda n: scores(n, fitted(n), slice(None))
        ),
        "whitening fitted on the test sentences only": _per_network(
            model,
            lambda n: scores(n, fitted(n, test.sentences()), slice(-32, None)),
        ),
        "the model and the control swapped": right[::-1],
        "a Spearman, not × 100": np.divide(right, 100),
    }


def near_3_2(model: str, right: Any) -> dict[str, Any]:
    from bertflow_mini.geometry import frequency as fq

    _, E, vocab = _vocab(model)
    raw = fq.frequency_table(E, vocab, unknown="drop")
    distance = raw.loc["k-NN ℓ2 distance, k=5"].iloc[-1]
    return {
        "the raw embeddings' (not normalised)": distance,
        "distance ÷ norm, the chapter's crude row": distance
        / raw.loc["mean ℓ2 norm"].iloc[-1],
    }


def near_3_3(model: str, right: Any) -> dict[str, Any]:
    import functools

    import wordfreq
    from scipy.stats import spearmanr

    from bertflow_mini.chapters import synonyms as syn
    from bertflow_mini.geometry import frequency as fq

    enc, _, vocab = _vocab(model)
    words = {vocab[i] for i in fq.whole_word_vocab(vocab)}
    swaps = syn.synonym_swaps(
        bf.load_sts("STSB", "test").sentences(),
        syn.synonym_map(syn.wordnet_synsets(), words),
        functools.partial(wordfreq.word_frequency, lang="en"),
    )
    every = bf.embed_task(enc, "STSB", "first-last-avg", progress=False)
    a = every([s.sentence for s in swaps])
    b = bf.encode(enc, [s.swapped for s in swaps], "first-last-avg", progress=False)
    white = bf.Whitening().fit(every.vectors)
    gap = np.abs([s.gap for s in swaps])

    def rho(A: np.ndarray, B: np.ndarray) -> float:
        return spearmanr(gap, bf.cosine_scores(A, B)).statistic

    return {
        "raw (printed)": rho(a, b),
        "whitened (printed)": rho(white.transform(a), white.transform(b)),
        "centred on the swapped sentences' own means": rho(
            a - a.mean(0), b - b.mean(0)
        ),
    }


def near_4_1(model: str, right: Any) -> dict[str, Any]:
    d, beta0 = 64, -0.3
    return {
        "-|β0|·√d, u·h itself": -abs(beta0) * np.sqrt(d),
        "|β0|·d": abs(beta0) * d,
        "|β0|": abs(beta0),
        "β0²·d": beta0**2 * d,
    }


def near_4_2(model: str, right: Any) -> dict[str, Any]:
    import scipy.stats

    from bertflow_mini.geometry import degeneration as dg

    W_seen = np.random.default_rng(1).normal(size=(20, 2))
    H = dg.make_hidden_states(50, 2, origin_inside=False, seed=0)
    run = dg.unseen_token_dynamics(H, W_seen, steps=20_000, lr=1.0)
    t = np.unique(np.geomspace(1_000, 20_000, 60).astype(int))
    return {
        "the 1,000-20,000 fit (printed)": scipy.stats.linregress(
            np.log(t), run.norms[t]
        ).slope,
        "1/γ, the limit (printed)": 1 / np.linalg.norm(dg.min_norm_point(H)),
        "against log10 t": right * np.log(10),
    }


def near_4_3(model: str, right: Any) -> dict[str, Any]:
    from bertflow_mini.geometry import degeneration as dg
    from bertflow_mini.geometry import isotropy as iso

    def toy(seed: int, every: bool = False) -> list[float]:
        out = []
        for reg in (0.0, 1.0):
            run = dg.train_zipf_softmax(
                vocab_size=1000,
                dim=16,
                n_contexts=200,
                steps=400,
                seed=seed,
                cosine_reg=reg,
            )
            W = run.W if every else run.W[run.counts == 0]
            out.append(iso.mean_random_cosine(W, n_pairs=None))
        return out

    return {
        "seed 1 (printed)": toy(1),
        "seed 2 (printed)": toy(2),
        "over every token (printed)": toy(0, every=True),
        "plain and regularised swapped": right[::-1],
    }


def _bits(flow: Any, X: np.ndarray) -> float:
    from bertflow_mini.postprocess.flow import log_likelihood

    return float(-log_likelihood(flow, X).mean() / (X.shape[1] * np.log(2)))


def _pair_sentences() -> list[str]:
    return [
        s
        for split in ("train", "dev", "test")
        for pairs in [bf.load_sts("STSB", split)]
        for s in pairs.sent1 + pairs.sent2
    ]


def near_5_2(model: str, right: Any) -> dict[str, Any]:
    pairs = _pair_sentences()
    G, X = (
        _embedded("glove-6B-50d", "last-avg")(pairs),
        _embedded(model, "last-avg")(pairs),
    )
    variants = (dict(coupling="affine", permutation="lu"), dict(epochs=3))

    def fit(vectors: np.ndarray, **kw: Any) -> Any:
        return bf.FlowTransform(batch_size=64, progress=False, **kw).fit(vectors).flow

    default = _bits(fit(G), G)
    return {
        "section 4's fit, both (printed)": [default, default],
        "on MODEL's vectors (the solution's table)": [
            _bits(fit(X, **kw), X) for kw in variants
        ],
        "nats, not bits": np.multiply(right, np.log(2)),
        "the two changes swapped": right[::-1],
    }


def near_5_3(model: str, right: Any) -> dict[str, Any]:
    d = bf.load_encoder(model).dim
    return {
        "nats, not bits": np.multiply(right, np.log(2)),
        "training minus held-out": np.negative(right),
        "bits per sentence, not per dimension": np.multiply(right, d),
    }


def near_5_4(model: str, right: Any) -> dict[str, Any]:
    emb, test = _embedded(model, "last-avg"), bf.load_sts("STSB", "test")
    a, b = emb(test.sent1), emb(test.sent2)

    def score(sentences: list[str], **kw: Any) -> float:
        ft = bf.FlowTransform(progress=False, **kw).fit(emb(sentences))
        return bf.score_pairs(test, ft.transform(a), ft.transform(b)).all

    return {
        "section 4's fit (printed)": score(_pair_sentences(), batch_size=64),
        "section 7's fit on every split's distinct sentences (printed)": score(
            bf.task_sentences("STSB")
        ),
        "flow seed 1": score(bf.task_sentences("STSB", ["train"]), seed=1),
        "a Spearman, not × 100": right / 100,
    }


def near_6_1(model: str, right: Any) -> dict[str, Any]:
    gold, cos = np.arange(1, 7), np.array([0.7, 0.8, 0.9, 0.1, 0.2, 0.3])
    return {
        "the sign dropped": -right,
        "wmean": 1.0,
        "Pearson, not Spearman": np.corrcoef(gold, cos)[0, 1],
        "× 100": 100 * right,
    }


def near_6_2(model: str, right: Any) -> dict[str, Any]:
    ours = bf.Evaluation(bf.load_encoder(model), progress=False)
    emb, test = _embedded(model, "last-avg"), bf.load_sts("STSB", "test")
    X, a, b = emb(_pair_sentences()), emb(test.sent1), emb(test.sent2)
    chapter_5 = []
    for seed in range(3):
        ft = bf.FlowTransform(batch_size=64, seed=seed, progress=False).fit(X)
        chapter_5.append(bf.score_pairs(test, ft.transform(a), ft.transform(b)).all)
    return {
        "the sd of the mean of five (÷ √5)": right / np.sqrt(5),
        "the variance": right**2,
        "chapter 5's flow-seed sd (printed)": np.std(chapter_5, ddof=1),
        "the main table's flow minus whitening": (
            ours.score("STSB", "first-last-avg", "flow", "target").wmean
            - ours.score("STSB", "first-last-avg", "whitening", "target").wmean
        ),
    }


def near_6_3(model: str, right: Any) -> dict[str, Any]:
    encoder = bf.load_encoder(model)
    ours = bf.Evaluation(encoder, progress=False)
    ks = [k for k in (16, 32, 64, 128, 256) if k < encoder.dim]

    def changes(fit: str) -> list[list[float]]:
        def score(task: str, method: str) -> float:
            return ours.score(task, "first-last-avg", method, fit).wmean

        return [
            [score(t, f"whitening-{k}") - score(t, "whitening") for k in ks]
            for t in ("STSB", "SICK-R")
        ]

    return {
        "ship the full width: no change": np.zeros_like(right),
        "the full width minus k": np.negative(right),
        "STS-B and SICK-R swapped": right[::-1],
        "whitening fitted on the training split": changes("train"),
        "Spearman, not × 100": np.divide(right, 100),
    }


def near_7_2(model: str, right: Any) -> dict[str, Any]:
    from bertflow_mini.geometry import holes

    evaluation = bf.Evaluation(bf.load_encoder(model), progress=False)
    X = evaluation.embedded("STSB", "first-last-avg").vectors.astype(np.float64)
    query, reference = holes.task_pair_split(evaluation, "STSB", reference=0.5, seed=0)
    query = query[:3000]
    white = evaluation.postprocessor("STSB", "first-last-avg", "whitening")
    assert white is not None
    spaces = {"raw": None, "whitened": white.transform}

    def ratios(plan: Any, twin: bool = False) -> list[float]:
        d = {}
        for name, f in spaces.items():
            if twin:  # the space's Gaussian twin, as section 1 draws it
                space = holes.gaussian_twin(X if f is None else f(X), seed=0)
                d[name] = holes.hole_distances(
                    space, None, plan, query, reference, k=10
                )
            else:
                d[name] = holes.hole_distances(X, f, plan, query, reference, k=10)
        return holes.hole_table(d)["hole ratio, mixed inside"].tolist()

    four = holes.mixture_plan(len(query), 3000, parents=4, kind="random", seed=0)
    midpoints = holes.mixture_plan(len(query), 3000, kind="midpoint", seed=0)
    twins = ratios(four, twin=True)
    return {
        "midpoints (printed)": ratios(midpoints),
        "the Gaussian twins' (the solution's table)": twins,
        "minus the twins'": np.subtract(right, twins),
        "raw and whitened swapped": right[::-1],
    }


def near_7_3(model: str, right: Any) -> dict[str, Any]:
    from bertflow_mini.evaluation.entailment import auc
    from bertflow_mini.evaluation.sts import word_overlap

    sick_e = bf.load_sick_entailment("test")
    sick = _embedded(model, "first-last-avg", "SICK-R")
    overlap = word_overlap(sick_e.first, sick_e.second)
    low = overlap < np.median(overlap)
    labels = sick_e.labels

    def whitened_auc(fitted_on: np.ndarray, half: np.ndarray) -> float:
        post = bf.Whitening().fit(fitted_on)
        cos = bf.cosine_scores(
            post.transform(sick(sick_e.first)), post.transform(sick(sick_e.second))
        )
        return 100 * auc(cos[half], labels[half])

    raw = bf.cosine_scores(sick(sick_e.first), sick(sick_e.second))
    return {
        "raw cosine (printed)": 100 * auc(raw[low], labels[low]),
        "word overlap itself (printed)": 100 * auc(overlap[low], labels[low]),
        "the high-overlap half": whitened_auc(sick(sick_e.sentences()), ~low),
        "an AUC, not × 100": right / 100,
    }


# the exercises that build something: right implementations, and the usual slips
def whiten_pca(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu = X.mean(axis=0)
    lam, U = np.linalg.eigh(np.cov(X, rowvar=False))
    return mu, U / np.sqrt(lam)


def whiten_zca_biased(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ZCA (symmetric W = Σ^{-1/2}, scipy's matrix square root), covariance divided by n."""
    import scipy.linalg

    mu = X.mean(axis=0)
    S = (X - mu).T @ (X - mu) / len(X)
    return mu, np.real(scipy.linalg.inv(scipy.linalg.sqrtm(S)))


def whiten_cholesky(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu = X.mean(axis=0)
    return mu, np.linalg.inv(np.linalg.cholesky(np.cov(X, rowvar=False))).T


def near_2_5(model: str, right: Any) -> dict[str, Any]:
    def not_centred(X):
        lam, U = np.linalg.eigh(X.T @ X / len(X))
        return np.zeros(X.shape[1]), U / np.sqrt(lam)

    def mean_but_no_centring(X):
        lam, U = np.linalg.eigh(X.T @ X / len(X))
        return X.mean(axis=0), U / np.sqrt(lam)

    def inverse_not_inverse_root(X):
        lam, U = np.linalg.eigh(np.cov(X, rowvar=False))
        return X.mean(axis=0), U / lam

    def transposed(X):
        mu, W = whiten_pca(X)
        return mu, W.T

    def unwritten(X):
        raise NotImplementedError

    return {
        "not centred": not_centred,
        "the mean returned, the second moment whitened": mean_but_no_centring,
        "Σ^{-1} instead of Σ^{-1/2}": inverse_not_inverse_root,
        "W for W (x - mu), not (x - mu) W": transposed,
        "the stub": unwritten,
        "an array, not the function": whiten_pca(np.eye(3)),
    }


def coupling(
    x: torch.Tensor, t: Callable, s: Callable
) -> tuple[torch.Tensor, torch.Tensor]:
    half = x.shape[1] // 2
    xa, xb = x[:, :half], x[:, half:]
    scale = s(xa)
    return torch.cat([xa, (xb + t(xa)) * torch.exp(scale)], 1), scale.sum(1)


def coupling_inverse(y: torch.Tensor, t: Callable, s: Callable) -> torch.Tensor:
    half = y.shape[1] // 2
    ya, yb = y[:, :half], y[:, half:]
    return torch.cat([ya, yb * torch.exp(-s(ya)) - t(ya)], 1)


def near_5_5(model: str, right: Any) -> dict[str, Any]:
    def logdet(value: Callable[[torch.Tensor], torch.Tensor]) -> Callable:
        def forward(x, t, s):
            y, _ = coupling(x, t, s)
            return y, value(s(x[:, : x.shape[1] // 2]))

        return forward

    def shift_after_scale(x, t, s):
        half = x.shape[1] // 2
        xa, xb = x[:, :half], x[:, half:]
        return torch.cat([xa, xb * torch.exp(s(xa)) + t(xa)], 1), s(xa).sum(1)

    def inverse_order(y, t, s):
        half = y.shape[1] // 2
        ya, yb = y[:, :half], y[:, half:]
        return torch.cat([ya, (yb - t(ya)) * torch.exp(-s(ya))], 1)

    def unwritten(*args):
        raise NotImplementedError

    return {
        "log-det with the wrong sign": [logdet(lambda v: -v.sum(1)), coupling_inverse],
        "log-det without the scale sum (0)": [
            logdet(lambda v: torch.zeros(len(v), dtype=v.dtype)),
            coupling_inverse,
        ],
        "log-det of the scale, not its log": [
            logdet(lambda v: v.exp().sum(1)),
            coupling_inverse,
        ],
        "log-det summed over the batch": [logdet(lambda v: v.sum()), coupling_inverse],
        "y = x_b e^s + t, another coupling": [shift_after_scale, coupling_inverse],
        "the inverse undoing the steps in the wrong order": [coupling, inverse_order],
        "the stub": [unwritten, unwritten],
        "one function, not two": coupling,
    }


#: Every check ``ch.check`` knows → the nearest wrong answers to it, from (model, right answer).
NEAREST: dict[str, Callable[[str, Any], dict[str, Any]]] = {
    "0.3": near_0_3,
    "1.3": near_1_3,
    "2.3": near_2_3,
    "2.5": near_2_5,
    "3.2": near_3_2,
    "3.3": near_3_3,
    "4.1": near_4_1,
    "4.2": near_4_2,
    "4.3": near_4_3,
    "5.2": near_5_2,
    "5.3": near_5_3,
    "5.4": near_5_4,
    "5.5": near_5_5,
    "6.1": near_6_1,
    "6.2": near_6_2,
    "6.3": near_6_3,
    "7.2": near_7_2,
    "7.3": near_7_3,
}
KNOWN = sorted([*exercises._answer_key(), *exercises._BUILDS])
#: The right answer to a build: a correct implementation (on any model).
BUILT = {"2.5": whiten_pca, "5.5": [coupling, coupling_inverse]}
#: More right implementations a build must accept.
ALSO_RIGHT = {"2.5": [whiten_zca_biased, whiten_cholesky]}
#: Exercises whose candidates fit flows, train toys or search the vocabulary: seconds to a minute.
SLOW = {"1.3", "3.2", "3.3", "4.2", "4.3", "5.2", "5.4", "6.2", "6.3", "7.2"}


def _cases() -> list[Any]:
    cases = []
    for exercise in KNOWN:
        slow = [pytest.mark.slow] if exercise in SLOW else []
        stored = exercises._answer_key().get(exercise, {})
        if exercise in exercises._BUILDS or exercises._ANY_MODEL in stored:
            cases.append(pytest.param(exercise, "any model", marks=slow))
        else:
            cases.append(
                pytest.param(exercise, BOOK, marks=[*slow, pytest.mark.warm_cache])
            )
            cases.append(pytest.param(exercise, "bert-base shape", marks=slow))
    return cases


def test_the_table_covers_every_check():
    assert set(NEAREST) == set(KNOWN)


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("exercise, on", _cases())
def test_a_check_accepts_the_right_answer_and_refuses_the_nearest_wrong_ones(
    exercise, on, request, monkeypatch, capsys
):
    monkeypatch.delenv("BERTFLOW_MAX_PAIRS", raising=False)
    if on == "bert-base shape":
        model = request.getfixturevalue("stand_in")
        right = SOLUTIONS[exercise](model)  # the solution cell, transcribed
    else:
        model = BOOK
        by_model = exercises._answer_key().get(exercise, {})
        stored = by_model.get(BOOK, by_model.get(exercises._ANY_MODEL))
        right = BUILT.get(exercise)
        if right is None:  # a stored answer, else (a tolerance only) the solution's own
            right = (
                stored.value if stored.value is not None else SOLUTIONS[exercise](BOOK)
            )
    chapter = Chapter(model=model, seed=0)
    assert chapter.check(exercise, right) is True, "the right answer"
    for also in ALSO_RIGHT.get(exercise, []):
        assert chapter.check(exercise, also) is True, also.__name__
    right_out = capsys.readouterr().out
    wrongs = NEAREST[exercise](model, right)
    accepted = [
        name for name, wrong in wrongs.items() if chapter.check(exercise, wrong)
    ]
    assert not accepted, f"{exercise} on {on} accepts: {accepted}"
    out = capsys.readouterr().out
    assert out.count(f"Exercise {exercise}: not yet") == len(wrongs)
    if exercise not in BUILT:  # the key never reaches the page
        shown = (right_out + out).replace(exercise, "")
        for number in np.ravel(np.asarray(right, dtype=float)):
            if np.isfinite(number) and abs(number) > 1e-3:
                assert f"{number:.2f}" not in shown
