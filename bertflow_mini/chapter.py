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

