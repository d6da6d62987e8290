"""``make release`` against a temporary configured value, in a copy of the repository: every URL
comes out of the one value, and the weights it packs come back from the release bit for bit."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml
from colab_mirror import serve

from bertflow_mini.encoders import release
from bookbuild import publish

REPO = Path(__file__).resolve().parents[2]
NEW = "https://github.com/a-lecturer/course-book"


def test_the_books_address_follows_the_repository():
    assert publish.pages_url(NEW) == "https://a-lecturer.github.io/course-book/"
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    assert config["html"]["baseurl"] == publish.pages_url(config["repository"]["url"])
    with pytest.raises(ValueError, match="GitHub"):
        publish.pages_url("https://gitlab.com/o/n")


@pytest.mark.slow  # renders every edition and builds a wheel: about half a minute
def test_make_release_with_a_new_repository_rewrites_every_url_and_round_trips_the_weights(
    tmp_path, monkeypatch
):
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("_config.yml", "README.md", "pyproject.toml"):
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / "book", root / "book")
    shutil.copytree(
        REPO / "bertflow_mini",
        root / "bertflow_mini",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    old = publish.configured(root)
    run = tmp_path / "cache" / "models" / "scratch-bert-0123456789ab"
    (run / "pct-100").mkdir(parents=True)
    (run / "pct-100" / "model.safetensors").write_bytes(b"\x01\x02" * 5000)
    monkeypatch.setattr(publish, "released_runs", lambda: [run])
    out = tmp_path / "out"

    assert (
        publish.main(["--root", str(root), "--out", str(out), "--repository", NEW]) == 0
    )

    # the old value is spelled nowhere; the new one wherever a reader meets a URL
    spelled = [*root.glob("*.yml"), *root.glob("*.md"), *root.rglob("*.ipynb")]
    for path in spelled:
        text = path.read_text("utf-8")
        assert publish.slug(old) not in text and publish.pages_url(old) not in text, (
            path
        )
    readme = (root / "README.md").read_text()
    assert publish.pages_url(NEW) in readme
    assert "colab.research.google.com/github/a-lecturer/course-book/blob/v" in readme
    colab = (root / "book" / "colab" / "00-the-puzzle.ipynb").read_text()
    assert f"git+{NEW}@v" in colab
    # the manifest, in the package and in the wheel, names the new repository and the archive
    info = json.loads(
        (root / "bertflow_mini" / "encoders" / "release.json").read_text()
    )
    assert info["repository"] == NEW and set(info["files"]) == {f"{run.name}.tar"}
    (wheel,) = out.glob("*.whl")
    shipped = json.loads(
        zipfile.ZipFile(wheel).read("bertflow_mini/encoders/release.json")
    )
    assert shipped == info
    # what was packed comes back from the release, checked, as it was
    monkeypatch.setattr(release, "manifest", lambda: info)
    monkeypatch.setenv(release.RELEASE_ENV, serve(out))
    fetched = tmp_path / "fresh" / run.name
    assert release.fetch(fetched, progress=False)
    assert (
        fetched / "pct-100" / "model.safetensors"
    ).read_bytes() == b"\x01\x02" * 5000
