"""Encoding throughput: bertflow_mini.encoders.encoder against a naive loop, in the same run.

    python benchmarks/bench_encode.py [--model all-MiniLM-L6-v2] [--repeats 2]
    python benchmarks/bench_encode.py --smoke      # 16 sentences, once: checks the script runs, times mean nothing

The naive loop is what most first attempts look like: the sentences in their given order (both
sides of every STS-B test pair, duplicates included), fixed batches of 64, each padded to its
longest sentence, no cache. ``encode`` de-duplicates, sorts by length (so each batch pads to
nearly nothing) and caches. We time it cold (empty cache) and warm. Peak memory is the process's
maximum resident set size.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time

import torch

from bertflow_mini.data import load_sts
from bertflow_mini.encoders.encoder import encode
from bertflow_mini.encoders.names import load_encoder


def naive_encode(
    enc, sentences: list[str], batch_size: int = 64, max_length: int = 64
) -> torch.Tensor:
    out = []
    with torch.inference_mode():
        for i in range(0, len(sentences), batch_size):
            batch = enc.tokenizer(
                sentences[i : i + batch_size],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            )
            hidden = enc.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            out.append((hidden * mask).sum(1) / mask.sum(1))
    return torch.cat(out)


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the first 8 test pairs, one repeat: checks the script end to end (figures mean nothing)",
    )
    args = parser.parse_args(argv)

    pairs = load_sts("STSB", "test")
    n_pairs = 8 if args.smoke else len(pairs)
    sentences = pairs.sent1[:n_pairs] + pairs.sent2[:n_pairs]
    repeats = 1 if args.smoke else args.repeats
    enc = load_encoder(args.model, device="cpu")
    print(
        f"model {enc.name}, {len(sentences)} sentences ({len(set(sentences))} distinct), "
        f"torch threads {torch.get_num_threads()}, cores {os.cpu_count()}"
    )

    naive = best_of(lambda: naive_encode(enc, sentences), repeats)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["BERTFLOW_CACHE"] = tmp
        cold = best_of(
            lambda: encode(enc, sentences, "last-avg", cache=False, progress=False),
            repeats,
        )
        encode(enc, sentences, "last-avg", progress=False)  # fill the cache
        warm = best_of(
            lambda: encode(enc, sentences, "last-avg", progress=False), repeats
        )

    n = len(sentences)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{'method':<34}{'seconds':>9}{'sentences/s':>14}{'speed-up':>10}")
    for name, t in [
        ("naive loop (fixed batches, no cache)", naive),
        ("encode, cold (no cache)", cold),
        ("encode, warm cache", warm),
    ]:
        print(f"{name:<34}{t:>9.2f}{n / t:>14.0f}{naive / t:>9.1f}x")
    print(f"peak resident memory: {peak_mb:.0f} MB")
    target = naive / cold >= 1.5
    print(f"target (cold >= 1.5x naive): {'met' if target else 'NOT met'}")


if __name__ == "__main__":
    main()
