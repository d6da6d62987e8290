"""What every chapter's set-up cell does: seed everything, set the figure style, say where the
outputs come from (model, data, device), so a reader always knows what produced the page."""
from __future__ import annotations

import os
import random
import warnings

import numpy as np
import torch

from .models import default_model, resolve_model
from .plotting import set_style


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and PyTorch (CPU and GPU) so a chapter prints the same numbers every run."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _inline_figures() -> None:
    """In a notebook, draw figures inline even when ``MPLBACKEND`` names a non-interactive backend."""
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python
        return
    shell = get_ipython()
    if shell is not None and type(shell).__name__ == "ZMQInteractiveShell":
        shell.run_line_magic("matplotlib", "inline")


def setup(model: str | None = None, seed: int = 0) -> str:
    """Seed, style, and print the model, data source and device in use; returns the model name.

    ``model=None`` picks :func:`bertflow_mini.models.default_model`: the offline mirror's
    ``all-MiniLM-L6-v2`` when ``$BERTFLOW_MODELS`` provides it, else ``bert-base-uncased``.
    """
    seed_everything(seed)
    # transformers imports tqdm.auto, which warns when ipywidgets is missing; text bars are fine
    warnings.filterwarnings("ignore", message="IProgress not found")
    _inline_figures()
    set_style()
    model = model or default_model()
    source = resolve_model(model)
    where = "local mirror ($BERTFLOW_MODELS)" if os.path.isdir(source) else f"Hugging Face hub ({source})"
    data = "local mirror ($BERTFLOW_DATA)" if os.environ.get("BERTFLOW_DATA") else "official download URLs (cached)"
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"model : {model}  [{where}]")
    print(f"data  : {data}")
    print(f"device: {device}   torch {torch.__version__.split('+')[0]}   seed {seed}")
    return model


def execute_notebook(path: str, timeout: int = 900) -> float:
    """Run a chapter top to bottom in a fresh kernel and save it with its outputs; returns seconds.

    Progress bars print many updates; ``coalesce_streams`` keeps each cell's final state only, so
    the committed notebook and the HTML book show one finished bar, not hundreds of partial ones.
    The file is replaced atomically: an interrupted run leaves the old notebook intact.
    """
    import time
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    from ._io import atomic_path

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", coalesce_streams=True, record_timing=False,
                   resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    seconds = time.perf_counter() - start
    with atomic_path(path) as tmp:
        nbformat.write(nb, str(tmp))
    return seconds


if __name__ == "__main__":  # python -m bertflow_mini.chapter book/00-*.ipynb …
    import sys

    for notebook in sys.argv[1:]:
        print(f"executing {notebook} …", flush=True)
        print(f"  {notebook}: {execute_notebook(notebook):.0f} s", flush=True)
