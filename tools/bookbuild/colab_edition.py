"""One notebook's Colab edition, or its student edition, built cell by cell from the chapter.

The Colab edition is the chapter without outputs (a reader runs it; the book's outputs would mislead
on another model) and without MyST (:mod:`bookbuild.myst_markdown`). Its install line
pins the release the :class:`~bookbuild.myst_markdown.BookSite` names. Cells the HTML
book hides become Colab form cells (``# @title`` and ``cellView: form``: the code folded under a
title, as Colab folds its own hidden cells); a check behind the text that fails on the reader's
model prints its note right under its cell. The student edition is the Colab edition without solutions:
dropdowns titled "Solution" (or ``{solution}`` directives), cells tagged ``solution``, and in the
Exercises section the cells tagged ``hide-cell`` or ``remove-cell``; nbgrader's ``### BEGIN
SOLUTION`` … ``### END SOLUTION`` lines become ``# YOUR CODE HERE``. Each self-check an exercise
names gets an empty cell to answer in.
"""

from __future__ import annotations

import copy
import re

import nbformat

from bookbuild.myst_markdown import BookSite, Page, to_markdown

INSTALL = re.compile(r"^(\s*)%pip install .*bertflow_mini @ git\+.*$", re.M)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
HAS_EXERCISES = re.compile(r"^#{1,6}\s+Exercises\b", re.M)
EXERCISE = re.compile(r"^\*\*(\d+)\b[^*\n]*\*\*", re.M)
CHECK = re.compile(r"ch\.check\((\"[^\"]+\"),\s*([^`]*?)\)`")
SOLUTION_MARKERS = re.compile(
    r"[ \t]*### BEGIN SOLUTION\n(.*?)[ \t]*### END SOLUTION\n?", re.S
)
CLICK = re.compile(r"\s*\(click to show\)")
#: Prose written for the HTML book that reads differently in an edition: (pattern, replacement).
PROSE = [
    (
        CLICK,
        " (its code is folded: *Show code* opens it)",
    ),
    (
        re.compile(r"a cell prints an? `?NOTE`?"),
        "a hidden check records a note (listed at the end, under *What differs on your model*)",
    ),
]


def glued_values(nb: nbformat.NotebookNode) -> dict[str, str]:
    """Every value the chapter glues (myst-nb's ``glue`` outputs), as its text/plain."""
    values = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            scrap = out.get("metadata", {}).get("scrapbook")
            if scrap:
                values[scrap["name"]] = out["data"][scrap["mime_prefix"] + "text/plain"]
    return values


def _code(
    source: str, cell_id: str, metadata: dict | None = None
) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, metadata=metadata or {})
    cell.id = cell_id
    return cell


def _markdown(source: str, cell_id: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(source)
    cell.id = cell_id
    return cell


def _fold(cell: nbformat.NotebookNode, title: str, outputs_hidden: bool) -> None:
    """Fold a cell's code under ``title``: a Colab form cell (JupyterLab: ``source_hidden``)."""
    cell.source = f"# @title {title}\n{cell.source}"
    cell.metadata = {
        "cellView": "form",
        "jupyter": {"source_hidden": True, "outputs_hidden": outputs_hidden},
    }


def shown_on_request(source: str) -> str:
    """A solution cell's code opened by ``bf.solution`` and a Colab tick box (off): *Run all*
    computes what later cells need and shows nothing; ticked, the cell shows what the chapter's
    does."""
    # a definition after statements takes two blank lines (PEP 8, as ruff formats it)
    gap = "\n\n" if source.lstrip().startswith(("def ", "class ", "@")) else ""
    return (
        'show_solution = False  # @param {type:"boolean"}\n'
        "bf.solution(show_solution)  # unticked: the cell runs and shows nothing\n"
        + gap
        + source
    )


def _own_title(cell: nbformat.NotebookNode, default: str) -> str:
    """A hidden cell's title: the one-line comment that opens it (taken out of the code), or
    ``default``."""
    first, _, rest = cell.source.partition("\n")
    if first.startswith("# ") and not rest.lstrip().startswith("#"):
        cell.source = rest
        return first[2:].strip()
    return default


def _note(
    site: BookSite, title: str, docname: str, student: bool, has_model: bool
) -> str:
    """The note that opens an edition: where it comes from, and how to read it."""
    lines = [
        f"**About this {'student ' if student else ''}edition.** This notebook is generated "
        f"from the book's page [{title}]({site.page(docname)}), to run in Colab: its first "
        f"cell installs the book's package at release `{site.tag}`. Cells that show only a "
        "title have their code folded; *Show code* opens it.",
    ]
    if has_model:
        lines.append(
            "It runs the book's own model, `scratch-bert` (its released weights, fetched on first "
            "use), so your outputs are the ones the text describes. "
            '`bf.setup("bert-base-uncased")` in the set-up cell runs the paper\'s model instead '
            "(choose a GPU runtime); then a sentence of the text that does not hold on it prints "
            "a NOTE under its cell."
        )
    if student:
        lines.append(
            "The solutions are left out (they are in the book). Each exercise with a self-check "
            'has an empty cell below it: write your answer there and run `ch.check("…", …)`, '
            "which says *right* or *not yet* without giving the answer away."
        )
    return "\n\n".join(["<blockquote>", *lines, "</blockquote>"])


class _Chapter:
    """Where the walk through a chapter's cells stands: the section, the exercise."""

    def __init__(self) -> None:
        self.in_exercises, self.level, self.exercise = False, 0, ""

    def read(self, markdown: str) -> None:
        for hashes, heading in HEADING.findall(markdown):
            if re.match(r"Exercises\b", heading):
                self.in_exercises, self.level = True, len(hashes)
            elif self.in_exercises and len(hashes) <= self.level:
                self.in_exercises = False
        if self.in_exercises and (numbers := EXERCISE.findall(markdown)):
            self.exercise = numbers[-1]


def _text_cells(cell, page: Page, site: BookSite, where: _Chapter) -> list:
    """A markdown cell in the edition (none if nothing is left), with the student's empty
    answer cells after an exercise that names a self-check."""
    source = cell.source
    where.read(source)
    cell.source = to_markdown(source, site, page)
    if (
        where.in_exercises
    ):  # a solution's cell opens with a tick box, not with Show code
        cell.source = CLICK.sub(
            " (tick its *show_solution* box and run it)", cell.source
        )
    for pattern, replacement in PROSE:
        cell.source = pattern.sub(replacement, cell.source)
    cell.metadata = {}
    cells = [cell] if cell.source.strip() else []
    if page.student and where.in_exercises:
        seen = set()
        for key, answer in CHECK.findall(source):
            name = key.strip('"')
            if name in seen:  # one answer cell per exercise
                continue
            seen.add(name)
            scaffold = f"# Exercise {name}: your answer here, then check it:\n"
            scaffold += f"# ch.check({key}, {answer})"
            cells.append(_code(scaffold, f"{cell.id}-answer-{name.replace('.', '-')}"))
    return cells


def is_solution_cell(cell: nbformat.NotebookNode, in_exercises: bool) -> bool:
    """Whether a code cell is a solution the student editions leave out: tagged ``solution``,
    or, in the Exercises section (``in_exercises``), tagged ``hide-cell`` or ``remove-cell``."""
    tags = set(cell.metadata.get("tags", []))
    return cell.cell_type == "code" and (
        "solution" in tags
        or (in_exercises and bool(tags & {"hide-cell", "remove-cell"}))
    )


def _code_cell(cell, page: Page, where: _Chapter) -> list:
    """A code cell in the edition, without outputs, folded as the HTML book hides it (none:
    a solution in the student edition)."""
    tags = set(cell.metadata.get("tags", []))
    if page.student and is_solution_cell(cell, where.in_exercises):
        return []
    keep = (lambda m: "# YOUR CODE HERE\n") if page.student else (lambda m: m.group(1))
    cell.source = SOLUTION_MARKERS.sub(keep, cell.source)
    cell.outputs, cell.execution_count, cell.metadata = [], None, {}
    if "remove-cell" in tags:
        _fold(cell, _own_title(cell, "Checks behind the text"), outputs_hidden=False)
    elif "hide-cell" in tags and where.in_exercises:
        title = (
            f"Solution to exercise {where.exercise}" if where.exercise else "Solution"
        )
        if cell.source.startswith(
            "# Solution"
        ):  # a cell that names its exercise itself
            title = _own_title(cell, title)
        cell.source = shown_on_request(cell.source)
        _fold(cell, f"{title}: tick the box and run the cell to see it", False)
    elif "hide-cell" in tags:
        _fold(cell, _own_title(cell, "A folded check"), outputs_hidden=True)
    elif "hide-input" in tags:
        what = "figure" if re.search(r"\b(plt|fig|axe?s?)\b", cell.source) else "output"
        _fold(cell, _own_title(cell, f"Code of the {what} below"), outputs_hidden=False)
    return [cell]


def _set_up(cell, docname: str, site: BookSite) -> list:
    """The first code cell, its install pinned to the release."""
    pinned = f'%pip install -q "bertflow_mini @ git+{site.repository}@{site.tag}"'
    cell.source, n = INSTALL.subn(lambda m: m.group(1) + pinned, cell.source)
    if n != 1:
        raise ValueError(
            f"{docname}: the first code cell has no `%pip install` line of the package"
        )
    cell.outputs, cell.execution_count, cell.metadata = [], None, {}
    return [cell]


def build_edition(
    nb: nbformat.NotebookNode, docname: str, site: BookSite, student: bool
) -> nbformat.NotebookNode:
    """One notebook's Colab edition (``student``: its student edition) as a new notebook."""
    has_model = any(
        c.cell_type == "code" and re.search(r"\bbf\.setup\(", c.source)
        for c in nb.cells
    )
    page = Page(
        docname=docname,
        glued=glued_values(nb),
        student=student,
    )
    all_markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    where, cells, code_seen = _Chapter(), [], False
    for source_cell in nb.cells:
        cell = copy.deepcopy(source_cell)
        if cell.cell_type == "markdown":
            cells += _text_cells(cell, page, site, where)
            if (
                len(cells) == 1
            ):  # the title: the note on this edition comes right after it
                exercises = student and HAS_EXERCISES.search(all_markdown)
                note = _note(site, _title(cell), docname, bool(exercises), has_model)
                cells.append(_markdown(note, "edition-note"))
        elif cell.cell_type == "code" and not code_seen:
            cells += _set_up(cell, docname, site)
            code_seen = True
        elif cell.cell_type == "code":
            cells += _code_cell(cell, page, where)
    out = nbformat.v4.new_notebook(cells=cells)
    python = {"name": "python3", "display_name": "Python 3", "language": "python"}
    out.metadata = {
        "colab": {"provenance": [], "toc_visible": True},
        "kernelspec": nb.metadata.get("kernelspec", python),
        "language_info": {"name": "python"},
    }
    out.nbformat_minor = nb.nbformat_minor
    return out


def _title(cell: nbformat.NotebookNode) -> str:
    m = HEADING.search(cell.source)
    return m.group(2) if m else "this chapter"
