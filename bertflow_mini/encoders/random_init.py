"""Random-init controls: any model's network, untrained, built offline from its config alone.

For any model but the book's own, ``<model>@0`` draws the weights with the library's own initialiser
(Hugging Face's ``_init_weights``: normal(0, 0.02) for linear and embedding weights, zero biases,
unit LayerNorm) under a fixed seed, and caches the result like a pretrained checkpoint.
``@0-trunc`` draws every linear and embedding weight instead from Google's initialiser, the one the
original BERT (and MultiBERTs' step 0) started from: normal(0, ``initializer_range``) truncated at
±2 sd (``tf.truncated_normal_initializer``), whose sd is 0.88 of the untruncated one. The two
controls differ for deep networks (bert-base's shape), not for the miniatures.
(``scratch-bert@0`` is not built here: it is the pretraining run's own step 0.)

Also :func:`parameter_count`, which builds the same network from its config on PyTorch's meta
device, and the shapes of Turc et al.'s BERT miniatures (:data:`SHAPES`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch

from bertflow_mini._io import atomic_dir
from bertflow_mini.encoders import pretrain
from bertflow_mini.encoders.loading import load_config, load_tokenizer, local_folder
from bertflow_mini.encoders.runs import run_folder, write_run_log
from bertflow_mini.encoders.spec import (
    BERT_BASE,
    INITIALISERS,
    SHAPES,
    hub_alias,
    is_glove,
    short_name,
)

if TYPE_CHECKING:
    from transformers import PretrainedConfig

MINIATURES_BASE = BERT_BASE


def config_without_weights(
    base: str, local_only: bool = False
) -> tuple[PretrainedConfig, str]:
    """The config of ``base`` and where its tokenizer is, without any weights: a folder or the
    mirror (``<short name>`` or ``<short name>-tokenizer``), a miniature's shape, else the hub
    (``local_only``: Hugging Face's local cache alone; an ``OSError`` when it has none)."""
    for candidate in (base, f"{short_name(base)}-tokenizer"):
        folder = local_folder(candidate)
        if folder is not None and (folder / "config.json").is_file():
            return load_config(str(folder)), str(folder)
    if short_name(base) in SHAPES:
        layers, hidden = SHAPES[short_name(base)]
        config, tokenizer = config_without_weights(MINIATURES_BASE, local_only)
        config.update(
            {
                "num_hidden_layers": layers,
                "hidden_size": hidden,
                "num_attention_heads": hidden // 64,
                "intermediate_size": 4 * hidden,
            }
        )
        return config, tokenizer
    source = hub_alias(base)
    return load_config(source, base, local_only), source


def truncated_normal_(model: torch.nn.Module, std: float, seed: int) -> None:
    """Redraw every linear and embedding weight of ``model`` in place from normal(0, ``std``)
    truncated at ±2 sd, as ``tf.truncated_normal_initializer(std)`` does: values outside are drawn
    again until none is left. Biases and LayerNorm are left as they are (0, and 1 / 0 at
    initialisation)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)):
                x = torch.randn(module.weight.shape, generator=generator)
                outside = x.abs() > 2
                while outside.any():
                    x[outside] = torch.randn(int(outside.sum()), generator=generator)
                    outside = x.abs() > 2
                module.weight.copy_(std * x)


def random_init_folder(
    base: str, seed: int = 0, init: str = "hf", local_only: bool = False
) -> tuple[Path, PretrainedConfig, str]:
    """Where ``base``'s random-init control lives (whether or not it exists yet), keyed by the
    config, seed and library version, with the config and tokenizer source it is built from.
    ``local_only``: the config from local files alone (a lookup), never the network."""
    import transformers

    if is_glove(base):
        raise ValueError(f"{base}@0: GloVe has no network to initialise")
    if init not in INITIALISERS:
        raise ValueError(f"init={init!r}: one of {INITIALISERS}")
    config, tokenizer_source = config_without_weights(base, local_only)
    payload = [config.to_json_string(use_diff=False), seed, transformers.__version__]
    trunc = "trunc-" if init == "trunc" else ""
    folder = run_folder(f"{short_name(base)}@0-{trunc}seed{seed}", payload)
    return folder, config, tokenizer_source


def random_init(base: str, seed: int = 0, init: str = "hf") -> Path:
    """A folder holding ``base``'s architecture with freshly initialised weights (``seed``) and its
    tokenizer; built once (atomically) in :func:`random_init_folder`. ``init``: ``"hf"`` (Hugging
    Face's normal) or ``"trunc"`` (Google's truncated normal)."""
    import transformers
    from transformers import AutoModel

    final, config, tokenizer_source = random_init_folder(base, seed, init)
    if final.is_dir():
        return final
    tokenizer = load_tokenizer(tokenizer_source, base)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModel.from_config(config)  # type: ignore[no-untyped-call]  # unannotated in transformers
    if init == "trunc":
        truncated_normal_(model, config.initializer_range, seed)
    # another process may build the same one first: keep theirs
    with atomic_dir(final) as staging:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        facts = {
            "base": base,
            "seed": seed,
            "init": init,
            "transformers": transformers.__version__,
        }
        write_run_log(staging, "random_init.json", facts)
    return final


def parameter_count(name: str) -> int:
    """How many parameters ``name``'s network has (pooler included), counted from its config alone:
    the network is built on PyTorch's meta device, so no weights are read or allocated. A checkpoint
    or control (``<model>@25``, ``<model>@0``) has its model's count; the book's model must be
    built (its config is saved with it)."""
    from transformers import AutoModel

    base = name.split("@")[0]
    if is_glove(base):
        raise ValueError(f"{name}: GloVe is a table of vectors, not a network")
    if short_name(base) == pretrain.NAME and local_folder(base) is None:
        config = load_config(str(pretrain.checkpoint_folder()))
    else:
        config = config_without_weights(base)[0]
    with torch.device("meta"):
        model = AutoModel.from_config(config)  # type: ignore[no-untyped-call]  # unannotated in transformers
    return sum(p.numel() for p in model.parameters())


def non_embedding_parameters(model: torch.nn.Module) -> int:
    """The number of ``model``'s parameters outside its embedding tables (word, position, token
    type and their LayerNorm): what a forward pass's cost per token grows with."""
    return sum(p.numel() for n, p in model.named_parameters() if "embeddings" not in n)
