"""A stand-in for what a Colab reader downloads from the hub: random-weight checkpoints served under
the real names from a temporary mirror, so the bert-base path of every chapter runs offline.

    python tests/colab_mirror.py /tmp/colab-mirror            # small shape (3 layers, width 96)
    python tests/colab_mirror.py /tmp/colab-mirror --exact    # bert-base's exact config (440 MB each)

Then ``BERTFLOW_MODELS=/tmp/colab-mirror BERTFLOW_MODEL=bert-base-uncased`` runs a chapter on it.
The small shape differs from scratch-bert's 4 x 256 in depth *and* width, so a chapter that assumes
either fails here. Each checkpoint is a ``BertForMaskedLM`` (MultiBERTs ship an MLM head too), with
bert-base-uncased's tokenizer from the local mirror; the real mirror's other models are linked in.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

SMALL = {"num_hidden_layers": 3, "hidden_size": 96, "num_attention_heads": 2, "intermediate_size": 384}
#: The names a bert-base reader's chapters ask for: the model, and the MultiBERTs steps they sweep.
NAMES = ("bert-base-uncased", "multiberts-seed_0-step_0k", "multiberts-seed_0-step_20k",
         "multiberts-seed_0-step_200k", "multiberts-seed_0-step_2000k")


def build(out: Path, shared_models: Path, exact: bool = False, names: tuple[str, ...] = NAMES) -> Path:
    """Write the mirror into ``out`` (idempotent) and return it."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer_dir = shared_models / "bert-base-uncased-tokenizer"
    out.mkdir(parents=True, exist_ok=True)
    for other in shared_models.iterdir():  # the real mirror's models stay available by name
        link = out / other.name
        if not link.exists():
            os.symlink(other.resolve(), link)
    config = BertConfig.from_pretrained(tokenizer_dir)
    if not exact:
        config.update(SMALL)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    for i, name in enumerate(names):
        folder = out / name
        if (folder / "config.json").is_file():
            continue
        torch.manual_seed(i)  # each checkpoint its own weights, deterministically
        BertForMaskedLM(config).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--exact", action="store_true", help="bert-base's exact config (12 x 768)")
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("BERTFLOW_MODELS", "../shared/models")))
    args = parser.parse_args()
    print(build(args.out, args.shared.resolve(), args.exact))
