"""The committed Colab and student editions (bookbuild.editions): current with the
chapters, byte for byte; free of MyST and outputs; installing the release that _config.yml and the
README name; and, for students, without solutions. Marked ``html``: each Colab edition rendered by
nbconvert as Jupyter renders Markdown, then opened in headless Chromium with a local MathJax."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import directive_fences, exercise_section, tags

import bertflow_mini
from bookbuild.editions import sources, stale_editions

REPO = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((REPO / "_config.yml").read_text())
SOURCES = sources(REPO)
TAG = f"v{bertflow_mini.__version__}"
MYST = re.compile(r"\{[a-z:-]+\}`|```\{|:::\{|^\([^()\s]+\)=\s*$", re.M)


def edition(kind: str, source: Path) -> nbformat.NotebookNode:
    return nbformat.read(REPO / "book" / kind / source.name, as_version=4)


def all_text(nb: nbformat.NotebookNode, kind: str = "") -> str:
    return "\n".join(c.source for c in nb.cells if not kind or c.cell_type == kind)


def test_every_committed_edition_is_what_the_chapters_generate_now():
    stale = stale_editions(REPO)
    assert not stale, "stale editions (run `make editions`):\n" + "\n\n".join(stale)


@pytest.mark.slow
def test_the_generator_writes_the_same_bytes_in_another_process_and_hash_seed(tmp_path):
    # run on a copy of what the editions are made from, so the checkout is not written
    for name in ("_config.yml", "book"):
        subprocess.run(["cp", "-r", str(REPO / name), str(tmp_path)], check=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "bookbuild.editions",
            "--root",
            str(tmp_path),
        ],
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        check=True,
        capture_output=True,
        timeout=600,
    )
    for kind in ("colab", "student"):
        for source in SOURCES:
            fresh = (tmp_path / "book" / kind / source.name).read_bytes()
            assert fresh == (REPO / "book" / kind / source.name).read_bytes(), (
                source.name
            )


@pytest.mark.parametrize("kind", ["colab", "student"])
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_an_edition_has_no_myst_no_outputs_and_no_test_machinery(kind, source):
    nb = edition(kind, source)
    for cell in nb.cells:
        assert not MYST.search(cell.source), (cell.cell_type, MYST.search(cell.source))
        assert "tags" not in cell.metadata and "tolerance" not in cell.metadata
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    assert "{glue" not in all_text(nb) and "{term}" not in all_text(nb)
    ids = [cell.id for cell in nb.cells]
    assert len(ids) == len(set(ids)), (
        "cell ids repeat (nbformat would replace one at random)"
    )


def test_the_install_is_the_release_that_config_and_readme_name():
    repo = CONFIG["repository"]["url"]
    owner_name = repo.removeprefix("https://github.com/")
    readme = (REPO / "README.md").read_text()
    pinned = f'%pip install -q "bertflow_mini @ git+{repo}@{TAG}"'
    for kind in ("colab", "student"):
        for source in SOURCES:
            first = next(
                c for c in edition(kind, source).cells if c.cell_type == "code"
            )
            assert pinned in first.source, (kind, source.name)
            link = f"colab.research.google.com/github/{owner_name}/blob/{TAG}/book/{kind}/{source.name}"
            assert link in readme, f"README has no Colab link {link}"
    # every Colab link of the README opens a committed edition at the release
    for owner, ref, path in re.findall(
        r"colab\.research\.google\.com/github/([\w-]+/[\w.-]+)/blob/([^/]+)/(\S+?\.ipynb)",
        readme,
    ):
        assert (owner, ref) == (owner_name, TAG) and (REPO / path).exists(), path
    assert CONFIG["html"]["baseurl"] in readme  # the rendered book's address, said once


def first_code(nb: nbformat.NotebookNode) -> str:
    return next(c.source for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("kind", ["colab", "student"])
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_an_editions_set_up_cell_is_the_chapters_with_only_its_install_pinned(
    kind, source
):
    """The set-up cell calls ``bf.setup`` as the chapter does (the book's model unless the reader
    names another); the generator changes its install line and nothing else."""
    pinned = (
        f'%pip install -q "bertflow_mini @ git+{CONFIG["repository"]["url"]}@{TAG}"'
    )
    ours = first_code(nbformat.read(source, as_version=4)).splitlines()
    theirs = first_code(edition(kind, source)).splitlines()
    assert len(ours) == len(theirs)
    changed = [(a, b) for a, b in zip(ours, theirs) if a != b]
    assert len(changed) == 1, changed
    (was, now), *_ = changed
    assert "%pip install" in was and now.strip() == pinned
    calls = [line for line in ours if "bf.setup(" in line]
    assert calls == [line for line in theirs if "bf.setup(" in line]
    if source.name[:2].isdigit():  # a chapter runs a model; the results page does not
        assert calls, f"{source.name}: no bf.setup() in the set-up cell"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_a_colab_edition_adds_no_cell_but_its_opening_note(source):
    """Every check behind the text prints its note under its own cell, as in the book: the
    edition has no hidden cell of its own that gathers the notes and no closing section that
    sums them up, only the chapter's cells, in order, and the note after the title."""
    chapter, colab = nbformat.read(source, as_version=4), edition("colab", source)
    theirs = {c.id for c in chapter.cells}

    def ids(nb: nbformat.NotebookNode, kind: str) -> list[str]:
        return [c.id for c in nb.cells if c.cell_type == kind]

    assert ids(colab, "code") == ids(chapter, "code")
    added = [i for i, c in enumerate(colab.cells) if c.id not in theirs]
    assert added == [1] and colab.cells[1].cell_type == "markdown"
    kept = [i for i in ids(colab, "markdown") if i in theirs]
    assert kept == [i for i in ids(chapter, "markdown") if i in kept]
    headings = re.compile(r"^#{1,6}\s", re.M)
    assert len(headings.findall(all_text(colab, "markdown"))) == len(
        headings.findall(all_text(chapter, "markdown"))
    )


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_the_opening_note_says_how_to_run_the_papers_model_where_a_model_runs(source):
    from bertflow_mini.encoders.names import BOOK_MODEL, PAPER_MODEL

    note = edition("colab", source).cells[1].source
    switch = f'`bf.setup("{PAPER_MODEL}")`'
    if "bf.setup(" in all_text(nbformat.read(source, as_version=4), "code"):
        assert f"`{BOOK_MODEL}`" in note and switch in note
    else:
        assert switch not in note


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_hidden_cells_are_folded_colab_form_cells(source):
    chapter = nbformat.read(source, as_version=4)
    hidden = [
        c
        for c in chapter.cells
        if c.cell_type == "code"
        and {"remove-cell", "hide-cell", "hide-input"} & tags(c)
    ]
    forms = [
        c
        for c in edition("colab", source).cells
        if c.metadata.get("cellView") == "form"
    ]
    assert all(c.source.startswith("# @title ") for c in forms)
    assert all(c.metadata["jupyter"]["source_hidden"] for c in forms)
    assert len(forms) == len(hidden)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_a_pointer_to_a_solution_cell_names_its_tick_box(source):
    # the HTML book's "(click to show)" opens a collapsed cell; in Colab a solution's cell
    # is a form cell that prints only once its box is ticked, so the pointer says so
    chapter = json.loads(source.read_text())
    section = exercise_section(chapter)
    if section is None:
        pytest.skip("no exercises")
    text = all_text(edition("colab", source), "markdown")
    start = re.search(r"^#+\s*Exercises", text, re.M)
    in_exercises = text[start.start() :] if start else ""
    pointers = section["text"].count("(click to show)")
    assert in_exercises.count("tick its *show_solution* box and run it") == pointers
    assert "*Show code* opens it)" not in in_exercises


def solutions(source: Path) -> tuple[list[str], list[str]]:
    """A chapter's solution prose (plain lines of its Solution dropdowns, which any rendering
    keeps word for word) and its solution cells' own code lines, read with markdown-it."""
    chapter = json.loads(source.read_text())
    section = exercise_section(chapter)
    elsewhere = "\n".join(
        "".join(c["source"]) for c in chapter["cells"] if c not in section["code"]
    )
    prose = [
        line.strip()
        for info, content in directive_fences(section["text"])
        if re.match(r"\{dropdown\}\s+Solution", info)
        for line in content.splitlines()
        if len(line.strip()) > 30 and not re.search(r"[{`$\[\]()]", line)
    ]
    code = [
        line
        for c in section["code"]
        if "hide-cell" in tags(c)
        for line in "".join(c["source"]).splitlines()
        if len(line.strip()) > 20
        and not line.lstrip().startswith("#")
        and line not in elsewhere  # the solution's own code, not a line it shares
    ]
    return prose, code


@pytest.mark.parametrize("source", SOURCES[:-1], ids=lambda p: p.stem)
def test_a_student_edition_keeps_every_exercise_and_self_check_and_no_solution(source):
    prose, code = solutions(source)
    assert prose and code, "no solution found to look for: the oracle is blind"
    student, colab = edition("student", source), edition("colab", source)
    student_text, colab_text = all_text(student), all_text(colab)
    for line in prose + code:
        assert line in colab_text  # the probe finds solutions where they are...
        assert line not in student_text, f"solution in the student edition: {line!r}"
    section = exercise_section(json.loads(source.read_text()))["text"]
    for heading in re.findall(r"^\*\*\d+ \([^)]*\)\.\*\*", section, re.M):
        assert heading in all_text(student, "markdown"), heading
    answers = all_text(student, "code")
    for check in re.findall(r"ch\.check\(\"[^\"]+\",[^`]*\)", section):
        assert check in all_text(student, "markdown") and f"# {check}" in answers


# ----------------------------------------------------------------------------- browser
def nbconvert_html(notebook: Path, out: Path) -> Path:
    """The notebook as nbconvert's lab template renders it (Markdown as Jupyter renders it), with
    MathJax 3 from sphinx-mathjax-offline configured for ``$``/``$$`` as JupyterLab does."""
    from nbconvert import HTMLExporter

    mathjax = next(
        Path(sys.prefix).glob(
            "lib/python*/site-packages/sphinx-mathjax-offline/static/mathjax/tex-chtml.js"
        )
    ).as_uri()
    config = (
        "<script>window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']], "
        "displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']], processEscapes: true, "
        "processEnvironments: true}};</script>"
    )
    exporter = HTMLExporter(template_name="lab", mathjax_url=mathjax)
    body, _ = exporter.from_notebook_node(nbformat.read(notebook, as_version=4))
    script = f'<script src="{mathjax}">'
    assert script in body, (
        "nbconvert's template no longer loads MathJax from mathjax_url"
    )
    out.write_text(body.replace(script, config + script), "utf-8")
    return out


#: Text that must not be visible on a rendered page outside code: MyST, raw HTML, unrendered math.
RAW = re.compile(
    r"\{[a-z:-]+\}`|```|:::|</?(details|summary|blockquote|sup)\b|\$[^$\s][^$]*\$|\\(frac|mathbb|lVert|begin)\b"
)


@pytest.mark.html
@pytest.mark.browser
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_a_colab_edition_renders_clean_in_a_browser(browser, source, tmp_path):
    page = nbconvert_html(REPO / "book" / "colab" / source.name, tmp_path / "page.html")
    browser.get(page.as_uri())
    browser.set_script_timeout(120)
    browser.execute_async_script(
        "const done = arguments[0]; const wait = () => (window.MathJax && MathJax.startup"
        " && MathJax.startup.promise) ? MathJax.startup.promise.then(() => done(true))"
        " : setTimeout(wait, 100); wait();"
    )
    details = browser.execute_script(
        "return [...document.querySelectorAll('.jp-MarkdownCell details')].map(d => d.open)"
    )
    assert details.count(True) == 0, f"{details.count(True)} <details> open by default"
    # what a reader sees: the markdown cells, every <details> opened, code left out
    browser.execute_script(
        "document.querySelectorAll('details').forEach(d => d.open = true)"
    )
    text = browser.execute_script(
        "const cells = [...document.querySelectorAll('.jp-MarkdownCell .jp-RenderedHTMLCommon')];"
        "return cells.map(c => { const k = c.cloneNode(true);"
        " k.querySelectorAll('pre, code, mjx-container').forEach(e => e.remove());"
        " return k.innerText; }).join('\\n');"
    )
    raw = [m.group(0) for m in RAW.finditer(text)]
    assert not raw, f"{source.name}: raw syntax visible: {sorted(set(raw))[:5]}"
    errors = browser.execute_script(
        "return document.querySelectorAll('mjx-merror').length"
    )
    formulas = browser.execute_script(
        "return document.querySelectorAll('.jp-MarkdownCell mjx-container').length"
    )
    # a page whose prose has TeX shows it typeset; one without shows none
    has_tex = "$" in all_text(nbformat.read(source, as_version=4), "markdown")
    assert errors == 0 and (formulas > 0) == has_tex, (
        f"{formulas} formulas, {errors} MathJax errors"
    )


SOLUTION = """import matplotlib.pyplot as plt
import pandas as pd
x = 6 * 7
print("the answer:", x)
plt.plot([0, 1], [x, 0])
pd.DataFrame({"answer": [x]})"""


def run_in_ipython(source: str) -> tuple[str, dict, int]:
    """``source`` run as a notebook cell in IPython: everything it showed (printed text, the
    text of what it displayed, its last expression's value), its namespace, its open figures."""
    import matplotlib
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    matplotlib.use("Agg")
    plt.close("all")
    shell = InteractiveShell.instance()
    shell.user_ns.update(bf=bertflow_mini)
    with capture_output() as out:
        result = shell.run_cell(source, store_history=True)
    result.raise_error()
    # a terminal shell prints the last expression's value after "Out[n]: "; a kernel displays it
    printed = re.sub(r"Out\[\d+\]: ", "", out.stdout)
    seen = printed + "".join(o.data["text/plain"] + "\n" for o in out.outputs)
    figures = len(plt.get_fignums())
    plt.close("all")
    return seen, dict(shell.user_ns), figures


def test_a_colab_solution_runs_on_run_all_but_shows_its_answer_only_when_ticked():
    from bookbuild.colab_edition import shown_on_request

    seen, _, figures = run_in_ipython(SOLUTION)
    assert "the answer: 42" in seen and "answer\n0      42" in seen and figures == 1
    wrapped = shown_on_request(SOLUTION)
    assert wrapped.startswith('show_solution = False  # @param {type:"boolean"}\n')
    # Run all: the box unticked computes what later cells read and shows nothing
    nothing, namespace, no_figure = run_in_ipython(wrapped)
    assert (nothing, no_figure) == ("", 0) and namespace["x"] == 42
    # ticked: what the chapter's cell shows, its last expression included
    ticked = run_in_ipython(wrapped.replace("= False", "= True", 1))
    assert ticked[0].split() == seen.split() and ticked[2] == 1
    # the chapter's code itself is unchanged (it stays formatted as the chapter's is)
    assert wrapped.endswith("\n" + SOLUTION)
