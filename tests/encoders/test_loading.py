"""bertflow_mini.encoders.loading: the one path that loads weights. A checkpoint in the format of the
hub's MultiBERTs repositories (``pytorch_model.bin``, BertForPreTraining: masked-LM and next-sentence
heads) loads as an encoder and as an MLM without transformers' report of unused weights, and gives
what loading its tensors by hand gives; any other mismatch is still reported."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
import torch
from colab_mirror import save_multiberts
from conftest import REPO, TOKENIZER_DIR, need, save_with_bert_tokenizer

from bertflow_mini.encoders.checkpoints import load_mlm
from bertflow_mini.encoders.loading import load_from, load_network, only_unused_parts


def _config():
    from transformers import BertConfig

    return BertConfig(
        vocab_size=30522,  # bert-base-uncased's vocabulary, so its tokenizer fits
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )


@pytest.fixture
def multiberts_dir(tmp_path) -> Path:
    """A tiny MultiBERTs-format checkpoint with bert-base-uncased's tokenizer beside it."""
    from transformers import AutoTokenizer

    need(TOKENIZER_DIR)
    folder = save_multiberts(_config(), tmp_path / "multiberts-seed_0-step_0k", seed=3)
    AutoTokenizer.from_pretrained(TOKENIZER_DIR).save_pretrained(folder)
    return folder


@pytest.fixture
def transformers_log():
    """Every record transformers' loggers emit at WARNING or above during the test."""
    from transformers.utils import logging as hf_logging

    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    root = logging.getLogger("transformers")
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_warning()
    root.addHandler(handler)
    yield records
    root.removeHandler(handler)
    hf_logging.set_verbosity(verbosity)


def assert_silent(records: list[logging.LogRecord]) -> None:
    assert records == [], [r.getMessage()[:300] for r in records]


def _by_hand(folder: Path) -> dict[str, torch.Tensor]:
    return torch.load(folder / "pytorch_model.bin", weights_only=True)


def test_the_mirror_writes_the_hubs_multiberts_format(multiberts_dir):
    import json

    assert json.loads((multiberts_dir / "config.json").read_text())[
        "architectures"
    ] == ["BertForPreTraining"]
    assert not list(multiberts_dir.glob("*.safetensors"))
    keys = set(_by_hand(multiberts_dir))
    assert {k.split(".")[0] for k in keys} == {"bert", "cls"}
    heads = {re.sub(r"\.(weight|bias)$", "", k) for k in keys if k.startswith("cls.")}
    assert {"cls.predictions.transform.dense", "cls.seq_relationship"} <= heads


def test_a_multiberts_checkpoint_loads_as_encoder_like_its_weights_by_hand(
    multiberts_dir, transformers_log
):
    from transformers import BertModel

    encoder = load_from(str(multiberts_dir), device="cpu")
    assert_silent(transformers_log)

    state = _by_hand(multiberts_dir)
    hand = BertModel(_config()).eval()
    # every encoder tensor, the pooler included: nothing is left to chance
    hand.load_state_dict(
        {k[len("bert.") :]: v for k, v in state.items() if k.startswith("bert.")},
        strict=True,
    )
    batch = encoder.tokenizer(["a cat sat on the mat", "dogs bark"], padding=True,
                              return_tensors="pt")  # fmt: skip
    with torch.no_grad():
        got = encoder.model(**batch, output_hidden_states=True).hidden_states
        want = hand(**batch, output_hidden_states=True).hidden_states
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_a_multiberts_checkpoint_loads_as_mlm_like_its_weights_by_hand(
    multiberts_dir, transformers_log
):
    from transformers import BertForMaskedLM

    mlm = load_mlm(str(multiberts_dir), device="cpu")
    assert_silent(transformers_log)

    state = _by_hand(multiberts_dir)
    hand = BertForMaskedLM(_config()).eval()
    # the next-sentence head and the pooler are what BertForMaskedLM has no place for
    unused = ("cls.seq_relationship.", "bert.pooler.")
    hand.load_state_dict(
        {k: v for k, v in state.items() if not k.startswith(unused)}, strict=True
    )
    ids = torch.tensor([[101, 1037, 4937, 103, 2006, 102]])
    with torch.no_grad():
        torch.testing.assert_close(mlm(ids).logits, hand(ids).logits, rtol=0, atol=0)
    # the head really is the checkpoint's, not a fresh draw
    torch.testing.assert_close(
        mlm.cls.predictions.transform.dense.weight,
        state["cls.predictions.transform.dense.weight"],
        rtol=0,
        atol=0,
    )


def test_an_mlm_checkpoint_loads_as_an_encoder_without_a_report(
    tmp_path, transformers_log
):
    """scratch-bert's own format (BertForMaskedLM, safetensors): its head is unused, its missing
    pooler drawn, both silently."""
    from transformers import BertForMaskedLM

    save_with_bert_tokenizer(BertForMaskedLM(_config()), tmp_path / "mlm")
    load_network(str(tmp_path / "mlm"))
    assert_silent(transformers_log)


def test_any_other_mismatch_is_still_reported(multiberts_dir, transformers_log):
    """A checkpoint without one encoder weight: that weight is drawn at random, and transformers'
    report of it goes out (named), unlike that of the unused heads."""
    state = _by_hand(multiberts_dir)
    del state["bert.encoder.layer.1.output.dense.weight"]
    torch.save(state, multiberts_dir / "pytorch_model.bin")
    load_network(str(multiberts_dir))
    messages = [r.getMessage() for r in transformers_log]
    assert any("layer.1.output.dense.weight" in m for m in messages), messages


def test_a_masked_lm_head_missing_from_the_checkpoint_is_not_an_unused_part():
    encoder_only = {"unexpected_keys": [], "missing_keys": ["pooler.dense.weight"]}
    head_missing = {
        "unexpected_keys": [],
        "missing_keys": ["cls.predictions.transform.dense.weight"],
    }
    nsp_left = {
        "unexpected_keys": ["cls.seq_relationship.bias", "bert.pooler.dense.bias"],
        "missing_keys": [],
    }
    assert only_unused_parts(encoder_only) and only_unused_parts(nsp_left)
    assert not only_unused_parts(head_missing)
    assert not only_unused_parts({**nsp_left, "mismatched_keys": [("x", 1, 2)]})


def test_every_from_pretrained_of_the_package_is_in_the_loading_module():
    """One loading path: weights, tokenizers and configs are read through encoders/loading.py."""
    calls = {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "bertflow_mini").rglob("*.py")
        if ".from_pretrained(" in path.read_text(encoding="utf-8")
    }
    assert calls == {"bertflow_mini/encoders/loading.py"}


@pytest.mark.parametrize("bars_on", [True, False])
def test_a_load_leaves_hugging_faces_progress_bars_as_it_found_them(
    multiberts_dir, bars_on
):
    """Loading hides the library's bars for its own calls and gives back the caller's setting."""
    from transformers.utils import logging as hf_logging

    (hf_logging.enable_progress_bar if bars_on else hf_logging.disable_progress_bar)()
    try:
        load_network(str(multiberts_dir))
        assert hf_logging.is_progress_bar_enabled() is bars_on
    finally:
        hf_logging.enable_progress_bar()
