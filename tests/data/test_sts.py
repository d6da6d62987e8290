"""bertflow_mini.data.sts: real counts on the mirror, malformed input named by file:line, the
$BERTFLOW_MAX_PAIRS cap on loaded splits."""

from __future__ import annotations

import numpy as np
import pytest

from bertflow_mini.data import load_sts
from bertflow_mini.data.layout import numbered_lines
from bertflow_mini.data.pairs import MAX_PAIRS_ENV, STS_SUBSETS, max_pairs
from bertflow_mini.data.sts import read_sick, task_sentences
from data.conftest import STSB_LINE, write_sick, write_sts_year

COUNTS = [
    ("STS12", "test", 3108),
    ("STS13", "test", 1500),
    ("STS14", "test", 3750),
    ("STS15", "test", 3000),
    ("STS16", "test", 1186),
    ("STSB", "train", 5749),
    ("STSB", "dev", 1500),
    ("STSB", "test", 1379),
    ("SICK-R", "train", 4500),
    ("SICK-R", "trial", 500),
    ("SICK-R", "test", 4927),
]


@pytest.mark.parametrize("task,split,n", COUNTS)
def test_real_counts_and_ranges(mirror, task, split, n):
    pairs = load_sts(task, split)
    assert (pairs.task, pairs.split, len(pairs)) == (task, split, n)
    assert (
        len(pairs.sent1)
        == len(pairs.sent2)
        == len(pairs.subsets)
        == pairs.scores.shape[0]
        == n
    )
    assert pairs.scores.dtype == np.float64
    lo = 1.0 if task == "SICK-R" else 0.0
    assert (
        pairs.scores.min() >= lo
        and pairs.scores.max() <= 5.0
        and pairs.scores.std() > 0.5
    )
    assert all(
        s.strip() and "\t" not in s and "\n" not in s for s in pairs.sent1 + pairs.sent2
    )
    expected_subsets = set(STS_SUBSETS[task]) if task in STS_SUBSETS else {split}
    assert set(pairs.subsets) == expected_subsets


def test_sts12_scores_equal_the_official_concatenation(mirror):
    """STS12 ships STS.gs.ALL.txt, the five gold files concatenated: an independent check of order and parsing."""
    official = np.loadtxt(mirror / "sts" / "STS12" / "STS.gs.ALL.txt")
    np.testing.assert_array_equal(load_sts("sts2012").scores, official)


def test_stsb_lines_with_source_columns(mirror):
    """Lines with 9 fields keep sentence1/sentence2 in fields 6–7; the source columns are dropped."""
    raw = (
        (mirror / "sts" / "STSBenchmark" / "sts-test.csv")
        .read_text(encoding="utf-8")
        .split("\n")
    )
    i = next(i for i, line in enumerate(raw) if line.count("\t") == 8)
    fields = raw[i].split("\t")
    pairs = load_sts("STS-B", "test")
    assert (pairs.sent1[i], pairs.sent2[i], pairs.scores[i]) == (
        fields[5],
        fields[6],
        float(fields[4]),
    )
    # quotes survive: no CSV quoting
    assert any('"' in s for s in pairs.sent1 + pairs.sent2)


def test_sentences_are_unique_in_first_seen_order(mirror):
    pairs = load_sts("STS13")
    expected: list[str] = []
    for a, b in zip(pairs.sent1, pairs.sent2):
        for s in (a, b):
            if s not in expected:
                expected.append(s)
    assert pairs.sentences() == expected
    # STS13 repeats sentences, so deduplication matters
    assert len(expected) < 2 * len(pairs)


def test_unscored_pairs_are_skipped_and_source_columns_ignored(tmp_path):
    folder = write_sts_year(tmp_path / "sts" / "STS16", "STS16")
    (folder / "STS2016.input.headlines.txt").write_text(
        "h1\th2\tsrc1\tsrc2\nx1\tx2\tsrc1\tsrc2\ny1\ty2\tsrc1\tsrc2\n", encoding="utf-8"
    )
    # pair 2 is unscored
    (folder / "STS2016.gs.headlines.txt").write_text("4\n\n2.5\n", encoding="utf-8")
    pairs = load_sts("STS16", root=tmp_path)
    got = [
        (a, b, s)
        for a, b, s, sub in zip(pairs.sent1, pairs.sent2, pairs.scores, pairs.subsets)
        if sub == "headlines"
    ]
    assert got == [("h1", "h2", 4.0), ("y1", "y2", 2.5)]
    assert len(pairs) == 3 * 4 + 2


@pytest.mark.parametrize(
    "file,content,where",
    [
        (
            "STS.input.MSRvid.txt",
            "a\tb\nonly one field\nc\td\n",
            "STS.input.MSRvid.txt:2",
        ),
        ("STS.gs.MSRpar.txt", "1\nfour\n3\n", "STS.gs.MSRpar.txt:2"),
        ("STS.gs.MSRpar.txt", "1\n2\n7.5\n", "STS.gs.MSRpar.txt:3"),
        ("STS.gs.MSRpar.txt", "1\n2\nnan\n", "STS.gs.MSRpar.txt:3"),
        # 2 gold lines for 3 pairs
        (
            "STS.gs.SMTeuroparl.txt",
            "1\n2\n",
            "STS.gs.SMTeuroparl.txt:3",
        ),
    ],
)
def test_malformed_sts_line_names_file_and_line(tmp_path, file, content, where):
    folder = write_sts_year(tmp_path / "sts" / "STS12")
    (folder / file).write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=where):
        load_sts("STS12", root=tmp_path)


def test_stsb_plain_tab_split_and_malformed(tmp_path):
    folder = tmp_path / "sts" / "STSBenchmark"
    folder.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        (folder / f"sts-{split}.csv").write_text(
            STSB_LINE.format(score=4)
            + STSB_LINE.format(score="1.5").rstrip("\n")
            + "\tsrc1\tsrc2\n",
            encoding="utf-8",
        )
    pairs = load_sts("STSB", "dev", root=tmp_path)
    assert pairs.sent1 == ['Said "hi" to her'] * 2 and pairs.sent2 == ["Said 'hi'"] * 2
    assert pairs.scores.tolist() == [4.0, 1.5] and pairs.subsets == ["dev", "dev"]
    (folder / "sts-dev.csv").write_text(
        STSB_LINE.format(score=4) + "genre\tfile\t2016\t1\t3\tonly one\n"
    )
    with pytest.raises(ValueError, match="sts-dev.csv:2: expected at least 7"):
        load_sts("STSB", "dev", root=tmp_path)


def test_sick_crlf_reads_like_lf_and_bad_score(tmp_path):
    write_sick(tmp_path / "lf" / "sick")
    write_sick(tmp_path / "crlf" / "sick", newline="\r\n")
    lf, crlf = (
        load_sts("SICK", "test", root=tmp_path / "lf"),
        load_sts("SICK", "test", root=tmp_path / "crlf"),
    )
    assert (lf.sent1, lf.sent2, lf.scores.tolist()) == (
        crlf.sent1,
        crlf.sent2,
        crlf.scores.tolist(),
    )
    assert lf.sent2 == ["A dog is running", "No cat"] and lf.scores.tolist() == [
        4.5,
        1.0,
    ]
    write_sick(tmp_path / "bad" / "sick", score="high")
    with pytest.raises(
        ValueError, match="SICK_trial.txt:2: gold score 'high' is not a number"
    ):
        load_sts("SICK", "trial", root=tmp_path / "bad")


def test_bytes_that_are_not_utf8_name_the_file_and_line(tmp_path):
    write_sick(tmp_path / "sick")
    path = tmp_path / "sick" / "SICK_trial.txt"
    lines = path.read_bytes().split(b"\n")
    # Latin-1, not UTF-8, on line 3
    lines[2] = lines[2].replace(b"No cat", b"No caf\xe9")
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError, match="SICK_trial.txt:3: not valid UTF-8"):
        load_sts("SICK", "trial", root=tmp_path)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("final", [True, False])
def test_lines_split_as_text_mode_reads_them(tmp_path, newline, final):
    """The loaders' line split is Python's text mode (universal newlines), with or without a final newline."""
    path = tmp_path / "f.txt"
    body = newline.join(["a\tb", "", "c"]) + (newline if final else "")
    path.write_bytes(body.encode("utf-8"))
    with open(path, encoding="utf-8") as f:
        oracle = [(i, line.rstrip("\n")) for i, line in enumerate(f, start=1)]
    assert numbered_lines(path, "STSB") == oracle == [(1, "a\tb"), (2, ""), (3, "c")]


@pytest.mark.parametrize(
    "task,split", [("STS12", "test"), ("SICK-R", "train"), ("STSB", "dev")]
)
def test_max_pairs_keeps_the_first_n_pairs(mirror, monkeypatch, task, split):
    full = load_sts(task, split)
    monkeypatch.setenv(MAX_PAIRS_ENV, "37")
    capped = load_sts(task, split)
    assert len(capped) == 37 and max_pairs() == 37
    assert (capped.sent1, capped.sent2, capped.subsets) == (
        full.sent1[:37],
        full.sent2[:37],
        full.subsets[:37],
    )
    np.testing.assert_array_equal(capped.scores, full.scores[:37])
    # more than there are: all of them
    monkeypatch.setenv(MAX_PAIRS_ENV, str(len(full) + 1))
    assert len(load_sts(task, split)) == len(full)


def test_max_pairs_can_be_bypassed_for_corpora(mirror, monkeypatch):
    full = task_sentences("STSB")
    monkeypatch.setenv(MAX_PAIRS_ENV, "5")
    # 5 pairs of each of 3 splits
    assert len(task_sentences("STSB")) <= 3 * 2 * 5 < len(full)
    assert task_sentences("STSB", capped=False) == full
    assert len(load_sts("STSB", "train", capped=False)) == 5749


@pytest.mark.parametrize(
    "line,message",
    [("3\tA\tB\t4\tMAYBE\n", "SICK_trial.txt:4: 'MAYBE' is not a SICK label"),
     ("3\tA\tB\t4\n", "SICK_trial.txt:4: expected 5 tab-separated fields, got 4")],
)  # fmt: skip
def test_the_one_sick_parser_names_file_and_line(tmp_path, line, message):
    write_sick(tmp_path / "sick")
    path = tmp_path / "sick" / "SICK_trial.txt"
    path.write_text(path.read_text(encoding="utf-8") + line, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_sts("SICK", "trial", root=tmp_path)
    (tmp_path / "sick" / "SICK_test_annotated.txt").write_text(
        "id\ta\tb\tscore\tlabel\n"
    )
    with pytest.raises(
        ValueError, match="SICK_test_annotated.txt:1: expected the SICK header"
    ):
        read_sick(tmp_path / "sick" / "SICK_test_annotated.txt")


def test_a_split_the_task_lacks_is_refused():
    with pytest.raises(ValueError, match="STS12 has splits"):
        load_sts("STS12", "train")
