"""Is our pretraining loop fast? Its tokens/s against ``transformers.Trainer``. Prints, asserts nothing.

    .venv/bin/python benchmarks/bench_pretrain.py                  # default recipe, 30 steps
    .venv/bin/python benchmarks/bench_pretrain.py --set layers=2 --set hidden=128 --set heads=2

Ours (decoder at the masked positions only, length-bucketed batches) against ``transformers.Trainer``
+ ``DataCollatorForLanguageModeling`` (logits at every position): the same shape, sentences, batch
size and number of steps. What scratch-bert learns is ``experiments/scratch_bert.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
import pandas as pd
import torch

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments")
)
from common import parse_settings

from bertflow_mini.data.corpus import corpus_sentences, split_held_out
from bertflow_mini.encoders import pretrain
from bertflow_mini.encoders.mlm import (
    adamw,
    length_batches,
    tokenize,
    train_step,
    warmup_linear,
)


def show(title: str, df: pd.DataFrame) -> None:
    print(f"\n{title}")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(df.to_string(float_format=lambda v: f"{v:.2f}"))


def ours_tokens_per_second(recipe, data, steps: int) -> float:
    from transformers import BertForMaskedLM

    torch.manual_seed(0)
    model = BertForMaskedLM(
        pretrain.bert_config(recipe, data.vocab_size, data.pad_id)
    ).train()
    gen = torch.Generator().manual_seed(0)
    batches = length_batches([len(s) for s in data.seqs], recipe.batch_size, gen)
    opt = adamw(model, recipe.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_linear(10, steps))
    tokens, start = 0, time.perf_counter()
    for _ in range(steps):
        index = next(batches)
        tokens += sum(len(data.seqs[i]) for i in index)
        train_step(model, opt, sched, data, index, gen)
    return tokens / (time.perf_counter() - start)


def trainer_tokens_per_second(recipe, data, tokenizer, steps: int) -> float:
    """The peer a user would pick: ``Trainer`` + ``DataCollatorForLanguageModeling``, grouped by length."""
    from transformers import (
        BertForMaskedLM,
        DataCollatorForLanguageModeling,
        Trainer,
        TrainingArguments,
    )

    examples = [{"input_ids": s.tolist()} for s in data.seqs]
    torch.manual_seed(0)
    model = BertForMaskedLM(pretrain.bert_config(recipe, data.vocab_size, data.pad_id))
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            out,
            per_device_train_batch_size=recipe.batch_size,
            max_steps=steps,
            learning_rate=recipe.lr,
            warmup_steps=10,
            weight_decay=0.01,
            report_to=[],
            save_strategy="no",
            logging_strategy="no",
            use_cpu=True,
            seed=0,
            train_sampling_strategy="group_by_length",
            dataloader_num_workers=0,
            disable_tqdm=True,
        )
        collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
        trainer = Trainer(
            model=model, args=args, train_dataset=examples, data_collator=collator
        )
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    mean_len = float(np.mean([len(s) for s in data.seqs]))
    return steps * recipe.batch_size * mean_len / seconds


def speed(recipe, steps: int) -> None:
    tokenizer = pretrain.load_tokenizer()
    train, _ = split_held_out(corpus_sentences(recipe.corpus), recipe.held_out)
    data = tokenize(train, tokenizer, recipe.max_length)
    torch.set_num_threads(os.cpu_count() or 1)
    ours = ours_tokens_per_second(recipe, data, steps)
    theirs = trainer_tokens_per_second(recipe, data, tokenizer, steps)
    show(
        f"speed, {steps} steps of batch {recipe.batch_size}, {torch.get_num_threads()} threads "
        "(tokens/s, padding not counted)",
        pd.DataFrame(
            {"tokens/s": [ours, theirs]}, index=["ours", "transformers.Trainer"]
        ),
    )
    print(f"ours / Trainer = {ours / theirs:.2f}x")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--speed-steps", type=int, default=30)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a recipe field",
    )
    args = p.parse_args(argv)
    recipe = pretrain.with_overrides(**parse_settings(args.set))
    print(f"recipe: {recipe}")
    speed(recipe, args.speed_steps)


if __name__ == "__main__":
    main()
