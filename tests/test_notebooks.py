"""Every chapter, executed afresh top to bottom, reproduces its committed outputs: an error in any cell
fails, and each cell marked ``# CHECK_OUTPUT`` prints the same text with its numbers within the
tolerance the marker states (see bertflow_mini.chapters.output_check). Marked ``notebook``, the chapters keep
the user's embedding cache (conftest gives other tests a private one), which ``make cache`` fills."""
from __future__ import annotations

import copy
import os
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from bertflow_mini.chapters.execute import run_notebook
from bertflow_mini.chapters.output_check import compare_notebook, drift_report

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(REPO.glob("book/[0-9][0-9]-*.ipynb"))
# Where to keep each fresh run, to read or re-compare later (python -m bertflow_mini.chapters.output_check).
FRESH_DIR = os.environ.get("BERTFLOW_FRESH_NOTEBOOKS")


def tiny_notebook(*sources: str) -> nbformat.NotebookNode:
    """A notebook of code cells with the python3 kernel."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


# ----------------------------------------------------------------------------- the executor
def test_executor_saves_outputs_with_coalesced_streams_and_no_timing(tmp_path):
    from bertflow_mini.chapters.execute import execute_notebook

    path = tmp_path / "nb.ipynb"
    nbformat.write(tiny_notebook("import sys\nfor i in range(3):\n    print(i, end='\\r', file=sys.stderr)\n"
                                 "print(2, file=sys.stderr)", "6 * 7"), path)
    execute_notebook(path)
    cells = nbformat.read(path, as_version=4).cells
    assert [c.execution_count for c in cells] == [1, 2]
    assert [(o.output_type, o.name) for o in cells[0].outputs] == [("stream", "stderr")]  # one stream, not four
    assert cells[0].outputs[0].text == "2\n"  # carriage returns resolved: the bar's final state only
    assert cells[1].outputs[0].data["text/plain"] == "42"
    assert all("execution" not in c.metadata for c in cells)


def test_an_error_in_any_cell_fails_the_run_and_leaves_the_file(tmp_path):
    from bertflow_mini.chapters.execute import execute_notebook

    path = tmp_path / "nb.ipynb"
    nbformat.write(tiny_notebook("x = 1", "raise ValueError('broken chapter')", "print('never')"), path)
    before = path.read_bytes()
    with pytest.raises(CellExecutionError, match="broken chapter"):
        execute_notebook(path)
    assert path.read_bytes() == before


# ----------------------------------------------------------------------------- the chapters
@pytest.mark.notebook
@pytest.mark.parametrize("nb_path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_reproduces_its_checked_outputs(nb_path):
    committed = nbformat.read(nb_path, as_version=4)
    fresh = run_notebook(copy.deepcopy(committed), nb_path.parent)  # raises on any cell's error
    if FRESH_DIR:
        Path(FRESH_DIR).mkdir(parents=True, exist_ok=True)
        nbformat.write(fresh, Path(FRESH_DIR) / nb_path.name)
    mismatches, drifts = compare_notebook(committed, fresh)
    print(drift_report(nb_path.name, drifts))
    assert not mismatches, f"{nb_path.name}:\n" + "\n".join(map(str, mismatches))
