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


def where_from(source: str) -> str:
    """Where a resolved model comes from: the local mirror, this machine's cache, or the hub."""
    mirror = os.environ.get("BERTFLOW_MODELS")
    if not os.path.isdir(source):
        return f"Hugging Face hub ({source})"
    if mirror and os.path.realpath(source).startswith(os.path.realpath(mirror) + os.sep):
        return "local mirror ($BERTFLOW_MODELS)"
    return f"pretrained on this machine ({source.replace(os.path.expanduser('~'), '~')})"


def setup(model: str | None = None, seed: int = 0) -> str:
    """Seed, style, and print the model, data source and device in use; returns the model name.

    ``model=None`` picks :func:`bertflow_mini.models.default_model`, the book's ``scratch-bert``
    (pretrained on first use when neither the mirror nor the cache has it).
    """
    seed_everything(seed)
    # transformers imports tqdm.auto, which warns when ipywidgets is missing; text bars are fine
    warnings.filterwarnings("ignore", message="IProgress not found")
    _inline_figures()
    set_style()
    model = model or default_model()
    source = resolve_model(model)
    print(f"model : {model}  [{where_from(source)}]")
    data = "local mirror ($BERTFLOW_DATA)" if os.environ.get("BERTFLOW_DATA") else "official download URLs (cached)"
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"data  : {data}")
    print(f"device: {device}   torch {torch.__version__.split('+')[0]}   seed {seed}")
    return model



def glue(name: str, value: object, display: bool = True) -> None:
    """Paste ``value`` into the chapter's prose as ``{glue}`name``` (myst-nb's ``glue``).

    myst-nb comes with the book's build tools, not with the package; in Colab or a plain Jupyter
    kernel without it the value is only shown (when ``display``), so a chapter runs everywhere.
    """
    if isinstance(value, np.generic):  # np.float64(0.5) would reach the page as its repr
        value = value.item()
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        if display:
            try:
                from IPython.display import display as show
            except ImportError:  # plain Python
                show = print
            show(value)
        return
    myst_glue(name, value, display=display)
