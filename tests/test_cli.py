"""``python -m bertflow_mini …``: ``encode`` fills the embedding cache so that later runs need no
model; ``simcse`` trains once; and every bad model, path, task, pooling or method is one clear error
that names what was given and what is accepted (exit 2, no traceback)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from bertflow_mini._io import cache_dir
from bertflow_mini.cli import main
from bertflow_mini.data import TASKS
from bertflow_mini.encoders import encoder as models
from bertflow_mini.encoders import names


def test_encode_fills_the_cache_for_every_sentence_of_each_task(
    tiny_bert_dir, mini_data, monkeypatch, capsys
):
    from conftest import raw_pairs

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    assert main(["encode", "--model", "tiny-bert", "--tasks", "STS-B SICK"]) == 0

    # Distinct sentences of every split, counted from the raw files.
    def distinct(task: str, splits: tuple[str, ...]) -> list[str]:
        return list(
            dict.fromkeys(
                s
                for split in splits
                for a, b, _ in raw_pairs(mini_data, task, split)
                for s in (a, b)
            )
        )

    stsb, sick = (
        distinct("STSB", ("train", "dev", "test")),
        distinct("SICK-R", ("train", "trial", "test")),
    )
    assert capsys.readouterr().out.splitlines() == [
        f"tiny-bert STSB: {len(stsb)} sentences encoded (cached)",
        f"tiny-bert SICK-R: {len(sick)} sentences encoded (cached)",
    ]
    # one entry per dataset
    assert len(list(cache_dir("embeddings").glob("tiny-bert-*.npy"))) == 2

    # Now every pooling of those sentences comes from the cache: the model never runs.
    enc = names.load_encoder("tiny-bert", device="cpu")
    fresh = models.encode(enc, stsb, "cls", cache=False, progress=False)

    def no_model(*args, **kwargs):
        raise AssertionError("the model ran although `encode` filled the cache")

    monkeypatch.setattr(models, "_run_model", no_model)
    np.testing.assert_array_equal(
        models.encode(enc, stsb, "cls", progress=False), fresh
    )
    assert models.encode(enc, sick, "last2avg", progress=False).shape == (
        len(sick),
        enc.dim,
    )
    # a sentence it was not asked for
    with pytest.raises(AssertionError, match="filled the cache"):
        models.encode(enc, stsb + ["a sentence in no dataset"], "cls", progress=False)


def test_encode_with_a_missing_dataset_is_one_clear_error(
    tiny_bert_dir, tmp_path, monkeypatch, capsys
):
    from bertflow_mini.data import downloads as data

    for key in data.URLS:  # no download either
        monkeypatch.setitem(data.URLS, key, f"http://127.0.0.1:9/blocked/{key}")
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "empty"))
    assert main(["encode", "--model", str(tiny_bert_dir), "--tasks", "STS12"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "STS12" in err and "Traceback" not in err
    assert "--model takes" not in err  # the model was fine: no hint about model names


def test_simcse_command_trains_once_then_encodes_and_reproduce_prints_the_simcse_rows(
    tiny_bert_dir, mini_data, monkeypatch, capsys, one_torch_thread
):
    from bertflow_mini.encoders import simcse

    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    monkeypatch.setenv("BERTFLOW_MODELS", str(tiny_bert_dir.parent))
    monkeypatch.setattr(
        simcse, "DEFAULT", simcse.SimCSEConfig(steps=2, batch_size=4, max_length=16)
    )
    assert (
        main(["simcse", "--models", "tiny-bert", "--tasks", "STS-B", "--threads", "1"])
        == 0
    )
    out = capsys.readouterr().out
    assert "tiny-bert+simcse: 2 steps" in out
    assert "tiny-bert+simcse: 1 datasets encoded (cached), and with tiny-bert" in out
    assert len(list(cache_dir("embeddings").glob("tiny-bert+simcse-*.npy"))) == 1
    assert len(list(cache_dir("embeddings").glob("tiny-bert-*.npy"))) == 1

    monkeypatch.setattr(
        simcse, "train_simcse", lambda *a, **k: pytest.fail("trained twice")
    )
    assert (
        main(
            [
                "reproduce",
                "--model",
                "tiny-bert",
                "--tasks",
                "STS-B",
                "--methods",
                "none,whitening,simcse,simcse+whitening",
                "--json",
            ]
        )
        == 0
    )
    import json

    result = json.loads(capsys.readouterr().out)
    assert list(result["mean"]) == ["none", "whitening", "simcse", "simcse+whitening"]
    from bertflow_mini.evaluation.reproduce import evaluate_method

    tuned = names.load_encoder("tiny-bert+simcse", device="cpu")
    want = evaluate_method(
        tuned, "STSB", "first-last-avg", "none", progress=False
    ).wmean
    assert result["mean"]["simcse"]["STSB"] == pytest.approx(want)


# ----------------------------------------------------------------------------- bad input, as a new user types it
def usage_error(argv: list[str], capsys) -> str:
    """argparse's answer to ``argv``: exit 2 and the message on stderr."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_a_missing_folder_is_no_such_folder_not_a_hub_url(tmp_path):
    missing = tmp_path / "no" / "such" / "model"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bertflow_mini",
            "sts",
            "--model",
            str(missing),
            "--tasks",
            "STS12",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(
        f"error: model '{missing}': no such folder ({missing})"
    )
    assert (
        "--model takes a short name (scratch-bert" in proc.stderr
        and "a folder that exists" in proc.stderr
    )
    assert "huggingface.co" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("given", ["FOO", "STS12,FOO", "sts12 foo"])
def test_an_unknown_task_lists_the_tasks(given, capsys):
    err = usage_error(["sts", "--tasks", given], capsys)
    assert "argument --tasks: unknown task 'FOO'" in err.replace("'foo'", "'FOO'")
    assert all(task in err for task in TASKS) and "invalid _tasks value" not in err


def test_no_task_at_all_is_an_error_not_an_empty_table(capsys):
    assert "argument --tasks: no task given; expected some of" in usage_error(
        ["encode", "--tasks", " , "], capsys
    )


def test_tasks_accept_aliases_separated_by_commas_or_spaces():
    from bertflow_mini.cli import build_parser

    args = build_parser().parse_args(["sts", "--tasks", "STS-B, sick sts2012"])
    assert args.tasks == ["STSB", "SICK-R", "STS12"]


@pytest.mark.parametrize(
    "given, bad",
    [
        ("bogus", "bogus"),
        ("none,whitening-0", "whitening-0"),
        ("flow,simcse+bogus", "simcse+bogus"),
        ("whitening 128", "whitening 128"),
    ],
)
def test_an_unknown_method_lists_the_accepted_forms_before_any_model_loads(
    given, bad, capsys, monkeypatch
):
    from bertflow_mini.encoders import names as names_module

    monkeypatch.setattr(
        names_module, "load_encoder", lambda *a, **k: pytest.fail("loaded a model")
    )
    err = usage_error(["reproduce", "--methods", given], capsys)
    assert (
        f"argument --methods: unknown method {bad!r}; accepted: none, flow, whitening, abtt, <method>-<k>"
        in err
    )
    assert "simcse, simcse+<method>" in err


def test_methods_accept_each_documented_form(capsys):
    from bertflow_mini.cli import build_parser

    args = build_parser().parse_args(
        [
            "reproduce",
            "--methods",
            "none, flow,whitening-128,abtt,simcse,simcse+whitening",
        ]
    )
    assert args.methods == [
        "none",
        "flow",
        "whitening-128",
        "abtt",
        "simcse",
        "simcse+whitening",
    ]
    assert "argument --methods: no method given; accepted: none" in usage_error(
        ["reproduce", "--methods", ","], capsys
    )


def test_an_unknown_pooling_names_the_accepted_ones(
    tiny_bert_dir, mini_data, monkeypatch, capsys
):
    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    assert (
        main(
            [
                "sts",
                "--model",
                str(tiny_bert_dir),
                "--pooling",
                "nope",
                "--tasks",
                "STS12",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(
        "error: unknown pooling 'nope'; use one of ('cls', 'last-avg', 'first-last-avg'"
    )
    assert "--model takes" not in err and "Traceback" not in err
    assert (
        main(
            [
                "sts",
                "--model",
                str(tiny_bert_dir),
                "--pooling",
                "1,9",
                "--tasks",
                "STS12",
            ]
        )
        == 2
    )
    assert "layer index 9 out of range for 2 layers" in capsys.readouterr().err


def test_pretrain_takes_steps_or_minutes_not_both(capsys):
    assert "argument --minutes: not allowed with argument --steps" in usage_error(
        ["pretrain", "--steps", "3", "--minutes", "1"], capsys
    )
