"""No checked cell compares a trained number exactly.

A cell tagged ``nbval-check-output`` without a ``tolerance`` is compared by nbval digit for digit.
That is right for what no training moves (fixed arithmetic, shipped data, a verdict), and wrong for
anything the book's model computes: pretrained on another CPU family, its numbers move in the last
printed digit, and the exact check fails (chapter 0's lead table did, moving -26.1 to -26.0).

Which cells read the trained model is followed through each chapter's code, cell by cell, as Python
reads it: a name is *trained* when it is bound in a cell that reads ``MODEL`` (the model name the
chapter set up: ``MODEL = ch.model``) or another trained name. An exact-checked cell that reads a trained name may print no
non-integer number except the constants written in its own source (``< 1e-8``).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from bookbuild.output_check import CHECK_TAG, NUMBER, TOLERANCE_KEY

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted((REPO / "book").glob("*.ipynb"))
#: The name every chapter binds to the model it runs (``MODEL = ch.model``). Not ``ch``, the
#: chapter itself: a cell that only states a claim (``ch.claim(...)``) computes nothing from the
#: model, and the results page, which runs none, has a ``ch`` too.
ROOTS = frozenset({"MODEL"})


def python(source: str) -> ast.Module:
    """A cell's code as IPython runs it (``%pip …`` becomes a call)."""
    return ast.parse(TransformerManager().transform_cell(source))


def reads_and_binds(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names a cell reads, and those it binds other than by ``import``."""
    reads, binds = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else binds).add(node.id)
        elif isinstance(node, ast.arg):
            binds.add(node.arg)
    return reads, binds


def trained_cells(cells: list[dict]) -> set[int]:
    """Indices of the code cells that read a trained name (see the module docstring)."""
    trained_names, found = set(ROOTS), set()
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        reads, binds = reads_and_binds(python("".join(cell["source"])))
        if reads & trained_names:
            found.add(i)
            trained_names |= binds
    return found


def printed(cell: dict) -> str:
    text = []
    for out in cell.get("outputs", []):
        text.append("".join(out.get("text", "")))
        text.append("".join(out.get("data", {}).get("text/plain", "")))
    return "".join(text)


def fractional_numbers(text: str, source: str) -> list[str]:
    """Non-integer numbers printed in ``text`` that the cell's ``source`` does not spell out."""
    found = []
    for m in NUMBER.finditer(text):
        if (m.group("frac") or m.group("exp")) and m.group(0).lstrip(
            "+-"
        ) not in source:
            found.append(m.group(0))
    return found


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_no_checked_cell_compares_a_trained_number_exactly(path):
    cells = json.loads(path.read_text("utf-8"))["cells"]
    exact = []
    for i in sorted(trained_cells(cells)):
        cell = cells[i]
        metadata = cell.get("metadata", {})
        if CHECK_TAG not in metadata.get("tags", []) or TOLERANCE_KEY in metadata:
            continue
        numbers = fractional_numbers(printed(cell), "".join(cell["source"]))
        if numbers:
            exact.append(f"cell {i}: {numbers[:5]}")
    assert not exact, f"{path.name}: trained numbers checked exactly: {exact}"


def test_the_trace_follows_a_name_through_the_cells_and_ignores_the_rest():
    def code(source: str, tags: tuple[str, ...] = (), out: str = "") -> dict:
        outputs = (
            [{"output_type": "stream", "name": "stdout", "text": out}] if out else []
        )
        return {
            "cell_type": "code",
            "metadata": {"tags": list(tags)},
            "source": source,
            "outputs": outputs,
        }

    cells = [
        code("%pip install bertflow_mini\nimport numpy as np\nMODEL = 'scratch-bert'"),
        code("vectors = np.ones((2, 2)) * len(MODEL)"),  # reads MODEL
        code("total = vectors.sum()"),  # reads a trained name
        code("pi = 3.14159", out="3.14"),  # reads nothing trained
        code("for v in vectors:\n    print(round(float(v[0]), 2))"),  # a loop variable
        {"cell_type": "markdown", "metadata": {}, "source": "MODEL total"},
    ]
    assert trained_cells(cells) == {1, 2, 4}
    assert fractional_numbers(
        "slope 0.016, 14 of 28, err < 1e-8: True", "x < 1e-8"
    ) == ["0.016"]
    assert not re.search(r"\d", "".join(fractional_numbers("True 3 of 7", "")))
