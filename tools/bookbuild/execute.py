"""Build tool: run a chapter top to bottom in a fresh kernel and save it with its outputs.

``python -m bookbuild.execute book/NN-*.ipynb …`` rewrites each notebook in place
(``make refresh``: the committed outputs); ``… book/NN-x.ipynb --output _build/executed/book/NN-x.ipynb``
writes the executed copy elsewhere and leaves the chapter untouched (``make book``). Either way the
kernel starts in the chapter's own folder. The chapters are *checked* by nbval instead
(``book/conftest.py``). Needs the ``book`` extras (``nbformat``, ``nbclient``, ``ipykernel``).
"""

from __future__ import annotations

import argparse
import os
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


def run_notebook(
    nb: NotebookNode, cwd: str | os.PathLike, timeout: int = 1800
) -> NotebookNode:
    """Execute ``nb`` in place in a fresh ``python3`` kernel started in ``cwd``; returns it.

    An error in any cell raises :class:`nbclient.exceptions.CellExecutionError`. Progress bars print
    many updates; ``coalesce_streams`` keeps each cell's final state only. No timing metadata is
    recorded, so a re-run changes the file only where an output changed.
    """
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        coalesce_streams=True,
        record_timing=False,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute(env=kernel_env())
    return nb


def execute_notebook(
    path: str | os.PathLike, output: str | os.PathLike | None = None
) -> float:
    """Run the notebook at ``path`` top to bottom in a fresh kernel started in its folder and save it
    with its outputs to ``output`` (default: ``path`` itself); returns the seconds it took.

    A failed run writes nothing, and the file is replaced atomically: an interrupted run leaves the
    old one intact.
    """
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    run_notebook(nb, Path(path).parent)
    seconds = time.perf_counter() - start
    with atomic_path(output if output is not None else path) as tmp:
        nbformat.write(nb, str(tmp))
    return seconds


def main(argv: list[str] | None = None) -> None:
    """Execute each notebook in turn, saying how long each took."""
    parser = argparse.ArgumentParser(
        prog="python -m bookbuild.execute", description=__doc__
    )
    parser.add_argument("notebooks", nargs="+")
    parser.add_argument(
        "--output",
        help="where to save the executed notebook (one notebook only; default: in place)",
    )
    args = parser.parse_args(argv)
    if args.output and len(args.notebooks) > 1:
        parser.error(f"--output takes one notebook; {len(args.notebooks)} given")
    for notebook in args.notebooks:
        target = args.output or notebook
        print(f"executing {notebook} -> {target} …", flush=True)
        print(f"  {notebook}: {execute_notebook(notebook, target):.0f} s", flush=True)


if __name__ == "__main__":  # python -m bookbuild.execute book/00-*.ipynb …
    main()
