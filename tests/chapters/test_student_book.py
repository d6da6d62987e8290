"""The student HTML book (``make student-html``; bookbuild.editions.
write_student_book): the book's sources copied without the solutions. Checked on the real chapters,
with detectors of their own (markdown-it's parse, the Exercises section as tests/conftest.py reads
it), not the package's: every solution gone, every other cell kept byte for byte, the exercises
still there. The build itself (jupyter-book, warnings as errors) is `make student-html`'s, not
a unit test's."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import directive_fences, exercise_section, tags
from markdown_it import MarkdownIt
from mdit_py_plugins.colon_fence import colon_fence_plugin

from bookbuild import editions, launch_button
from bookbuild.editions import (
    cut_solution_directives,
    main,
    strip_solutions,
    write_student_book,
)

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((REPO / "book").glob("[0-9][0-9]-*.ipynb"))
SOLUTION_INFO = re.compile(r"^\{solution\}|^\{dropdown\}\s+(Solution|Answer)s?\b", re.I)
SOLUTION_TAGS = {"solution", "hide-cell", "remove-cell"}


@pytest.fixture(scope="module")
def student(tmp_path_factory) -> Path:
    return write_student_book(REPO, tmp_path_factory.mktemp("student") / "book-src")


@pytest.fixture(scope="module")
def originals() -> dict[str, nbformat.NotebookNode]:
    """The chapters as read once: others may rewrite them while the tests run."""
    return {p.name: nbformat.read(p, as_version=4) for p in CHAPTERS}


def solution_fences(markdown: str) -> list[tuple[str, str]]:
    return [(i, c) for i, c in directive_fences(markdown) if SOLUTION_INFO.match(i)]


def solution_code_ids(nb: nbformat.NotebookNode) -> set[str]:
    """The solution cells, found as tests/conftest.py finds the Exercises section: its code
    cells tagged solution, hide-cell or remove-cell, and any cell tagged solution."""
    section = exercise_section(nb) or {"code": []}
    return {c.id for c in section["code"] if tags(c) & SOLUTION_TAGS} | {
        c.id for c in nb.cells if "solution" in tags(c)
    }


def without_solution_fences(markdown: str) -> list[str]:
    """The cell's non-blank lines outside its top-level solution fences (markdown-it's line map)."""
    md = MarkdownIt("commonmark").use(colon_fence_plugin)
    lines = markdown.split("\n")
    for token in md.parse(markdown):
        if token.type in ("fence", "colon_fence") and SOLUTION_INFO.match(token.info):
            start, end = token.map
            lines[start:end] = [""] * (end - start)
    return [line for line in lines if line.strip()]


def test_every_chapter_and_page_but_the_teachers_is_copied(student):
    names = {p.name for p in (student / "book").iterdir()}
    expected = {
        p.name
        for p in (REPO / "book").iterdir()
        if p.is_file() and p.suffix != ".py" and p.name != "teaching.ipynb"
    }
    assert names == expected
    for page in ("glossary.md", "bibliography.md", "references.bib"):
        assert (student / "book" / page).read_bytes() == (
            REPO / "book" / page
        ).read_bytes()
    for path in (REPO / "_static").iterdir():
        assert (student / "_static" / path.name).read_bytes() == path.read_bytes()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_solution_cell_or_dropdown_is_left(chapter, student, originals):
    original = originals[chapter.name]
    copy = nbformat.read(student / "book" / chapter.name, as_version=4)
    removed = solution_code_ids(original)
    assert removed, f"{chapter.name}: no solution cell found to remove"
    assert not removed & {c.id for c in copy.cells}
    text = "\n".join(c.source for c in copy.cells)
    bodies = [
        body for c in original.cells for _, body in solution_fences(c.source) if body
    ]
    assert bodies, f"{chapter.name}: no solution dropdown found to remove"
    for body in bodies:
        assert body.strip() not in text
        long_lines = [line for line in body.split("\n") if len(line) > 40]
        assert not [line for line in long_lines if line in text], body[:80]
    assert not [i for c in copy.cells for i, _ in solution_fences(c.source)]
    assert "BEGIN SOLUTION" not in text


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_other_cell_is_kept_as_it_was(chapter, student, originals):
    original = originals[chapter.name]
    copy = nbformat.read(student / "book" / chapter.name, as_version=4)
    removed = solution_code_ids(original)
    by_id = {c.id: c for c in copy.cells}
    kept = [c for c in original.cells if c.id not in removed]
    for cell in kept:
        if cell.cell_type == "markdown" and solution_fences(cell.source):
            rest = without_solution_fences(cell.source)
            if rest:  # the cell without its solutions, every other line as it was
                assert [
                    line for line in by_id[cell.id].source.split("\n") if line.strip()
                ] == rest
                assert by_id[cell.id].metadata == cell.metadata
            else:
                assert cell.id not in by_id
        else:  # source, metadata, outputs: the whole cell
            assert by_id.get(cell.id) == cell, (cell.cell_type, cell.id)
    assert [c.id for c in copy.cells] == [c.id for c in kept if c.id in by_id]
    assert copy.metadata == original.metadata


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_exercises_and_their_self_checks_are_still_there(
    chapter, student, originals
):
    original = exercise_section(originals[chapter.name])
    copy = exercise_section(
        nbformat.read(student / "book" / chapter.name, as_version=4)
    )
    assert copy is not None
    statements = re.compile(r"^\*\*\d+\b[^*\n]*\*\*.*$", re.M)
    assert statements.findall(copy["text"]) == statements.findall(original["text"])
    assert len(statements.findall(copy["text"])) >= 3
    checks = re.compile(r'ch\.check\("[^"]+"')
    statement_text = re.sub(
        r"^(`{3,}|:{3,})\{dropdown\} (Solution|Answer).*?^\1\s*$",
        "",
        original["text"],
        flags=re.M | re.S,
    )
    assert checks.findall(copy["text"]) == checks.findall(statement_text)
    # the hints stay: they are not solutions
    hints = [i for i, _ in directive_fences(original["text"]) if "Hint" in i]
    assert [i for i, _ in directive_fences(copy["text"]) if "Hint" in i] == hints


def test_the_teachers_page_and_the_lines_that_link_to_it_are_left_out(student):
    toc = (student / "_toc.yml").read_text()
    assert "book/teaching" not in toc and "For teachers" not in toc
    assert yaml.safe_load(toc)["root"] == "book/intro"
    files = re.findall(r"file: (\S+)", toc)
    original = re.findall(r"file: (\S+)", (REPO / "_toc.yml").read_text())
    assert files == [f for f in original if f != "book/teaching"]
    intro, before = (
        (root / "book" / "intro.md").read_text().split("\n") for root in (student, REPO)
    )
    assert intro == [line for line in before if "teaching.ipynb" not in line]
    for page in (student / "book").iterdir():
        assert "teaching.ipynb" not in page.read_text(), page.name


def test_the_config_is_the_books_with_a_student_title_and_student_colab_buttons(
    student,
):
    config = yaml.safe_load((student / "_config.yml").read_text())
    book = yaml.safe_load((REPO / "_config.yml").read_text())
    assert config["title"] == book["title"] + " (student edition)"
    assert config["sphinx"]["config"].pop("bertflow_colab_edition") == "student"
    assert {k: v for k, v in config.items() if k != "title"} == {
        k: v for k, v in book.items() if k != "title"
    }
    urls = launch_button._edition_urls(student, "student")
    assert urls["book/05-building-the-flow"].endswith(
        "/book/student/05-building-the-flow.ipynb"
    )
    assert all(
        (REPO / "book" / "student" / u.rsplit("/", 1)[1]).exists()
        for u in urls.values()
    )


def test_a_folder_is_rewritten_only_when_it_holds_a_student_book(student, tmp_path):
    (student / "book" / "stale.md").write_text("left from an earlier run")
    assert write_student_book(REPO, student) == student.resolve()
    assert not (student / "book" / "stale.md").exists()
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        write_student_book(REPO, tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    for target in (REPO, REPO.parent, REPO / "book" / "x"):
        with pytest.raises(ValueError):
            write_student_book(REPO, target)


def test_the_command_line_writes_it(tmp_path, capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(
        editions,
        "write_student_book",
        lambda root, out: calls.append((root, out)) or out,
    )
    assert main(["--root", str(REPO), "--student-book", str(tmp_path / "s")]) == 0
    assert calls == [(REPO, tmp_path / "s")]
    assert str(tmp_path / "s") in capsys.readouterr().out


# ----------------------------------------------------------------------------- the rules, small
def test_solution_directives_are_cut_and_everything_else_kept():
    text = "\n".join(
        [
            "**1.** Prove it.",
            "",
            "````{dropdown} Solution to 1",
            "Because:",
            "```python",
            "x = 1",
            "```",
            "````",
            "",
            "```{dropdown} Hints",
            "Think.",
            "```",
            "",
            ":::{solution} ex1",
            "Colon-fenced.",
            ":::",
            "",
            "```{note}",
            ":class: dropdown",
            "A note.",
            "```",
            "",
            "```{admonition} Answer",
            ":class: dropdown",
            "42",
            "```",
            "",
            "```python",
            "```{dropdown} Solution",
            "```",
            "",
            "The end.",
        ]
    )
    assert cut_solution_directives(text) == "\n".join(
        [
            "**1.** Prove it.",
            "",
            "```{dropdown} Hints",
            "Think.",
            "```",
            "",
            "```{note}",
            ":class: dropdown",
            "A note.",
            "```",
            "",
            "```python",
            "```{dropdown} Solution",
            "```",
            "",
            "The end.",
        ]
    )
    # a nested solution needs a longer outer fence, as in MyST
    nested = "::::{admonition} Why\n:::{dropdown} Answer\nnested\n:::\n\nkept\n::::"
    assert cut_solution_directives(nested) == "::::{admonition} Why\n\nkept\n::::"
    assert cut_solution_directives("Text.\n\n```{dropdown} Solution\nx\n```") == "Text."
    assert cut_solution_directives("```{solution} a\nx\n```\n\nText.") == "Text."
    assert cut_solution_directives("No directive.\n") == "No directive.\n"


def test_solution_cells_go_and_nbgrader_regions_become_a_blank_to_fill():
    def code(source, tags=(), outputs=True):
        cell = nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)})
        if outputs:
            cell.outputs = [nbformat.v4.new_output("stream", text="out\n")]
        return cell

    md = nbformat.v4.new_markdown_cell
    nb = nbformat.v4.new_notebook(
        cells=[
            md("# Title"),
            code("visible()", ["hide-cell"]),
            code("spoiler()", ["solution"]),
            md("## Exercises\n\n**1.** Do it.\n\n```{dropdown} Solution\nsecret\n```"),
            code("answer()", ["hide-cell"]),
            code("check()", ["remove-cell"]),
            code(
                "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n"
            ),
            md("```{dropdown} Solution\nonly this\n```"),
            md("## References"),
            code("after()", ["remove-cell"]),
        ]
    )
    out = strip_solutions(nb)
    assert [c.source for c in out.cells] == [
        "# Title",
        "visible()",
        "## Exercises\n\n**1.** Do it.",
        "def f():\n# YOUR CODE HERE\n",
        "## References",
        "after()",
    ]
    assert out.cells[3].outputs == [] and out.cells[1].outputs == nb.cells[1].outputs
    assert [c.id for c in out.cells] == [nb.cells[i].id for i in (0, 1, 3, 6, 8, 9)]
    assert nb.cells[3].source.endswith("```")  # the notebook given is left as it was


def test_a_link_to_the_teachers_page_goes_only_as_whole_sentences():
    without = editions._without_links_to
    text = "Read it.\n[For teachers](teaching.ipynb) plans a unit.\nMore."
    assert without(text, "teaching") == "Read it.\nMore."
    assert (
        without("See [the plan](teaching.ipynb#paths) and\nmore.", "teaching") is None
    )
    assert without("Read {doc}`teaching` first.", "teaching") == ""
    assert without("[Notes](teaching-notes.md) stay.", "teaching") == (
        "[Notes](teaching-notes.md) stay."
    )
    toc = {"parts": [{"caption": "A", "chapters": [{"file": "x"}, {"file": "t"}]},
                     {"caption": "B", "chapters": [{"file": "t"}]}]}  # fmt: skip
    assert editions._drop_from_toc(toc, "t")
    assert toc == {"parts": [{"caption": "A", "chapters": [{"file": "x"}]}]}
    assert not editions._drop_from_toc(toc, "t")
