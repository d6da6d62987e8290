"""The package's map: ``bertflow_mini/__init__.py`` names every module, and only modules that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import bertflow_mini

PACKAGE = Path(bertflow_mini.__file__).parent


#: Each folder's layer: a module may import its own layer and the layers below, never above.
LAYERS = {
    "_checks": 0,
    "_device": 0,
    "_io": 0,
    "_progress": 0,
    "_threads": 0,
    "data": 1,
    "postprocess": 1,
    "encoders": 2,
    "evaluation": 3,
    "geometry": 4,
    "chapters": 5,
    "cli": 6,
    "__main__": 6,
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every ``bertflow_mini`` module ``path`` imports, at the top or inside a function."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("bertflow_mini")
        ):
            assert node.level == 0, f"{path}: relative import"
            for alias in (
                node.names
            ):  # "from bertflow_mini.encoders import simcse" imports a module
                sub = f"{node.module}.{alias.name}"
                found.add(
                    sub
                    if (PACKAGE.parent / sub.replace(".", "/"))
                    .with_suffix(".py")
                    .exists()
                    else node.module
                )
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("bertflow_mini")}
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (a package stands for its ``__init__``)."""
    return {_module_name(p): _imports(p) for p in PACKAGE.rglob("*.py")}


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS[parts[1]] if len(parts) > 1 else -1


def test_every_module_sits_in_a_layer_and_imports_no_layer_above_its_own():
    graph = import_graph()
    assert {m.split(".")[1] for m in graph if "." in m} <= set(LAYERS), (
        "a folder or module without a layer"
    )
    upward = [
        (m, d) for m, deps in graph.items() for d in deps if _layer(d) > _layer(m)
    ]
    assert upward == [], f"imports of a higher layer: {upward}"


def test_the_import_graph_has_no_circle():
    graph = import_graph()
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(graph.get(module, ())):
            assert state.get(dep) != 1, f"import circle: {' -> '.join(path + [dep])}"
            if dep not in state:
                visit(dep, path + [dep])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_the_layer_checks_catch_an_upward_import_and_a_circle():
    """The two tests above can fail: an upward import and a circle, planted, are both found."""
    graph = import_graph()
    planted = {
        **graph,
        "bertflow_mini.data.sts": graph["bertflow_mini.data.sts"]
        | {"bertflow_mini.geometry.holes"},
    }
    globals_ = globals()
    real = globals_["import_graph"]
    globals_["import_graph"] = lambda: planted
    try:
        with pytest.raises(AssertionError, match="higher layer"):
            test_every_module_sits_in_a_layer_and_imports_no_layer_above_its_own()
        planted["bertflow_mini.geometry.holes"] = planted[
            "bertflow_mini.geometry.holes"
        ] | {"bertflow_mini.data.sts"}
        with pytest.raises(AssertionError, match="circle"):
            test_the_import_graph_has_no_circle()
    finally:
        globals_["import_graph"] = real


def _declared_imports(folder: str, doc: str) -> set[str]:
    """The layers a folder's docstring says it may import: its paragraph that begins "Imports" or
    "May import" names them (``bertflow_mini.data``, …) or says "every layer below"."""
    found = re.search(r"^(?:Imports|May import)\b(.*?)(?:\n\n|\Z)", doc, re.M | re.S)
    assert found, f"bertflow_mini/{folder}/__init__.py does not say what it may import"
    if "every layer below" in found.group(1):
        return {name for name, layer in LAYERS.items() if 0 < layer < LAYERS[folder]}
    return set(re.findall(r"bertflow_mini\.([a-z]\w*)", found.group(1)))


def test_every_folder_says_what_it_holds_and_what_it_may_import():
    import importlib

    for folder in (
        "data",
        "postprocess",
        "encoders",
        "evaluation",
        "geometry",
        "chapters",
    ):
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
            d.split(".")[1]
            for m, deps in import_graph().items()
            if m.startswith(f"bertflow_mini.{folder}")
            for d in deps
            if _layer(d) > 0 and d.split(".")[1] != folder
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
