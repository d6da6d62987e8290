"""The package's map: ``bertflow_mini/__init__.py`` names every module, and only modules that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import bertflow_mini

PACKAGE = Path(bertflow_mini.__file__).parent


#: Each folder's layer, as its ``__init__`` docstring states it. The layers themselves (no upward
#: import, no circle) are import-linter's contracts in pyproject.toml, run by ``make lint``.
LAYERS = {
    "data": 1,
    "postprocess": 1,
    "encoders": 2,
    "evaluation": 3,
    "geometry": 4,
    "chapters": 5,
}


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports, at the top or inside a function (grimp's graph,
    the one import-linter checks)."""
    import grimp

    graph = grimp.build_graph("bertflow_mini")
    return {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}


def _folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def _declared_imports(folder: str, doc: str) -> set[str]:
    """The layers a folder's docstring says it may import: its paragraph that begins "Imports" or
    "May import" names them (``bertflow_mini.data``, …) or says "every layer below"."""
    found = re.search(r"^(?:Imports|May import)\b(.*?)(?:\n\n|\Z)", doc, re.M | re.S)
    assert found, f"bertflow_mini/{folder}/__init__.py does not say what it may import"
    if "every layer below" in found.group(1):
        return {name for name, layer in LAYERS.items() if layer < LAYERS[folder]}
    return set(re.findall(r"bertflow_mini\.([a-z]\w*)", found.group(1)))


def test_every_folder_says_what_it_holds_and_what_it_may_import():
    import importlib

    for folder in LAYERS:
        doc = importlib.import_module(f"bertflow_mini.{folder}").__doc__ or ""
        assert f"Layer {LAYERS[folder]}" in doc, folder
        modules = {
            p.stem for p in (PACKAGE / folder).glob("*.py") if p.stem != "__init__"
        }
        missing = {m for m in modules if f"``{m}``" not in doc}
        assert not missing, (
            f"bertflow_mini/{folder}/__init__.py does not describe {sorted(missing)}"
        )
        allowed = _declared_imports(folder, doc)
        used = {
            _folder(d)
            for m, deps in import_graph().items()
            if m.startswith(f"bertflow_mini.{folder}")
            for d in deps
            if _folder(d) not in (None, folder)
        }
        assert used <= allowed, (
            f"bertflow_mini/{folder} imports {sorted(used - allowed)}, its docstring says {sorted(allowed)}"
        )


def test_version_agrees_with_pyproject():
    text = (PACKAGE.parent / "pyproject.toml").read_text()
    assert (
        re.search(r'^version = "([^"]+)"', text, re.M).group(1)
        == bertflow_mini.__version__
    )


def _no_magic(line: str) -> str:
    """An IPython ``%``/``!`` line becomes ``pass`` at its indentation; other lines stay."""
    stripped = line.lstrip()
    return (
        line[: len(line) - len(stripped)] + "pass"
        if stripped.startswith(("%", "!"))
        else line
    )


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
    """vulture over the package, tests, benchmarks, experiments and the chapters' code: a function, class or
    variable nothing uses is reported (tests/vulture_whitelist.py names the callers it cannot see)."""
    vulture = pytest.importorskip("vulture")
    root = PACKAGE.parent
    chapters = _notebook_code(tmp_path / "chapters.py")
    finder = vulture.Vulture()
    finder.scavenge(
        [str(root / d) for d in ("bertflow_mini", "tests", "benchmarks", "experiments")]
        + [str(chapters)]
    )
    assert finder.exit_code == 0, (
        "vulture could not read a file (its message is on stderr)"
    )
    dead = [
        f"{item.filename}:{item.first_lineno}: {item.message}"
        for item in finder.get_unused_code(min_confidence=60)
        if Path(item.filename) != chapters
    ]
    assert dead == [], (
        "unused (remove it, or name its caller in tests/vulture_whitelist.py):\n"
        + "\n".join(dead)
    )
