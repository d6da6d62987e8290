"""The pretraining strength printed beside every verdict on pretraining, on a hand-made log."""

from __future__ import annotations

import json
import math

import pytest

from bertflow_mini.chapters import strength
from bertflow_mini.encoders import pretrain


@pytest.fixture
def fake_run(tmp_path, monkeypatch):
    """A run of 200 steps of 8 sequences over 400 sentences, a 1,000-token vocabulary."""
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 1000}))
    rows = [
        {"step": 0.0, "held_out_loss": 6.9},
        {"step": 50.0, "held_out_loss": 5.5},
        {"step": 200.0, "held_out_loss": 4.25},
    ]
    info = {
        "recipe": {"steps": 200, "batch_size": 8},
        "train_sentences": 400,
        "unigram_entropy": 5.0,
    }
    monkeypatch.setattr(pretrain, "training_log", lambda recipe=None: (rows, info))
    monkeypatch.setattr(
        pretrain, "checkpoint_folder", lambda percent=100, recipe=None: tmp_path
    )


@pytest.mark.usefixtures("fake_run")
def test_strength_reads_the_checkpoints_loss_yardsticks_and_epochs():
    final = strength.model_strength("scratch-bert")
    assert (final.held_out_loss, final.unigram, final.step) == (4.25, 5.0, 200)
    assert final.uniform == pytest.approx(math.log(1000))
    assert final.epochs == pytest.approx(200 * 8 / 400)  # 4 epochs
    quarter = strength.model_strength("scratch-bert@25")
    assert (quarter.held_out_loss, quarter.step, quarter.epochs) == (5.5, 50, 1.0)
    assert "5.50 nats" in str(quarter) and "frequency alone: 5.00" in str(quarter)


@pytest.mark.usefixtures("fake_run")
def test_a_checkpoint_missing_from_the_log_is_an_error():
    with pytest.raises(ValueError, match="step 100"):
        strength.model_strength("scratch-bert@50")


def test_other_models_get_a_published_description_or_say_nothing_is_measured():
    assert strength.model_strength("bert-base-uncased") is None
    assert "Devlin et al. 2019" in strength.describe_strength("bert-base-uncased")
    assert "not measured here" in strength.describe_strength("all-MiniLM-L6-v2")
