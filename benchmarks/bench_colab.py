"""The Colab budget: each chapter's work with bert-base-uncased, counted as a Colab reader runs it,
turned into minutes on Colab's CPU and on a T4 from throughput measured here (no GPU, no hub).

    python benchmarks/bench_colab.py                    # throughput, then every chapter counted
    python benchmarks/bench_colab.py --chapters 02 06   # some chapters only (others kept from --out)
    python benchmarks/bench_colab.py --smoke            # tiny throughput runs, no chapter, no file
    python benchmarks/bench_colab.py --from-json        # re-price the work recorded in --out

1. **Rates at bert-base's exact shape** (one thread, CPU time, so other jobs on a shared
   machine do not inflate it): a random network of bert-base's config (``bert-base-uncased@0``)
   and all-MiniLM-L6-v2 encode the first STS-B test sentences through ``encode`` (tokens per CPU
   second); the official flow (``FlowConfig``) fitted on 768-wide vectors (CPU seconds per step of
   its batch); one flow step at 768 wide on a tiny batch under torch's profiler (the kernels it
   dispatches, a ``_foreach`` op counted once, as CUDA fuses it) and its CPU time (the host's side
   of a step); ``from_pretrained`` of a random 12 x 768 checkpoint (wall seconds).
2. **Work per chapter, counted in the Colab simulation** (``tests/colab_mirror.py``: the wheel
   installed in a fresh virtualenv, ``google.colab`` present so the Colab-only branches run, an
   empty cache, every pair, QNLI's dev size). The mirror serves bert-base-uncased and the
   MultiBERTs names with random weights of a *small* shape (3 x 96) so the run takes minutes: what
   is counted does not depend on the width. An injected cell counts (a) the tokens of every BERT
   forward pass, per model, in inference and in training (SimCSE: forward + backward ~ 3
   forwards); (b) every flow fit (rows, width, epochs, batch); (c) every checkpoint loaded
   (``from_pretrained``): the distinct hub names are the downloads; (d) the kernel's CPU time.
   ``--from-json`` skips this step and prices the work already recorded in ``--out``.
3. **Minutes** (every assumption is written to the JSON's ``assumed``). Both devices: the
   install cell (``--pip-s`` per package the package needs and Colab lacks), every checkpoint
   load at the measured rate, downloads at ``--download-mb-s``, and the rest of the kernel's CPU
   time (whitening, plots, ... counted at 96 wide: a lower bound at 768). Colab CPU: tokens / the
   measured rate (bert-base's for the 3 x 96 stand-ins), flow fits as steps (rows / batch x
   epochs) x the measured CPU step at 768 wide (other widths as measured in the run), CPU work
   divided by ``--colab-cores``. T4: 2 x parameters FLOPs per token (6 x for a training token) at
   NVIDIA's datasheet 8.1 TFLOPS FP32 x an *assumed* ``--t4-efficiency``; a flow step costs
   max(its FLOPs at that rate, kernels per step x an *assumed* ``--launch-us`` + the host's CPU
   time per step), the loss's ``.item()`` each step keeping host and card from overlapping.
   **Quick runs** (``bf.setup(quick=True)``): the pair-driven work (inference tokens, flow fits)
   scaled by the share of the benchmark's pairs the cap keeps (the largest cap of
   ``QUICK_CANDIDATES`` that keeps every chapter within the CPU goal); SimCSE's training, chapter 7's
   fixed QNLI subset, loads, downloads, installs and the other CPU work kept whole. Estimates from
   counted work and measured rates, not timings of Colab (no GPU was lent).

Writes ``colab-budget.json`` into the package's results folder (``--out``), which the book's
results page prints.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
CHAPTERS = sorted(REPO.glob("book/[0-9][0-9]-*.ipynb"))
RESULTS = REPO / "bertflow_mini" / "evaluation" / "results"
T4_FP32_FLOPS = 8.1e12  # NVIDIA T4 datasheet: 8.1 TFLOPS single precision
BUDGET_GPU_S, BUDGET_CPU_S = 5 * 60, 30 * 60  # the goals per chapter (issues 19, 29)
#: Download sizes of the hub checkpoints (GB): bert-base-uncased's model.safetensors is 440 MB; a
#: MultiBERTs checkpoint holds the same network (with its MLM/NSP heads); MiniLM's is 91 MB.
DOWNLOAD_GB = {"bert-base-uncased": 0.44, "multiberts": 0.44, "all-MiniLM-L6-v2": 0.09}
SMALL_SHAPE = (
    "3x96"  # colab_mirror.SMALL: the stand-in for bert-base's 12x768 in the counted run
)

#: What Colab's runtime already holds among the package's dependencies (assumed from its
#: preinstalled list): the install cell adds the rest, wordfreq's own dependencies Colab lacks
#: and the package itself (built from git).
COLAB_HAS = {
    "torch", "transformers", "huggingface_hub", "numpy", "scipy", "pandas",
    "matplotlib", "seaborn", "tqdm", "pooch", "pyarrow",
}  # fmt: skip
COLAB_LACKS_ALSO = ("ftfy", "langcodes", "language-data", "locate", "bertflow_mini")
#: Work a quick run does not cut: chapter 7 scores a fixed subset, QNLI dev's first 1,000 pairs
#: (about 50 bert-base tokens a pair, as the simulation's fixture), whatever the cap.
QUICK_FIXED_TOKENS = {"07": 1000 * 50}
#: The caps a quick run may take (pairs per split), the largest that fits the CPU goal chosen.
QUICK_CANDIDATES = (1000, 500, 300, 200, 100, 50, 20)
#: Ops that only reshape, view or allocate: no kernel launch on a GPU.
NO_KERNEL = {
    "aten::as_strided", "aten::empty_strided", "aten::empty", "aten::new_empty",
    "aten::view", "aten::resolve_conj", "aten::resolve_neg", "detach", "detach_",
    "aten::detach", "aten::detach_", "aten::result_type", "aten::lift_fresh",
    "aten::_local_scalar_dense", "aten::item", "aten::alias", "aten::expand", "aten::t",
    "aten::transpose", "aten::slice", "aten::select", "aten::unsqueeze", "aten::squeeze",
    "aten::reshape", "aten::_reshape_alias", "aten::permute", "aten::_unsafe_view",
    "aten::split", "aten::narrow", "aten::unbind", "aten::chunk", "aten::to",
    "aten::_to_copy", "aten::empty_like",
}  # fmt: skip
#: Fills and copies an op does inside itself: part of that op's launch.
INNER = {"aten::copy_", "aten::fill_", "aten::zero_"}

#: Inserted after each chapter's set-up cell: counts the work (see the module's docstring).
INSTRUMENT = r"""
import dataclasses as _dc, os as _o, time as _t, torch as _torch, transformers as _tr
import bertflow_mini.postprocess.flow as _F
_WORK = {"tokens": {}, "train_tokens": {}, "forward_s": 0.0, "fits": [], "fit_s": 0.0, "loaded": [],
         "cpu0": _t.process_time(), "wall0": _t.perf_counter()}
def _key(cfg):
    name = _o.path.basename(str(cfg._name_or_path).rstrip("/")) or "?"
    return f"{name}|{cfg.num_hidden_layers}x{cfg.hidden_size}"
def _pre(m, args):
    if type(m).__name__ == "BertModel":
        m._w0 = _t.process_time()
def _post(m, args, kwargs, out):
    if type(m).__name__ != "BertModel":
        return
    ids, mask = kwargs.get("input_ids", args[0] if args else None), kwargs.get("attention_mask")
    n = int(mask.sum()) if mask is not None else (int(ids.numel()) if ids is not None else 0)
    part = "train_tokens" if m.training and _torch.is_grad_enabled() else "tokens"
    _WORK[part][_key(m.config)] = _WORK[part].get(_key(m.config), 0) + n
    _WORK["forward_s"] += _t.process_time() - getattr(m, "_w0", _t.process_time())
_torch.nn.modules.module.register_module_forward_pre_hook(_pre)
_torch.nn.modules.module.register_module_forward_hook(_post, with_kwargs=True)
_fit = _F.fit_flow
def _fit_flow(embeddings, config=None, **kw):
    names = {f.name for f in _dc.fields(_F.FlowConfig)}
    cfg = _dc.replace(config or _F.FlowConfig(), **{k: v for k, v in kw.items() if k in names})
    t0 = _t.process_time()
    try:
        return _fit(embeddings, config, **kw)
    finally:
        s = _t.process_time() - t0
        _WORK["fits"].append({"n": int(embeddings.shape[0]), "d": int(embeddings.shape[1]),
                              "epochs": int(cfg.epochs), "batch": int(cfg.batch_size), "s": s})
        _WORK["fit_s"] += s
_F.fit_flow = _F.fit.fit_flow = _fit_flow  # bf.fit_flow, and FlowTransform's fits
_load = _tr.PreTrainedModel.from_pretrained.__func__
def _from_pretrained(cls, path, *a, **k):
    _WORK["loaded"].append(_o.path.basename(str(path).rstrip("/")))
    return _load(cls, path, *a, **k)
_tr.PreTrainedModel.from_pretrained = classmethod(_from_pretrained)
"""
#: Inserted before the report cell: the kernel's totals.
TOTALS = r"""
_WORK["kernel_cpu_s"] = _t.process_time() - _WORK.pop("cpu0")
_WORK["wall_s"] = _t.perf_counter() - _WORK.pop("wall0")
"""


def throughput(model: str, n_sentences: int, threads: int) -> dict:
    """Tokens and sentences per CPU second of ``model`` encoding the first STS-B test sentences."""
    import torch

    from bertflow_mini.data import load_sts
    from bertflow_mini.encoders.encoder import encode
    from bertflow_mini.encoders.names import load_encoder
    from bertflow_mini.encoders.random_init import non_embedding_parameters

    pairs = load_sts("STSB", "test")
    sentences = list(dict.fromkeys(pairs.sent1 + pairs.sent2))[:n_sentences]
    enc = load_encoder(model, device="cpu")
    tokens = sum(
        map(len, enc.tokenizer(sentences, truncation=True, max_length=64)["input_ids"])
    )
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        encode(enc, sentences[:8], "last-avg", cache=False, progress=False)  # warm-up
        start, wall = time.process_time(), time.perf_counter()
        encode(enc, sentences, "last-avg", cache=False, progress=False)
        seconds, wall = time.process_time() - start, time.perf_counter() - wall
    finally:
        torch.set_num_threads(previous)
    config = enc.model.config
    return {
        "model": model,
        "shape": f"{config.num_hidden_layers}x{config.hidden_size}",
        "sentences": len(sentences),
        "tokens": tokens,
        "cpu_seconds": seconds,
        "wall_seconds": wall,
        "threads": threads,
        "tokens_per_s": tokens / seconds,
        "sentences_per_s": len(sentences) / seconds,
        "non_embedding_params": non_embedding_parameters(enc.model),
    }


def flow_rate(dim: int, rows: int) -> dict:
    """CPU seconds per row and epoch of the official flow fitted on ``rows`` x ``dim`` vectors."""
    import numpy as np

    from bertflow_mini.postprocess.flow import FlowConfig, build_flow, fit_flow

    x = np.random.default_rng(0).standard_normal((rows, dim)).astype(np.float32)
    start = time.process_time()
    fit_flow(x, device="cpu", progress=False, epochs=1)
    seconds = time.process_time() - start
    params = sum(p.numel() for p in build_flow(dim, FlowConfig()).parameters())
    return {
        "dim": dim,
        "rows": rows,
        "cpu_seconds": seconds,
        "s_per_row_epoch": seconds / rows,
        "batch": FlowConfig().batch_size,
        "params": params,
    }


def launches(event) -> int:
    """GPU kernels one profiled CPU op would launch: a ``_foreach`` op once (CUDA fuses it), an
    aten op whose children only view, allocate, fill or copy once, a composite its children's."""
    name, kids = event.name, event.cpu_children
    if name.startswith("aten::_foreach_"):
        return 1
    if name not in NO_KERNEL and all(k.name in NO_KERNEL | INNER for k in kids):
        return int(name.startswith("aten::"))
    return sum(launches(k) for k in kids)


def flow_step(dim: int, batch: int, repeats: int) -> dict:
    """One training step of the official flow at ``dim`` wide on ``batch`` rows: the kernels it
    dispatches (torch's profiler on the CPU) and its median CPU seconds on one thread, which on so
    small a batch is the host's side of the step (Python, dispatch, autograd)."""
    import numpy as np
    import torch
    from torch.profiler import ProfilerActivity, profile

    from bertflow_mini._threads import torch_threads
    from bertflow_mini.postprocess.flow import FlowConfig, build_flow
    from bertflow_mini.postprocess.flow.fit import make_optimizer, train_step

    config = FlowConfig()
    flow = build_flow(dim, config).train()
    optimizer = make_optimizer(flow, config)
    x = torch.from_numpy(
        np.random.default_rng(0).standard_normal((batch, dim)).astype(np.float32)
    )
    seconds = []
    with torch_threads(1):
        for _ in range(3):  # ActNorm's init and the optimizer's state
            train_step(flow, optimizer, x, config.clip_norm)
        for _ in range(repeats):
            start = time.process_time()
            train_step(flow, optimizer, x, config.clip_norm)
            seconds.append(time.process_time() - start)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            train_step(flow, optimizer, x, config.clip_norm)
    top = [e for e in prof.events() if e.cpu_parent is None]
    return {
        "dim": dim,
        "batch": batch,
        "kernels_per_step": sum(launches(e) for e in top),
        "host_s_per_step": float(np.median(seconds)),
    }


def load_rate(exact: bool, repeats: int) -> dict:
    """Wall seconds of the package's one loading path (``load_network``) reading a random
    checkpoint of bert-base's shape (``exact``; else the small stand-in) from this machine's disk."""
    import colab_mirror
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from bertflow_mini.encoders.loading import load_network

    shared = Path(os.environ.get("BERTFLOW_MODELS", REPO.parent / "shared" / "models"))
    config = BertConfig.from_pretrained(shared / "bert-base-uncased-tokenizer")
    if not exact:
        config.update(colab_mirror.SMALL)
    with tempfile.TemporaryDirectory() as tmp:
        with torch.random.fork_rng(devices=[]):
            BertForMaskedLM(config).save_pretrained(tmp)
        size = sum(f.stat().st_size for f in Path(tmp).iterdir())
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            load_network(tmp)
            seconds.append(time.perf_counter() - start)
    return {
        "shape": f"{config.num_hidden_layers}x{config.hidden_size}",
        "mb": size / 1e6,
        "seconds": min(seconds),
    }


def installs() -> list[str]:
    """The packages Colab's install cell adds: the package's dependencies Colab lacks (by
    :data:`COLAB_HAS`), wordfreq's own and the package itself."""
    import re
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "dependencies"
    ]
    names = [re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0] for d in deps]
    return [n for n in names if n not in COLAB_HAS] + list(COLAB_LACKS_ALSO)


def split_sizes() -> dict[str, int]:
    """Pairs per split of every STS task (uncapped): what a quick run's cap cuts."""
    from bertflow_mini.data.pairs import TASKS
    from bertflow_mini.data.sts import load_sts, splits

    return {
        f"{task}/{split}": len(load_sts(task, split, capped=False))
        for task in TASKS
        for split in splits(task)
    }


def kept_share(sizes: dict[str, int], cap: int) -> float:
    """The share of the benchmark's pairs a cap of ``cap`` pairs per split keeps."""
    return sum(min(n, cap) for n in sizes.values()) / sum(sizes.values())


def chapter_work(chapter: Path, sim: dict, timeout: int) -> dict:
    """Run ``chapter`` in the Colab simulation with the counting cells; returns what they counted."""
    import colab_mirror

    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        cache = cwd / "cache"
        colab_mirror.qnli_fixture(cache, Path(sim["data"]))  # QNLI dev's 5,463 pairs
        env = colab_mirror.kernel_env(
            sim["venv"],
            sim["wheel"],
            sim["urls"],
            {
                "BERTFLOW_MODELS": str(sim["mirror"]),
                "BERTFLOW_DATA": sim["data"],
                "BERTFLOW_MODEL_NAME": "bert-base-uncased",
                "BERTFLOW_CACHE": str(cache),
            },
        )
        _, report = colab_mirror.run_chapter(
            chapter,
            cwd,
            env,
            timeout,
            extra_cells=(INSTRUMENT,),
            closing_cells=(TOTALS,),
        )
    return {
        k: report[k]
        for k in (
            "tokens",
            "train_tokens",
            "forward_s",
            "fits",
            "fit_s",
            "loaded",
            "kernel_cpu_s",
            "wall_s",
        )
    }


def simulation(root: Path) -> dict:
    """The wheel, its virtualenv and the small-shape mirror (tests/colab_mirror.py)."""
    import colab_mirror
    import yaml

    shared = Path(os.environ.get("BERTFLOW_MODELS", REPO.parent / "shared" / "models"))
    wheel = colab_mirror.build_wheel(root / "wheel")
    config = yaml.safe_load((REPO / "_config.yml").read_text())["repository"]
    url = f"git+{config['url']}"
    return {
        "wheel": wheel,
        "venv": colab_mirror.colab_venv(root / "venv", wheel).parents[1],
        "mirror": colab_mirror.build(root / "mirror", shared.resolve()),
        "data": os.environ.get("BERTFLOW_DATA", str(REPO.parent / "shared" / "data")),
        "urls": [url, f"{url}@{config.get('branch', 'main')}"],
    }


def downloads(loaded: list[str]) -> dict[str, float]:
    """GB per distinct hub checkpoint among the folders loaded (the rest is built or local)."""
    out = {}
    for name in dict.fromkeys(loaded):
        key = "multiberts" if name.startswith("multiberts") else name
        if key in DOWNLOAD_GB:
            out[name] = DOWNLOAD_GB[key]
    return out


def fit_batch(fit: dict) -> int:
    """The batch of a recorded fit (or rate); runs recorded before the batch was counted: the
    default, which gives an upper bound on steps where a chapter chose a larger batch."""
    from bertflow_mini.postprocess.flow import FlowConfig

    return fit.get("batch", FlowConfig().batch_size)


def fit_steps(fit: dict) -> int:
    """Optimiser steps of one recorded fit: batches per epoch x epochs."""
    return math.ceil(fit["n"] / fit_batch(fit)) * fit["epochs"]


def t4_flow_step_s(rates: dict, batch: int, args) -> float:
    """Seconds of one flow step on a T4: its FLOPs at the assumed rate, or, when more, its
    kernels' launch latency plus the host's CPU time per step (the loss's ``.item()`` syncs)."""
    flops = 6 * rates["flow"]["params"] * batch / (T4_FP32_FLOPS * args.t4_efficiency)
    step = rates["flow_step"]
    return max(
        flops,
        step["kernels_per_step"] * args.launch_us * 1e-6 + step["host_s_per_step"],
    )


def estimate(
    work: dict, rates: dict, args, number: str = "", share: float = 1.0
) -> dict:
    """Minutes on Colab's CPU and a T4 for one chapter's counted ``work``, and on Colab's CPU for a
    quick run that keeps ``share`` of the benchmark's pairs."""
    bert, minilm, flow = rates["bert"], rates["minilm"], rates["flow"]
    cpu_step = flow["cpu_seconds"] / math.ceil(flow["rows"] / fit_batch(flow))

    cpu_tokens = t4_tokens = cpu_train = 0.0
    counted = {"bert-base": 0, "other": 0}
    # a training token: forward + backward
    for part, factor in (("tokens", 1), ("train_tokens", 3)):
        for key, n in work[part].items():
            # MiniLM at its own rate; the 3 x 96 stand-ins (and any other BERT) at bert-base's
            rate = minilm if key.endswith("|" + minilm["shape"]) else bert
            counted["bert-base" if rate is bert else "other"] += n * factor
            cpu_tokens += n * factor / rate["tokens_per_s"]
            cpu_train += n * factor / rate["tokens_per_s"] if factor == 3 else 0.0
            t4_tokens += (
                n * factor * 2 * rate["non_embedding_params"]
                / (T4_FP32_FLOPS * args.t4_efficiency)
            )  # fmt: skip
    width = int(SMALL_SHAPE.split("x")[1])
    wide = [f for f in work["fits"] if f["d"] == width]
    steps = sum(fit_steps(f) for f in work["fits"])
    fit_cpu = sum(
        fit_steps(f) * cpu_step if f["d"] == width else f["s"] for f in work["fits"]
    )
    fit_t4 = sum(
        fit_steps(f) * t4_flow_step_s(rates, fit_batch(f), args) for f in work["fits"]
    )
    other = max(work["kernel_cpu_s"] - work["forward_s"] - work["fit_s"], 0.0)
    load_s = len(work["loaded"]) * rates["load"]["seconds"]
    install_s = len(rates["installs"]) * args.pip_s
    got = downloads(work["loaded"])
    gb = sum(got.values())
    download_s = gb * 1000 / args.download_mb_s
    cpu_parts = {
        "encode": cpu_tokens / args.colab_cores,
        "fits": fit_cpu / args.colab_cores,
        "other": other / args.colab_cores,
        "loads": load_s,
        "install": install_s,
        "download": download_s,
    }
    t4_parts = {
        "encode": t4_tokens,
        "fits": fit_t4,
        "other": other / args.colab_cores,
        "loads": load_s,
        "install": install_s,
        "download": download_s,
    }
    # a quick run: pair-driven inference and fits cut to `share`; training, fixed subsets, whole
    fixed_tokens = QUICK_FIXED_TOKENS.get(number, 0) / bert["tokens_per_s"]
    inference = cpu_tokens - cpu_train - fixed_tokens
    quick_parts = {
        "encode": (cpu_train + fixed_tokens + share * max(inference, 0.0))
        / args.colab_cores,
        "fits": share * fit_cpu / args.colab_cores,
        "other": other / args.colab_cores,
        "loads": load_s,
        "install": install_s,
        "download": download_s,
    }
    cpu, t4 = sum(cpu_parts.values()), sum(t4_parts.values())
    quick = sum(quick_parts.values())
    return {
        "bert_base_tokens": counted["bert-base"],
        "other_tokens": counted["other"],
        "fits_768": len(wide),
        "fit_rows_768": sum(f["n"] * f["epochs"] for f in wide),
        "fit_steps": steps,
        "fits_other": len(work["fits"]) - len(wide),
        "loads": len(work["loaded"]),
        "downloads": got,
        "gb": gb,
        "controls_live": sorted(
            {
                k.split("|")[0]
                for p in ("tokens", "train_tokens")
                for k in work[p]
                if "@0" in k
            }
        ),
        "cpu_s": {**cpu_parts, "total": cpu},
        "t4_s": {**t4_parts, "total": t4},
        "quick_cpu_s": {**quick_parts, "total": quick},
        "misses": [
            b
            for b, sec, limit in (("T4", t4, BUDGET_GPU_S), ("CPU", cpu, BUDGET_CPU_S))
            if sec > limit
        ],
    }


def table(chapters: dict) -> str:
    """The per-chapter table (Markdown)."""
    lines = [
        (
            "| chapter | bert-base tokens | 768-wide fits (rows x epochs) | checkpoints (GB) | "
            "Colab CPU (min) | T4 (min) | misses |"
        ),
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, r in chapters.items():
        lines.append(
            f"| {name} | {r['bert_base_tokens']:,} | {r['fits_768']} ({r['fit_rows_768']:,}) | "
            f"{len(r['downloads'])} ({r['gb']:.2f}) | {r['cpu_s']['total'] / 60:.1f} | "
            f"{r['t4_s']['total'] / 60:.1f} | {', '.join(r['misses']) or '-'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--chapters", nargs="*", help="two-digit chapter numbers (default: all)"
    )
    parser.add_argument(
        "--sentences", type=int, default=512, help="sentences timed per model"
    )
    parser.add_argument(
        "--flow-rows",
        type=int,
        default=2048,
        help="rows of the 768-wide flow fit timed",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads while timing (CPU time is measured)",
    )
    parser.add_argument(
        "--colab-cores",
        type=float,
        default=1.0,
        help="Colab's 2 vCPUs in cores of this machine (1.0: one core, two hyperthreads)",
    )
    parser.add_argument(
        "--t4-efficiency",
        type=float,
        default=0.3,
        help="assumed share of T4's FP32 peak",
    )
    parser.add_argument(
        "--download-mb-s",
        type=float,
        default=50.0,
        help="assumed hub download speed in Colab",
    )
    parser.add_argument(
        "--launch-us",
        type=float,
        default=10.0,
        help="assumed seconds (in us) a T4 spends per kernel launched in a flow step",
    )
    parser.add_argument(
        "--pip-s",
        type=float,
        default=10.0,
        help="assumed seconds of Colab's install cell per package it adds",
    )
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per cell")
    parser.add_argument("--out", type=Path, default=RESULTS / "colab-budget.json")
    parser.add_argument(
        "--from-json",
        action="store_true",
        help="no simulation: price the work recorded in --out (its token and flow rates kept; "
        "the flow step, the checkpoint load and the installs measured now)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="16 sentences, 64 flow rows, a small checkpoint, no chapter, no file",
    )
    args = parser.parse_args(argv)
    previous = (
        json.loads(args.out.read_text())
        if args.out.is_file() and not args.smoke
        else {}
    )
    n, flow_rows = (16, 64) if args.smoke else (args.sentences, args.flow_rows)
    kept = previous.get("throughput", {}) if args.from_json else {}
    if "flow" in kept:
        # flow_rate fits with the default batch (recorded from then on)
        kept["flow"] = {"batch": fit_batch({}), **kept["flow"]}
    rates = {
        "bert": kept.get("bert") or throughput("bert-base-uncased@0", n, args.threads),
        "minilm": kept.get("minilm") or throughput("all-MiniLM-L6-v2", n, args.threads),
        "flow": kept.get("flow") or flow_rate(768, flow_rows),
        "flow_step": flow_step(768, batch=2, repeats=5 if args.smoke else 30),
        "load": load_rate(exact=not args.smoke, repeats=1 if args.smoke else 3),
        "installs": installs(),
    }
    for r in (rates["bert"], rates["minilm"]):
        print(
            f"{r['model']} ({r['shape']}): {r['tokens_per_s']:.0f} tokens/s per CPU second on "
            f"{args.threads} thread(s) ({r['sentences']} STS-B sentences)"
        )
    print(
        f"flow at 768 wide: {rates['flow']['s_per_row_epoch'] * 1e3:.2f} CPU ms per row and epoch; "
        f"a step on {rates['flow_step']['batch']} rows: {rates['flow_step']['kernels_per_step']} "
        f"kernels, {rates['flow_step']['host_s_per_step'] * 1e3:.1f} CPU ms"
    )
    print(
        f"checkpoint load ({rates['load']['shape']}, {rates['load']['mb']:.0f} MB): "
        f"{rates['load']['seconds']:.1f} s; the install adds {len(rates['installs'])} packages"
    )
    results, failed = dict(previous.get("chapters", {})), {}
    by_number = {c.name[:2]: c for c in CHAPTERS}
    chosen = (
        []
        if args.smoke or args.from_json
        else [by_number[k] for k in (args.chapters or by_number)]
    )
    sizes = {} if args.smoke else split_sizes()
    with tempfile.TemporaryDirectory() as tmp:
        sim = simulation(Path(tmp)) if chosen else {}
        for chapter in chosen:
            print(f"counting {chapter.name} in the Colab simulation …", flush=True)
            try:
                work = chapter_work(chapter, sim, args.timeout)
            except Exception as err:  # noqa: BLE001 (a chapter that fails today: say so, count the others)
                failed[chapter.name[:2]] = (
                    f"{type(err).__name__}: {getattr(err, 'ename', '')} "
                    f"{getattr(err, 'evalue', str(err)[-300:])}"
                )
                print(
                    f"  {chapter.name} failed: {failed[chapter.name[:2]]}", flush=True
                )
                continue
            results[chapter.name[:2]] = {"work": work}
            # saved as each chapter ends (priced with the last quick share until all are counted)
            share = previous.get("quick", {}).get("share", 1.0)
            priced = {
                k: {"work": r["work"], **estimate(r["work"], rates, args, k, share)}
                for k, r in sorted(results.items())
            }
            write(
                args.out,
                record(args, rates, priced, failed, previous.get("quick", {}), sizes),
            )
    quick = choose_quick(results, rates, args, sizes) if results else {}
    share = quick.get("share", 1.0)
    results = {
        k: {"work": r["work"], **estimate(r["work"], rates, args, k, share)}
        for k, r in sorted(results.items())
    }
    print(table(results))
    for name, why in failed.items():
        print(f"chapter {name} not counted: {why}")
    data = record(args, rates, results, failed, quick, sizes)
    if not args.smoke:
        write(args.out, data)
        print(f"wrote {args.out}")
    return data


def choose_quick(results: dict, rates: dict, args, sizes: dict[str, int]) -> dict:
    """The largest cap of :data:`QUICK_CANDIDATES` under which every chapter's quick estimate
    meets the CPU goal, and the share of the benchmark's pairs it keeps."""
    for cap in QUICK_CANDIDATES:
        share = kept_share(sizes, cap)
        worst = max(
            estimate(r["work"], rates, args, k, share)["quick_cpu_s"]["total"]
            for k, r in results.items()
        )
        if worst <= BUDGET_CPU_S:
            return {"pairs": cap, "share": share}
    raise SystemExit(
        f"no cap in {QUICK_CANDIDATES} keeps every chapter within the CPU goal"
    )


def write(path: Path, data: dict) -> None:
    from bertflow_mini._io import atomic_path

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(data, indent=1) + "\n")


def record(
    args, rates: dict, chapters: dict, failed: dict, quick: dict, sizes: dict
) -> dict:
    """Everything measured, counted and assumed, as written to ``--out``."""
    return {
        "what": "Colab budget per chapter with bert-base-uncased (benchmarks/bench_colab.py)",
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "load_avg_1min": os.getloadavg()[0],
            "threads": args.threads,
        },
        "throughput": rates,
        "assumed": {
            "colab_cores": args.colab_cores,
            "t4_fp32_flops": T4_FP32_FLOPS,
            "t4_efficiency": args.t4_efficiency,
            "t4_launch_s": args.launch_us * 1e-6,
            "t4_flow_step": "max(6 x flow params x batch FLOPs at the T4 rate, kernels per step x "
            "t4_launch_s + the host's CPU seconds per step measured at 768 wide on a tiny batch)",
            "other_cpu": "kernel CPU time outside forwards and fits, counted at 96 wide: a lower "
            "bound at 768",
            "pip_s_per_package": args.pip_s,
            "colab_has": sorted(COLAB_HAS),
            "download_mb_s": args.download_mb_s,
            "download_gb": DOWNLOAD_GB,
            "quick": "inference tokens and flow fits scaled by the share of pairs kept; SimCSE "
            "training, chapter 7's QNLI dev[:1000], loads, installs, downloads and other CPU "
            "work kept whole",
        },
        "budget_s": {"gpu": BUDGET_GPU_S, "cpu": BUDGET_CPU_S},
        "quick": {**quick, "split_pairs": sizes},
        "chapters": chapters,
        "failed": failed,
    }


if __name__ == "__main__":
    main()
