"""bertflow_mini.data.entailment: SICK's entailment labels and QNLI, from the official files, from
the hub's parquet copies (fixtures in their formats, built from the mirror's SICK files; the hub
itself is never reached), and from GLUE's archive; each copy refused when it is not the real one."""

from __future__ import annotations

import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertflow_mini.data import (
    DataNotFoundError,
    downloads,
    hub_copies,
    load_qnli,
    load_sick_entailment,
    load_sts,
)
from bertflow_mini.data.checksums import QNLI_ROWS
from bertflow_mini.data.layout import HUB_FAILURES

QNLI_ROWS_TEXT = ["index\tquestion\tsentence\tlabel", "0\tWho?\tHe did.\tentailment",
                  "1\tWhen?\tIt rained.\tnot_entailment", "2\tWhere?\tHere.\tentailment"]  # fmt: skip


def test_sick_entailment_labels_match_a_count_of_the_raw_file(mirror):
    pairs = load_sick_entailment("test")
    lines = (
        (mirror / "sick" / "SICK_test_annotated.txt")
        .read_text(encoding="utf-8")
        .splitlines()[1:]
    )
    assert len(pairs) == len(lines) == 4927
    assert pairs.labels.sum() == sum(line.endswith("\tENTAILMENT") for line in lines)
    assert pairs.first[0] == lines[0].split("\t")[1]
    with pytest.raises(ValueError, match="SICK has splits"):
        load_sick_entailment("dev")


def test_sick_entailment_keeps_the_same_first_pairs_as_sick_r_under_the_pair_cap(
    mirror, monkeypatch
):
    """The cap keeps the pairs that load_sts("SICK-R", split) keeps (the same one parser)."""
    monkeypatch.setenv("BERTFLOW_MAX_PAIRS", "7")
    pairs, sts = load_sick_entailment("test"), load_sts("SICK-R", "test")
    assert len(pairs) == len(sts) == 7
    assert (pairs.first, pairs.second) == (list(sts.sent1), list(sts.sent2))


def _sick_parquet(mirror, tmp_path, split, file, readme_names=True, drop=0):
    """One split of the mirror's SICK file in the hub copy's format: parquet, with the columns
    ../shared/README.md gives (or the old script's: id, label 0/1/2), ``drop`` rows left out."""
    lines = (mirror / "sick" / file).read_text(encoding="utf-8").splitlines()[1:]
    rows = [line.split("\t") for line in lines][drop:]
    names = ["ENTAILMENT", "NEUTRAL", "CONTRADICTION"]
    table = {
        "pair_ID" if readme_names else "id": [r[0] for r in rows],
        "sentence_A": [r[1] for r in rows],
        "sentence_B": [r[2] for r in rows],
        "relatedness_score": [float(r[3]) for r in rows],
        "entailment_label" if readme_names else "label": [
            r[4] if readme_names else names.index(r[4]) for r in rows
        ],
    }
    path = tmp_path / "hub" / split / "0000.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.table(table), path)
    return path


@pytest.fixture
def serve(monkeypatch):
    """``serve(repo, file, path)``: the hub download of that file gives ``path``; others fail."""
    served = {}

    def fake(repo, revision, file):
        if (repo, file) not in served:
            raise OSError(f"the hub is unreachable ({repo}/{file})")
        return served[(repo, file)]

    monkeypatch.setattr(downloads, "hub_download", fake)
    return lambda repo, file, path: served.__setitem__((repo, file), path)


@pytest.mark.parametrize("readme_names", [True, False])
def test_sick_from_the_hub_copy_equals_the_official_file(
    mirror, tmp_path, offline, serve, readme_names
):
    want = load_sick_entailment("test", root=mirror)
    path = _sick_parquet(
        mirror, tmp_path, "test", "SICK_test_annotated.txt", readme_names
    )
    serve(hub_copies.SICK_HUB[0], hub_copies.SICK_HUB_FILES["test"], path)
    got = load_sick_entailment("test")
    assert (got.first, got.second, got.labels.tolist()) == (
        want.first,
        want.second,
        want.labels.tolist(),
    )
    assert not (offline / "sick").exists()  # nothing downloaded: the copy was enough


def test_a_sick_copy_that_is_not_semevals_split_is_refused_and_the_archive_tried(mirror, tmp_path,
                                                                                  offline, serve):  # fmt: skip
    path = _sick_parquet(mirror, tmp_path, "test", "SICK_test_annotated.txt", drop=21)
    serve(hub_copies.SICK_HUB[0], hub_copies.SICK_HUB_FILES["test"], path)
    with pytest.raises(DataNotFoundError) as err:
        load_sick_entailment("test")
    message = str(err.value)
    for part in ("is not SemEval's SICK test split: 4906 pairs", "https://huggingface.co/datasets/RobZamp/sick",
                 "blocked/SICK-test", "BERTFLOW_DATA"):  # fmt: skip
        assert part in message, part
    HUB_FAILURES.clear()


def test_qnli_reads_the_glue_layout(tmp_path):
    folder = tmp_path / "glue" / "QNLI"
    folder.mkdir(parents=True)
    for name in ("train.tsv", "dev.tsv"):
        (folder / name).write_text("\n".join(QNLI_ROWS_TEXT) + "\n", encoding="utf-8")
    pairs = load_qnli("dev", root=tmp_path)
    assert pairs.first == ["Who?", "When?", "Where?"] and pairs.labels.tolist() == [
        1,
        0,
        1,
    ]
    (folder / "dev.tsv").write_text(
        QNLI_ROWS_TEXT[0] + "\n0\tWho?\tHe did.\tmaybe\n", encoding="utf-8"
    )
    with pytest.raises(
        ValueError, match="dev.tsv:2: expected 4 fields ending in entailment"
    ):
        load_qnli("dev", root=tmp_path)
    with pytest.raises(ValueError, match="labelled splits"):
        load_qnli("test", root=tmp_path)


def test_qnli_from_the_hub_copy_is_checked_by_digest_and_rows(
    tmp_path, offline, serve, monkeypatch
):
    path = tmp_path / "validation.parquet"  # GLUE's parquet: label 0 = entailment
    table = {"question": ["Who?", "When?", "Where?"], "sentence": ["He did.", "It rained.", "Here."],
             "label": [0, 1, 0], "idx": [0, 1, 2]}  # fmt: skip
    pq.write_table(pa.table(table), path)
    file, _ = hub_copies.QNLI_HUB_FILES["dev"]
    serve(hub_copies.QNLI_HUB[0], file, path)
    with pytest.raises(
        DataNotFoundError, match="its SHA-256 is not that of nyu-mll/glue"
    ):
        load_qnli("dev")  # the pinned digest is the real file's
    monkeypatch.setitem(
        hub_copies.QNLI_HUB_FILES, "dev", (file, downloads.sha256(path))
    )
    with pytest.raises(DataNotFoundError, match="expected 5463 rows"):
        load_qnli("dev")  # GLUE's row count
    monkeypatch.setitem(QNLI_ROWS, "dev.tsv", 3)
    pairs = load_qnli("dev")
    assert pairs.first == table["question"] and pairs.labels.tolist() == [1, 0, 1]
    HUB_FAILURES.clear()


def test_qnli_from_glues_archive_is_checked_by_rows(tmp_path, offline, monkeypatch):
    with zipfile.ZipFile(tmp_path / "QNLIv2.zip", "w") as zf:
        for name in ("train.tsv", "dev.tsv", "test.tsv"):
            zf.writestr(f"QNLI/{name}", "\n".join(QNLI_ROWS_TEXT) + "\n")
    monkeypatch.setitem(downloads.URLS, "QNLI", (tmp_path / "QNLIv2.zip").as_uri())
    with pytest.raises(
        DataNotFoundError, match="train.tsv has 3 rows, GLUE's has 104743"
    ):
        load_qnli("dev")
    assert not (offline / "glue" / "QNLI").exists()
    monkeypatch.setitem(QNLI_ROWS, "dev.tsv", 3)
    monkeypatch.setitem(QNLI_ROWS, "train.tsv", 3)
    assert load_qnli("dev").labels.tolist() == [1, 0, 1]
    HUB_FAILURES.clear()


def test_qnli_offline_is_one_error_naming_the_variable_and_the_urls(offline):
    with pytest.raises(DataNotFoundError) as err:
        load_qnli("dev")
    message = str(err.value)
    for part in (
        "glue/QNLI",
        "blocked/QNLI",
        "BERTFLOW_DATA",
        "https://huggingface.co/datasets/nyu-mll/glue",
    ):
        assert part in message, part
    # patched
    assert (
        downloads.URLS["QNLI"] != "https://dl.fbaipublicfiles.com/glue/data/QNLIv2.zip"
    )
    HUB_FAILURES.clear()
