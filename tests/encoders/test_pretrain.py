"""scratch-bert: the corpus, BERT's masking, the MLM loop, and the cached, recipe-keyed checkpoints."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest
import torch
from conftest import SHARED, TOKENIZER_DIR, StopTraining, need, tiny_mlm

from bertflow_mini.data import corpus
from bertflow_mini.encoders import mlm, pretrain
from bertflow_mini.encoders.runs import NotBuiltError

WORDNET = SHARED / "data" / "wordnet"


# ---------------------------------------------------------------------------------------- corpus
def test_wordnet_counts_match_the_mirrors_readme():
    """../shared/README.md: 135,988 definitions and 48,247 example sentences, 181,478 distinct parts."""
    need(WORDNET)
    glosses = corpus.wordnet_glosses()
    examples = sum(g.is_example for g in glosses)
    assert (len(glosses) - examples, examples) == (135_988, 48_247)
    assert len({g.text for g in glosses}) == 181_478
    assert (
        1.40e6 < sum(len(g.text.split()) for g in glosses) < 1.50e6
    )  # "about 1.46 M words"


def test_split_gloss_by_hand():
    parts = corpus.split_gloss(
        'a domestic animal; "the dog barked all night" ;  "two; parts"'
    )
    assert [(p.text, p.is_example) for p in parts] == [
        ("a domestic animal", False),
        ("the dog barked all night", True),
        ("two", True),
        ("parts", False),
    ]


def test_missing_wordnet_names_the_env_var_and_the_url(tmp_path, monkeypatch):
    from bertflow_mini.data import DataNotFoundError, downloads

    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / "cache"))
    for key, name in [
        ("WordNet-NLTK", "wordnet.zip"),
        ("WordNet", "WordNet-3.0.tar.gz"),
    ]:
        monkeypatch.setitem(
            downloads.URLS, key, (tmp_path / name).as_uri()
        )  # offline: no file
    with pytest.raises(DataNotFoundError) as err:
        corpus.wordnet_glosses()
    assert "$BERTFLOW_DATA" in str(err.value) and "WordNet-3.0.tar.gz" in str(err.value)
    assert "wordnet" in str(err.value)


def test_dictionary_has_one_entry_per_synset_and_keeps_every_gloss_word():
    """wnstats(7WN) for WordNet 3.0: 82,115 noun, 13,767 verb, 18,156 adjective and 3,621 adverb synsets."""
    need(WORDNET)
    entries = corpus.dictionary_entries()
    assert (
        len(corpus.dictionary_entries(max_words=10**6)) == 117_659
    )  # no entry split: one per synset
    assert 117_659 < len(entries) < 1.02 * 117_659  # the 0.7 % over-long ones split
    assert (
        "car, auto, automobile, machine, motorcar: a motor vehicle with four wheels; usually propelled by an "
        "internal combustion engine; he needs a car to get to work" in entries
    )
    bodies = [part for e in entries for part in e.split(": ", 1)[1].split("; ")]
    # every gloss part of the wordnet corpus, in order, and nothing else (headwords with ": " are none)
    assert bodies == [g.text for g in corpus.wordnet_glosses()]
    too_long = [e for e in entries if len(e.split()) > corpus.ENTRY_WORDS]
    assert too_long and all(
        "; " not in e.split(": ", 1)[1] for e in too_long
    )  # only a lone over-long part


def test_synset_counts_per_file_match_wnstats():
    need(WORDNET)
    per_pos = {}
    for path, *_ in corpus._synsets(None):
        per_pos[path.rsplit(".", 1)[-1]] = per_pos.get(path.rsplit(".", 1)[-1], 0) + 1
    assert per_pos == {"noun": 82_115, "verb": 13_767, "adj": 18_156, "adv": 3_621}


def _tiny_wordnet(folder, noun_lines: list[str]):
    (folder / "wordnet").mkdir(parents=True)
    header = "  1 This software and database is being provided to you, the LICENSEE, by Princeton\n"
    for name in corpus.WORDNET_FILES:
        lines = noun_lines if name == "data.noun" else []
        (folder / "wordnet" / name).write_text(
            header + "".join(line + "\n" for line in lines)
        )
    return folder


def test_dictionary_entries_by_hand(tmp_path):
    root = _tiny_wordnet(
        tmp_path,
        [
            '00000001 03 n 02 motor_vehicle 0 automotive_vehicle 0 000 | a self-propelled vehicle; "he sold his motor vehicle"',
            '00000002 00 a 01 galore(ip) 0 000 | in great numbers; "there were daffodils galore"',
        ],
    )
    assert corpus.dictionary_entries(root) == [
        "motor vehicle, automotive vehicle: a self-propelled vehicle; he sold his motor vehicle",
        "galore: in great numbers; there were daffodils galore",
    ]
    # too long for max_words: split between parts, each piece under the same headwords
    assert corpus.dictionary_entries(root, max_words=8)[:2] == [
        "motor vehicle, automotive vehicle: a self-propelled vehicle",
        "motor vehicle, automotive vehicle: he sold his motor vehicle",
    ]
    assert corpus.corpus_sentences("dictionary", root)[0].startswith(
        "motor vehicle, automotive vehicle: "
    )


@pytest.mark.parametrize(
    "line, message",
    [
        (
            "00000001 03 n 03 dog 0 domestic_dog 0 000 | a member of the genus Canis",
            "announces 3 words but has 2",
        ),
        (
            "00000001 03 n zz dog 0 000 | a member of the genus Canis",
            "no hexadecimal word count",
        ),
        ("00000001 03 n 01 dog 0 000 a member of the genus Canis", "without ' | '"),
    ],
)
def test_malformed_synset_line_names_file_and_line(tmp_path, line, message):
    root = _tiny_wordnet(tmp_path, ["00000002 03 n 01 cat 0 000 | a feline", line])
    with pytest.raises(ValueError, match=message) as err:
        corpus.dictionary_entries(root)
    assert f"{tmp_path / 'wordnet' / 'data.noun'}:3" in str(
        err.value
    )  # licence line 1, cat 2, the bad one 3


def test_unknown_corpus_lists_the_choices():
    with pytest.raises(ValueError, match="dictionary"):
        corpus.corpus_sentences("wikipedia")


def test_held_out_split_is_by_content_not_position():
    sentences = [f"sentence number {i}" for i in range(20_000)]
    train, held = corpus.split_held_out(sentences, 0.02)
    assert len(train) + len(held) == 20_000 and not set(train) & set(held)
    assert 300 < len(held) < 500  # 2% of 20,000 = 400, binomial sd ≈ 20
    _, held_reversed = corpus.split_held_out(sentences[::-1], 0.02)
    assert set(held_reversed) == set(held)


def test_unigram_entropy_against_scipy():
    from scipy.stats import entropy

    counts = np.array([5, 0, 3, 2, 10])
    assert corpus.unigram_entropy(counts) == pytest.approx(entropy(counts))
    assert corpus.unigram_entropy(np.ones(8)) == pytest.approx(np.log(8))
    with pytest.raises(ValueError):
        corpus.unigram_entropy(np.array([1.0, np.nan]))


# ---------------------------------------------------------------------------------------- masking
def _batch(n: int = 4000, t: int = 20, seed: int = 0) -> mlm.Batch:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(3, t + 1, (n,), generator=g)
    seqs = [
        np.r_[101, torch.randint(1000, 30000, (int(k) - 2,), generator=g).numpy(), 102]
        for k in lengths
    ]
    return mlm.pad_batch(seqs, pad_id=0, special_ids=(0, 100, 101, 102, 103))


def test_masking_follows_bert_80_10_10():
    b = _batch()
    inputs, labels = mlm.mask_tokens(
        b.ids,
        b.special,
        mask_id=103,
        vocab_size=30522,
        gen=torch.Generator().manual_seed(1),
    )
    chosen = labels != mlm.IGNORE
    eligible = int((~b.special).sum())
    assert chosen.sum() / eligible == pytest.approx(
        0.15, abs=0.005
    )  # ~ 60k eligible tokens
    assert not (chosen & b.special).any()  # never [CLS]/[SEP]/[PAD]
    assert torch.equal(labels[chosen], b.ids[chosen])  # labels are the originals
    masked = (inputs[chosen] == 103).float().mean()
    kept = (inputs[chosen] == b.ids[chosen]).float().mean()
    assert masked == pytest.approx(0.8, abs=0.015) and kept == pytest.approx(
        0.1, abs=0.01
    )
    assert torch.equal(inputs[~chosen], b.ids[~chosen])  # nothing else changes


def test_dynamic_padding_and_length_batches():
    b = mlm.pad_batch(
        [np.array([101, 7, 102]), np.array([101, 7, 8, 9, 102])], 0, (0, 101, 102)
    )
    assert b.ids.shape == (2, 5) and b.attention.tolist() == [[1, 1, 1, 0, 0], [1] * 5]
    assert b.special.tolist() == [
        [True, False, True, True, True],
        [True, False, False, False, True],
    ]
    lengths = np.random.default_rng(0).integers(3, 60, 1000)
    batches = mlm.length_batches(lengths, 50, torch.Generator().manual_seed(0))
    epoch = [next(batches) for _ in range(20)]
    assert sorted(i for bt in epoch for i in bt) == list(
        range(1000)
    )  # one epoch: each sentence once
    spread = np.mean([np.ptp(lengths[bt]) for bt in epoch])
    assert spread <= 3  # sorted by length: little padding


def test_warmup_then_linear_decay():
    f = mlm.warmup_linear(10, 110)
    assert [f(0), f(4), f(9)] == pytest.approx([0.1, 0.5, 1.0])
    assert [f(10), f(60), f(110)] == pytest.approx([1.0, 0.5, 0.0])


def test_weight_decay_shrinks_weights_but_not_biases_and_layernorm():
    # With zero gradients, one AdamW step is the decay alone: torch.optim.AdamW multiplies each
    # parameter by 1 - lr * weight_decay of its group, and Adam's m / (sqrt(v) + eps) is 0. BERT's
    # rule, checked on the step itself: every weight shrinks by that factor, while biases and both
    # LayerNorm parameters (found by module type, not by name) stay as they are.
    model = tiny_mlm(vocab=50)
    exempt = {
        id(p)
        for m in model.modules()
        for n, p in m.named_parameters(recurse=False)
        if n == "bias" or isinstance(m, torch.nn.LayerNorm)
    }
    before = {id(p): p.detach().clone() for p in model.parameters()}
    lr, weight_decay = 0.1, 0.5
    opt = mlm.adamw(model, lr, weight_decay=weight_decay)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    assert exempt and len(exempt) < len(before)
    for p in model.parameters():
        want = (
            before[id(p)]
            if id(p) in exempt
            else before[id(p)] * (1 - lr * weight_decay)
        )
        torch.testing.assert_close(p.detach(), want, rtol=1e-6, atol=0)


# ---------------------------------------------------------------------------------------- pretraining
TINY = dict(
    layers=1,
    hidden=32,
    heads=2,
    intermediate=64,
    positions=64,
    steps=40,
    batch_size=16,
    lr=2e-3,
    corpus="sts",
)


@pytest.fixture()
def tiny_corpus(monkeypatch):
    """The pretraining corpus replaced by 600 real STS-B sentences (a pretraining test in seconds)."""
    need(TOKENIZER_DIR)
    from bertflow_mini.data import task_sentences

    sentences = task_sentences("STSB", ["dev"])[:600]
    monkeypatch.setattr(
        pretrain, "corpus_sentences", lambda name, root=None: list(sentences)
    )
    return sentences


def _state_hash(folder) -> str:
    from transformers import BertForMaskedLM

    state = BertForMaskedLM.from_pretrained(folder).state_dict()
    h = hashlib.sha256()
    for k in sorted(state):
        h.update(k.encode() + state[k].numpy().tobytes())
    return h.hexdigest()


def test_two_runs_give_identical_weights_and_the_loss_falls(
    tiny_corpus, tmp_path, monkeypatch
):
    recipe = pretrain.with_overrides(**TINY)
    hashes = []
    for run in ("a", "b"):
        monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / run))
        folder = pretrain.pretrain(recipe, threads=1, progress=False)
        hashes.append(_state_hash(folder / "pct-100"))
    assert hashes[0] == hashes[1]
    rows, info = pretrain.training_log(recipe)
    assert [r["step"] for r in rows][0] == 0 and rows[-1]["step"] == TINY["steps"]
    assert (
        rows[-1]["held_out_loss"] < rows[0]["held_out_loss"] - 1.0
    )  # from ~ln(30522) = 10.3
    assert rows[-1]["train_loss"] < rows[1]["train_loss"]
    assert info["train_sentences"] + info["held_out_sentences"] == 600
    assert _state_hash(folder / "pct-000") != hashes[0]  # the 0% checkpoint is the init


def test_expected_targets_match_the_targets_a_real_run_drew(
    tiny_corpus, tmp_path, monkeypatch
):
    # The oracle: a tiny pretraining run whose collator is watched, so the targets it really drew
    # are counted; the expectation, read back from the facts the checkpoint carries, must match
    # them. The run is exactly five epochs, so each token occurrence was drawn five times and chosen
    # with probability 0.15 each time: a token of count c was a target Binomial(5c, 0.15) times.
    train, _ = corpus.split_held_out(tiny_corpus, 0.02)
    steps = 5 * -(-len(train) // TINY["batch_size"])  # the batches of five epochs
    recipe = pretrain.with_overrides(**{**TINY, "steps": steps})
    drawn: list[torch.Tensor] = []
    in_step: list[bool] = []
    real_step, real_mask = mlm.train_step, mlm.mask_tokens

    def step(*args, **kwargs):
        in_step.append(True)
        try:
            return real_step(*args, **kwargs)
        finally:
            in_step.pop()

    def mask(*args, **kwargs):
        inputs, labels = real_mask(*args, **kwargs)
        if in_step:  # a training batch, not the held-out evaluation
            drawn.append(labels[labels != mlm.IGNORE])
        return inputs, labels

    monkeypatch.setattr(mlm, "train_step", step)
    monkeypatch.setattr(mlm, "mask_tokens", mask)
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path))
    folder = pretrain.pretrain(recipe, threads=1, progress=False) / "pct-100"
    assert len(drawn) == steps
    actual = np.bincount(torch.cat(drawn).numpy(), minlength=30522)
    expected = pretrain.expected_targets(folder)
    counts = np.load(folder / "token_counts.npy")
    assert expected == pytest.approx(5 * 0.15 * counts)
    # never more targets than draws, none for a token the split lacks (or a special one)
    assert (actual <= 5 * counts).all() and not actual[counts == 0].any()
    # the total: within 4 binomial standard deviations (a rate off by 10% is 7 of them)
    assert abs(actual.sum() - expected.sum()) < 4 * np.sqrt(0.1275 * 5 * counts.sum())
    # token by token: the standardised squares average 1 (their sd is at most 2/sqrt(k))
    seen = counts > 0
    z2 = (actual[seen] - expected[seen]) ** 2 / (0.1275 * 5 * counts[seen])
    assert abs(z2.mean() - 1) < 4 * 2 / np.sqrt(seen.sum())


def test_checkpoint_loads_with_automodel_and_load_encoder(
    tiny_corpus, tmp_path, monkeypatch
):
    from transformers import AutoModel

    from bertflow_mini.encoders.encoder import encode
    from bertflow_mini.encoders.names import load_encoder

    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path))
    mirror = (
        tmp_path / "mirror"
    )  # a mirror with the tokenizer but no scratch-bert: the cache must serve it
    mirror.mkdir()
    (mirror / TOKENIZER_DIR.name).symlink_to(TOKENIZER_DIR)
    monkeypatch.setenv("BERTFLOW_MODELS", str(mirror))
    monkeypatch.setattr(pretrain, "DEFAULT", pretrain.with_overrides(**TINY))
    folder = pretrain.checkpoint(50, progress=False)  # pretrains on demand
    assert folder.name == "pct-050" and (folder / "config.json").is_file()
    assert AutoModel.from_pretrained(folder).config.hidden_size == 32
    enc = load_encoder("scratch-bert@50")
    assert enc.source == str(folder.resolve()) and enc.n_layers == 1 and enc.dim == 32
    X = encode(
        enc, ["a dog runs.", "a cat sleeps."], "last-avg", cache=False, progress=False
    )
    assert X.shape == (2, 32) and np.isfinite(X).all()


def test_a_changed_recipe_misses_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path))
    base = pretrain.with_overrides(**TINY)
    keys = {
        pretrain.run_dir(pretrain.with_overrides(**{**TINY, field: value})).name
        for field, value in [
            ("steps", 41),
            ("seed", 1),
            ("corpus", "wordnet"),
            ("hidden", 64),
            ("lr", 1e-3),
        ]
    }
    assert len(keys) == 5 and pretrain.run_dir(base).name not in keys
    assert pretrain.run_dir(pretrain.with_overrides(**TINY)) == pretrain.run_dir(
        base
    )  # same recipe, same place
    before = pretrain.run_dir(base)
    monkeypatch.setattr(
        pretrain, "RECIPE_VERSION", pretrain.RECIPE_VERSION + 1
    )  # the training code changed
    assert pretrain.run_dir(base) != before


def test_the_default_recipes_cache_folder_is_the_one_every_machine_already_holds():
    # the key of the book's recipe when the cache helper was shared (a changed key re-pretrains)
    assert pretrain.DEFAULT.key() == "9bef60d31809"
    if pretrain.default_device() == "cpu":
        assert pretrain.run_dir(pretrain.DEFAULT).name == "scratch-bert-9bef60d31809"


def test_checkpoint_names_and_a_lookup_that_never_trains(monkeypatch):
    with pytest.raises(ValueError, match="@0, @25, @50, @100"):
        pretrain.checkpoint_folder(30)

    def no_training(*args, **kwargs):
        raise AssertionError("a lookup started pretraining")

    monkeypatch.setattr(pretrain, "pretrain", no_training)
    with pytest.raises(NotBuiltError) as err:
        pretrain.checkpoint_folder(25)
    # the message says how to build it and about how long that takes
    minutes = round(pretrain.DEFAULT.steps * pretrain.SECONDS_PER_STEP / 60)
    assert "bf.build('scratch-bert@25')" in str(err.value)
    assert "python -m bertflow_mini pretrain" in str(err.value)
    assert f"about {minutes} minutes" in str(err.value)
    with pytest.raises(NotBuiltError):
        pretrain.training_log()


def test_default_recipe_is_bert_mini_with_the_full_vocabulary():
    need(TOKENIZER_DIR)
    r = pretrain.Recipe()
    tok = pretrain.load_tokenizer()
    config = pretrain.bert_config(r, len(tok), tok.pad_token_id)
    assert (
        config.num_hidden_layers,
        config.hidden_size,
        config.num_attention_heads,
        config.intermediate_size,
    ) == (4, 256, 4, 1024)  # google/bert_uncased_L-4_H-256_A-4
    assert config.vocab_size == 30522 and config.max_position_embeddings >= 128
    assert (
        config.hidden_act == "gelu"
        and config.hidden_dropout_prob == 0.1
        and config.tie_word_embeddings
    )


def test_pretrain_cli_reports_loss_against_the_unigram_entropy(
    tiny_corpus, tmp_path, monkeypatch, capsys
):
    from bertflow_mini.cli import main

    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path))
    args = [
        "pretrain",
        "--layers",
        "1",
        "--hidden",
        "32",
        "--heads",
        "2",
        "--intermediate",
        "64",
        "--steps",
        "20",
        "--batch-size",
        "16",
        "--corpus",
        "sts",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    rows, info = pretrain.training_log(
        pretrain.with_overrides(
            layers=1,
            hidden=32,
            heads=2,
            intermediate=64,
            steps=20,
            batch_size=16,
            corpus="sts",
        )
    )
    assert f"held-out MLM loss {rows[-1]['held_out_loss']:.3f} nats" in out
    assert f"unigram entropy {info['unigram_entropy']:.3f} nats" in out
    assert "pct-000 pct-025 pct-050 pct-100" in out
    assert (
        main(args) == 0 and "pretraining it now" not in capsys.readouterr().out
    )  # cached: no second run


def test_minutes_become_steps_before_training_so_the_recipe_stays_deterministic():
    from bertflow_mini.encoders.pretrain import steps_for_minutes

    assert (
        steps_for_minutes(12, seconds_per_step=0.45) == 1600
    )  # 720 s / 0.45 s, by hand
    assert steps_for_minutes(0.001, seconds_per_step=0.45) == 1  # never zero steps
    for bad in (0, -3, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="minutes"):
            steps_for_minutes(bad)


def test_pretrain_cli_refuses_steps_and_minutes_together(capsys):
    from bertflow_mini.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["pretrain", "--steps", "10", "--minutes", "1"])
    assert stop.value.code == 2  # a usage error, said before anything is trained
    assert "--minutes: not allowed with argument --steps" in capsys.readouterr().err


def test_pretraining_threads_do_not_follow_the_callers_setting(
    tiny_corpus, tmp_path, monkeypatch, one_torch_thread, training_threads
):
    # the thread count changes the trained bits, so a machine with more (or fewer) cores must
    # still pretrain with the count the committed outputs were made with
    import torch

    record, seen = training_threads
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path))
    monkeypatch.setattr(pretrain, "train_mlm", record)
    # a machine with 8 cores
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    with pytest.raises(StopTraining):
        pretrain.pretrain(pretrain.with_overrides(**TINY), progress=False)
    assert torch.get_num_threads() == 1  # the caller's setting is restored
    assert seen == [2]
