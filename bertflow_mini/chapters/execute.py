"""Build tool: run a chapter top to bottom in a fresh kernel, as `make book` and the notebook test do.

``python -m bertflow_mini.chapters.execute book/00-*.ipynb …`` executes each notebook and saves it with its
outputs. Needs the ``book`` extras (``nbformat``, ``nbclient``, ``ipykernel``).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat import NotebookNode

from bertflow_mini._io import atomic_path


def kernel_env() -> dict[str, str]:
    """The kernel's environment: this process's, with ``PYTHONHASHSEED=0`` unless it is set (it fixes
    the order of sets of strings, so printed sets do not change between runs)."""
    return {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}


def run_notebook(nb: NotebookNode, cwd: str | os.PathLike, timeout: int = 900) -> NotebookNode:
    """Execute ``nb`` in place in a fresh ``python3`` kernel started in ``cwd``; returns it.

    An error in any cell raises :class:`nbclient.exceptions.CellExecutionError`. Progress bars print
    many updates; ``coalesce_streams`` keeps each cell's final state only, so the committed notebook
    and the HTML book show one finished bar, not hundreds of partial ones. No timing metadata is
    recorded, so a re-run changes the file only where an output changed.
    """
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", coalesce_streams=True,
                            record_timing=False, resources={"metadata": {"path": str(cwd)}})
    client.execute(env=kernel_env())
    return nb


def execute_notebook(path: str | os.PathLike, timeout: int = 900) -> float:
    """Run a chapter top to bottom in a fresh kernel and save it with its outputs; returns seconds.

    The file is replaced atomically: an interrupted or failed run leaves the old notebook intact.
    """
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    run_notebook(nb, Path(path).parent, timeout)
    seconds = time.perf_counter() - start
    with atomic_path(path) as tmp:
        nbformat.write(nb, str(tmp))
    return seconds


def main(paths: list[str]) -> None:
    """Execute each notebook in turn, saying how long each took."""
    for notebook in paths:
        print(f"executing {notebook} …", flush=True)
        print(f"  {notebook}: {execute_notebook(notebook):.0f} s", flush=True)


if __name__ == "__main__":  # python -m bertflow_mini.chapters.execute book/00-*.ipynb …
    main(sys.argv[1:])
