"""The book's release: a run folder packed by ``make release``, served over HTTP, fetched into a
fresh cache bit for bit, checked against its SHA-256, and used instead of training."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from colab_mirror import serve

from bertflow_mini.encoders import pretrain, release
from bookbuild.publish import pack


def fake_run(folder: Path) -> Path:
    """A run folder as the cache holds one: files at two levels."""
    (folder / "pct-100").mkdir(parents=True)
    (folder / "recipe.json").write_text('{"steps": 3}\n')
    (folder / "pct-100" / "model.safetensors").write_bytes(bytes(range(256)) * 40)
    return folder


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def served(tmp_path, monkeypatch) -> tuple[Path, dict]:
    """A run packed into a served folder, the package's manifest naming it, and an empty cache."""
    original = fake_run(tmp_path / "built" / "scratch-bert-0123456789ab")
    out = tmp_path / "release"
    name, digest = pack(original, out)
    info = {
        "repository": "https://github.com/o/n",
        "tag": "v0",
        "files": {name: digest},
    }
    monkeypatch.setattr(release, "manifest", lambda: info)
    monkeypatch.setenv(release.RELEASE_ENV, serve(out))
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / "cache"))
    return original, info


def test_pack_is_byte_stable_and_its_digest_is_the_files(tmp_path):
    run = fake_run(tmp_path / "scratch-bert-0123456789ab")
    first = pack(run, tmp_path / "a")
    (run / "recipe.json").touch()  # a new mtime: the archive must not change
    second = pack(run, tmp_path / "b")
    assert first == second
    data = (tmp_path / "a" / first[0]).read_bytes()
    assert first[1] == hashlib.sha256(data).hexdigest()


def test_a_fetched_run_is_the_packed_one_bit_for_bit(served, tmp_path):
    original, _ = served
    target = tmp_path / "cache" / "models" / original.name
    assert release.fetch(target, progress=False)
    assert files_of(target) == files_of(original)
    assert not list(
        (tmp_path / "cache" / "release").iterdir()
    )  # the archive is not kept


def test_a_run_the_release_does_not_hold_is_not_fetched(served, tmp_path, capsys):
    assert not release.fetch(
        tmp_path / "cache" / "models" / "scratch-bert-ffffffffffff"
    )
    assert capsys.readouterr().out == ""  # no download tried


def test_a_corrupted_download_is_an_error_and_leaves_no_folder(
    served, tmp_path, monkeypatch
):
    original, info = served
    name = release.archive_name(original)
    info["files"][name] = "0" * 64
    target = tmp_path / "cache" / "models" / original.name
    with pytest.raises(ValueError, match="hash"):
        release.fetch(target, progress=False)
    assert not target.exists()


def test_an_unreachable_release_says_where_and_returns_false(
    served, tmp_path, monkeypatch, capsys
):
    original, _ = served
    monkeypatch.setenv(
        release.RELEASE_ENV, "http://127.0.0.1:9/"
    )  # the discard port: refused
    target = tmp_path / "cache" / "models" / original.name
    assert not release.fetch(target, progress=False)
    said = capsys.readouterr().out
    assert "http://127.0.0.1:9/" + release.archive_name(original) in said
    assert "not reachable" in said and not target.exists()


def test_release_url_is_the_repositorys_release_page_unless_the_variable_names_one(
    monkeypatch,
):
    info = {"repository": "https://github.com/o/n/", "tag": "v1.2.0", "files": {}}
    monkeypatch.delenv(release.RELEASE_ENV, raising=False)
    assert (
        release.release_url(info) == "https://github.com/o/n/releases/download/v1.2.0/"
    )
    monkeypatch.setenv(release.RELEASE_ENV, "http://localhost:8000")
    assert release.release_url(info) == "http://localhost:8000/"


def test_scratch_bert_is_fetched_from_the_release_instead_of_pretrained(
    tmp_path, monkeypatch
):
    """checkpoint(): the released run is put in place and used; pretraining never starts."""
    recipe = pretrain.with_overrides(steps=3)
    monkeypatch.setenv("BERTFLOW_CACHE", str(tmp_path / "cache"))
    run = fake_run(tmp_path / "built" / pretrain.run_dir(recipe).name)
    (run / "pct-100" / "config.json").write_text("{}")
    out = tmp_path / "release"
    name, digest = pack(run, out)
    monkeypatch.setattr(
        release,
        "manifest",
        lambda: {"repository": "", "tag": "", "files": {name: digest}},
    )
    monkeypatch.setenv(release.RELEASE_ENV, serve(out))

    def refuse(*args, **kwargs):
        raise AssertionError("pretrained although the release holds the run")

    monkeypatch.setattr(pretrain, "pretrain", refuse)
    folder = pretrain.checkpoint(100, recipe, progress=False)
    assert folder == pretrain.run_dir(recipe) / "pct-100"
    assert files_of(folder) == files_of(run / "pct-100")
