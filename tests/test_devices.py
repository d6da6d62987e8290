"""The chapter helpers that take a model and make tensors for it (``flow_toys``, ``mlm_probe``) make
them on the model's device. They run here with the model on PyTorch's ``meta`` device: a tensor made
on the CPU and fed to it raises a device error, while a correct function gets as far as copying a
result back (which a meta tensor cannot do). With a GPU, the same functions also run on CUDA and
must give the CPU's numbers; the chapters themselves are checked on CUDA when a GPU is lent.
"""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest
import torch
from conftest import tiny_mlm

matplotlib.use("Agg")

REACHED_THE_END = re.compile(
    r"Cannot copy out of meta tensor|item\(\) cannot be called on meta tensors|"
    r"can't convert meta device type tensor to numpy"
)
DEVICE_ERROR = re.compile(r"device", re.IGNORECASE)


def on_meta(call) -> str:
    """Run ``call()`` (which puts a model on ``meta``); returns how it ended, failing on a device error."""
    try:
        call()
    except (RuntimeError, NotImplementedError, TypeError) as err:
        message = str(err)
        if REACHED_THE_END.search(message):
            return "reached the end"
        assert not DEVICE_ERROR.search(message), (
            f"a CPU tensor met the meta model: {message[:300]}"
        )
        raise
    return "ran through"


def _coupling(kind: str):
    from bertflow_mini.chapters.flow_toys import randomize
    from bertflow_mini.postprocess.flow import AdditiveCoupling, AffineCoupling

    return randomize({"additive": AdditiveCoupling, "affine": AffineCoupling}[kind](2))


@pytest.mark.parametrize("kind", ["additive", "affine"])
def test_flow_toys_make_their_tensors_on_the_blocks_device(kind):
    from bertflow_mini.chapters import flow_toys as ft

    x = ft.make_moons(64)
    assert (
        on_meta(lambda: ft.plot_before_after(_coupling(kind).to("meta"), x, "block"))
        == "reached the end"
    )
    assert on_meta(lambda: ft.excite_coupling(_coupling(kind).to("meta"), x)) in (
        "reached the end",
        "ran through",
    )
    assert (
        on_meta(lambda: ft.check_block(_coupling(kind).to("meta"), torch.randn(3, 2)))
        == "reached the end"
    )
    assert (
        on_meta(lambda: ft.latent(_coupling(kind).to("meta"), x)) == "reached the end"
    )
    assert on_meta(lambda: ft.randomize(_coupling(kind).to("meta"))) == "ran through"


def test_the_meta_check_fails_a_helper_that_makes_its_input_on_the_cpu():
    from bertflow_mini.chapters import flow_toys as ft

    def plot_as_it_was(block, x):  # flow_toys.plot_before_after before the fix
        with torch.no_grad():
            return block.float().eval()(torch.from_numpy(x))[0].numpy()

    with pytest.raises(AssertionError, match="a CPU tensor met the meta model"):
        on_meta(
            lambda: plot_as_it_was(_coupling("affine").to("meta"), ft.make_moons(8))
        )


def _contexts():
    from bertflow_mini.chapters import mlm_probe

    rng = np.random.default_rng(0)
    seqs = [np.array([1, *rng.integers(5, 50, 6), 2]) for _ in range(30)]
    return seqs, mlm_probe.frequent_contexts(seqs, 50, n_contexts=4)


def test_mlm_probe_makes_its_tensors_on_the_models_device():
    from bertflow_mini.chapters import mlm_probe

    seqs, contexts = _contexts()
    model = tiny_mlm(vocab=50).to("meta")
    kwargs = {"mask_id": 3, "pad_id": 0, "special_ids": [0, 1, 2, 3], "per_context": 2}
    assert (
        on_meta(lambda: mlm_probe.context_logits(model, seqs, contexts, **kwargs))
        == "reached the end"
    )
    assert on_meta(lambda: mlm_probe.output_bias(model)) == "reached the end"
    hidden = torch.zeros(2, 16, device="meta")
    assert on_meta(lambda: mlm_probe.head_by_hand(model, hidden)) == "ran through"


@pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="no GPU here: the meta-device checks above stand in",
)
def test_on_cuda_the_helpers_give_the_cpus_numbers():
    from bertflow_mini.chapters import flow_toys as ft
    from bertflow_mini.chapters import mlm_probe

    x = ft.make_moons(64)
    for kind in ("additive", "affine"):
        cpu = ft.latent(ft.excite_coupling(_coupling(kind), x), x)
        gpu = ft.latent(ft.excite_coupling(_coupling(kind).cuda(), x), x)
        np.testing.assert_allclose(gpu, cpu, atol=1e-5)
        ft.plot_before_after(_coupling(kind).cuda(), x, kind)
        assert (
            max(ft.check_block(_coupling(kind).cuda(), torch.randn(3, 2)).values())
            < 1e-8
        )
    seqs, contexts = _contexts()
    kwargs = {"mask_id": 3, "pad_id": 0, "special_ids": [0, 1, 2, 3], "per_context": 2}
    cpu = mlm_probe.context_logits(
        tiny_mlm(vocab=50), seqs, contexts, **kwargs
    ).mean_logits
    gpu = mlm_probe.context_logits(
        tiny_mlm(vocab=50).cuda(), seqs, contexts, **kwargs
    ).mean_logits
    np.testing.assert_allclose(gpu, cpu, atol=1e-4)
