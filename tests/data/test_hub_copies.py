"""bertflow_mini.data.hub_copies: MTEB's copies, served from fixtures in their format (jsonl.gz,
one {"sentence1", "sentence2", "score"} per line) built from the mirror's official files; the
parquet reader."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from bertflow_mini.data import DataNotFoundError, downloads, hub_copies, load_sts
from bertflow_mini.data.pairs import STS_SUBSETS, splits
from data.conftest import MIRROR
from data.test_sts import COUNTS


def official(task: str, split: str = "test"):
    """The official-file loader's pairs, straight from the mirror (never the hub)."""
    return load_sts(task, split, root=MIRROR)


def write_jsonl_gz(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for a, b, score in rows:
            f.write(json.dumps({"sentence1": a, "sentence2": b, "score": score}) + "\n")
    return path


def hub_rows(task: str, split: str = "test", order=None):
    """The rows an MTEB copy holds: STS12–16 one file with the subsets one after another (in
    ``order``, default SentEval's), SICK-R one file of all its splits, STS-B one file per split."""
    if task == "SICK-R":
        parts = [official(task, s) for s in (order or ("train", "trial", "test"))]
        return [row for p in parts for row in zip(p.sent1, p.sent2, p.scores.tolist())]
    pairs = official(task, split)
    rows = list(zip(pairs.sent1, pairs.sent2, pairs.scores.tolist(), pairs.subsets))
    if order is not None:
        rows = [r for name in order for r in rows if r[3] == name]
    return [r[:3] for r in rows]


@pytest.fixture
def serve_hub(tmp_path, monkeypatch):
    """Serve files as the hub would: ``serve_hub(task, file, rows)`` makes ``hub_download`` return
    them for that task's repository; anything else is 'unreachable'."""
    served: dict[tuple[str, str], Path] = {}

    def fake_download(repo, revision, file):
        assert (repo, revision) in hub_copies.HUB_COPIES.values()
        if (repo, file) not in served:
            raise OSError(f"the hub is unreachable ({repo}/{file})")
        return served[(repo, file)]

    def serve(task, file, rows):
        repo = hub_copies.HUB_COPIES[task][0]
        served[(repo, file)] = write_jsonl_gz(tmp_path / "hub" / repo / file, rows)
        return served[(repo, file)]

    monkeypatch.setattr(downloads, "hub_download", fake_download)
    return serve


HUB_FILE = {
    "train": "train.jsonl.gz",
    "dev": "validation.jsonl.gz",
    "test": "test.jsonl.gz",
}


@pytest.mark.parametrize("task,split,n", COUNTS)
def test_hub_copy_gives_the_official_pairs_scores_and_subsets(
    mirror, serve_hub, task, split, n
):
    file = "test.jsonl.gz" if task == "SICK-R" else HUB_FILE[split]
    serve_hub(task, file, hub_rows(task, split))
    got, want = hub_copies.load_hub_copy(task, split), official(task, split)
    assert len(got) == len(want) == n  # the real pairs, counted
    assert (got.sent1, got.sent2, got.subsets) == (want.sent1, want.sent2, want.subsets)
    np.testing.assert_array_equal(got.scores, want.scores)


@pytest.mark.parametrize(
    "task,order",
    [
        ("STS12", STS_SUBSETS["STS12"][::-1]),
        ("STS14", sorted(STS_SUBSETS["STS14"])),
        ("SICK-R", ("test", "train", "trial")),
    ],
)
def test_hub_copy_with_blocks_in_another_order_labels_each_pair_by_its_block(
    mirror, serve_hub, task, order
):
    serve_hub(task, "test.jsonl.gz", hub_rows(task, order=order))
    got, want = hub_copies.load_hub_copy(task), official(task)

    def key(p):
        return sorted(zip(p.subsets, p.sent1, p.sent2, p.scores.tolist()))

    assert key(got) == key(want) and len(got) == len(want)


def test_hub_copy_that_is_not_sentevals_blocks_is_refused_and_the_official_archive_tried(
    mirror, serve_hub, offline
):
    rows = hub_rows("STS13")
    # every pair present, but the subsets no longer contiguous
    interleaved = rows[::2] + rows[1::2]
    path = serve_hub("STS13", "test.jsonl.gz", interleaved)
    with pytest.raises(ValueError, match=f"{path}.*does not hold SentEval's STS13"):
        hub_copies.load_hub_copy("STS13")
    with pytest.raises(
        DataNotFoundError
    ) as err:  # offline: the official archive cannot be had either
        load_sts("STS13")
    message = str(err.value)
    for part in (
        "BERTFLOW_DATA",
        str(offline / "sts" / "STS13"),
        "http://127.0.0.1:9/blocked/STS13",
        "https://huggingface.co/datasets/mteb/sts13-sts",
        "does not hold SentEval's STS13",
    ):
        assert part in message, part


def test_load_sts_uses_the_hub_copy_only_without_official_files(
    mirror, serve_hub, monkeypatch, tmp_path
):
    rows = hub_rows("STSB", "dev")
    # tell them apart
    serve_hub("STSB", "validation.jsonl.gz", [(a.upper(), b, s) for a, b, s in rows])
    # the mirror wins
    assert load_sts("STSB", "dev").sent1 == official("STSB", "dev").sent1
    monkeypatch.setenv("BERTFLOW_DATA", str(tmp_path / "empty"))
    assert load_sts("STSB", "dev").sent1 == [a.upper() for a, _, _ in rows]


@pytest.mark.parametrize(
    "line,message",
    [
        ("not json", "JSONDecodeError"),
        ('{"sentence1": "a", "score": 1.0}', "KeyError"),
        ('{"sentence1": "a", "sentence2": 3, "score": 1.0}', "must be strings"),
        ('{"sentence1": "a", "sentence2": "b", "score": 7.5}', "outside"),
    ],
)
def test_malformed_hub_line_names_file_and_line(tmp_path, line, message):
    path = tmp_path / "test.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write('{"sentence1": "a", "sentence2": "b", "score": 2.5}\n' + line + "\n")
    with pytest.raises(ValueError, match=f"{path}:2: .*{message}"):
        hub_copies.read_hub_jsonl(path, "STSB")


def test_blocks_are_the_official_subsets_sizes_and_score_sums(mirror):
    for task, blocks in hub_copies.BLOCKS.items():
        parts = [official(task, s) for s in splits(task)]
        labels = [label for p in parts for label in p.subsets]
        scores = np.concatenate([p.scores for p in parts])
        assert [name for name, _, _ in blocks] == list(dict.fromkeys(labels)), task
        for name, n, total in blocks:
            mine = scores[np.array(labels) == name]
            assert (len(mine), round(float(mine.sum()), 4)) == (n, total), (task, name)


def test_parquet_reader_takes_the_first_accepted_name_and_names_what_is_missing(
    tmp_path,
):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table({"id": ["1", "2"], "label": [0, 2]}), tmp_path / "t.parquet"
    )
    cols = hub_copies.read_parquet(
        tmp_path / "t.parquet", {"id": ("pair_ID", "id"), "y": ("label",)}
    )
    assert cols == {"id": ["1", "2"], "y": [0, 2]}
    with pytest.raises(
        ValueError, match=r"t.parquet: no column sentence_A .it has \['id', 'label'\]"
    ):
        hub_copies.read_parquet(tmp_path / "t.parquet", {"a": ("sentence_A",)})
    (tmp_path / "bad.parquet").write_bytes(b"<html>not found</html>")
    with pytest.raises(ValueError, match="bad.parquet: not a readable parquet file"):
        hub_copies.read_parquet(tmp_path / "bad.parquet", {"a": ("a",)})
