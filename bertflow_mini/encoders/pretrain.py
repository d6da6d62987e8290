"""``scratch-bert``: the book's own BERT, pretrained here with masked language modelling, offline.

No raw BERT weights can be downloaded on the machines this book is built on, so it pretrains one:
``transformers.BertForMaskedLM`` in the shape of Google's BERT-Mini (Turc et al. 2019: 4 layers,
width 256, 4 heads, hub id ``google/bert_uncased_L-4_H-256_A-4``) with bert-base-uncased's full
30,522-token WordPiece vocabulary, trained with BERT's recipe (:mod:`bertflow_mini.encoders.mlm`) on WordNet
glosses and the unlabelled STS/SICK sentences (:mod:`bertflow_mini.data.corpus`).

The recipe is a frozen dataclass (as nanoGPT's ``GPTConfig``); its hash names the checkpoint folder,
so a changed recipe is never served a stale model::

    ~/.cache/bertflow_mini/models/scratch-bert-<hash>/
        pct-000/  pct-025/  pct-050/  pct-100/   # Hugging Face folders: 0% (random init) … 100%
        training_log.csv  recipe.json

The names ``scratch-bert`` (= 100%) and ``scratch-bert@0``, ``@25``, ``@50``, ``@100`` resolve to
those folders (:func:`checkpoint_folder`, which never trains); :func:`checkpoint` builds them.
"""

from __future__ import annotations

import csv
import json
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from bertflow_mini._device import cuda_devices, default_device
from bertflow_mini._io import atomic_dir
from bertflow_mini._threads import TRAINING_THREADS, torch_threads
from bertflow_mini.data.corpus import corpus_sentences, split_held_out, unigram_entropy
from bertflow_mini.encoders import release
from bertflow_mini.encoders.mlm import (
    MASK_RATE,
    MLMData,
    evaluate_mlm,
    tokenize,
    train_mlm,
)
from bertflow_mini.encoders.runs import (
    NotBuiltError,
    run_folder,
    run_key,
    write_run_log,
)
from bertflow_mini.encoders.spec import (
    BERT_BASE_TOKENIZER,
    SCRATCH,
)
from bertflow_mini.encoders.spec import PERCENTS as PERCENTS

if TYPE_CHECKING:
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerBase

#: Bump when the training code changes what a recipe produces: every cached checkpoint is then retrained.
RECIPE_VERSION = 1
NAME = SCRATCH
TOKENIZER = BERT_BASE_TOKENIZER
#: Seconds per training step on a 2-core CPU at the default shape: only for the "about N minutes"
#: message and :func:`steps_for_minutes` (the speed benchmark measures the real figure).
SECONDS_PER_STEP = 0.45


@dataclass(frozen=True)
class Recipe:
    """Everything that determines the pretrained weights."""

    layers: int = 4
    hidden: int = 256
    heads: int = 4
    intermediate: int = 1024
    positions: int = 128
    max_length: int = 64
    dropout: float = 0.1
    steps: int = 1500
    batch_size: int = 64
    lr: float = 5e-4
    warmup: float = 0.06
    weight_decay: float = 0.01
    corpus: str = "wordnet+sts"
    held_out: float = 0.02
    seed: int = 0

    def payload(self) -> dict[str, Any]:
        """What the cache key hashes: the recipe and :data:`RECIPE_VERSION`."""
        return {"version": RECIPE_VERSION, **asdict(self)}

    def key(self) -> str:
        """A short hash of :meth:`payload`."""
        return run_key(self.payload())


def bert_config(recipe: Recipe, vocab_size: int, pad_id: int) -> BertConfig:
    """The ``transformers.BertConfig`` of ``recipe`` (GELU, post-LayerNorm, tied decoder: BERT's own)."""
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=recipe.hidden,
        num_hidden_layers=recipe.layers,
        num_attention_heads=recipe.heads,
        intermediate_size=recipe.intermediate,
        max_position_embeddings=recipe.positions,
        hidden_dropout_prob=recipe.dropout,
        attention_probs_dropout_prob=recipe.dropout,
        pad_token_id=pad_id,
        tie_word_embeddings=True,
    )


def run_dir(recipe: Recipe) -> Path:
    """Where ``recipe``'s checkpoints live (whether or not they exist yet). A run on a GPU is not
    bit-identical to one on the CPU, so it gets a folder of its own (``…-cuda``)."""
    device = default_device()
    return run_folder(NAME, recipe.payload(), "" if device == "cpu" else f"-{device}")


def load_tokenizer() -> PreTrainedTokenizerBase:
    """bert-base-uncased's WordPiece tokenizer: from ``$BERTFLOW_MODELS`` or the hub."""
    from bertflow_mini.encoders import loading
    from bertflow_mini.encoders.loading import folder_or_hub

    return loading.load_tokenizer(folder_or_hub(TOKENIZER), TOKENIZER)


# ---------------------------------------------------------------------------------------- training
class _CurveAndCheckpoints:
    """The training callback: collects the curve (mean training loss and held-out loss every
    ``every`` steps and at each checkpoint) and saves the model and tokenizer at the steps in
    ``saves``."""

    def __init__(
        self,
        model: BertForMaskedLM,
        held: MLMData,
        saves: dict[int, Path],
        tokenizer: PreTrainedTokenizerBase,
        every: int,
    ) -> None:
        self.model, self.held, self.saves, self.tokenizer, self.every = (
            model,
            held,
            saves,
            tokenizer,
            every,
        )
        self.rows: list[dict[str, float]] = []
        self.window: list[float] = []

    def __call__(self, step: int, loss: float) -> None:
        if not np.isnan(loss):
            self.window.append(loss)
        if step in self.saves or step % self.every == 0:
            held = evaluate_mlm(self.model, self.held)
            train = float(np.mean(self.window)) if self.window else float("nan")
            self.rows.append({"step": step, "train_loss": train, "held_out_loss": held})
            self.window = []
        if step in self.saves:
            self.model.save_pretrained(self.saves[step])
            self.tokenizer.save_pretrained(self.saves[step])


def pretrain(
    recipe: Recipe, *, threads: int | None = None, progress: bool = True
) -> Path:
    """Pretrain ``recipe`` and write its checkpoints (atomically: the folder appears complete or not at
    all); returns :func:`run_dir`. Deterministic: the same recipe on the same machine gives the same bits.
    """
    from transformers import BertForMaskedLM

    from bertflow_mini.encoders.loading import hf_bars_off

    # no "Writing model shards" bar per checkpoint
    with hf_bars_off():
        final = run_dir(recipe)
        tokenizer = load_tokenizer()
        train_text, held_text = split_held_out(
            corpus_sentences(recipe.corpus), recipe.held_out
        )
        train = tokenize(train_text, tokenizer, recipe.max_length)
        held = tokenize(held_text, tokenizer, recipe.max_length)
        counts = np.bincount(np.concatenate(train.seqs), minlength=train.vocab_size)
        counts[list(train.special_ids)] = 0
        # another process may finish the same recipe first: keep theirs
        with atomic_dir(final) as staging:
            saves = {
                round(recipe.steps * p / 100): staging / f"pct-{p:03d}"
                for p in PERCENTS
            }
            # a GPU when there is one: masks are drawn on the CPU either way
            device = default_device()
            with (
                torch.random.fork_rng(devices=cuda_devices(device)),
                torch_threads(threads or TRAINING_THREADS),
            ):
                # the initial weights are drawn on the CPU, then moved
                torch.manual_seed(recipe.seed)
                model = BertForMaskedLM(
                    bert_config(recipe, len(tokenizer), tokenizer.pad_token_id)
                ).to(device)  # type: ignore[arg-type]  # transformers' wrapper hides .to's signature
                log = _CurveAndCheckpoints(
                    model, held, saves, tokenizer, every=max(1, recipe.steps // 20)
                )
                start = time.perf_counter()
                train_mlm(
                    model,
                    train,
                    steps=recipe.steps,
                    batch_size=recipe.batch_size,
                    lr=recipe.lr,
                    warmup_steps=max(1, round(recipe.warmup * recipe.steps)),
                    seed=recipe.seed,
                    weight_decay=recipe.weight_decay,
                    callback=log,
                    progress=progress,
                )
                seconds = time.perf_counter() - start
            info = {
                "recipe": asdict(recipe),
                "recipe_version": RECIPE_VERSION,
                "key": recipe.key(),
                "train_sentences": len(train.seqs),
                "held_out_sentences": len(held.seqs),
                "train_tokens": int(sum(len(s) for s in train.seqs)),
                "unigram_entropy": unigram_entropy(counts),
                "seconds": seconds,
            }
            # each checkpoint carries the run's log and counts
            for folder in [staging, *saves.values()]:
                np.save(folder / "token_counts.npy", counts)
                write_run_log(folder, "recipe.json", info, log.rows)
    return final


# ---------------------------------------------------------------------------------- checkpoints
def _checkpoint_dir(percent: int, recipe: Recipe) -> Path:
    """Where the checkpoint at ``percent`` of ``recipe``'s steps lives; a ``ValueError`` unless
    it is one of :data:`PERCENTS`."""
    if percent not in PERCENTS:
        raise ValueError(
            f"{NAME}@{percent}: the checkpoints of {NAME} are "
            f"{', '.join(f'@{p}' for p in PERCENTS)}"
        )
    return run_dir(recipe) / f"pct-{percent:03d}"


def minutes(recipe: Recipe) -> float:
    """About how many minutes pretraining ``recipe`` takes on a 2-core CPU."""
    return recipe.steps * SECONDS_PER_STEP / 60


def checkpoint_folder(percent: int = 100, recipe: Recipe | None = None) -> Path:
    """The folder of the checkpoint at ``percent`` of ``recipe``'s pretraining (default:
    :data:`DEFAULT`; 100 is ``scratch-bert``, 25 ``scratch-bert@25``); a :class:`NotBuiltError`
    saying how to build it when it has not been pretrained. Never trains."""
    recipe = recipe or DEFAULT
    folder = _checkpoint_dir(percent, recipe)
    if not folder.is_dir():
        name = NAME if percent == 100 else f"{NAME}@{percent}"
        raise NotBuiltError(
            f"{name} is not built yet: no checkpoint for this recipe in "
            f"{run_dir(recipe).parent}. Build it with bf.build({name!r}) or "
            "`python -m bertflow_mini pretrain` (about "
            f"{minutes(recipe):.0f} minutes on a 2-core CPU)"
        )
    return folder


def checkpoint(
    percent: int = 100, recipe: Recipe | None = None, *, progress: bool = True
) -> Path:
    """:func:`checkpoint_folder`, built first when it is not cached: the book's released weights
    fetched (:func:`bertflow_mini.encoders.release.fetch`), else pretrained here (saying how long
    that takes). The build step of ``scratch-bert``."""
    recipe = recipe or DEFAULT
    folder = _checkpoint_dir(percent, recipe)
    if not folder.is_dir() and not release.fetch(run_dir(recipe), progress=progress):
        print(
            f"{NAME}: not in the cache nor in the book's release; pretraining it now "
            f"(about {minutes(recipe):.0f} minutes on a 2-core CPU) …",
            flush=True,
        )
        pretrain(recipe, progress=progress)
    return folder


def training_log(
    recipe: Recipe | None = None,
) -> tuple[list[dict[str, float]], dict[str, Any]]:
    """The training curve and the run's facts (corpus sizes, unigram entropy, seconds) of ``recipe``."""
    folder = checkpoint_folder(100, recipe).parent
    with open(folder / "training_log.csv") as f:
        rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return rows, json.loads((folder / "recipe.json").read_text())


def sentence_draws(facts: dict[str, Any], step: int) -> float:
    """How many times, in expectation, pretraining had drawn each training sentence after ``step``
    steps: the epochs seen. ``facts`` is a run's ``recipe.json``.

    :func:`~bertflow_mini.encoders.mlm.length_batches` cuts every epoch's ``train_sentences`` into
    ``ceil(train_sentences / batch_size)`` batches and serves them in random order, one per step, so a
    sentence is drawn ``step / ceil(train_sentences / batch_size)`` times in expectation
    (``step × batch_size / train_sentences`` when the batch size divides the corpus)."""
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    sentences, batch = facts["train_sentences"], facts["recipe"]["batch_size"]
    if sentences < 1 or batch < 1:
        raise ValueError(
            f"a run needs training sentences and a batch size, got {sentences} and {batch}"
        )
    draws: float = step / math.ceil(sentences / batch)
    return draws


def checkpoint_run(folder: str | Path) -> tuple[dict[str, Any], int]:
    """The run facts (``recipe.json``) a checkpoint folder carries and the step it was saved at,
    read back from its name (``pct-050`` of a 1,500-step run: step 750, as :func:`pretrain` saves it)."""
    folder = Path(folder)
    percent = folder.name.removeprefix("pct-")
    if not (folder.name.startswith("pct-") and percent.isdigit()):
        raise ValueError(
            f"{folder} is not a checkpoint of {NAME} (a folder named pct-<percent>)"
        )
    facts = json.loads((folder / "recipe.json").read_text())
    return facts, round(facts["recipe"]["steps"] * int(percent) / 100)


def expected_targets(folder: str | Path) -> np.ndarray:
    """Each token's expected number of times as a masked target in the pretraining that made the
    checkpoint in ``folder``, up to its step: its count in the training split (``token_counts.npy``)
    × :func:`sentence_draws` × :data:`~bertflow_mini.encoders.mlm.MASK_RATE`, the collator's rate.

    An expectation, not a log: which sentences and positions were drawn is random, so a token of
    expected count 0.3 was most likely never a target, and one of count 0 (absent from the corpus)
    certainly never."""
    facts, step = checkpoint_run(folder)
    counts: np.ndarray = np.load(Path(folder) / "token_counts.npy")
    return counts * (sentence_draws(facts, step) * MASK_RATE)


#: The recipe behind the names ``scratch-bert`` and ``scratch-bert@<percent>``.
DEFAULT = Recipe()


def steps_for_minutes(
    minutes: float, seconds_per_step: float = SECONDS_PER_STEP
) -> int:
    """The number of steps that takes about ``minutes`` on the project's CPU at the default shape.

    A budget in minutes becomes a step count *before* training, so the recipe (and its weights) stay
    deterministic: two runs of ``pretrain --minutes 40`` train the same steps whatever the clock says.
    """
    if not (minutes > 0 and math.isfinite(minutes)):
        raise ValueError(f"minutes must be a positive number, got {minutes!r}")
    return max(1, round(minutes * 60 / seconds_per_step))


def with_overrides(**changes: Any) -> Recipe:
    """The default recipe with some fields changed (``None`` values ignored)."""
    return replace(DEFAULT, **{k: v for k, v in changes.items() if v is not None})
