"""The instructor's page's counts: words of prose by part, the exercises and their self-checks, the
student editions' links — on tiny notebooks counted by hand, and on the book's own chapters."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bertflow_mini.chapters import exercises
from bookbuild import teaching

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((REPO / "book").glob("[0-9][0-9]-*.ipynb"))


def notebook(tmp_path: Path, name: str, *markdown: str) -> Path:
    """A notebook of markdown cells, with a code cell between each (code is never counted)."""
    cells = []
    for text in markdown:
        cells.append({"cell_type": "markdown", "metadata": {}, "source": text})
        code = "print('these words are code')"
        cells.append({"cell_type": "code", "metadata": {}, "source": code})
    path = tmp_path / name
    path.write_text(json.dumps({"cells": cells}), "utf-8")
    return path


def test_words_counts_a_formula_a_role_a_link_and_code_as_one_word_each():
    assert (
        teaching.words("Cosine $x^\\top y$ is {term}`a word <Cosine similarity>` here.")
        == 6
    )
    assert (
        teaching.words("See [Chapter 2](02-cosine-and-bases.ipynb), or `ch.check`.")
        == 5
    )
    assert teaching.words("$$\na = b\n$$\n\nTwo words") == 3
    assert (
        teaching.words("```{dropdown} Deeper: four words here\n:open:\nfive\n```") == 1
    )
    assert teaching.words("— * ## ") == 0


CHAPTER = [
    "# 9. A title of five\n\nMain text has six words here.",
    "```{dropdown} Deeper: two\nThree deeper words.\n```\n\n"
    "```{admonition} Paper\n:class: tip\nFour words, main line.\n```",
    "## Exercises\n\n**1 (pen and paper · quiz).** Show one thing.\n\n"
    "```{dropdown} Solution\nA solution of six words.\n```",
    '**2 (code · homework).** Compute it: `ch.check("9.2", x)`.\n\n'
    "```{dropdown} Hints\nTry harder.\n```\n\n**3 (open · discussion).** Why?",
    "## References\n\nNot counted at all, these words.",
]


def test_prose_words_puts_each_block_in_its_part(tmp_path):
    path = notebook(tmp_path, "09-toy.ipynb", *CHAPTER)
    counts = teaching.prose_words([path]).loc["09"].to_dict()
    # title 5 + 6, the admonition's title and text 1 + 4; the dropdown's title 2 and text 3
    assert counts["main line"] == 5 + 6 + 1 + 4
    assert counts["deeper blocks"] == 2 + 3
    # the heading; each label with its statement (the dot is no word, the use one; the
    # check one): 8, 6, 4
    assert counts["exercises"] == 1 + 8 + 6 + 4
    # "Solution" and its 5 words; "Hints" and its 2
    assert counts["solutions"] == 1 + 5 + 1 + 2


def test_exercise_table_reads_kind_self_check_and_what_each_suits(tmp_path):
    path = notebook(tmp_path, "09-toy.ipynb", *CHAPTER)
    table = teaching.exercise_table([path]).loc["09"]
    assert table["kind"].to_list() == ["pen and paper", "code", "open"]
    assert table["self-check"].to_list() == ["–", "9.2", "–"]
    assert table["solution (words)"].to_list() == [6, 3, 0]
    assert table["suits"].to_list() == ["quiz", "homework", "discussion"]


@pytest.mark.parametrize("suits", teaching.SUITS)
def test_what_an_exercise_suits_is_what_its_label_says_whatever_its_length(
    tmp_path, suits
):
    solution = "```{dropdown} Solution\n" + "word " * 400 + "\n```"
    path = notebook(
        tmp_path,
        "09-toy.ipynb",
        f"## Exercises\n\n**1 (pen and paper · {suits}).** Prove three things.",
        solution,
    )
    row = teaching.exercise_table([path]).loc[("09", 1)]
    assert row["kind"] == "pen and paper" and row["suits"] == suits
    assert row["solution (words)"] == 401


@pytest.mark.parametrize("label", ["pen and paper", "code · lecture", "code ·"])
def test_a_label_that_does_not_say_what_the_exercise_suits_is_an_error(tmp_path, label):
    path = notebook(tmp_path, "09-toy.ipynb", f"## Exercises\n\n**1 ({label}).** Q")
    with pytest.raises(ValueError, match="exercise 1's label .* does not say"):
        teaching.exercise_table([path])


def test_bad_input_says_what_is_wrong(tmp_path):
    unlabelled = notebook(tmp_path, "09-toy.ipynb", "## Exercises\n\n1. Show it.")
    with pytest.raises(ValueError, match="no label"):
        teaching.exercise_table([unlabelled])
    with pytest.raises(FileNotFoundError, match="book/ folder"):
        teaching.prose_words([tmp_path / "08-missing.ipynb"])
    with pytest.raises(ValueError, match="two digits"):
        teaching.prose_words([notebook(tmp_path, "toy.ipynb", "# T")])
    with pytest.raises(ValueError, match="no chapter"):
        teaching.prose_words([])


def test_the_books_exercises_are_all_listed_and_their_checks_are_keyed():
    table = teaching.exercise_table(CHAPTERS)
    for path in CHAPTERS:
        markdown = "\n".join(
            "".join(c["source"])
            for c in json.loads(path.read_text())["cells"]
            if c["cell_type"] == "markdown"
        )
        # every bold numbered label after the Exercises heading is a row
        section = markdown[
            markdown.index("## Exercises") : markdown.index("## References")
        ]
        numbers = [int(n) for n in re.findall(r"^\*\*(\d+)", section, re.M)]
        assert table.loc[path.name[:2]].index.to_list() == numbers, path.name
    keys = {k for cell in table["self-check"] if cell != "–" for k in cell.split(", ")}
    known = {*exercises._answer_key(), *exercises._BUILDS}
    assert keys and keys <= known, keys - known
    assert set(table["kind"]) <= {"pen and paper", "code", "open", "code, open"}
    assert set(table["suits"]) <= set(teaching.SUITS)


def test_student_links_are_the_readmes():
    links = teaching.student_links(REPO)
    readme = (REPO / "README.md").read_text()
    assert len(links) == len(list((REPO / "book" / "student").glob("*.ipynb")))
    for name, link in links.items():
        assert f"({link})" in readme and link.endswith(f"/book/student/{name}.ipynb")
