"""A named checkpoint's parts beyond the encoder: its masked-LM head, and the corpus counts that
the book's own pretraining saves beside it (``token_counts.npy``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bertflow_mini._device import default_device
from bertflow_mini.encoders.loading import load_network
from bertflow_mini.encoders.names import source_of

if TYPE_CHECKING:
    from transformers import BertForMaskedLM


def load_mlm(name: str = "scratch-bert", device: str | None = None) -> BertForMaskedLM:
    """A ``BertForMaskedLM`` with its head, in eval mode on ``device`` (default: a GPU when there is
    one), from a checkpoint name or folder."""
    from transformers import BertForMaskedLM

    model = load_network(source_of(name), BertForMaskedLM, name)
    # transformers wraps PreTrainedModel.to with functools.wraps, which loses the method's binding
    mlm: BertForMaskedLM = model.to(device or default_device())  # type: ignore[arg-type]
    return mlm


def checkpoint_token_counts(name: str = "scratch-bert") -> np.ndarray:
    """How often each token id occurs in the checkpoint's training corpus (``token_counts.npy``,
    written by :func:`bertflow_mini.encoders.pretrain.pretrain`; special tokens are counted as 0)."""
    path = Path(source_of(name)) / "token_counts.npy"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist: only checkpoints pretrained by "
            "bertflow_mini.encoders.pretrain carry their corpus' token counts"
        )
    counts: np.ndarray = np.load(path)
    return counts
