"""Which device torch works on: a GPU when one is visible, else the CPU; and which CUDA generators a
seeded block on that device draws from."""

from __future__ import annotations

import torch


def default_device() -> str:
    """``"cuda"`` when a GPU is visible to torch, else ``"cpu"``."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def cuda_devices(device: str | torch.device) -> list[int]:
    """The CUDA devices whose random state a seeded block running on ``device`` draws from, for
    ``torch.random.fork_rng(devices=…)``: none on the CPU, else the device's index (``"cuda"`` with
    no index: the current device, where torch puts its tensors), so the caller's GPU random state is
    restored afterwards, as the CPU's is."""
    device = torch.device(device)
    if device.type != "cuda":
        return []
    return [device.index if device.index is not None else torch.cuda.current_device()]
