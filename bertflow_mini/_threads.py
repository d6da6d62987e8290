"""How many CPU threads torch may use inside a block.

The book's small models (the flow's 32-wide couplings, the toy softmax models, the tiny MLM) do
tiny matrix products: extra threads only add synchronisation, and on a busy 2-core machine (a
shared CI runner) they make every step about 10× slower.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

#: torch CPU threads for the training runs the chapters read from the cache (pretraining, SimCSE):
#: fixed rather than the core count, because the number of threads changes how sums are split and
#: so the trained weights (pretraining 12 steps with 1 and with 2 threads gives different bits);
#: 2 is the count the committed outputs were made with.
TRAINING_THREADS = 2


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run the block with ``threads`` torch CPU threads (``None``: unchanged), then restore the setting."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
