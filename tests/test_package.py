"""The package's version is the one pyproject.toml declares; ``bf.NAME`` is what its stub says, for
Python and for a type checker alike, and importing the package stays cheap."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import bertflow_mini

PACKAGE = Path(bertflow_mini.__file__).parent


def test_version_agrees_with_pyproject():
    text = (PACKAGE.parent / "pyproject.toml").read_text()
    assert (
        re.search(r'^version = "([^"]+)"', text, re.M).group(1)
        == bertflow_mini.__version__
    )


def _stub_names() -> dict[str, str]:
    """name → module, read from ``__init__.pyi`` by Python's own parser."""
    tree = ast.parse((PACKAGE / "__init__.pyi").read_text())
    return {
        alias.asname or alias.name: f"bertflow_mini.{node.module}"
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_every_name_of_the_stub_is_the_object_its_module_defines():
    names = _stub_names()
    assert len(names) > 50
    assert sorted(bertflow_mini.__all__) == sorted(names)
    assert set(names) <= set(dir(bertflow_mini))
    for name, module in names.items():
        assert getattr(bertflow_mini, name) is getattr(
            importlib.import_module(module), name
        ), name


def test_importing_the_package_imports_no_heavy_library():
    code = (
        "import sys, bertflow_mini as bf; bf.__version__; "
        "print(sorted(m for m in ('torch', 'transformers', 'matplotlib', 'pandas') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_type_checker_sees_bf_names_with_their_types(tmp_path):
    from mypy import api

    script = tmp_path / "reader.py"
    script.write_text(
        "import bertflow_mini as bf\n"
        "w: int = bf.Whitening()\n"  # a Whitening is no int: mypy must say so, not see Any
        "s: str = bf.setup\n"
    )
    out, _, status = api.run(
        [
            str(script),
            "--no-incremental",
            "--follow-imports=silent",
            "--ignore-missing-imports",
        ]
    )
    assert status == 1, out
    assert '"Whitening", variable has type "int"' in out, out
    assert 'variable has type "str"' in out, out
