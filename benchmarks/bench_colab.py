"""The Colab budget: each chapter's work with bert-base-uncased, counted as a Colab reader runs it,
turned into minutes on Colab's CPU and on a T4 from throughput measured here (no GPU, no hub).

    python benchmarks/bench_colab.py                    # throughput, then every chapter counted
    python benchmarks/bench_colab.py --chapters 02 06   # some chapters only (others kept from --out)
    python benchmarks/bench_colab.py --smoke            # tiny throughput runs, no chapter, no file

1. **Throughput at bert-base's exact shape** (one thread, CPU time, so other jobs on a shared
   machine do not inflate it): a random network of bert-base's config (``bert-base-uncased@0``)
   and all-MiniLM-L6-v2 encode the first STS-B test sentences through ``encode`` (tokens per CPU
   second); a flow (the official ``FlowConfig``) is fitted on 768-wide vectors (CPU seconds per
   row and epoch), and its parameters counted.
2. **Work per chapter, counted in the Colab simulation** (``tests/colab_mirror.py``: the wheel
   installed in a fresh virtualenv, ``google.colab`` present so the Colab-only branches run, an
   empty cache, every pair, QNLI's dev size). The mirror serves bert-base-uncased and the
   MultiBERTs names with random weights of a *small* shape (3 x 96) so the run takes minutes: what
   is counted does not depend on the width. An injected cell counts (a) the tokens of every BERT
   forward pass, per model, in inference and in training (SimCSE: forward + backward ~ 3
   forwards); (b) every flow fit (rows x epochs, width); (c) every checkpoint loaded
   (``from_pretrained``): the distinct hub names are the downloads; (d) the kernel's CPU time.
3. **Minutes.** Colab CPU: tokens / the measured rate (bert-base's for the 3 x 96 stand-ins) +
   768-wide fits (rows x epochs x the measured rate; other widths as measured in the run) + the
   rest of the kernel's CPU time (whitening, plots, … at 96 wide: a lower bound), all divided by
   ``--colab-cores`` (Colab's 2 vCPUs in cores of this machine; 1.0: they are reported as two
   hyperthreads of one core) + downloads at ``--download-mb-s``. T4: 2 x parameters FLOPs per
   token (6 x for a training token or a flow row), at NVIDIA's datasheet 8.1 TFLOPS FP32 x an
   *assumed* ``--t4-efficiency`` (not measured: no GPU was lent), + the same other CPU work and
   downloads. Both are estimates from counted work and measured rates, not timings of Colab.

Writes ``colab-budget.json`` into the package's results folder (``--out``), which the book's
results page prints.
"""

from __future__ import annotations

import argparse
import json
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
                              "epochs": int(cfg.epochs), "s": s})
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
        "params": params,
    }


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


def estimate(work: dict, rates: dict, args) -> dict:
    """Minutes on Colab's CPU and a T4 for one chapter's counted ``work``."""
    bert, minilm, flow = rates["bert"], rates["minilm"], rates["flow"]

    cpu_tokens = t4_tokens = 0.0
    counted = {"bert-base": 0, "other": 0}
    for part, factor in (
        ("tokens", 1),
        ("train_tokens", 3),
    ):  # a training token: forward + backward
        for key, n in work[part].items():
            # MiniLM at its own rate; the 3 x 96 stand-ins (and any other BERT) at bert-base's
            rate = minilm if key.endswith("|" + minilm["shape"]) else bert
            counted["bert-base" if rate is bert else "other"] += n * factor
            cpu_tokens += n * factor / rate["tokens_per_s"]
            t4_tokens += (
                n
                * factor
                * 2
                * rate["non_embedding_params"]
                / (T4_FP32_FLOPS * args.t4_efficiency)
            )
    wide = [f for f in work["fits"] if f["d"] == int(SMALL_SHAPE.split("x")[1])]
    rows = sum(f["n"] * f["epochs"] for f in wide)
    fit_cpu = rows * flow["s_per_row_epoch"] + sum(
        f["s"] for f in work["fits"] if f not in wide
    )
    fit_t4 = rows * 6 * flow["params"] / (T4_FP32_FLOPS * args.t4_efficiency) + sum(
        f["s"] for f in work["fits"] if f not in wide
    )
    other = max(work["kernel_cpu_s"] - work["forward_s"] - work["fit_s"], 0.0)
    got = downloads(work["loaded"])
    gb = sum(got.values())
    download_s = gb * 1000 / args.download_mb_s
    cpu = (cpu_tokens + fit_cpu + other) / args.colab_cores + download_s
    t4 = t4_tokens + fit_t4 + other / args.colab_cores + download_s
    return {
        "bert_base_tokens": counted["bert-base"],
        "other_tokens": counted["other"],
        "fits_768": len(wide),
        "fit_rows_768": rows,
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
        "cpu_s": {
            "encode": cpu_tokens / args.colab_cores,
            "fits": fit_cpu / args.colab_cores,
            "other": other / args.colab_cores,
            "download": download_s,
            "total": cpu,
        },
        "t4_s": {
            "encode": t4_tokens,
            "fits": fit_t4,
            "other": other / args.colab_cores,
            "download": download_s,
            "total": t4,
        },
        "misses": [
            b
            for b, s, limit in (("T4", t4, BUDGET_GPU_S), ("CPU", cpu, BUDGET_CPU_S))
            if s > limit
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
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per cell")
    parser.add_argument("--out", type=Path, default=RESULTS / "colab-budget.json")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="16 sentences, 64 flow rows, no chapter, no file",
    )
    args = parser.parse_args(argv)
    n, flow_rows = (16, 64) if args.smoke else (args.sentences, args.flow_rows)
    rates = {
        "bert": throughput("bert-base-uncased@0", n, args.threads),
        "minilm": throughput("all-MiniLM-L6-v2", n, args.threads),
        "flow": flow_rate(768, flow_rows),
    }
    for r in (rates["bert"], rates["minilm"]):
        print(
            f"{r['model']} ({r['shape']}): {r['tokens_per_s']:.0f} tokens/s per CPU second on "
            f"{args.threads} thread(s) ({r['sentences']} STS-B sentences)"
        )
    print(
        f"flow at 768 wide: {rates['flow']['s_per_row_epoch'] * 1e3:.2f} CPU ms per row and epoch"
    )
    previous = (
        json.loads(args.out.read_text())
        if args.out.is_file() and not args.smoke
        else {}
    )
    results, failed = dict(previous.get("chapters", {})), {}
    by_number = {c.name[:2]: c for c in CHAPTERS}
    chosen = [] if args.smoke else [by_number[k] for k in (args.chapters or by_number)]
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
            results[chapter.name[:2]] = {"work": work, **estimate(work, rates, args)}
            write(args.out, record(args, rates, dict(sorted(results.items())), failed))
    print(table(dict(sorted(results.items()))))
    for name, why in failed.items():
        print(f"chapter {name} not counted: {why}")
    data = record(args, rates, dict(sorted(results.items())), failed)
    if not args.smoke:
        write(args.out, data)
        print(f"wrote {args.out}")
    return data


def write(path: Path, data: dict) -> None:
    from bertflow_mini._io import atomic_path

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(data, indent=1) + "\n")


def record(args, rates: dict, chapters: dict, failed: dict) -> dict:
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
            "download_mb_s": args.download_mb_s,
            "download_gb": DOWNLOAD_GB,
        },
        "budget_s": {"gpu": BUDGET_GPU_S, "cpu": BUDGET_CPU_S},
        "chapters": chapters,
        "failed": failed,
    }


if __name__ == "__main__":
    main()
