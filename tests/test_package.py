"""The package's map: ``bertflow_mini/__init__.py`` names every module, and only modules that exist."""
from __future__ import annotations

import re
from pathlib import Path

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
