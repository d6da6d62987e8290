"""Masked language modelling as BERT does it (Devlin et al. 2019), in three small pieces.

1. :func:`mask_tokens` — choose 15% of the real tokens; of those, 80% become ``[MASK]``, 10% a random
   token, 10% stay as they are; the loss is taken only at the chosen positions (labels are ``-100``
   elsewhere, the convention of ``torch.nn.functional.cross_entropy``).
2. :func:`mlm_loss` — the encoder over the whole sequence, the MLM head (dense → GELU → LayerNorm →
   decoder tied to the input embeddings, plus an output bias) **only at the chosen positions**: the
   head's 30,522-way softmax is most of the cost, and the other 85% of the logits would be thrown away.
3. :func:`length_batches` and :func:`train_mlm` — batches of sentences of similar length (little
   padding), AdamW with BERT's parameter groups, linear warm-up then linear decay.

There is no next-sentence task: Liu et al. (2019, RoBERTa) found that dropping it matches or improves
downstream results, and our "documents" are single sentences.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from bertflow_mini._progress import tqdm
from bertflow_mini._training import gradient_step

if TYPE_CHECKING:
    from transformers import BertForMaskedLM, PreTrainedTokenizerBase

IGNORE = -100  # the label of a position that is not predicted
#: The share of a batch's real tokens :func:`mask_tokens` chooses as targets (BERT's 15%).
MASK_RATE = 0.15


def mask_tokens(
    ids: torch.Tensor,
    special: torch.Tensor,
    *,
    mask_id: int,
    vocab_size: int,
    gen: torch.Generator,
    prob: float = MASK_RATE,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's corruption of a batch ``ids`` (b, t); ``special`` marks [CLS]/[SEP]/[PAD], never chosen.

    Returns ``(inputs, labels)``: ``labels`` holds the original token at the chosen positions and
    :data:`IGNORE` elsewhere. Random replacements are drawn uniformly from the whole vocabulary, as in
    BERT's ``create_pretraining_data.py``.
    """
    if ids.shape != special.shape:
        raise ValueError(
            f"ids {tuple(ids.shape)} and special {tuple(special.shape)} differ in shape"
        )
    chosen = (torch.rand(ids.shape, generator=gen) < prob) & ~special
    r = torch.rand(ids.shape, generator=gen)
    inputs = ids.clone()
    inputs[chosen & (r < 0.8)] = mask_id
    swap = chosen & (r >= 0.8) & (r < 0.9)
    inputs[swap] = torch.randint(vocab_size, (int(swap.sum()),), generator=gen)
    return inputs, ids.masked_fill(~chosen, IGNORE)


def mlm_loss(
    model: BertForMaskedLM,
    inputs: torch.Tensor,
    attention: torch.Tensor,
    labels: torch.Tensor,
) -> torch.Tensor:
    """Mean cross-entropy of a ``BertForMaskedLM`` at the labelled positions only, on the model's
    device (the batch, masked on the CPU, is moved there)."""
    device = next(model.parameters()).device
    inputs, attention, labels = (
        inputs.to(device),
        attention.to(device),
        labels.to(device),
    )
    hidden = model.bert(input_ids=inputs, attention_mask=attention).last_hidden_state
    chosen = labels != IGNORE
    return F.cross_entropy(model.cls(hidden[chosen]), labels[chosen])


# ---------------------------------------------------------------------------------------- batches
@dataclass
class Batch:
    """Token ids (b, t) padded with ``pad_id``, their attention mask and the special-token mask."""

    ids: torch.Tensor
    attention: torch.Tensor
    special: torch.Tensor


def pad_batch(
    seqs: Sequence[np.ndarray], pad_id: int, special_ids: Sequence[int]
) -> Batch:
    """Stack token-id sequences into one batch as wide as its longest sequence (dynamic padding)."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
    attention = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        attention[i, : len(s)] = 1
    special = torch.isin(ids, torch.as_tensor(list(special_ids))) | (attention == 0)
    return Batch(ids, attention, special)


def length_batches(
    lengths: Sequence[int], batch_size: int, gen: torch.Generator
) -> Iterator[list[int]]:
    """Endless batches of indices, each of sentences of about the same length, in random order.

    Every epoch: shuffle, sort by length (stable, so equal lengths stay shuffled), cut into batches,
    shuffle the batches. Deterministic given ``gen``.
    """
    if batch_size < 1 or len(lengths) == 0:
        raise ValueError("need a positive batch_size and at least one sequence")
    sizes = np.asarray(lengths)
    while True:
        perm = torch.randperm(len(sizes), generator=gen).numpy()
        order = perm[np.argsort(sizes[perm], kind="stable")]
        batches = [
            order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)
        ]
        for j in torch.randperm(len(batches), generator=gen).tolist():
            yield batches[j]


# ---------------------------------------------------------------------------------------- training
def adamw(
    model: torch.nn.Module, lr: float, weight_decay: float = 0.01
) -> torch.optim.AdamW:
    """AdamW (β = 0.9, 0.999) with BERT's groups: no weight decay on biases and LayerNorm weights.

    (Tied weights are one parameter, counted once.)
    """
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for name, p in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(p)
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6)


def warmup_linear(warmup_steps: int, total_steps: int) -> Callable[[int], float]:
    """The learning-rate factor: 0 → 1 linearly over ``warmup_steps``, then linearly → 0 at ``total_steps``."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return factor


@dataclass
class MLMData:
    """Tokenised sentences (each with [CLS] … [SEP]) and the tokenizer's special ids."""

    seqs: list[np.ndarray]
    pad_id: int
    mask_id: int
    special_ids: tuple[int, ...]
    vocab_size: int

    def batch(self, index: Sequence[int] | np.ndarray) -> Batch:
        return pad_batch([self.seqs[i] for i in index], self.pad_id, self.special_ids)


def tokenize(
    sentences: Sequence[str], tokenizer: PreTrainedTokenizerBase, max_length: int
) -> MLMData:
    """Tokenise ``sentences`` once (truncated to ``max_length`` wordpieces, [CLS] and [SEP] included)."""
    ids = tokenizer(list(sentences), truncation=True, max_length=max_length)[
        "input_ids"
    ]
    specials = tuple(sorted(set(tokenizer.all_special_ids)))
    return MLMData(
        [np.asarray(s, dtype=np.int32) for s in ids],
        tokenizer.pad_token_id,
        tokenizer.mask_token_id,
        specials,
        len(tokenizer),
    )


def train_step(
    model: BertForMaskedLM,
    opt: torch.optim.Optimizer,
    sched: torch.optim.lr_scheduler.LRScheduler,
    data: MLMData,
    index: Sequence[int],
    gen: torch.Generator,
    clip: float = 1.0,
) -> float:
    """One optimisation step on the sentences ``index``; returns the MLM loss before the update."""
    b = data.batch(index)
    inputs, labels = mask_tokens(
        b.ids, b.special, mask_id=data.mask_id, vocab_size=data.vocab_size, gen=gen
    )
    # a batch of one-word sentences can draw no target at all
    if not (labels != IGNORE).any():
        return float("nan")
    loss = mlm_loss(model, inputs, b.attention, labels)
    return gradient_step(
        loss, opt, clip_norm=clip, parameters=model.parameters(), scheduler=sched
    )


@torch.no_grad()
def evaluate_mlm(
    model: BertForMaskedLM,
    data: MLMData,
    batch_size: int = 256,
    seed: int = 12345,
    all_masked: bool = False,
) -> float:
    """Mean MLM loss (nats per predicted token) on ``data`` with a fixed masking, dropout off.

    BERT's masking leaves 10% of the targets unchanged in the input, where the model can read them;
    ``all_masked=True`` replaces every target by ``[MASK]``, so the loss is a pure prediction from
    context (the same targets are drawn either way)."""
    was_training = model.training
    model.eval()  # type: ignore[no-untyped-call]  # unannotated in transformers
    gen = torch.Generator().manual_seed(seed)
    order = np.argsort([len(s) for s in data.seqs], kind="stable")
    total, count = 0.0, 0
    for i in range(0, len(order), batch_size):
        b = data.batch(order[i : i + batch_size])
        inputs, labels = mask_tokens(
            b.ids, b.special, mask_id=data.mask_id, vocab_size=data.vocab_size, gen=gen
        )
        if all_masked:
            inputs = inputs.masked_fill(labels != IGNORE, data.mask_id)
        n = int((labels != IGNORE).sum())
        if n:
            total += float(mlm_loss(model, inputs, b.attention, labels)) * n
            count += n
    model.train(was_training)
    return total / max(count, 1)


def train_mlm(
    model: BertForMaskedLM,
    data: MLMData,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    warmup_steps: int,
    seed: int,
    weight_decay: float = 0.01,
    callback: Callable[[int, float], None] | None = None,
    progress: bool = True,
) -> None:
    """Train ``model`` (a ``BertForMaskedLM``) for ``steps`` steps; ``callback(step, loss)`` after each
    step (step counts from 1) and once before the first (step 0, loss NaN)."""
    gen = torch.Generator().manual_seed(seed)
    batches = length_batches([len(s) for s in data.seqs], batch_size, gen)
    opt = adamw(model, lr, weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_linear(warmup_steps, steps))
    model.train()
    if callback:
        callback(0, float("nan"))
    bar = tqdm(
        range(1, steps + 1), desc="MLM pretraining", disable=not progress, unit="step"
    )
    for step in bar:
        loss = train_step(model, opt, sched, data, next(batches), gen)
        bar.set_postfix(loss=f"{loss:.3f}", refresh=False)
        if callback:
            callback(step, loss)
    model.eval()  # type: ignore[no-untyped-call]  # unannotated in transformers
