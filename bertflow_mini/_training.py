"""One optimisation step: the part every training loop of the package shares.

The flow fit, MLM pretraining, SimCSE and the chapters' toy softmax models each draw their own
batches and keep their own loss history; the step that follows the loss is the same in all of them.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def gradient_step(
    loss: torch.Tensor,
    optimizer: torch.optim.Optimizer,
    *,
    clip_norm: float | None = None,
    parameters: Iterable[torch.nn.Parameter] | None = None,
    foreach: bool | None = None,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
) -> float:
    """Zero the gradients, backpropagate ``loss``, clip the gradients of ``parameters`` to norm
    ``clip_norm`` (when given; ``foreach`` as in ``clip_grad_norm_``), step ``optimizer`` and then
    ``scheduler``; returns the loss (its value before the update)."""
    if clip_norm is not None and parameters is None:
        raise ValueError("clip_norm needs the parameters whose gradients it clips")
    optimizer.zero_grad(set_to_none=True)
    loss.backward()  # type: ignore[no-untyped-call]  # unannotated in torch
    if clip_norm is not None:
        torch.nn.utils.clip_grad_norm_(parameters, clip_norm, foreach=foreach)  # type: ignore[arg-type]  # not None: checked above
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item()
