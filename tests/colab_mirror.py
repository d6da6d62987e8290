"""Colab, simulated offline: what a reader's runtime holds, built from this checkout.

* :func:`build` — a model mirror: random-weight checkpoints served under the names a Colab reader
  downloads from the hub (``bert-base-uncased`` and the MultiBERTs steps the chapters sweep), with
  bert-base-uncased's tokenizer; the real mirror's other models are linked in.
* :func:`build_wheel` and :func:`colab_venv` — the package as the install cell gets it: a wheel
  built from ``pyproject.toml``, installed (``pip install --no-deps``) into a fresh virtualenv that
  sees the project's third-party packages (torch, transformers, ipykernel …) but not the checkout.
  The virtualenv holds a stand-in ``google.colab`` whose import (at kernel start, as in Colab) makes
  the chapters' Colab-only branches run; it replaces ``%pip`` by a check that the line installs this
  package from the configured repository, then installs the wheel instead of cloning.
* :func:`release_from_cache` and :func:`serve` — the book's release (the weights the chapters read,
  packed as ``make release`` packs them) served from localhost, as the repository's release page.
* :func:`run_chapter` — a chapter top to bottom in that virtualenv's kernel, started in an empty
  temporary folder, with extra cells (instrumentation) inserted after the set-up cell.

    python tests/colab_mirror.py /tmp/colab-mirror            # small shape (3 layers, width 96)
    python tests/colab_mirror.py /tmp/colab-mirror --exact    # bert-base's exact config (440 MB each)

Then ``BERTFLOW_MODELS=/tmp/colab-mirror BERTFLOW_MODEL_NAME=bert-base-uncased`` runs a chapter on it.
The small shape differs from scratch-bert's 4 x 256 in depth *and* width, so a chapter that assumes
either fails there. Each checkpoint is in its hub repository's format: ``bert-base-uncased`` a
``BertForMaskedLM`` in safetensors, each MultiBERTs step a ``BertForPreTraining`` (masked-LM and
next-sentence heads) in ``pytorch_model.bin`` (:func:`save_multiberts`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMALL = {
    "num_hidden_layers": 3,
    "hidden_size": 96,
    "num_attention_heads": 2,
    "intermediate_size": 384,
}
#: The names a bert-base reader's chapters ask for: the model, and the MultiBERTs steps they sweep.
NAMES = (
    "bert-base-uncased",
    "multiberts-seed_0-step_0k",
    "multiberts-seed_0-step_20k",
    "multiberts-seed_0-step_200k",
    "multiberts-seed_0-step_2000k",
)
KERNEL = "colab-sim"


def build(
    out: Path, shared_models: Path, exact: bool = False, names: tuple[str, ...] = NAMES
) -> Path:
    """Write the mirror into ``out`` (idempotent) and return it. ``exact``: bert-base's own config
    (12 x 768, read from the tokenizer folder's ``config.json``), else :data:`SMALL`."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer_dir = shared_models / "bert-base-uncased-tokenizer"
    out.mkdir(parents=True, exist_ok=True)
    for (
        other
    ) in shared_models.iterdir():  # the real mirror's models stay available by name
        link = out / other.name
        if not link.exists():
            os.symlink(other.resolve(), link)
    config = BertConfig.from_pretrained(tokenizer_dir)
    if not exact:
        config.update(SMALL)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    for i, name in enumerate(names):
        folder = out / name
        if (folder / "config.json").is_file():
            continue
        # each checkpoint its own weights, deterministically
        if name.startswith("multiberts-"):
            save_multiberts(config, folder, seed=i)
        else:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(i)
                model = BertForMaskedLM(config)
            model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return out


def save_multiberts(config, folder: Path, seed: int) -> Path:
    """A random checkpoint of ``config``'s shape in the format of the hub's
    ``google/multiberts-seed_N-step_Kk`` repositories: ``pytorch_model.bin`` holding a
    ``BertForPreTraining``'s state dict (the encoder under ``bert.``, the masked-LM head
    ``cls.predictions.*``, the next-sentence head ``cls.seq_relationship.*``) and a ``config.json``
    naming that class. Drawn with ``seed``, without touching the global generators."""
    import copy

    import torch
    from transformers import BertForPreTraining

    config = copy.deepcopy(config)
    config.update({"architectures": ["BertForPreTraining"]})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertForPreTraining(config)
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    return folder


def build_wheel(out: Path, repo: Path = REPO, manifest: dict | None = None) -> Path:
    """The wheel ``pip`` builds from ``repo``'s ``pyproject.toml``, as ``make release`` builds it
    (:func:`bookbuild.publish.build_wheel`), in ``out/wheel``; ``manifest``, when
    given, replaces its release manifest (:mod:`bertflow_mini.encoders.release`)."""
    from bookbuild.publish import build_wheel as release_wheel

    return release_wheel(repo, out / "wheel", manifest)


def release_from_cache(out: Path) -> dict:
    """The book's release as ``make release`` packs it, from this machine's cache (the runs the
    chapters read, built by ``make cache``), into ``out``; returns its manifest."""
    from bookbuild.editions import release_tag
    from bookbuild.publish import pack, released_runs

    files = dict(pack(folder, out) for folder in released_runs())
    return {
        "repository": "https://github.com/colab-sim/release",
        "tag": release_tag(),
        "files": files,
    }


def serve(folder: Path) -> str:
    """Serve ``folder`` over HTTP on localhost from a daemon thread; returns its base URL."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


#: The stand-in ``google.colab``: imported when the kernel starts, as Colab's own is.
COLAB_STUB = '''"""google.colab, simulated (tests/colab_mirror.py): ``%pip install`` of the book's package
from the configured repository installs the wheel under test; any other ``%pip`` line fails."""
import os
import shlex
import subprocess
import sys

from packaging.requirements import Requirement

PIP_LOG = []


def _pip(line):
    args = [a for a in shlex.split(line) if a not in ("-q", "--quiet", "-U", "--upgrade")]
    urls = os.environ["COLAB_SIM_URLS"].split()
    if len(args) != 2 or args[0] != "install":
        raise RuntimeError(f"%pip {line}: the simulation knows only `%pip install -q <the package>`")
    req = Requirement(args[1])
    if req.name.replace("-", "_") != "bertflow_mini" or req.url not in urls:
        raise RuntimeError(f"%pip {line}: installs {req.name} from {req.url}, not bertflow_mini from {urls}")
    PIP_LOG.append(line)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    os.environ["COLAB_SIM_WHEEL"]], check=True)


try:
    get_ipython().register_magic_function(_pip, "line", "pip")  # noqa: F821 (IPython's builtin)
except NameError:  # imported outside IPython
    pass
'''


def wheel_venv(out: Path, wheel: Path) -> Path:
    """A fresh virtualenv at ``out`` with ``wheel`` installed; returns its python. Third-party
    packages come from this interpreter's site-packages, added as a plain path (its ``.pth`` files,
    among them the checkout's editable install, are not run)."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(out)], check=True
    )
    python = out / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    (site_packages(python) / "zz-project-packages.pth").write_text(
        sysconfig.get_path("purelib") + "\n"
    )
    return python


def site_packages(python: Path) -> Path:
    """The ``purelib`` folder of the interpreter ``python``."""
    return Path(
        subprocess.run(
            [
                str(python),
                "-c",
                "import sysconfig; print(sysconfig.get_path('purelib'))",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )


def colab_venv(out: Path, wheel: Path) -> Path:
    """:func:`wheel_venv` plus the stand-in ``google.colab`` and a Jupyter kernel that imports it
    at start, as Colab's runtime does; returns its python."""
    python = wheel_venv(out, wheel)
    site = site_packages(python)
    # a namespace package, as Colab's google is
    (site / "google" / "colab").mkdir(parents=True)
    (site / "google" / "colab" / "__init__.py").write_text(COLAB_STUB)
    spec = out / "share" / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [
        str(python),
        "-m",
        "ipykernel_launcher",
        "-f",
        "{connection_file}",
        "--IPKernelApp.exec_lines=import google.colab",
    ]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"})
    )
    return python


def kernel_env(
    venv: Path, wheel: Path, urls: list[str], env: dict[str, str]
) -> dict[str, str]:
    """The kernel's environment: ``env`` on top of this process's, without ``PYTHONPATH``."""
    out = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "BERTFLOW_MAX_PAIRS", "BERTFLOW_MODEL_NAME")
    }
    out.update(
        {
            "JUPYTER_PATH": str(venv / "share" / "jupyter"),
            "COLAB_SIM_WHEEL": str(wheel),
            "COLAB_SIM_URLS": " ".join(urls),
            "PYTHONHASHSEED": "0",
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            **env,
        }
    )
    return out


#: Appended to each chapter: where the package came from, what ran, and the instrumentation's counts.
REPORT = r"""
import json as _j, os as _o, sys as _s, time as _t, bertflow_mini as _bf
_report = {"package": _bf.__file__, "sys_path": list(_s.path), "colab": "google.colab" in _s.modules,
           "pip": list(_s.modules["google.colab"].PIP_LOG),
           "kernel_process_s": _t.process_time()}
_report.update(globals().get("_WORK", {}))
open(_o.environ["COLAB_SIM_REPORT"], "w").write(_j.dumps(_report, default=str))
"""


def book_runtime(root: Path, shared: Path, data: Path) -> dict:
    """A Colab reader's runtime for the book's own model: the release packed from this machine's
    cache and served from localhost, the wheel built with its manifest, installed into a fresh
    virtualenv with ``google.colab``; returns the kernel's environment for a chapter (add
    ``BERTFLOW_CACHE``: an empty folder, as a new Colab session has) and the paths."""
    release = root / "release"
    manifest = release_from_cache(release)
    wheel = build_wheel(root / "wheel", manifest=manifest)
    venv = colab_venv(root / "venv", wheel).parents[1]
    import yaml

    import bertflow_mini

    repository = yaml.safe_load((REPO / "_config.yml").read_text())["repository"]["url"]
    urls = [f"git+{repository}", f"git+{repository}@v{bertflow_mini.__version__}"]
    env = kernel_env(
        venv,
        wheel,
        urls,
        {
            "BERTFLOW_MODELS": str(shared / "models"),
            "BERTFLOW_DATA": str(data),
            "BERTFLOW_RELEASE": serve(release),
        },
    )
    return {"env": env, "wheel": wheel, "venv": venv, "manifest": manifest}


def run_chapter(
    chapter: Path,
    cwd: Path,
    env: dict[str, str],
    timeout: int = 1800,
    extra_cells: tuple[str, ...] = (),
    closing_cells: tuple[str, ...] = (),
    record_timing: bool = False,
) -> tuple[object, dict]:
    """Run a copy of ``chapter`` in the simulated Colab kernel started in ``cwd`` with environment
    ``env`` (:func:`kernel_env`), ``extra_cells`` after its set-up cell and ``closing_cells`` at
    its end; returns the executed
    notebook and what the appended report cell wrote. Raises nbclient's errors when a cell fails."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(chapter, as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    for offset, source in enumerate(extra_cells, start=1):
        nb.cells.insert(first + offset, nbformat.v4.new_code_cell(source))
    for source in (*closing_cells, REPORT):
        nb.cells.append(nbformat.v4.new_code_cell(source))
    report = cwd / f".colab-sim-{chapter.stem}.json"
    env = {**env, "COLAB_SIM_REPORT": str(report)}
    old = os.environ.get("JUPYTER_PATH")
    # where the client looks the kernel up
    os.environ["JUPYTER_PATH"] = env["JUPYTER_PATH"]
    try:
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name=KERNEL,
            coalesce_streams=True,
            record_timing=record_timing,
            resources={"metadata": {"path": str(cwd)}},
        )
        client.execute(env=env, cwd=str(cwd))
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old
    return nb, json.loads(report.read_text())


def qnli_fixture(cache: Path, data: Path, pairs: int = 5463) -> Path:
    """GLUE's QNLI layout (``glue/QNLI/{train,dev}.tsv``: index, question, sentence, label) in the
    data cache ``cache``, as the chapter's download would leave it, with ``pairs`` pairs (QNLI dev has
    5,463) built from STS-B sentences: one as the question, three as the answer sentence, about
    QNLI's length (~50 tokens a pair)."""
    import csv

    rows = []
    with open(data / "sts" / "STSBenchmark" / "sts-train.csv", encoding="utf-8") as f:
        for fields in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            if len(fields) >= 7:
                rows.append(fields[5:7])
    folder = cache / "data" / "glue" / "QNLI"
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev"):
        lines = ["index\tquestion\tsentence\tlabel"]
        for i in range(pairs):
            question = rows[i % len(rows)][0].rstrip(".") + "?"
            answer = " ".join(rows[(i + k) % len(rows)][1] for k in range(3))
            lines.append(
                f"{i}\t{question}\t{answer}\t{'entailment' if i % 2 else 'not_entailment'}"
            )
        (folder / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--exact", action="store_true", help="bert-base's exact config (12 x 768)"
    )
    parser.add_argument(
        "--shared",
        type=Path,
        default=Path(os.environ.get("BERTFLOW_MODELS", "../shared/models")),
    )
    args = parser.parse_args()
    print(build(args.out, args.shared.resolve(), args.exact))
