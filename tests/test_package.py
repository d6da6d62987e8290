"""The package's map: ``bertflow_mini/__init__.py`` names every module, and only modules that exist."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import bertflow_mini

PACKAGE = Path(bertflow_mini.__file__).parent


def test_the_package_docstring_indexes_every_public_module():
    modules = {p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_")}
    doc = bertflow_mini.__doc__
    listed = set(re.findall(r"^    (\w+)\s", doc, re.M)) | set(re.findall(r"``(\w+)``", doc))
    assert modules - listed == set(), f"modules missing from bertflow_mini/__init__.py's index: {sorted(modules - listed)}"
    indexed = set(re.findall(r"^    (\w+)\s", doc, re.M))
    assert indexed - modules == set(), f"the index names modules that do not exist: {sorted(indexed - modules)}"


def test_version_agrees_with_pyproject():
    text = (PACKAGE.parent / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == bertflow_mini.__version__


def _no_magic(line: str) -> str:
    """An IPython ``%``/``!`` line becomes ``pass`` at its indentation; other lines stay."""
    stripped = line.lstrip()
    return line[: len(line) - len(stripped)] + "pass" if stripped.startswith(("%", "!")) else line


def _notebook_code(out: Path) -> Path:
    """Every chapter's code cells as one Python file (IPython lines made ``pass``), so a
    dead-code finder sees what the chapters call."""
    import nbformat

    lines = []
    for path in sorted((PACKAGE.parent / "book").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                code = [_no_magic(ln) for ln in cell.source.splitlines()]
                lines += ["def _cell():", *("    " + ln for ln in code), "    pass", ""]
    out.write_text("\n".join(lines))
    return out


def test_nothing_is_dead_code_once_the_chapters_are_counted(tmp_path):
    """vulture over the package, tests, benchmarks and the chapters' code: a function, class or
    variable nothing uses is reported (tests/vulture_whitelist.py names the callers it cannot see)."""
    vulture = pytest.importorskip("vulture")
    root = PACKAGE.parent
    chapters = _notebook_code(tmp_path / "chapters.py")
    finder = vulture.Vulture()
    finder.scavenge([str(root / d) for d in ("bertflow_mini", "tests", "benchmarks")] + [str(chapters)])
    assert finder.exit_code == 0, "vulture could not read a file (its message is on stderr)"
    dead = [
        f"{item.filename}:{item.first_lineno}: {item.message}"
        for item in finder.get_unused_code(min_confidence=60)
        if Path(item.filename) != chapters
    ]
    assert dead == [], "unused (remove it, or name its caller in tests/vulture_whitelist.py):\n" + "\n".join(dead)
