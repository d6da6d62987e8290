"""Build tool: the Colab and student editions of every chapter, generated from ``book/*.ipynb``.

``python -m bookbuild.editions`` (``make editions``) writes, for each chapter and the
results page, ``book/colab/<name>.ipynb`` and ``book/student/<name>.ipynb``
(:mod:`bookbuild.colab_edition` builds each); ``--check`` writes nothing and fails
when a committed edition differs from what the chapters generate now. ``--student-book OUT``
(``make student-html``) writes the sources of the HTML book without its solutions into ``OUT``
instead (:func:`write_student_book`), for ``jupyter-book build OUT``. Run from the repository's
root; needs the ``book`` extras (``nbformat``, ``myst-nb``, ``pybtex``, ``pyyaml``). The
editions link into the rendered book at ``html.baseurl`` of ``_config.yml`` and install the
release ``v<__version__>`` of its ``repository.url``. Same chapters in, byte-identical editions out.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import re
import shutil
import sys
import tempfile
from pathlib import Path, PurePosixPath

import nbformat
import yaml

import bertflow_mini
from bookbuild.colab_edition import (
    HEADING,
    SOLUTION_MARKERS,
    _Chapter,
    build_edition,
    is_solution_cell,
)
from bookbuild.myst_markdown import (
    DIRECTIVE,
    FENCE,
    OPTION,
    BookSite,
    Reference,
    closing_fence,
    is_solution_directive,
)

EDITIONS = ("colab", "student")


def book_site(root: Path) -> BookSite:
    """The rendered book the editions link into, read from ``_config.yml`` and ``book/``."""
    config = yaml.safe_load((root / "_config.yml").read_text("utf-8"))
    baseurl = config["html"]["baseurl"].rstrip("/") + "/"
    macros = (
        config["sphinx"]["config"]
        .get("mathjax3_config", {})
        .get("tex", {})
        .get("macros", {})
    )
    titles = {}
    for path in sorted((root / "book").glob("*.md")) + sources(root):
        text = path.read_text("utf-8")
        if path.suffix == ".ipynb":
            text = "".join(nbformat.reads(text, as_version=4).cells[0].source)
        if m := HEADING.search(text):
            titles[f"book/{path.stem}"] = m.group(2)
    return BookSite(
        baseurl=baseurl,
        repository=config["repository"]["url"].rstrip("/"),
        tag=release_tag(),
        terms=load_glossary(root / "book" / "glossary.md"),
        references=load_references(root / config["bibtex_bibfiles"][0]),
        titles=titles,
        macros={k: v for k, v in macros.items() if isinstance(v, str)},
    )


def load_glossary(path: Path) -> dict[str, str]:
    """The terms a ``{glossary}`` block in ``path`` defines, by their lower-case spelling."""
    terms: dict[str, str] = {}
    inside = False
    for line in path.read_text("utf-8").splitlines():
        if FENCE.match(line):
            inside = "{glossary}" in line
        elif (
            inside
            and line.strip()
            and not line[0].isspace()
            and not line.startswith(":")
        ):
            term = " ".join(
                re.sub(r"[`*]", "", line).split()
            )  # the text the page shows
            terms[term.lower()] = term
    return terms


def load_references(path: Path) -> dict[str, Reference]:
    """Every entry of a BibTeX file, labelled as the book's author-year citations label it."""
    from pybtex.database import parse_file
    from pybtex.richtext import Text

    def plain(latex: str) -> str:
        return " ".join(Text.from_latex(latex).render_as("text").split())

    refs = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        last = [plain(" ".join(p.last_names)) for p in people]
        label = (
            f"{last[0]} et al."
            if len(last) > 2
            else " and ".join(last) or plain(entry.fields.get("title", key))
        )
        names = [
            plain(" ".join(p.first_names + p.middle_names + p.last_names))
            for p in people
        ]
        authors = (
            ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]
        )
        f = entry.fields
        venue = (
            f.get("booktitle")
            or f.get("journal")
            or f.get("publisher")
            or f.get("note", "")
        )
        year = f.get("year", "n.d.")
        text = f"{authors} ({year}). {plain(f.get('title', ''))}." + (
            f" *{plain(venue)}*." if venue else ""
        )
        arxiv = re.search(r"arXiv:\s*(\d{4}\.\d{4,5})", " ".join(f.values()))
        url = (
            f"https://doi.org/{f['doi']}"
            if "doi" in f
            else f.get("url")
            or (f"https://arxiv.org/abs/{arxiv.group(1)}" if arxiv else None)
        )
        refs[key] = Reference(label=label, year=year, text=text, url=url)
    return refs


def release_tag() -> str:
    """The tag the editions install and link to: ``v`` and the package's version."""
    return f"v{bertflow_mini.__version__}"


def sources(root: Path) -> list[Path]:
    """The notebooks that get editions: the chapters, then the results page."""
    return sorted((root / "book").glob("[0-9][0-9]-*.ipynb")) + [
        root / "book" / "measurements.ipynb"
    ]


def render(path: Path, root: Path, site: BookSite, edition: str) -> str:
    """The text of ``path``'s edition, exactly as it is written to disk."""
    nb = nbformat.read(path, as_version=4)
    docname = path.relative_to(root).with_suffix("").as_posix()
    built = build_edition(nb, docname, site, student=edition == "student")
    nbformat.validate(built)
    return nbformat.writes(built) + "\n"


def write_editions(
    root: Path, out: Path | None = None, editions=EDITIONS
) -> list[Path]:
    """Write every edition under ``out`` (default: ``root``), as ``book/<edition>/<name>.ipynb``."""
    out = out or root
    site = book_site(root)
    written = []
    for edition in editions:
        folder = out / "book" / edition
        folder.mkdir(parents=True, exist_ok=True)
        for path in sources(root):
            target = folder / path.name
            target.write_text(render(path, root, site, edition), "utf-8")
            written.append(target)
    return written


def stale_editions(root: Path) -> list[str]:
    """The committed editions that differ from what the chapters generate now (or are missing),
    each with the first lines of its difference."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = write_editions(root, Path(tmp))
        stale = []
        for path in fresh:
            name = path.relative_to(tmp).as_posix()
            committed = root / name
            old = committed.read_text("utf-8") if committed.exists() else ""
            new = path.read_text("utf-8")
            if old != new:
                diff = difflib.unified_diff(
                    old.splitlines(),
                    new.splitlines(),
                    "committed",
                    "generated",
                    n=0,
                    lineterm="",
                )
                stale.append(name + "\n" + "\n".join(list(diff)[2:8]))
        extra = [
            p.relative_to(root).as_posix()
            for e in EDITIONS
            for p in sorted((root / "book" / e).glob("*.ipynb"))
            if not (Path(tmp) / p.relative_to(root)).exists()
        ]
    return stale + [f"{name}\n(no chapter generates it any more)" for name in extra]


# ----------------------------------------------------------------------------- the student book
#: The page for lecturers, left out of the student book (with the lines that link to it).
TEACHERS_PAGE = "book/teaching"
#: Where the student book's sources record that they are one (a folder holding it may be rewritten).
STUDENT_MARK = ".student-book"


def cut_solution_directives(text: str) -> str:
    """A markdown cell's MyST without its solution directives (:func:`~bertflow_mini.chapters.
    myst_markdown.is_solution_directive`: ``{solution}``, dropdowns titled "Solution…" or
    "Answer…"), found as the Colab editions find them, nested ones included; every other line is
    kept as it is. A blank line left doubled by a cut goes with it."""
    lines = text.split("\n")
    out = _cut(lines)
    while out and not out[-1].strip() and lines[-1].strip():  # the cut ended the cell
        out.pop()
    while out and not out[0].strip() and lines[0].strip():  # the cut opened it
        out.pop(0)
    return "\n".join(out)


def _cut(lines: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        fence, info = m.group(2), m.group(3)
        j = closing_fence(lines, i, fence)
        directive = DIRECTIVE.match(info)
        body = lines[i + 1 : j]
        options = {}
        for line in body:
            if not (option := OPTION.match(line.strip())):
                break
            options[option.group(1)] = option.group(2)
        if directive and is_solution_directive(
            directive.group(1), directive.group(2), options
        ):
            after = lines[j + 1] if j + 1 < len(lines) else ""
            if out and not out[-1].strip() and not after.strip():
                out.pop()  # the blank line before it, so that one blank line stays
        elif directive:  # a solution may sit inside another directive
            out += [lines[i], *_cut(body), *lines[j : j + 1]]
        else:  # a code block: verbatim
            out += lines[i : j + 1]
        i = j + 1
    return out


def strip_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a page's notebook without its solutions, for the student book: the code cells
    the student editions leave out (:func:`~bookbuild.colab_edition.
    is_solution_cell`: tagged ``solution``, or ``hide-cell``/``remove-cell`` in the Exercises
    section) are gone; markdown cells lose their solution directives
    (:func:`cut_solution_directives`; a cell left empty goes); nbgrader's ``### BEGIN SOLUTION`` …
    ``### END SOLUTION`` lines become ``# YOUR CODE HERE`` and that cell loses its outputs. Every
    other cell, its MyST, metadata and outputs, is kept as it is."""
    out = copy.deepcopy(nb)
    where, cells = _Chapter(), []
    for cell in out.cells:
        if cell.cell_type == "markdown":
            where.read(cell.source)
            cell.source = cut_solution_directives(cell.source)
            if not cell.source.strip():
                continue
        elif is_solution_cell(cell, where.in_exercises):
            continue
        elif cell.cell_type == "code" and SOLUTION_MARKERS.search(cell.source):
            cell.source = SOLUTION_MARKERS.sub("# YOUR CODE HERE\n", cell.source)
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    out.cells = cells
    return out


def _drop_from_toc(toc: dict, docname: str) -> bool:
    """Take ``docname`` out of a Jupyter Book table of contents (and a part it leaves empty);
    whether it was there."""
    found = False
    for key in ("parts", "chapters", "sections"):
        entries = toc.get(key)
        if not isinstance(entries, list):
            continue
        kept = []
        for entry in entries:
            if entry.get("file") == docname:
                found = True
                continue
            found |= _drop_from_toc(entry, docname)
            if key != "parts" or entry.get("chapters") or entry.get("sections"):
                kept.append(entry)
        toc[key] = kept
    return found


def _without_links_to(text: str, name: str) -> str | None:
    """``text`` without the lines that link to the page ``name`` (``teaching``: a Markdown link
    to ``teaching.ipynb`` or ``teaching.md``, or a ``{doc}`` role), each of which must be whole
    sentences (it starts a paragraph or follows a sentence's end, and ends one); None when a
    link to it cannot go that way."""
    link = re.compile(
        rf"\]\((?:\./)?{re.escape(name)}\.(?:ipynb|md)(?:#[^)]*)?\)"
        rf"|\{{doc\}}`[^`]*\b{re.escape(name)}>?`"
    )
    lines, out = text.split("\n"), []
    for line in lines:
        if not link.search(line):
            out.append(line)
            continue
        before = out[-1].rstrip() if out else ""
        if (not before or before.endswith((".", "!", "?"))) and line.rstrip().endswith(
            (".", "!", "?")
        ):
            continue
        return None
    return "\n".join(out)


def write_student_book(root: Path, out: Path) -> Path:
    """Write the sources of the HTML book without its solutions into ``out``, for ``jupyter-book
    build out`` (``make student-html``); return ``out``.

    ``out`` gets ``_config.yml`` (the title marked as the student edition, and each chapter's Colab
    button opening its student edition, ``book/student``), ``_toc.yml``, ``_static/``, every file of
    ``book/`` but the notebooks, the Python files and the generated editions (the pages, the
    bibliography) as they are, and every notebook of ``book/`` through :func:`strip_solutions`.
    The teachers' page (``book/teaching``) is left out, with the lines of other pages that link
    to it, when those lines are whole sentences; otherwise it stays, so that no link breaks.
    ``out`` must be empty, new, or a student book written before (its ``.student-book`` mark):
    then its ``book/`` and ``_static/`` are replaced and its ``_build/`` is kept."""
    root, out = root.resolve(), out.resolve()
    if root.is_relative_to(out) or any(
        out.is_relative_to(root / folder) for folder in ("book", "_static")
    ):
        raise ValueError(f"{out}: the student book cannot be written over the book")
    if out.exists() and any(out.iterdir()) and not (out / STUDENT_MARK).exists():
        raise FileExistsError(
            f"{out} is neither empty nor a student book written before: choose another folder"
        )
    for folder in ("book", "_static"):
        shutil.rmtree(out / folder, ignore_errors=True)
    (out / "book").mkdir(parents=True)
    if (root / "_static").is_dir():
        shutil.copytree(root / "_static", out / "_static")

    pages: dict[str, str] = {}  # book/<name>: the text of every page but the notebooks
    notebooks: dict[str, nbformat.NotebookNode] = {}
    for path in sorted((root / "book").iterdir()):
        if not path.is_file() or path.suffix == ".py":
            continue
        if path.suffix == ".ipynb":
            notebooks[path.name] = strip_solutions(nbformat.read(path, as_version=4))
        else:
            pages[path.name] = path.read_text("utf-8")

    toc = yaml.safe_load((root / "_toc.yml").read_text("utf-8"))
    teachers = PurePosixPath(TEACHERS_PAGE).name
    unlinked = {
        name: _without_links_to(text, teachers)
        for name, text in pages.items()
        if name.endswith(".md")
    }
    linked_from_notebooks = any(
        _without_links_to(cell.source, teachers) != cell.source
        for name, nb in notebooks.items()
        if not name.startswith(f"{teachers}.")
        for cell in nb.cells
        if cell.cell_type == "markdown"
    )
    if not linked_from_notebooks and None not in unlinked.values():
        if _drop_from_toc(toc, TEACHERS_PAGE):
            pages.update({k: v for k, v in unlinked.items() if v is not None})
            notebooks = {
                k: v for k, v in notebooks.items() if not k.startswith(f"{teachers}.")
            }

    for name, text in pages.items():
        if text == (root / "book" / name).read_text("utf-8"):
            shutil.copyfile(root / "book" / name, out / "book" / name)
        else:
            (out / "book" / name).write_text(text, "utf-8")
    for name, nb in notebooks.items():
        (out / "book" / name).write_text(nbformat.writes(nb) + "\n", "utf-8")

    config = yaml.safe_load((root / "_config.yml").read_text("utf-8"))
    config["title"] = f"{config['title']} (student edition)"
    sphinx = config.setdefault("sphinx", {})
    sphinx.setdefault("config", {})["bertflow_colab_edition"] = "student"
    (out / "_config.yml").write_text(
        yaml.safe_dump(config, sort_keys=False, allow_unicode=True), "utf-8"
    )
    (out / "_toc.yml").write_text(
        yaml.safe_dump(toc, sort_keys=False, allow_unicode=True), "utf-8"
    )
    (out / STUDENT_MARK).write_text(
        "Written by python -m bookbuild.editions --student-book\n", "utf-8"
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root", type=Path, default=Path.cwd(), help="the repository's root"
    )
    parser.add_argument(
        "--edition", choices=EDITIONS, action="append", help="only this edition"
    )
    parser.add_argument(
        "--check", action="store_true", help="fail when a committed edition is stale"
    )
    parser.add_argument(
        "--student-book",
        type=Path,
        metavar="OUT",
        help="write the HTML book's sources without solutions into OUT instead",
    )
    args = parser.parse_args(argv)
    if args.student_book:
        print(write_student_book(args.root, args.student_book))
        return 0
    if args.check:
        stale = stale_editions(args.root)
        for entry in stale:
            print(f"stale: {entry}")
        if stale:
            print("regenerate them: make editions")
        return 1 if stale else 0
    for path in write_editions(args.root, editions=args.edition or EDITIONS):
        print(path.relative_to(args.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
