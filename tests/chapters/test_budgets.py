"""The pages' budgets and shape (``../shared/chapter-anatomy.md``), counted from the pages themselves.

Words are counted as the instructor's page counts them (:func:`teaching.words`: a formula, a role,
a link or inline code is one word; code cells and outputs are not prose). A chapter's *main line* is
its visible prose outside collapsed notes and the Exercises; its *collapsed notes* are the dropdowns
before the Exercises. Each chapter ends once, in its Verdict: at most four bullets, then a summary of
three sentences.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bookbuild import teaching

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((REPO / "book").glob("[0-9][0-9]-*.ipynb"))
RESULTS = REPO / "book" / "measurements.ipynb"
FRONT = REPO / "book" / "intro.md"

MAIN_LINE = 2500
COLLAPSED = 800
RESULTS_PAGE = 1500
FRONT_PAGE = 900
ANSWER_BOX = 150
ANSWER_NUMBERS = 4
VISIBLE_CODE = 300
#: Tags that hide a code cell's source from the HTML reader (removed, or collapsed behind a toggle).
HIDDEN = {"remove-cell", "remove-input", "hide-cell", "hide-input"}
#: A number a reader reads as a measurement or a figure: 26.1, 0.98, 64 (not STS12, not "Chapter 2").
NUMBER = re.compile(r"(?<![\w.\-–])[-+−]?\d+(?:\.\d+)?(?![\w])")


def markdown(path: Path) -> str:
    cells = json.loads(path.read_text("utf-8"))["cells"]
    return "\n\n".join(
        "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
    )


def part_words(path: Path) -> dict[str, int]:
    parts = teaching._parts(markdown(path))
    return {p: teaching.words("\n".join(lines)) for p, lines in parts.items()}


def section(text: str, title: str) -> list[str]:
    """The bodies of every level-2 section called ``title``."""
    bodies = re.split(r"^## +", text, flags=re.M)[1:]
    return [
        b.split("\n", 1)[1] if "\n" in b else ""
        for b in bodies
        if b.split("\n", 1)[0].strip() == title
    ]


def sentences(text: str) -> int:
    plain = teaching.MATH.sub("x", teaching.ROLE.sub(lambda m: m.group(1) or "x", text))
    plain = re.sub(r"\b(e\.g|i\.e|et al|vs|cf)\.", r"\1", plain)
    return len(
        [s for s in re.split(r"(?<=[.!?])\s+", plain.strip()) if re.search(r"\w", s)]
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_a_chapter_keeps_its_word_budgets(path):
    counted = part_words(path)
    assert counted["main line"] <= MAIN_LINE, (
        f"{path.name}: main line {counted['main line']} words"
    )
    assert counted["deeper blocks"] <= COLLAPSED, (
        f"{path.name}: collapsed notes {counted['deeper blocks']} words"
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_a_chapter_shows_at_most_its_budget_of_code(path):
    cells = json.loads(path.read_text("utf-8"))["cells"]
    shown = sum(
        len("".join(c["source"]).splitlines())
        for c in cells
        if c["cell_type"] == "code" and not HIDDEN & set(c["metadata"].get("tags", []))
    )
    assert shown <= VISIBLE_CODE, f"{path.name}: {shown} lines of visible code"


def summary_of(verdict: str) -> str:
    """A Verdict's prose outside its bullets (a bullet runs to the next blank line)."""
    blocks = re.split(r"\n\s*\n", verdict.strip())
    return "\n\n".join(b for b in blocks if not re.match(r"[-*] ", b.lstrip()))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_a_chapter_ends_once_with_a_short_verdict_and_a_three_sentence_summary(path):
    text = markdown(path).split("\n## Exercises", 1)[0]
    verdicts = section(text, "Verdict")
    assert len(verdicts) == 1 and not section(text, "Summary"), (
        f"{path.name}: one ending, its Verdict"
    )
    bullets = re.findall(r"^[-*] ", verdicts[0], flags=re.M)
    assert 1 <= len(bullets) <= 4, (
        f"{path.name}: the verdict has {len(bullets)} bullets"
    )
    assert sentences(summary_of(verdicts[0])) == 3, (
        f"{path.name}: the verdict's summary is not three sentences"
    )


def test_the_results_page_keeps_its_budget():
    counted = part_words(RESULTS)
    assert sum(counted.values()) <= RESULTS_PAGE, f"results page: {counted}"


def test_the_front_page_and_its_answer_box_keep_their_budgets():
    text = FRONT.read_text("utf-8")
    assert teaching.words(text) <= FRONT_PAGE, (
        f"front page: {teaching.words(text)} words"
    )
    box = re.search(
        r"^(`{3,}|:{3,})\{admonition\}[^\n]*\n(.*?)^\1\s*$", text, re.S | re.M
    )
    assert box, "the front page opens its answer in an admonition"
    body = re.sub(r"^:[\w-]+:.*$", "", box.group(2), flags=re.M)
    assert teaching.words(body) <= ANSWER_BOX, (
        f"answer box: {teaching.words(body)} words"
    )
    # a glued value is a number the reader sees
    glued = re.sub(r"\{glue(?::\w+)?\}`[^`]*`", "0", body)
    shown = teaching.LINK.sub(r"", teaching.ROLE.sub(lambda m: m.group(1), glued))
    numbers = NUMBER.findall(shown)
    assert len(numbers) <= ANSWER_NUMBERS, f"answer box numbers: {numbers}"


def test_the_counts_behave_on_a_page_counted_by_hand(tmp_path):
    page = tmp_path / "99-toy.ipynb"
    cells = [
        "# Toy\n\nOne two three.",
        "```{dropdown} Deeper\nfour five\n```",
        "## Verdict\n\n- six\n- seven\n  eight\n\nA b. C d. E f.",
        "## Exercises\n\nseven eight nine ten",
    ]
    page.write_text(
        json.dumps(
            {
                "cells": [
                    {"cell_type": "markdown", "metadata": {}, "source": s}
                    for s in cells
                ]
            }
        )
    )
    counted = part_words(page)
    # main line: Toy One two three Verdict six seven eight A b C d E f = 14 words
    assert counted["main line"] == 14
    assert counted["deeper blocks"] == 3  # the title "Deeper", then "four five"
    assert counted["exercises"] == 5  # the heading's word and four
    verdict = section(markdown(page), "Verdict")[0]
    assert summary_of(verdict) == "A b. C d. E f."
    assert sentences(summary_of(verdict)) == 3
