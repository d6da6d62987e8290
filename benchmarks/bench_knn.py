"""Time `frequency_table` (Table 1 of Li et al. 2020) on a random matrix and on two real embedding tables.

    python benchmarks/bench_knn.py                 # 30k×768 random, all-MiniLM-L6-v2, GloVe 50d
    PYTHONPATH=. python benchmarks/bench_knn.py    # from the repo root when the package is not installed
    python benchmarks/bench_knn.py --skip-random
    python benchmarks/bench_knn.py --smoke         # 5000 rows of each table: checks the script runs

Reads the model from $BERTFLOW_MODELS/all-MiniLM-L6-v2 and GloVe from
$BERTFLOW_DATA/glove/glove.6B.50d.subset.txt.gz (the shared mirror; nothing is downloaded).
"""

from __future__ import annotations

import argparse
import gzip
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bertflow_mini.geometry.frequency import (
    exclusion_counts,
    frequency_norm_correlation,
    frequency_table,
    published_table1,
)


def _timed(label: str, fn):
    t0 = time.perf_counter()
    out = fn()
    print(f"{label}: {time.perf_counter() - t0:.1f} s")
    return out


def minilm_embeddings(folder: Path) -> tuple[np.ndarray, list[str]]:
    """The input word-embedding matrix of all-MiniLM-L6-v2 and its vocabulary, row-aligned."""
    from transformers import AutoModel, AutoTokenizer

    if not folder.is_dir():
        raise FileNotFoundError(
            f"model folder {folder} not found (set BERTFLOW_MODELS)"
        )
    model = AutoModel.from_pretrained(folder)
    vocab = AutoTokenizer.from_pretrained(folder).get_vocab()
    words = [w for w, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    E = model.get_input_embeddings().weight.detach().numpy()
    return E[: len(words)], words


def glove_embeddings(path: Path) -> tuple[np.ndarray, list[str]]:
    """GloVe via ``bertflow_mini.data.load_glove`` when the package has it, else a plain text-format reader."""
    if not path.is_file():
        raise FileNotFoundError(f"GloVe file {path} not found (set BERTFLOW_DATA)")
    try:
        from bertflow_mini.data import load_glove
    except ImportError:
        words, rows = [], []
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                word, *numbers = line.rstrip().split(" ")
                words.append(word)
                rows.append(np.array(numbers, dtype=np.float32))
        return np.stack(rows), words
    glove = load_glove(path)
    return np.asarray(glove.vectors), list(glove.words)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--skip-random", action="store_true")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the first 5000 rows of each table: checks the script end to end (figures mean nothing)",
    )
    args = parser.parse_args(argv)
    rows = 5000 if args.smoke else None  # None: every row
    pd.set_option("display.width", 140, "display.precision", 3)
    models = Path(os.environ.get("BERTFLOW_MODELS", "/work/shared/models"))
    data = Path(os.environ.get("BERTFLOW_DATA", "/work/shared/data"))

    if not args.skip_random:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(models / "all-MiniLM-L6-v2")
        n, dim = (rows, 32) if args.smoke else (30000, 768)
        words = [w for w, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])][
            :n
        ]
        E = np.random.default_rng(0).normal(size=(n, dim)).astype(np.float32) / np.sqrt(
            dim
        )
        _timed(
            f"frequency_table, {n}×{dim} random float32 (BERT vocab as words)",
            lambda: frequency_table(E, words),
        )

    print(
        "\npublished, bert-base (Li et al. 2020, Table 1)\n", published_table1(), sep=""
    )

    E, words = _timed(
        "load all-MiniLM-L6-v2", lambda: minilm_embeddings(models / "all-MiniLM-L6-v2")
    )
    E, words = E[:rows], words[:rows]
    print("whole-word filter:", exclusion_counts(words))
    table = _timed(
        f"frequency_table, all-MiniLM-L6-v2 {E.shape}",
        lambda: frequency_table(E, words),
    )
    print(table)
    print("Spearman(frequency, norm):", frequency_norm_correlation(E, words))

    glove = data / "glove" / "glove.6B.50d.subset.txt.gz"
    E, words = _timed("load GloVe 6B 50d subset", lambda: glove_embeddings(glove))
    E, words = E[:rows], words[:rows]
    print("whole-word filter:", exclusion_counts(words))
    table = _timed(
        f"frequency_table, GloVe {E.shape}", lambda: frequency_table(E, words)
    )
    print(table)
    print("Spearman(frequency, norm):", frequency_norm_correlation(E, words))


if __name__ == "__main__":
    main()
