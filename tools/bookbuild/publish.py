"""Build tool: ``make release`` — everything a copy of the book publishes, from one configured value.

The value is the repository's URL (``repository.url`` in ``_config.yml``). From it come the book's
address (GitHub Pages: ``https://<owner>.github.io/<name>/``), the Colab links and install lines
(pinned to the release tag ``v<version>``) and the address of the released weights
(``<repository>/releases/download/<tag>/``). ``--repository URL`` sets the value first, and
writes it everywhere it is spelled out (``_config.yml``, the README, each chapter's install line).

Then, into ``--out`` (``_build/release``): one archive per run the chapters read (``scratch-bert``'s
pretraining, chapter 7's SimCSE runs), the manifest ``bertflow_mini/encoders/release.json``
(repository, tag, each archive's SHA-256), the Colab and student editions, and the wheel.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

from bertflow_mini.encoders import release
from bookbuild.editions import release_tag, write_editions

#: The files that spell the repository's URL or the book's address out (the editions are rewritten;
#: a page's outputs that print a link are as its cell would print them now).
SPELLED_OUT = ("_config.yml", "README.md", "book/*.ipynb")
GITHUB = re.compile(r"^https://github\.com/([\w.-]+)/([\w.-]+)$")


def slug(repository: str) -> str:
    """``<owner>/<name>`` of a GitHub repository URL (``https://github.com/<owner>/<name>``)."""
    found = GITHUB.match(repository.rstrip("/"))
    if not found:
        raise ValueError(
            f"{repository!r} is not a GitHub repository URL (https://github.com/<owner>/<name>)"
        )
    return "/".join(found.groups())


def pages_url(repository: str) -> str:
    """The book's address on GitHub Pages for ``repository``."""
    owner, name = slug(repository).split("/")
    return f"https://{owner.lower()}.github.io/{name}/"


def configured(root: Path) -> str:
    """The one configured value: ``repository.url`` of ``root/_config.yml``."""
    config = yaml.safe_load((root / "_config.yml").read_text("utf-8"))
    return config["repository"]["url"].rstrip("/")


def set_repository(root: Path, repository: str) -> list[Path]:
    """Make ``repository`` the configured value: every spelling of the old book address, and of
    the old ``<owner>/<name>`` (the repository's URL, install lines, Colab links), in
    :data:`SPELLED_OUT` becomes the new one. Returns the files changed."""
    old, new = configured(root), repository.rstrip("/")
    swaps = [(pages_url(old), pages_url(new)), (slug(old), slug(new))]
    changed = []
    for pattern in SPELLED_OUT:
        for path in sorted(root.glob(pattern)):
            text = path.read_text("utf-8")
            updated = text
            for before, after in swaps:
                updated = updated.replace(before, after)
            if updated != text:
                path.write_text(updated, "utf-8")
                changed.append(path)
    return changed


def pack(folder: Path, out: Path) -> tuple[str, str]:
    """Write ``folder``'s archive into ``out`` (files sorted, times and owners zeroed: the same
    folder gives the same bytes); return its file name and SHA-256."""
    out.mkdir(parents=True, exist_ok=True)
    target = out / release.archive_name(folder)

    def plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        info.mode = 0o755 if info.isdir() else 0o644
        return info

    with tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(folder.rglob("*")):
            tar.add(
                path, path.relative_to(folder).as_posix(), recursive=False, filter=plain
            )
    digest = hashlib.sha256()
    with open(target, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return target.name, digest.hexdigest()


def released_runs() -> list[Path]:
    """The run folders the chapters read, built: ``scratch-bert``'s pretraining and the SimCSE runs
    of it and of its control (a run not built yet is a ``NotBuiltError`` saying how to build it)."""
    from bertflow_mini.encoders import names, pretrain, simcse

    runs = [pretrain.checkpoint_folder().parent]
    for base in (names.BOOK_MODEL, names.control_of(names.BOOK_MODEL)):
        for seed in names.simcse_seeds(base):
            runs.append(Path(names.resolve_model(simcse.simcse_name(base, seed))))
    return runs


def write_release(root: Path, out: Path, runs: list[Path], wheel: bool = True) -> dict:
    """The release into ``out``: the runs' archives, the manifest (in the package, and beside
    them), the editions and (``wheel``) the package's wheel. Returns the manifest."""
    if out.exists():
        shutil.rmtree(out)
    files = dict(pack(folder, out) for folder in runs)
    info = {"repository": configured(root), "tag": release_tag(), "files": files}
    text = json.dumps(info, indent=1, sort_keys=True) + "\n"
    (root / "bertflow_mini" / "encoders" / release.MANIFEST).write_text(text, "utf-8")
    (out / release.MANIFEST).write_text(text, "utf-8")
    write_editions(root)
    if wheel:
        build_wheel(root, out)
    return info


def build_wheel(root: Path, out: Path, manifest: dict | None = None) -> Path:
    """The wheel ``pip`` builds from ``root``'s ``pyproject.toml``, written into ``out``: built from a
    copy of the package folders (as a ``git+`` install sees them; no caches or build leftovers in
    the checkout); ``manifest``, when given, replaces the release manifest in it."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp)
        shutil.copytree(
            root / "bertflow_mini",
            src / "bertflow_mini",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(root / name, src / name)
        if manifest is not None:
            (src / "bertflow_mini" / "encoders" / release.MANIFEST).write_text(
                json.dumps(manifest)
            )
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                str(src),
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(out.resolve()),
            ],
            check=True,
            capture_output=True,
            cwd=src,
        )
    (wheel,) = out.glob("*.whl")  # one: out holds this build's wheel only
    return wheel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root", type=Path, default=Path.cwd(), help="the repository's root"
    )
    parser.add_argument("--out", type=Path, default=Path("_build/release"))
    parser.add_argument("--repository", help="set the configured repository URL first")
    args = parser.parse_args(argv)
    if args.repository:
        for path in set_repository(args.root, args.repository):
            print(f"set in {path.relative_to(args.root)}")
    info = write_release(args.root, args.out, released_runs())
    for name in sorted(info["files"]):
        print(f"{args.out / name}")
    print(
        f"Publish: commit, tag {info['tag']}, push; then upload {args.out}/* as the assets of release "
        f"{info['tag']} of {info['repository']} (gh release create {info['tag']} {args.out}/*)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
