"""The exercises' self-checks: right and wrong answers, within tolerance, never revealing the key."""

from __future__ import annotations

import json
from importlib.resources import files

import numpy as np
import pytest

from bertflow_mini.chapters import chapter, exercises, solvers
from bertflow_mini.chapters.chapter import ClaimError
from bertflow_mini.chapters.exercises import Answer


@pytest.fixture
def key(monkeypatch):
    """A private answer key: exercise 9.1 (a number), 9.2 (an array), 9.3 (a word), 9.4 (the same
    for every model), 9.5 (computed for any model but the book's, by a solver that counts its calls)."""
    table = {
        "9.1": {"scratch-bert": Answer(0.8125, atol=0.01, rtol=0.0)},
        "9.2": {"scratch-bert": Answer([1.0, 2.0, 3.0], atol=0.0, rtol=0.01)},
        "9.3": {"scratch-bert": Answer("whitening")},
        "9.4": {"*": Answer(2.4, atol=0.01, rtol=0.0)},
        "9.5": {"scratch-bert": Answer([50.0, 60.0], atol=1.0, rtol=0.0)},
    }
    calls: list[str] = []

    def solve_9_5(model: str) -> list[float]:
        calls.append(model)
        return [70.0, 40.0 + len(calls)]

    monkeypatch.setattr(exercises, "answer_key", lambda: table)
    monkeypatch.setattr(solvers, "SOLVERS", {"9.5": solve_9_5})
    monkeypatch.setattr(solvers, "SLOW", {"9.5": "a long fit"})
    monkeypatch.setattr(solvers, "_SOLVED", {})
    monkeypatch.setitem(chapter._STATE, "model", "scratch-bert")
    monkeypatch.delenv("BERTFLOW_MAX_PAIRS", raising=False)
    return calls


def test_a_right_answer_within_tolerance_is_right_and_the_key_is_never_printed(
    key, capsys
):
    assert exercises.check("9.1", 0.8199) is True
    assert exercises.check("9.2", [1.005, 2.0, 2.99]) is True
    assert exercises.check("9.3", "  Whitening ") is True
    out = capsys.readouterr().out
    assert (
        "right" in out
        and "0.8125" not in out
        and "whitening" not in out.lower().replace("9.3", "")
    )


def test_a_wrong_answer_says_not_yet_without_the_key(key, capsys):
    assert exercises.check("9.1", 0.83) is False  # 0.0175 > atol 0.01
    assert exercises.check("9.2", [1.0, 2.0]) is False
    assert exercises.check("9.2", [1.0, float("nan"), 3.0]) is False
    assert exercises.check("9.3", "flow") is False
    assert exercises.check("9.1", "a word") is False
    out = capsys.readouterr().out
    assert out.count("not yet") == 5 and "0.8125" not in out
    assert "expected shape (3,), got (2,)" in out  # a shape hint gives nothing away


def test_another_model_without_a_solver_is_told_there_is_no_answer(
    key, monkeypatch, capsys
):
    monkeypatch.setitem(chapter._STATE, "model", "bert-base-uncased")
    assert exercises.check("9.1", 0.8125) is None
    assert "no answer for bert-base-uncased" in capsys.readouterr().out


def test_an_answer_stored_for_every_model_serves_every_model_and_every_run(
    key, monkeypatch
):
    for model in ("scratch-bert", "bert-base-uncased", "org/other-model"):
        monkeypatch.setitem(chapter._STATE, "model", model)
        assert exercises.check("9.4", 2.405) is True
        assert exercises.check("9.4", 2.5) is False
    monkeypatch.setenv("BERTFLOW_MAX_PAIRS", "10")
    assert exercises.check("9.4", 2.4) is True
    assert key == []  # nothing computed


def test_the_book_model_reads_its_stored_key_and_another_model_computes_once(
    key, monkeypatch, capsys
):
    assert exercises.check("9.5", [50.5, 59.5]) is True  # stored, not computed
    assert key == []
    monkeypatch.setitem(chapter._STATE, "model", "bert-base-uncased")
    # the solver says [70, 41]; within the book model's tolerance (atol 1) is right
    assert exercises.check("9.5", [70.0, 41.9]) is True
    assert exercises.check("9.5", [70.0, 42.5]) is False
    assert exercises.check("9.5", [50.0, 60.0]) is False  # the book model's answer
    assert key == ["bert-base-uncased"]
    out = capsys.readouterr().out
    assert out.count("computing the answer on bert-base-uncased (a long fit)") == 1
    assert "41" not in out and "70" not in out


def test_a_quick_run_computes_even_the_book_models_answer_and_confirm_skips_the_key(
    key, monkeypatch
):
    monkeypatch.setenv("BERTFLOW_MAX_PAIRS", "10")
    assert exercises.stored("9.5") is None
    assert exercises.check("9.5", [70.0, 41.0]) is True
    assert key == ["scratch-bert"]
    # the stored key is of the full data: a quick run's solution may differ from it
    assert exercises.confirm("9.5", [70.0, 41.0]) is True
    # another cap, another answer
    monkeypatch.setenv("BERTFLOW_MAX_PAIRS", "20")
    assert exercises.check("9.5", [70.0, 42.0]) is True
    assert key == ["scratch-bert", "scratch-bert"]


def test_a_solution_that_computes_nan_or_inf_asks_for_the_same(key):
    answer = Answer([-0.04, float("inf"), float("nan")], atol=0.03, rtol=0.0)
    assert answer.accepts([-0.05, np.inf, np.nan])
    assert not answer.accepts([-0.05, -np.inf, np.nan])
    assert not answer.accepts([-0.05, np.inf, 0.0])
    assert not answer.accepts([-0.1, np.inf, np.nan])
    assert not Answer(1.0, atol=0.5).accepts(np.inf)


def test_an_exercise_without_a_solver_cannot_be_solved(key):
    with pytest.raises(KeyError, match="has no solver; those that do: 9.5"):
        solvers.solve("9.1", "bert-base-uncased")


def test_an_unknown_exercise_is_a_clear_error(key):
    with pytest.raises(KeyError, match="9.1, 9.2, 9.3, 9.4, 9.5"):
        exercises.check("9.9", 1.0)


def test_confirm_fails_the_chapter_when_the_solution_no_longer_computes_the_key(key):
    assert exercises.confirm("9.1", 0.815) is True
    with pytest.raises(ClaimError, match="9.1"):
        exercises.confirm("9.1", 0.9)
    with pytest.raises(ClaimError, match="9.4"):
        exercises.confirm("9.4", 2.5)


def test_confirm_on_another_model_notes_a_stale_shared_key_and_computes_nothing(
    key, monkeypatch, capsys
):
    monkeypatch.setitem(chapter._STATE, "model", "bert-base-uncased")
    assert (
        exercises.confirm("9.5", [0.0, 0.0]) is True
    )  # no key of its own: nothing to pin
    assert exercises.confirm("9.4", 2.5) is False
    assert "NOTE" in capsys.readouterr().out
    assert key == []


def test_the_shipped_key_parses_and_every_entry_names_an_exercise_and_a_model():
    raw = json.loads(
        files("bertflow_mini.chapters").joinpath("answers.json").read_text()
    )
    table = exercises.answer_key()
    assert set(table) == {k for k in raw if not k.startswith("_")}
    for exercise, by_model in table.items():
        chapter_no, _, number = exercise.partition(".")
        assert chapter_no.isdigit() and number.isdigit(), exercise
        assert by_model and all(isinstance(a, Answer) for a in by_model.values())
        # an answer for every model, or the book model's (the others' are computed)
        assert set(by_model) in ({"*"}, {"scratch-bert"}), exercise
