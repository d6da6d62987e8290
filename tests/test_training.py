"""The shared optimisation step, against one SGD step worked by hand on ``loss = |w|² / 2``
(whose gradient is ``w``)."""

from __future__ import annotations

import pytest
import torch

from bertflow_mini._training import gradient_step


def _quadratic(values: list[float]) -> tuple[torch.nn.Parameter, torch.Tensor]:
    w = torch.nn.Parameter(torch.tensor(values, dtype=torch.float64))
    return w, (w**2).sum() / 2


def test_one_step_moves_against_the_gradient_and_returns_the_loss_before_it():
    w, loss = _quadratic([3.0, 4.0])
    w.grad = torch.ones(2, dtype=torch.float64)  # a stale gradient: zeroed, not added
    opt = torch.optim.SGD([w], lr=0.1)
    assert gradient_step(loss, opt) == pytest.approx(12.5)
    torch.testing.assert_close(
        w.detach(), torch.tensor([2.7, 3.6], dtype=torch.float64)
    )


def test_clipping_rescales_the_gradient_to_the_norm_and_the_scheduler_steps_after():
    w, loss = _quadratic([3.0, 4.0])  # gradient (3, 4), norm 5
    opt = torch.optim.SGD([w], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    gradient_step(loss, opt, clip_norm=1.0, parameters=[w], scheduler=sched)
    # clipped to (0.6, 0.8) at lr 0.1; the scheduler then halves lr for the next step
    torch.testing.assert_close(
        w.detach(), torch.tensor([2.94, 3.92], dtype=torch.float64)
    )
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05)
    with pytest.raises(ValueError, match="clip_norm needs the parameters"):
        gradient_step(_quadratic([1.0])[1], opt, clip_norm=1.0)
