"""The exercises' self-checks: right and wrong answers, within tolerance, never revealing the key."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest

from bertflow_mini.chapters import chapter, exercises
from bertflow_mini.chapters.chapter import ClaimError
from bertflow_mini.chapters.exercises import Answer


@pytest.fixture
def key(monkeypatch):
    """A private answer key: exercise 9.1 (a number), 9.2 (an array), 9.3 (a word)."""
    table = {
        "9.1": {"scratch-bert": Answer(0.8125, atol=0.01, rtol=0.0)},
        "9.2": {"scratch-bert": Answer([1.0, 2.0, 3.0], atol=0.0, rtol=0.01)},
        "9.3": {"scratch-bert": Answer("whitening")},
    }
    monkeypatch.setattr(exercises, "answer_key", lambda: table)
    monkeypatch.setitem(chapter._STATE, "model", "scratch-bert")
    return table


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


def test_another_model_has_no_key_and_is_told_so(key, monkeypatch, capsys):
    monkeypatch.setitem(chapter._STATE, "model", "bert-base-uncased")
    assert exercises.check("9.1", 0.8125) is None
    assert "no stored answer for bert-base-uncased" in capsys.readouterr().out


def test_an_unknown_exercise_is_a_clear_error(key):
    with pytest.raises(KeyError, match="9.1, 9.2, 9.3"):
        exercises.check("9.9", 1.0)


def test_confirm_fails_the_chapter_when_the_solution_no_longer_computes_the_key(key):
    assert exercises.confirm("9.1", 0.815) is True
    with pytest.raises(ClaimError, match="9.1"):
        exercises.confirm("9.1", 0.9)


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
