"""What a lecturer planning a unit needs from the chapters, read from the chapters themselves.

The instructor's page (``book/teaching.ipynb``) prints, per chapter, how many words of prose it
holds (:func:`prose_words`: the main line, the collapsed "deeper" blocks, the exercises, their
solutions), every exercise with its kind, its self-check and what it suits (:func:`exercise_table`),
and where each student edition opens in Colab (:func:`student_links`). Counting from the notebooks,
rather than writing the numbers down, keeps the page right when a chapter changes: re-run it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from os import PathLike
from pathlib import Path

import pandas as pd

#: A directive's opening fence (``` ```{dropdown} Title``` or ``:::{admonition}``), or its end.
FENCE = re.compile(r"^(`{3,}|:{3,})\{([\w-]+)\}\s*(.*)$")
#: An exercise's bold label, ``**3 (code · homework).**``: its number, its kind and, after the
#: middle dot, what the chapter's author says it suits.
LABEL = re.compile(r"^\*\*(\d+)\s*\(([^)]*)\)[^*\n]*\*\*", re.M)
#: What an exercise can suit: a quiz question, homework (or a lab), a discussion.
SUITS = ("quiz", "homework", "discussion")
#: A self-check the exercise names: ``ch.check("2.3", …)``.
CHECK = re.compile(r"ch\.check\(\"([^\"]+)\"")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
#: Roles such as {term}`text <target>`: the text a reader sees.
ROLE = re.compile(r"\{[\w:-]+\}`([^`<]*?)\s*(?:<[^`]*>)?`")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
CODE = re.compile(r"`[^`\n]+`")
PARTS = ("main line", "deeper blocks", "exercises", "solutions")


def words(markdown: str) -> int:
    """Words a reader reads in ``markdown``: a formula, a role, a link or inline code counts as
    one word; directive fences and their ``:option:`` lines count as none."""
    kept = [
        line
        for line in markdown.splitlines()
        if not FENCE.match(line.strip())
        and not re.fullmatch(r"(`{3,}|:{3,})|:[\w-]+:.*", line.strip())
    ]
    text = MATH.sub(" x ", "\n".join(kept))
    text = ROLE.sub(lambda m: m.group(1) or "x", text)
    text = CODE.sub(" x ", LINK.sub(r"\1", text))
    return sum(1 for token in text.split() if re.search(r"\w", token))


def _markdown(path: Path) -> str:
    try:
        cells = json.loads(path.read_text("utf-8"))["cells"]
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: no such chapter; run the instructor's page from the book/ folder "
            "of a checkout, where the chapters are"
        ) from None
    return "\n\n".join(
        "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
    )


def _parts(markdown: str, in_exercises: bool = False) -> dict[str, list[str]]:
    """The chapter's prose split into :data:`PARTS` (References and after left out): a
    directive's content goes to "deeper blocks" (before the Exercises) or "solutions" (a
    dropdown titled Solution or Hints, or a ``{solution}``, in the Exercises).
    ``in_exercises``: ``markdown`` starts inside the Exercises section."""
    parts: dict[str, list[str]] = {p: [] for p in PARTS}
    open_fences: list[tuple[str, str]] = []  # (fence, where its content goes)
    for line in markdown.splitlines():
        stripped = line.strip()
        if open_fences and stripped == open_fences[-1][0]:
            open_fences.pop()
            continue
        if fence := FENCE.match(stripped):
            name, title = fence.group(2), fence.group(3)
            solution = name == "solution" or re.match(r"(Solution|Hints)\b", title)
            if open_fences:
                where = open_fences[-1][1]
            elif in_exercises:
                where = "solutions" if solution else "exercises"
            else:
                where = "main line" if name == "admonition" else "deeper blocks"
            open_fences.append((fence.group(1), where))
            parts[where].append(title)
            continue
        if not open_fences and (heading := HEADING.match(stripped)):
            if re.match(r"References\b", heading.group(2)):
                break
            if re.match(r"Exercises\b", heading.group(2)):
                in_exercises = True
        if open_fences:
            parts[open_fences[-1][1]].append(line)
        else:
            parts["exercises" if in_exercises else "main line"].append(line)
    return parts


def _chapter(path: Path) -> str:
    number = path.name[:2]
    if not number.isdigit():
        raise ValueError(
            f"{path.name}: a chapter's file name starts with its two digits"
        )
    return number


def prose_words(paths: Iterable[str | PathLike]) -> pd.DataFrame:
    """Words of prose per chapter (index: its two digits), in the columns of :data:`PARTS`:
    the main line (admonitions included), the collapsed blocks before the Exercises, the
    exercises' statements and their solutions. Code cells and outputs are not counted."""
    rows = {}
    for path in map(Path, paths):
        parts = _parts(_markdown(path))
        rows[_chapter(path)] = {p: words("\n".join(parts[p])) for p in PARTS}
    if not rows:
        raise ValueError("no chapter given")
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("chapter")


def _label(path: Path, number: str, label: str) -> tuple[str, str]:
    """An exercise label's kind and what it suits: ``"pen and paper · quiz"``."""
    kind, dot, suits = (part.strip() for part in label.partition("·"))
    if not dot or suits not in SUITS:
        raise ValueError(
            f"{path.name}: exercise {number}'s label ({label}) does not say what it suits: "
            f"write '**{number} ({kind or 'code'} · homework).**', one of {', '.join(SUITS)}"
        )
    return kind, suits


def exercise_table(paths: Iterable[str | PathLike]) -> pd.DataFrame:
    """Every exercise of the chapters, one row each (index: chapter, exercise): its kind and what
    it suits, as its label states them (``**2 (pen and paper · quiz).**``: kind ``pen and
    paper``, ``code`` or ``open``; suits one of :data:`SUITS`), the self-checks it names
    (``ch.check("2.3", …)``; "–" for none), and its statement's and its solution's words. A
    chapter with an Exercises section but no labelled exercise, or a label that does not say
    what the exercise suits, is an error: the labels are what this table reads."""
    rows = {}
    for path in map(Path, paths):
        markdown = _markdown(path)
        start = re.search(r"^#{1,6}\s+Exercises\b", markdown, re.M)
        if start is None:
            continue
        section = markdown[start.start() :]
        end = re.search(r"^#{1,6}\s+References\b", section, re.M)
        section = section[: end.start()] if end else section
        labels = list(LABEL.finditer(section))
        if not labels:
            raise ValueError(
                f"{path.name}: its Exercises have no label such as '**1 (code).**'"
            )
        for label, after in zip(labels, [*labels[1:], None], strict=True):
            block = section[label.start() : after.start() if after else None]
            parts = _parts(block, in_exercises=True)
            statement = words("\n".join(parts["exercises"]))
            solution = words("\n".join(parts["solutions"]))
            kind, suits = _label(path, label.group(1), label.group(2))
            rows[(_chapter(path), int(label.group(1)))] = {
                "kind": kind,
                "self-check": ", ".join(dict.fromkeys(CHECK.findall(block))) or "–",
                "statement (words)": statement,
                "solution (words)": solution,
                "suits": suits,
            }
    table = pd.DataFrame.from_dict(rows, orient="index")
    return table.rename_axis(["chapter", "exercise"])


def student_links(root: str | PathLike) -> pd.Series:
    """Where each student edition opens in Colab (index: the notebook's name), at the release
    the editions install: the links the README lists."""
    # a build tool's module: it needs the book extras (PyYAML, nbformat), as this page does
    from bookbuild import editions

    root = Path(root)
    site = editions.book_site(root)
    return pd.Series(
        {
            path.stem: site.colab(path.name, "student")
            for path in editions.sources(root)
        },
        name="student edition in Colab",
    )
