"""nbval runs the chapters: ``python -m pytest --nbval-lax -p no:randomly book/`` (what ``make test`` runs).

nbval executes every code cell of a chapter, in order, in one fresh kernel per chapter: an error in
any cell fails. A cell tagged ``nbval-check-output`` (nbval's own tag, in the cell's metadata where
readers never see it) has its fresh output compared with the committed one, in the same execution:

- without a ``tolerance`` in its metadata, by nbval itself, exactly;
- with one (numbers from training or floating-point sums), by
  :func:`bookbuild.output_check.compare_cell`: the words exactly, each number within the
  tolerance the line states. Figures are not compared (nbval skips ``image/png`` too).

This file also gives the kernel ``PYTHONHASHSEED=0`` (printed sets of strings keep their order),
runs it from this virtualenv (``--nbval-current-env``), runs each cell as Jupyter and the executor
that wrote the committed outputs do (with history: nbval leaves it off, and then IPython ignores the
``;`` that hides a cell's result), lets a slow machine be slow (nbval's default of 2,000 s per cell;
a minute, not 5 s, for a cell's last output to arrive), and keeps each chapter's cells in their
order even if pytest-randomly is active. At the end it reports, per chapter, how far the numbers of
tolerant cells moved, as a share of what their tolerance allows.

Under pytest-xdist (``-n 2 --dist loadfile``, as ``make test`` runs it) each chapter stays whole on
one worker, in order, in its own kernel; each cell's drifts travel to the controller with its
report (``user_properties``), so the summary is the same as in one process.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from functools import partial

import pytest
from nbval.kernel import RunningKernel
from nbval.plugin import IPyNbCell

from bookbuild.output_check import (
    TOLERANCE_KEY,
    Drift,
    Number,
    cell_tolerance,
    compare_cell,
    drift_report,
)

# Read by every kernel nbval starts from here on (a kernel inherits this process's environment).
os.environ["PYTHONHASHSEED"] = "0"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

#: The generated Colab and student editions (make editions) have no outputs to check: not collected.
collect_ignore_glob = ["colab/*", "student/*"]

#: Seconds a cell may wait for its last output message once it has finished (nbval's default: 5).
OUTPUT_TIMEOUT = 60
#: The key of a cell's drifts among its report's ``user_properties`` (plain dicts: xdist sends them).
DRIFT_PROPERTY = "drifts"
#: Drifts by notebook, gathered from the reports (pytest_runtest_logreport gets no config).
DRIFT_LOG: dict[str, list[Drift]] = {}
#: Whether this process is a pytest-xdist worker (its reports go to the controller, which gathers
#: the drifts), read from the run's own config, not from an environment a parent run may have set.
ON_XDIST_WORKER = False


def execute_with_history(
    kernel: RunningKernel, cell_input: str, allow_stdin: bool | None = None
) -> str:
    """nbval's ``RunningKernel.execute_cell_input`` with ``store_history=True``, as nbclient runs a cell."""
    return kernel.kc.execute(
        cell_input, store_history=True, allow_stdin=allow_stdin, stop_on_error=False
    )


RunningKernel.execute_cell_input = execute_with_history


def pytest_configure(config: pytest.Config) -> None:
    if not config.option.nbval_kernel_name:
        config.option.nbval_current_env = (
            True  # this virtualenv's python, not whatever "python3" names
        )
    DRIFT_LOG.clear()
    global ON_XDIST_WORKER
    ON_XDIST_WORKER = hasattr(config, "workerinput")


def tolerant_compare(
    item: IPyNbCell, test: list, ref: list, skip_compare: object = None
) -> bool:
    """Stands in for nbval's ``IPyNbCell.compare_outputs`` on a cell with a tolerance."""
    mismatches, drifts = compare_cell(
        {"source": item.cell.source, "metadata": item.cell.metadata, "outputs": ref},
        {"outputs": test},
        f"{item.path.name}:Cell {item.cell_num}",
    )
    item.user_properties.append(
        (DRIFT_PROPERTY, (item.path.name, [asdict(d) for d in drifts]))
    )
    item.comparison_traceback = [
        str(m) for m in mismatches
    ]  # what nbval prints under "Cell outputs differ"
    return not mismatches


@pytest.hookimpl(trylast=True)  # after pytest-randomly's shuffle, if it is active
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    cells = [item for item in items if isinstance(item, IPyNbCell)]
    in_order = iter(sorted(cells, key=lambda item: (str(item.path), item.cell_num)))
    items[:] = [
        next(in_order) if isinstance(item, IPyNbCell) else item for item in items
    ]
    for item in cells:
        item.output_timeout = OUTPUT_TIMEOUT
        try:  # a misspelt tolerance must not fall back to another check
            checked = cell_tolerance(item.cell) is not None
        except ValueError as err:
            raise pytest.UsageError(
                f"{item.path.name}:Cell {item.cell_num}: {err}"
            ) from None
        if checked and TOLERANCE_KEY in item.cell.metadata:
            item.compare_outputs = partial(tolerant_compare, item)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect each checked cell's drifts where the summary is written (the controller under xdist)."""
    if report.when != "call" or ON_XDIST_WORKER:
        return
    for key, value in report.user_properties:
        if key == DRIFT_PROPERTY:
            name, drifts = value
            moved = DRIFT_LOG.setdefault(name, [])
            moved += [
                Drift(
                    d["where"],
                    Number(**d["committed"]),
                    Number(**d["fresh"]),
                    d["allowed"],
                )
                for d in drifts
            ]


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    drifts = DRIFT_LOG
    if drifts:
        terminalreporter.section("numbers that moved, within or beyond their tolerance")
        for name, moved in sorted(drifts.items()):
            terminalreporter.write_line(drift_report(name, moved))
