"""Build tool: the Colab and student editions of every chapter, generated from ``book/*.ipynb``.

``python -m bertflow_mini.chapters.editions`` (``make editions``) writes, for each chapter and the
results page, ``book/colab/<name>.ipynb`` and ``book/student/<name>.ipynb``
(:mod:`bertflow_mini.chapters.colab_edition` builds each); ``--check`` writes nothing and fails
when a committed edition differs from what the chapters generate now. Run from the repository's
root; needs the ``book`` extras (``nbformat``, ``myst-nb``, ``pybtex``, ``pyyaml``). The
editions link into the rendered book at ``html.baseurl`` of ``_config.yml`` and install the
release ``v<__version__>`` of its ``repository.url``. Same chapters in, byte-identical editions out.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import tempfile
from pathlib import Path

import nbformat
import yaml

import bertflow_mini
from bertflow_mini.chapters.colab_edition import HEADING, build_edition
from bertflow_mini.chapters.myst_markdown import FENCE, BookSite, Reference

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
    args = parser.parse_args(argv)
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
