"""Unsupervised SimCSE (Gao, Yao & Chen 2021) on the book's own BERT: the field's next step after the flow.

The whole method is one loss. Encode a batch of sentences **twice** with dropout on: the two vectors
of the same sentence differ only by dropout noise and form the positive pair; every other sentence of
the batch is a negative. With cosine similarities ``s_ij = cos(z_i, z'_j)`` and temperature ``τ``,

    ℓ_i = −log( exp(s_ii / τ) / Σ_j exp(s_ij / τ) ),

a cross-entropy whose correct "class" of row ``i`` is column ``i`` (:func:`simcse_loss`). Unlike the
flow and whitening, SimCSE changes the encoder's weights, so its result is a new checkpoint, named
``<base>+simcse`` (``scratch-bert+simcse``, ``scratch-bert@0+simcse``), or ``<base>+simcse-seed<k>``
for training seed ``k`` ≥ 1 (:func:`simcse_name`), and cached like the pretrained
model: the folder's name hashes the base weights, the :class:`SimCSEConfig` (seed included) and
:data:`VERSION`, so a changed base or recipe is never served stale weights::

    ~/.cache/bertflow_mini/models/scratch-bert+simcse-<hash>/         # a Hugging Face folder + training_log.csv
    ~/.cache/bertflow_mini/models/scratch-bert+simcse-seed1-<hash>/   # the same recipe, seed 1

Deviations from Gao et al., all for a 2-core CPU and a 4-layer model: the training sentences are the
unlabelled STS/SICK sentences the flow is fitted on (Gao et al.: 10⁶ Wikipedia sentences); a fixed
number of steps with no checkpoint chosen on STS-B dev (they evaluate every 250 steps on the labelled
dev set and keep the best); batches of sentences of similar length (less padding); the sentence
vector is the pooling the book evaluates (``first-last-avg``, no MLP head), where Gao et al. train
[CLS] with an MLP and test [CLS] without it (their Table 6 finds the poolings within a point).
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F

from bertflow_mini._device import cuda_devices
from bertflow_mini._io import atomic_dir
from bertflow_mini._progress import tqdm
from bertflow_mini._threads import TRAINING_THREADS, torch_threads
from bertflow_mini._training import gradient_step
from bertflow_mini.encoders import release
from bertflow_mini.encoders.loading import load_from, local_fingerprint
from bertflow_mini.encoders.pooling import pool
from bertflow_mini.encoders.runs import (
    NotBuiltError,
    run_folder,
    run_key,
    write_run_log,
)
from bertflow_mini.encoders.spec import check_simcse_seed, short_name
from bertflow_mini.encoders.spec import simcse_name as simcse_name

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from bertflow_mini.encoders.encoder import Encoder
    from bertflow_mini.encoders.spec import ModelSpec

#: Bump when the training code changes what a config produces: every cached SimCSE model is retrained.
VERSION = 1


@dataclass(frozen=True)
class SimCSEConfig:
    """Everything besides the base weights that determines the SimCSE weights."""

    steps: int = 120
    batch_size: int = 64  # Gao et al.'s unsupervised batch
    lr: float = 5e-5  # Gao et al.: 3e-5 for bert-base
    temperature: float = 0.05  # Gao et al.'s τ
    max_length: int = 32  # Gao et al.'s unsupervised setting
    pooling: str = "first-last-avg"
    corpus: str = "sts"  # bertflow_mini.data.corpus: the unlabelled STS/SICK sentences
    seed: int = 0

    def __post_init__(self) -> None:
        check_simcse_seed(self.seed)

    def payload(self, base_fingerprint: str) -> dict[str, Any]:
        """What the cache key hashes: the base weights, this config and :data:`VERSION`."""
        return {"version": VERSION, "base": base_fingerprint, **asdict(self)}

    def key(self, base_fingerprint: str) -> str:
        """A short hash of :meth:`payload`."""
        return run_key(self.payload(base_fingerprint))


DEFAULT = SimCSEConfig()


def config_for(seed: int) -> SimCSEConfig:
    """:data:`DEFAULT` with training seed ``seed`` (seed 0 is :data:`DEFAULT` itself, same cache key;
    a config checks its seed)."""
    return replace(DEFAULT, seed=seed)


#: Seconds per step on a 2-core CPU at the default config, measured here: ``scratch-bert`` (3.2 M
#: parameters outside the embeddings) takes 0.9 s; a network of bert-base's shape (85.6 M) 5.5 s
#: over its first 10 steps on two quiet cores (11.7 s over 120 on two busy ones), about 0.065 s per
#: million. Only for the "about N minutes" message.
SECONDS_PER_STEP = 0.9
SECONDS_PER_STEP_PER_MILLION = 0.065


def cpu_minutes(model: torch.nn.Module, config: SimCSEConfig = DEFAULT) -> float:
    """About how many minutes ``config.steps`` steps of ``model`` take on a 2-core CPU (a rough guide:
    :data:`SECONDS_PER_STEP` for a small network, in proportion to its size for a large one)."""
    from bertflow_mini.encoders.random_init import non_embedding_parameters

    millions = non_embedding_parameters(model) / 1e6
    per_step = max(SECONDS_PER_STEP, SECONDS_PER_STEP_PER_MILLION * millions)
    return config.steps * per_step / 60


# ---------------------------------------------------------------------------------------- the loss
def simcse_loss(
    z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.05
) -> torch.Tensor:
    """InfoNCE with in-batch negatives: row ``i`` of ``z1`` must pick row ``i`` of ``z2`` by cosine / τ."""
    if z1.ndim != 2 or z1.shape != z2.shape or len(z1) < 2:
        raise ValueError(
            f"z1 and z2 must be equal (b, d) batches with b >= 2, got {tuple(z1.shape)}, {tuple(z2.shape)}"
        )
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    sims = F.cosine_similarity(z1[:, None, :], z2[None, :, :], dim=-1) / temperature
    return F.cross_entropy(sims, torch.arange(len(z1), device=z1.device))


# ---------------------------------------------------------------------------------------- training
def train_simcse(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    sentences: list[str],
    config: SimCSEConfig = DEFAULT,
    progress: bool = True,
) -> list[float]:
    """Fine-tune ``model`` (a ``BertModel``) in place with unsupervised SimCSE; returns the loss per step.

    Deterministic: dropout and batch order come from ``config.seed`` only (the caller's random state
    is left as it was). AdamW with no weight decay and a linear decay to 0, as Gao et al. (Hugging
    Face ``Trainer`` defaults).
    """
    from bertflow_mini.encoders.mlm import (
        adamw,
        length_batches,
        tokenize,
        warmup_linear,
    )

    if len(sentences) < config.batch_size:
        raise ValueError(
            f"need at least batch_size={config.batch_size} sentences, got {len(sentences)}"
        )
    data = tokenize(sentences, tokenizer, config.max_length)
    device = next(model.parameters()).device
    losses: list[float] = []
    # fork the generators that manual_seed touches (CPU, and the model's GPU), so the caller's state stays
    with torch.random.fork_rng(devices=cuda_devices(device)):
        torch.manual_seed(config.seed)  # the dropout masks (CPU and GPU alike)
        gen = torch.Generator().manual_seed(config.seed)  # the batches
        batches = length_batches([len(s) for s in data.seqs], config.batch_size, gen)
        opt = adamw(model, config.lr, weight_decay=0.0)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_linear(0, config.steps))
        model.train()
        for _ in tqdm(
            range(config.steps), desc="SimCSE", disable=not progress, unit="step"
        ):
            index = next(batches)
            # a lone sentence has no negative: take the next batch
            while len(index) < 2:
                index = next(batches)
            b = data.batch(index)
            ids, attention = b.ids.to(device), b.attention.to(device)
            # the batch through the model twice in one pass: two dropout masks, the positive pairs
            hidden = model(
                input_ids=torch.cat([ids, ids]),
                attention_mask=torch.cat([attention, attention]),
                output_hidden_states=True,
            ).hidden_states
            z1, z2 = pool(
                hidden, torch.cat([attention, attention]), config.pooling
            ).chunk(2)
            loss = simcse_loss(z1, z2, config.temperature)
            losses.append(gradient_step(loss, opt, scheduler=sched))
    model.eval()
    return losses


# ---------------------------------------------------------------------------------------- names and cache
def run_dir(name: str, fingerprint: str, config: SimCSEConfig | None = None) -> Path:
    """Where the SimCSE run ``name`` (:func:`simcse_name` of its base and ``config``'s seed) of the
    base weights ``fingerprint`` lives: the folder is named after the run's short name, then the
    key of ``config`` and ``fingerprint``."""
    config = config or DEFAULT
    return run_folder(short_name(name), config.payload(fingerprint))


def train_and_save(
    encoder: Encoder,
    name: str,
    config: SimCSEConfig | None = None,
    *,
    progress: bool = True,
    threads: int | None = None,
) -> Path:
    """Fine-tune a loaded transformer ``encoder`` with SimCSE and save it atomically (the folder
    appears complete or not at all) as the run ``name`` (:func:`simcse_name` of the encoder and
    ``config``'s seed) under :func:`run_dir`; a no-op when the cache already holds it.
    Trains on the encoder's device. Returns the folder. (By name: ``load_encoder("<base>+simcse")``,
    ``load_encoder("<base>+simcse-seed1")``.)"""
    import copy

    from bertflow_mini.data.corpus import corpus_sentences

    config = config or DEFAULT
    encoder.require_transformer("SimCSE (it fine-tunes the weights)")
    final = run_dir(name, encoder.fingerprint, config)
    if final.is_dir():
        return final
    assert encoder.model is not None and encoder.tokenizer is not None
    where = (
        "on the GPU"
        if torch.device(encoder.device).type == "cuda"
        else f"about {cpu_minutes(encoder.model, config):.0f} minutes on a 2-core CPU"
    )
    print(
        f"{name}: not cached; fine-tuning {encoder.name} with SimCSE now ({where}) …",
        flush=True,
    )
    model = copy.deepcopy(encoder.model)
    # another process may finish the same model first: keep theirs
    with atomic_dir(final) as staging:
        start, cpu = time.perf_counter(), time.process_time()
        with torch_threads(threads or TRAINING_THREADS):
            losses = train_simcse(
                model,
                encoder.tokenizer,
                corpus_sentences(config.corpus),
                config,
                progress,
            )
        info = {
            "base": encoder.name,
            "base_fingerprint": encoder.fingerprint,
            "config": asdict(config),
            "version": VERSION,
            "seconds": time.perf_counter() - start,
            "cpu_seconds": time.process_time() - cpu,
        }  # wall clock, and CPU time of all threads
        model.save_pretrained(staging)
        encoder.tokenizer.save_pretrained(staging)
        rows = [{"step": i, "loss": loss} for i, loss in enumerate(losses, start=1)]
        write_run_log(staging, "simcse.json", info, rows)
    return final


def how_to_build(name: str, config: SimCSEConfig = DEFAULT) -> str:
    """How to build the SimCSE run ``name``, and about how long it takes."""
    minutes = config.steps * SECONDS_PER_STEP / 60
    return (
        f"build it with bf.build({name!r}) or `python -m bertflow_mini simcse --models "
        f"{name}` (SimCSE fine-tuning: about {minutes:.0f} minutes on a 2-core CPU for "
        "a network of scratch-bert's size, longer for larger ones)"
    )


def _local_run_dir(
    run: ModelSpec, base_source: str, config: SimCSEConfig
) -> Path | None:
    """Where ``run`` would be, from its base weights' fingerprint in local files; ``None`` for a
    hub base not downloaded yet."""
    fingerprint = local_fingerprint(base_source)
    return None if fingerprint is None else run_dir(run.name, fingerprint, config)


def built_folder(run: ModelSpec, base_source: str) -> Path:
    """The folder of the SimCSE ``run`` whose base weights are at ``base_source``: a lookup from
    local files, which never trains, fetches or asks the network. A run not built yet is a
    :class:`NotBuiltError` that says how to build it."""
    config = config_for(run.seed)
    folder = _local_run_dir(run, base_source, config)
    if folder is None or not folder.is_dir():
        raise NotBuiltError(
            f"{run.name} is not built yet: {how_to_build(run.name, config)}"
        )
    return folder


def build(run: ModelSpec, base_source: str, *, progress: bool = True) -> Path:
    """The SimCSE ``run`` of the base whose weights are at ``base_source`` (a folder or hub id): in
    the cache, else fetched from the book's release, else fine-tuned here (the base loaded first,
    downloaded when it is a hub model). Returns its folder."""
    config = config_for(run.seed)
    folder = _local_run_dir(run, base_source, config)
    if folder is not None and (
        folder.is_dir() or release.fetch(folder, progress=progress)
    ):
        return folder
    # not built here nor released; or a hub base not downloaded yet (the release holds runs of the
    # book's own model only), whose run is looked up once it is
    base = load_from(base_source, run.base)
    return train_and_save(base, run.name, config, progress=progress)


def read_training_log(folder: Path) -> tuple[np.ndarray, dict[str, Any]]:
    """The loss per step and the run's facts (base, config, seconds) of the SimCSE model in ``folder``."""
    with open(folder / "training_log.csv") as f:
        losses = np.array([float(row["loss"]) for row in csv.DictReader(f)])
    return losses, json.loads((folder / "simcse.json").read_text())
