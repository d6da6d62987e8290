"""How the chapters are checked, on tiny notebooks: nbval (``pytest --nbval-lax -p no:randomly book/``)
with ``book/conftest.py``, run in a subprocess exactly as ``make test`` runs it on the chapters. An
error in any cell fails; a checked cell with no tolerance fails on one changed digit; a
checked cell with a tolerance fails on a number beyond it and passes within it. Also the
executor behind ``make book`` and ``make refresh``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from bookbuild.execute import execute_notebook, main

REPO = Path(__file__).resolve().parents[2]
#: Cell metadata: checked under a tolerance (book/conftest.py), checked exactly (nbval itself).
TOLERANT = {"tags": ["nbval-check-output"], "tolerance": "atol=0.1 rtol=0"}
EXACT = {"tags": ["nbval-check-output"]}

pytestmark = pytest.mark.notebook


def tiny_notebook(*cells: str | tuple) -> nbformat.NotebookNode:
    """A notebook of code cells with the python3 kernel. A cell is its source, or (source, outputs)
    with those as its committed outputs, or (metadata, source, outputs) for a checked cell."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for count, cell in enumerate(cells, start=1):
        if isinstance(cell, str):
            cell = ({}, cell, [])
        elif len(cell) == 2:
            cell = ({}, *cell)
        metadata, source, outputs = cell
        nb.cells.append(
            nbformat.v4.new_code_cell(
                source,
                execution_count=count,
                metadata=dict(metadata),
                outputs=[nbformat.from_dict(o) for o in outputs],
            )
        )
    return nb


def printed(text: str) -> list[dict]:
    return [{"output_type": "stream", "name": "stdout", "text": text}]


def figure(png: str) -> dict:
    return {
        "output_type": "display_data",
        "metadata": {},
        "data": {"image/png": png, "text/plain": "<Figure>"},
    }


#: What each cell prints now (its source) and what its committed output says.
NOTEBOOKS = {
    "within": tiny_notebook(
        (TOLERANT, "print('rho = 0.55, n = 7')", printed("rho = 0.50, n = 7\n"))
    ),
    "beyond": tiny_notebook(
        (TOLERANT, "print('rho = 0.65, n = 7')", printed("rho = 0.50, n = 7\n"))
    ),
    "words": tiny_notebook((TOLERANT, "print('tau = 0.50')", printed("rho = 0.50\n"))),
    # integers: exact
    "count": tiny_notebook((TOLERANT, "print('n = 8')", printed("n = 7\n"))),
    "exact_same": tiny_notebook((EXACT, "print('n = 41')", printed("n = 41\n"))),
    "exact_digit": tiny_notebook(
        (EXACT, "print('rho = 0.501')", printed("rho = 0.500\n"))
    ),
    # not checked
    "unmarked": tiny_notebook(("print('rho = 0.99')", printed("rho = 0.50\n"))),
    "error": tiny_notebook(
        "x = 1",
        "raise ValueError('broken chapter')",
        (EXACT, "print(x)", printed("1\n")),
    ),
    # figures are not compared: only the picture differs, in an exact and a tolerant cell
    "figure": tiny_notebook(
        *[
            (
                marker,
                "from IPython.display import display\n"
                "display({'image/png': 'BBBB', 'text/plain': '<Figure>'}, raw=True)",
                [figure("AAAA")],
            )
            for marker in (EXACT, TOLERANT)
        ]
    ),
    # the kernel gets PYTHONHASHSEED=0 although nbval runs with 1 (test below)
    "hashseed": tiny_notebook(
        (EXACT, "import os\nprint(os.environ['PYTHONHASHSEED'])", printed("0\n"))
    ),
}


def run_nbval(
    folder: Path, *args: str, conftest: bool = True
) -> subprocess.CompletedProcess:
    """``pytest --nbval-lax`` on ``folder`` as its own root (book/conftest.py copied in, no ini of ours)."""
    (folder / "conftest.py").unlink(missing_ok=True)
    if conftest:
        shutil.copy(REPO / "book" / "conftest.py", folder / "conftest.py")
    (folder / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "PYTHONHASHSEED": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval-lax",
            "-p",
            "no:cacheprovider",
            "-q",
            "--junitxml",
            str(folder / "junit.xml"),
            *args,
            str(folder),
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def outcomes(folder: Path) -> dict[str, list[str]]:
    """Per notebook, each cell's outcome in order: passed, failed or skipped, with the failure text."""
    result: dict[str, list[str]] = {}
    for case in ET.parse(folder / "junit.xml").iter("testcase"):
        problem = case.find("failure")
        state = (
            "passed"
            if problem is None and case.find("skipped") is None
            else "failed"
            if problem is not None
            else "skipped"
        )
        text = (
            (problem.get("message", "") + (problem.text or ""))
            if problem is not None
            else ""
        )
        result.setdefault(case.get("classname").split(".")[0], []).append(
            f"{state} {text}".strip()
        )
    return result


#: Committed by our executor (make refresh), then checked exactly by nbval (make test): a progress
#: bar's carriage returns on stderr, a DataFrame (text/plain and text/html), a matplotlib figure.
ROUND_TRIP = [
    (
        EXACT,
        "import sys\nfor i in range(4):\n    print(f'{i}/3', end='\\r', file=sys.stderr)\nprint('done')",
        [],
    ),
    (
        EXACT,
        "import pandas as pd\npd.DataFrame({'a': [1.5, 2.0]}, index=['x', 'y'])",
        [],
    ),
    (
        EXACT,
        "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0]);",
        [],
    ),
]


@pytest.fixture(scope="module")
def nbval_run(
    tmp_path_factory,
) -> tuple[subprocess.CompletedProcess, dict[str, list[str]]]:
    folder = tmp_path_factory.mktemp("nbval")
    for name, nb in NOTEBOOKS.items():
        nbformat.write(nb, folder / f"{name}.ipynb")
    nbformat.write(tiny_notebook(*ROUND_TRIP), folder / "round_trip.ipynb")
    execute_notebook(folder / "round_trip.ipynb")
    proc = run_nbval(folder, "-p", "no:randomly")
    return proc, outcomes(folder)


def test_a_number_beyond_its_tolerance_fails_and_one_within_passes(nbval_run):
    proc, result = nbval_run
    assert result["within"] == ["passed"]
    (beyond,) = result["beyond"]
    assert (
        beyond.startswith("failed")
        and "0.50 is now 0.65 (drift 0.15, allowed 0.1)" in beyond
    )
    assert (
        result["words"][0].startswith("failed")
        and "'rho =' is now 'tau ='" in result["words"][0]
    )
    assert (
        result["count"][0].startswith("failed") and "7 is now 8" in result["count"][0]
    )
    assert "1 numbers moved" in proc.stdout  # the summary of drifts, within and beyond


def test_a_cell_without_a_tolerance_line_is_compared_exactly_by_nbval(nbval_run):
    _, result = nbval_run
    assert result["exact_same"] == ["passed"]
    (digit,) = result["exact_digit"]
    assert (
        digit.startswith("failed")
        and "Cell outputs differ" in digit
        and "0.501" in digit
    )


def test_an_error_in_any_cell_fails_and_unmarked_outputs_are_not_compared(nbval_run):
    proc, result = nbval_run
    assert result["unmarked"] == ["passed"]
    assert [r.split()[0] for r in result["error"]] == ["passed", "failed", "passed"]
    assert "broken chapter" in result["error"][1]
    assert proc.returncode == 1


def test_what_the_executor_commits_passes_nbvals_exact_check(nbval_run):
    _, result = nbval_run
    assert result["round_trip"] == ["passed"] * len(ROUND_TRIP)


def test_figures_are_not_compared_and_the_kernel_gets_hashseed_0(nbval_run):
    _, result = nbval_run
    assert result["figure"] == ["passed", "passed"]
    assert result["hashseed"] == ["passed"]


def test_split_across_xdist_workers_the_outcomes_and_the_drift_summary_are_the_same(
    nbval_run, tmp_path
):
    # make test runs the chapters on two workers, each notebook whole on one (--dist loadfile)
    for name, nb in NOTEBOOKS.items():
        nbformat.write(nb, tmp_path / f"{name}.ipynb")
    chain = [
        (EXACT, f"x = 0 if {i} == 0 else x + 1\nprint(x)", printed(f"{i}\n"))
        for i in range(6)
    ]
    nbformat.write(tiny_notebook(*chain), tmp_path / "chain.ipynb")
    proc = run_nbval(tmp_path, "-p", "no:randomly", "-n", "2", "--dist", "loadfile")
    serial_proc, serial = nbval_run
    split = outcomes(tmp_path)
    assert split.pop("chain") == ["passed"] * 6
    assert split == {k: v for k, v in serial.items() if k != "round_trip"}
    summary = [line for line in serial_proc.stdout.splitlines() if "moved" in line]
    assert summary and summary == [
        line for line in proc.stdout.splitlines() if "moved" in line
    ]


def test_cells_run_in_order_even_with_pytest_randomly_active(tmp_path):
    # each cell needs the one before it; pytest-randomly, left on, shuffles items within a file
    cells = [
        (EXACT, f"x = 0 if {i} == 0 else x + 1\nprint(x)", printed(f"{i}\n"))
        for i in range(6)
    ]
    nbformat.write(tiny_notebook(*cells), tmp_path / "chain.ipynb")
    shuffled = ["-p", "randomly", "--randomly-seed=3"]
    # nbval alone: out of order
    assert run_nbval(tmp_path, *shuffled, conftest=False).returncode == 1
    proc = run_nbval(tmp_path, *shuffled)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert outcomes(tmp_path)["chain"] == ["passed"] * 6


def test_a_misspelt_tolerance_stops_the_run_before_any_kernel_starts(tmp_path):
    typo = {"tags": ["nbval-check-output"], "tolerance": "rtoll=0.1"}
    nbformat.write(
        tiny_notebook((typo, "print(1)", printed("1\n"))), tmp_path / "typo.ipynb"
    )
    proc = run_nbval(tmp_path, "-p", "no:randomly")
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert "typo.ipynb:Cell 0: tolerance: unknown option 'rtoll=0.1'" in proc.stderr


# ----------------------------------------------------------------------------- the executor
def test_executor_saves_outputs_with_coalesced_streams_and_no_timing(tmp_path):
    path = tmp_path / "nb.ipynb"
    nbformat.write(
        tiny_notebook(
            "import sys\nfor i in range(3):\n    print(i, end='\\r', file=sys.stderr)\n"
            "print(2, file=sys.stderr)",
            "6 * 7",
        ),
        path,
    )
    execute_notebook(path)
    cells = nbformat.read(path, as_version=4).cells
    assert [c.execution_count for c in cells] == [1, 2]
    # one stream, not four
    assert [(o.output_type, o.name) for o in cells[0].outputs] == [("stream", "stderr")]
    # carriage returns resolved: the bar's final state only
    assert cells[0].outputs[0].text == "2\n"
    assert cells[1].outputs[0].data["text/plain"] == "42"
    assert all("execution" not in c.metadata for c in cells)


def test_executing_into_another_file_leaves_the_notebook_and_runs_in_its_folder(
    tmp_path, capsys
):
    chapter, copy = (
        tmp_path / "book" / "nb.ipynb",
        tmp_path / "_build" / "executed" / "nb.ipynb",
    )
    chapter.parent.mkdir()
    nbformat.write(
        tiny_notebook("import os\nprint(os.path.basename(os.getcwd()))"), chapter
    )
    before = chapter.read_bytes()
    main([str(chapter), "--output", str(copy)])
    assert chapter.read_bytes() == before
    # the chapter's folder
    assert nbformat.read(copy, as_version=4).cells[0].outputs[0].text == "book\n"
    assert f"executing {chapter} -> {copy}" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # one --output for two notebooks is a usage error
        main([str(chapter), str(chapter), "--output", str(copy)])


def test_an_error_in_any_cell_fails_the_run_and_leaves_the_file(tmp_path):
    path = tmp_path / "nb.ipynb"
    nbformat.write(
        tiny_notebook("x = 1", "raise ValueError('broken chapter')", "print('never')"),
        path,
    )
    before = path.read_bytes()
    with pytest.raises(CellExecutionError, match="broken chapter"):
        execute_notebook(path)
    assert path.read_bytes() == before
