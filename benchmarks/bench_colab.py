"""The Colab budget: each chapter's time with bert-base-uncased on Colab's 2-core CPU and on a T4 GPU,
estimated from what can be measured here (no GPU, no hub).

    python benchmarks/bench_colab.py                    # throughput, then every chapter instrumented
    python benchmarks/bench_colab.py --chapters 00 05   # some chapters only
    python benchmarks/bench_colab.py --smoke            # a tiny model, no chapter: checks the script runs

1. **Throughput.** A randomly initialised network of bert-base's exact shape (``bert-base-uncased@0``:
   12 layers x 768, built from bert-base's own config) and all-MiniLM-L6-v2 encode the first STS-B
   test sentences through :func:`bertflow_mini.encoders.encoder.encode` (length-sorted batches, no
   cache) on one thread: tokens per *CPU* second (process time, so other jobs on a shared machine do
   not inflate it). Random weights cost what trained ones cost. Colab's free CPU is 2 vCPUs, commonly
   reported as the two hyperthreads of one core: ``--colab-cores`` (default 1.0) scales the rate.
2. **Work per chapter.** Each chapter runs top to bottom (a copy; nothing is written to ``book/``)
   with its own model, scratch-bert, on the warm user cache, with an injected first cell that counts
   (a) the tokens every transformer forward pass sees (a global forward hook: MLM probes, token
   geometry, …) and (b) the tokens of every distinct encoding the disk cache served — the passes a
   Colab reader, whose cache is empty, runs. Each call is attributed to a model shape: scratch-bert
   and its checkpoints stand for bert-base and its MultiBERTs (a bert-base reader's chapter runs the
   same calls with those); all-MiniLM-L6-v2 is itself. A SimCSE model in the chapter costs its
   training (steps x batch x 2 dropout views, forward and backward ~ 3 forwards) on the bert-base side.
   The rest of the kernel's CPU time (flows, whitening, plots, …; one thread) is the chapter's other
   work, measured.
3. **Estimates.** CPU: tokens / (the measured rate x ``--colab-cores``) + other work / ``--colab-cores``
   (this machine's core stands for Colab's). T4: tokens / (T4's 8.1 TFLOPS FP32 peak, NVIDIA's datasheet, x an assumed
   ``--t4-efficiency`` of eager PyTorch on short padded batches) at 2 x (non-embedding parameters)
   FLOPs per token, + the same other work: an *estimate*, not a measurement (no GPU here). Other work
   measured with 256-wide scratch-bert embeddings; bert-base's are 768 wide, so flows and whitening
   cost more there: the CPU figure is a lower bound on that part.

Writes ``benchmarks/results/colab-budget.json`` (``--out``) and prints the table the README shows.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(REPO.glob("book/[0-9][0-9]-*.ipynb"))
T4_FP32_FLOPS = 8.1e12  # NVIDIA T4 datasheet: 8.1 TFLOPS single precision
BUDGET_GPU_S, BUDGET_CPU_S = 5 * 60, 30 * 60  # issue 19's goals per chapter

#: The first cell injected into each chapter's copy: counts transformer tokens as described above.
INSTRUMENT = r'''
import json as _j, os as _o, time as _t, torch as _torch
import bertflow_mini.encoders.encoder as _E
_BENCH = {"forward": {}, "forward_s": 0.0, "cached": {}, "names": [], "start": _t.process_time(),
          "wall": _t.perf_counter()}
_seen = set()
def _shape(cfg):
    return f"{cfg.num_hidden_layers}x{cfg.hidden_size}"
def _pre(module, args):
    if type(module).__name__ == "BertModel":
        module._bench_t = _t.process_time()
def _post(module, args, kwargs, out):
    if type(module).__name__ != "BertModel" or _BENCH.get("inside"):  # a cache miss: counted below
        return
    ids = kwargs.get("input_ids", args[0] if args else None)
    mask = kwargs.get("attention_mask")
    n = int(mask.sum()) if mask is not None else (int(ids.numel()) if ids is not None else 0)
    k = _shape(module.config)
    _BENCH["forward"][k] = _BENCH["forward"].get(k, 0) + n
    _BENCH["forward_s"] += _t.process_time() - getattr(module, "_bench_t", _t.process_time())
_torch.nn.modules.module.register_module_forward_pre_hook(_pre)
_torch.nn.modules.module.register_module_forward_hook(_post, with_kwargs=True)
_orig = _E._layer_summary
def _layer_summary(encoder, unique, max_length, *a, **k):
    key = (encoder.name, max_length, len(unique), hash(tuple(unique)), a[3] if len(a) > 3 else "means")
    if key not in _seen:
        _seen.add(key)
        ids = encoder.tokenizer(list(unique), truncation=True, max_length=max_length)["input_ids"]
        s = _shape(encoder.model.config)
        _BENCH["cached"][s] = _BENCH["cached"].get(s, 0) + sum(map(len, ids))
        _BENCH["names"].append(encoder.name)
    _BENCH["inside"] = True
    try:
        return _orig(encoder, unique, max_length, *a, **k)
    finally:
        _BENCH["inside"] = False
_E._layer_summary = _layer_summary
'''
#: The last cell: writes what the first one counted.
REPORT = r'''
_BENCH["kernel_cpu_s"] = _t.process_time() - _BENCH.pop("start")
_BENCH["wall_s"] = _t.perf_counter() - _BENCH.pop("wall")
_BENCH.pop("inside", None)
open(_o.environ["BENCH_COLAB_OUT"], "w").write(_j.dumps(_BENCH))
'''


def throughput(model: str, n_sentences: int, threads: int) -> dict:
    """Tokens and sentences per second of ``model`` encoding the first STS-B test sentences, no cache."""
    import torch

    from bertflow_mini.data import load_sts
    from bertflow_mini.encoders.encoder import encode
    from bertflow_mini.encoders.names import load_encoder

    pairs = load_sts("STSB", "test")
    sentences = list(dict.fromkeys(pairs.sent1 + pairs.sent2))[:n_sentences]
    enc = load_encoder(model, device="cpu")
    tokens = sum(map(len, enc.tokenizer(sentences, truncation=True, max_length=64)["input_ids"]))
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
    embedding = sum(p.numel() for n, p in enc.model.named_parameters() if "embeddings" in n)
    params = sum(p.numel() for p in enc.model.parameters()) - embedding
    return {"model": model, "shape": f"{config.num_hidden_layers}x{config.hidden_size}", "sentences": len(sentences),
            "tokens": tokens, "cpu_seconds": seconds, "wall_seconds": wall, "threads": threads,
            "tokens_per_s": tokens / seconds,
            "sentences_per_s": len(sentences) / seconds, "non_embedding_params": params}


def chapter_work(chapter: Path, timeout: int) -> dict:
    """Run a copy of ``chapter`` with the counting cells; returns what they counted."""
    import nbformat

    from bertflow_mini.chapters.execute import run_notebook

    nb = nbformat.read(chapter, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(INSTRUMENT))
    nb.cells.append(nbformat.v4.new_code_cell(REPORT))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "work.json"
        os.environ["BENCH_COLAB_OUT"] = str(out)
        for var in ("BERTFLOW_MODEL", "BERTFLOW_MAX_PAIRS"):  # the chapter's own model, every pair
            os.environ.pop(var, None)
        run_notebook(nb, tmp, timeout)
        return json.loads(out.read_text())


def estimate(work: dict, rates: dict, simcse: dict, t4_efficiency: float, colab_cores: float) -> dict:
    """Seconds on Colab's CPU and on a T4 for one chapter's ``work``, bert-base standing for the
    book's model family. ``rates``: shape -> throughput; ``simcse``: the SimCSE recipe's sizes."""
    bert, minilm = rates["bert"], rates["minilm"]
    tokens = {"bert": 0, "minilm": 0}
    for part in ("forward", "cached"):
        for shape, n in work[part].items():
            tokens["minilm" if shape == minilm["shape"] else "bert"] += n
    trained = sorted({n for n in work["names"] if n.endswith("+simcse") and not n.startswith(("all-", "glove"))})
    tokens["bert"] += len(trained) * simcse["steps"] * simcse["batch_size"] * 2 * simcse["tokens"] * 3
    other = max(work["kernel_cpu_s"] - work["forward_s"], 0.0) / colab_cores
    cpu = (tokens["bert"] / bert["tokens_per_s"] + tokens["minilm"] / minilm["tokens_per_s"]) / colab_cores + other
    t4_rate = {k: T4_FP32_FLOPS * t4_efficiency / (2 * rates[k]["non_embedding_params"]) for k in tokens}
    t4 = sum(tokens[k] / t4_rate[k] for k in tokens) + other
    return {"bert_base_tokens": tokens["bert"], "minilm_tokens": tokens["minilm"], "simcse_trained": trained,
            "other_s": other, "cpu_s": cpu, "t4_s": t4,
            "misses": [b for b, s, limit in (("T4", t4, BUDGET_GPU_S), ("CPU", cpu, BUDGET_CPU_S)) if s > limit]}


def table(results: dict) -> str:
    lines = ["| chapter | bert-base tokens | other work (CPU s) | Colab CPU, est. (min) | T4, est. (min) | misses |",
             "|---|---:|---:|---:|---:|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['bert_base_tokens']:,} | {r['other_s']:.0f} | {r['cpu_s'] / 60:.1f} | "
                     f"{r['t4_s'] / 60:.1f} | {', '.join(r['misses']) or '-'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chapters", nargs="*", help="two-digit chapter numbers (default: all)")
    parser.add_argument("--sentences", type=int, default=512, help="sentences timed per model")
    parser.add_argument("--threads", type=int, default=1, help="threads while timing (CPU time is measured)")
    parser.add_argument("--colab-cores", type=float, default=1.0,
                        help="Colab's 2 vCPUs in cores of this machine (1.0: one core, two hyperthreads)")
    parser.add_argument("--t4-efficiency", type=float, default=0.3, help="assumed share of T4's FP32 peak")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "colab-budget.json")
    parser.add_argument("--smoke", action="store_true", help="tiny model, 16 sentences, no chapter, no file")
    parser.add_argument("--bert", default="bert-base-uncased@0", help="the bert-base-shaped model timed")
    parser.add_argument("--minilm", default="all-MiniLM-L6-v2")
    args = parser.parse_args(argv)
    n = 16 if args.smoke else args.sentences
    rates = {"bert": throughput(args.bert, n, args.threads), "minilm": throughput(args.minilm, n, args.threads)}
    for r in rates.values():
        print(f"{r['model']} ({r['shape']}): {r['tokens_per_s']:.0f} tokens/s, {r['sentences_per_s']:.1f} "
              f"sentences/s per CPU second on {args.threads} thread(s) ({r['sentences']} STS-B sentences)")
    from bertflow_mini.encoders.simcse import DEFAULT

    simcse = {"steps": DEFAULT.steps, "batch_size": DEFAULT.batch_size, "tokens": DEFAULT.max_length * 0.6}
    by_number = {c.name[:2]: c for c in CHAPTERS}
    chosen = [] if args.smoke else [by_number[n] for n in (args.chapters or by_number)]  # in the order given
    results, failed = {}, {}
    for chapter in chosen:
        print(f"running {chapter.name} (scratch-bert, warm cache, instrumented) …", flush=True)
        try:
            work = chapter_work(chapter, args.timeout)
        except Exception as err:  # a chapter that fails today: say so, measure the others
            failed[chapter.name[:2]] = f"{type(err).__name__}: {getattr(err, 'ename', '')} {getattr(err, 'evalue', '')}"
            print(f"  {chapter.name} failed: {failed[chapter.name[:2]]}", flush=True)
            continue
        results[chapter.name[:2]] = {**work, **estimate(work, rates, simcse, args.t4_efficiency, args.colab_cores)}
        if not args.smoke:  # what is measured so far survives a later failure or interruption
            write(args.out, record(args, rates, simcse, results, failed))
    print(table(results))
    for name, why in failed.items():
        print(f"chapter {name} not measured: {why}")
    if not args.smoke:
        write(args.out, record(args, rates, simcse, results, failed))
        print(f"wrote {args.out}")
    return record(args, rates, simcse, results, failed)


def write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def record(args, rates: dict, simcse: dict, results: dict, failed: dict) -> dict:
    """Everything measured and assumed, as written to ``--out``."""
    return {"machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                        "load_avg_1min": os.getloadavg()[0], "threads": args.threads},
            "throughput": rates, "colab_cores": args.colab_cores,
            "t4": {"fp32_flops": T4_FP32_FLOPS, "efficiency": args.t4_efficiency},
            "simcse": simcse, "budget_s": {"gpu": BUDGET_GPU_S, "cpu": BUDGET_CPU_S}, "chapters": results,
            "failed": failed}


if __name__ == "__main__":
    main()
