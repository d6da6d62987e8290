"""The Colab path, exercised offline.

A reader who opens a chapter in Colab runs its first cell (which installs the package there, and
only there), edits one line to ``ch = bf.setup("bert-base-uncased")``, and may run
``python -m bertflow_mini reproduce --model bert-base-uncased``. The hub is unreachable here, so a
randomly initialised checkpoint with bert-base's vocabulary, tokenizer and width (768 wide,
12 heads, 3072 intermediate; 3 of its 12 layers: few, to stay fast, but enough that the first-last
average is not the average of the last two) is served under the name ``bert-base-uncased`` from
a temporary mirror, and the data is the real files' first lines (``mini_data``). The numbers are
checked against an independent computation, not for range.

The install cell must install something that exists: the package named in ``pyproject.toml``, from
the repository URL in ``_config.yml``, with dependencies that cover everything the package imports.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import runpy
import shlex
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from scipy.stats import spearmanr

import bertflow_mini

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(REPO.glob("book/[0-9][0-9]-*.ipynb"))
#: What Colab readers open: the chapters' Colab editions (make editions), installing the release.
EDITIONS = sorted(REPO.glob("book/colab/[0-9][0-9]-*.ipynb"))
CONFIG = yaml.safe_load((REPO / "_config.yml").read_text())
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
COLAB_MODEL = "bert-base-uncased"

#: The methods of the paper's table for bert-base: Su et al. (2021) kept 256 of its 768 dimensions.
BERT_BASE_METHODS = ["none", "flow", "whitening", "whitening-256", "abtt"]
#: Published STS-B and STS12 (wmean) for bert-base, first-last average, typed from the papers:
#: Li et al. 2020 Table 2 (raw and flow, target) and Su et al. 2021 (whitening-256, target).
PAPER_ROWS = {
    "raw": (59.04, 57.84),
    "flow (target)": (70.72, 63.48),
    "whitening-256 (target)": (71.43, 63.89),
}


@pytest.fixture(scope="module")
def bert_base_mirror(tmp_path_factory) -> Path:
    """A model mirror whose ``bert-base-uncased`` is bert-base-shaped (3 layers) and random."""
    from conftest import save_tiny_bert

    mirror = tmp_path_factory.mktemp("colab-mirror")
    save_tiny_bert(
        mirror / COLAB_MODEL, layers=3, hidden=768, heads=12, intermediate=3072
    )
    return mirror


# ----------------------------------------------------------------------------- the first cell
def first_cell(chapter: Path) -> str:
    cells = json.loads(chapter.read_text())["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "code")["source"])


def colab_edit(source: str, model: str = COLAB_MODEL) -> str:
    """The one edit a chapter asks a Colab reader to make: the cell's first statement that binds
    ``MODEL`` or binds a name to a ``setup(…)`` call (the book's ``ch = bf.setup()``; one line, or
    several when a formatter wrapped it in parentheses) names ``model``."""
    for match in re.finditer(r"^(\w+)\s*=", source, re.MULTILINE):
        end, depth = match.end(), 0
        while end < len(source) and not (source[end] == "\n" and depth == 0):
            if source[end] == "#":  # a comment runs to the end of its line
                end = source.find("\n", end) if "\n" in source[end:] else len(source)
                continue
            depth += (source[end] in "([{") - (source[end] in ")]}")
            end += 1
        # the statement without comments
        code = re.sub(r"#[^\n]*", "", source[match.end() : end])
        call = re.search(r"\b((?:[A-Za-z_]\w*\.)*setup)\(", code)  # setup( or bf.setup(
        name = match.group(1)
        if call:
            line = f"{name} = {call.group(1)}({model!r})"
        elif name == "MODEL":
            line = f"MODEL = {model!r}"
        else:
            continue
        return source[: match.start()] + line + source[end:]
    raise AssertionError("no `MODEL = …` line nor a set-up call in the first code cell")


class RecordingShell:
    """Stands in for IPython: records the line magics (``%pip``, ``%matplotlib``) a cell calls, with
    ``{name}`` / ``$name`` expanded from the cell's variables as IPython does, instead of running them."""

    def __init__(self, namespace: dict) -> None:
        self.namespace = namespace
        self.magics: list[tuple[str, str]] = []

    def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> None:
        from IPython.utils.text import (
            DollarFormatter,  # what InteractiveShell.var_expand uses
        )

        self.magics.append(
            (name, DollarFormatter().vformat(line, args=[], kwargs=self.namespace))
        )


def run_cell(source: str) -> tuple[dict, RecordingShell]:
    """Run a notebook cell as IPython would (magics turned into calls), in a fresh namespace."""
    from IPython.core.inputtransformer2 import TransformerManager

    namespace: dict = {"__name__": "__main__"}
    shell = RecordingShell(namespace)
    namespace["get_ipython"] = lambda: shell
    code = compile(TransformerManager().transform_cell(source), "<first cell>", "exec")
    exec(code, namespace)  # noqa: S102 (a notebook cell, as IPython runs it)
    return namespace, shell


@pytest.mark.usefixtures("_restore_global_state")
@pytest.mark.parametrize(
    "chapter", CHAPTERS + EDITIONS, ids=lambda p: f"{p.parent.name}-{p.name[:2]}"
)
def test_first_cell_with_bert_base_sets_up_and_installs_only_in_colab(
    chapter, bert_base_mirror, monkeypatch, capsys
):
    monkeypatch.setenv("BERTFLOW_MODELS", str(bert_base_mirror))
    source = colab_edit(first_cell(chapter))

    # Outside Colab: no install, and the chapter's set-up names the edited model and where it came from.
    namespace, shell = run_cell(source)
    assert [name for name, _ in shell.magics if name == "pip"] == []
    assert namespace["MODEL"] == COLAB_MODEL
    first_line = capsys.readouterr().out.splitlines()[0]
    assert first_line.startswith(
        f"model : {COLAB_MODEL}  (the text describes scratch-bert's"
    )
    assert first_line.endswith("[local mirror ($BERTFLOW_MODELS)]")

    # In Colab (google.colab imported): one `%pip install` of this package from the configured repository.
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    namespace, shell = run_cell(source)
    installs = [shlex.split(line) for name, line in shell.magics if name == "pip"]
    assert len(installs) == 1 and installs[0][0] == "install", shell.magics
    requirement = Requirement(installs[0][-1])
    assert canonicalize_name(requirement.name) == canonicalize_name(
        PYPROJECT["project"]["name"]
    )
    url = f"git+{CONFIG['repository']['url']}"
    release = f"{url}@v{bertflow_mini.__version__}"  # the editions install the release
    assert requirement.url in (
        url,
        f"{url}@{CONFIG['repository']['branch']}",
        release,
    ), requirement.url
    assert namespace["MODEL"] == COLAB_MODEL


def test_colab_edit_handles_each_form_of_the_model_line():
    assert (
        colab_edit('MODEL = "scratch-bert"  # in Colab, ...\nsetup(MODEL)')
        == "MODEL = 'bert-base-uncased'\nsetup(MODEL)"
    )
    assert (
        colab_edit("x = 1\nMODEL = setup()\n")
        == "x = 1\nMODEL = setup('bert-base-uncased')\n"
    )
    wrapped = 'MODEL = (\n    setup()\n)  # here; setup("name") (for another\nx = 1\n'  # as ruff wraps it
    assert colab_edit(wrapped) == "MODEL = setup('bert-base-uncased')\nx = 1\n"
    assert (
        colab_edit("MODEL = bf.setup()  # here\n")
        == "MODEL = bf.setup('bert-base-uncased')\n"
    )
    # the book's form: the set-up call binds the chapter, and MODEL is read from it
    book = 'REPO = "x"\nch = bf.setup()  # here; bf.setup("name")\nMODEL = ch.model\n'
    assert colab_edit(book) == (
        "REPO = \"x\"\nch = bf.setup('bert-base-uncased')\nMODEL = ch.model\n"
    )
    with pytest.raises(AssertionError, match="no `MODEL"):
        colab_edit("setup()")


# ----------------------------------------------------------------------------- loading and reproducing
def test_bert_base_loads_from_the_mirror_with_its_width_and_vocabulary(
    bert_base_mirror, monkeypatch
):
    from bertflow_mini.encoders.names import load_encoder

    monkeypatch.setenv("BERTFLOW_MODELS", str(bert_base_mirror))
    encoder = load_encoder(COLAB_MODEL, device="cpu")
    assert (encoder.name, encoder.dim, encoder.n_layers) == (COLAB_MODEL, 768, 3)
    assert Path(encoder.source) == (bert_base_mirror / COLAB_MODEL).resolve()
    assert len(encoder.tokenizer) == 30522 and encoder.tokenizer.tokenize(
        "Unaffable"
    ) == ["una", "##ffa", "##ble"]


def first_last_avg(folder: Path, sentences: list[str]) -> np.ndarray:
    """The paper's "last2avg" computed without the package: one sentence at a time (so no padding),
    the mean over tokens of the first and the last transformer layers' outputs."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = (
        AutoTokenizer.from_pretrained(folder),
        AutoModel.from_pretrained(folder).eval(),
    )
    rows = []
    with torch.no_grad():
        for sentence in sentences:
            batch = tokenizer(
                sentence, truncation=True, max_length=64, return_tensors="pt"
            )
            hidden = model(
                **batch, output_hidden_states=True
            ).hidden_states  # [0] is the embedding output
            rows.append(((hidden[1] + hidden[-1]) / 2)[0].mean(0).double().numpy())
    return np.stack(rows)


def cosine_spearman(folder: Path, triples: list[tuple[str, str, float]]) -> float:
    a = first_last_avg(folder, [t[0] for t in triples])
    b = first_last_avg(folder, [t[1] for t in triples])
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return 100 * spearmanr(cos, [t[2] for t in triples]).statistic


def python_m_bertflow_mini(args: list[str], monkeypatch, capsys) -> str:
    """``python -m bertflow_mini ARGS`` in this process (its ``__main__``); returns what it printed."""
    monkeypatch.setattr(sys, "argv", ["bertflow_mini", *args])
    with pytest.raises(SystemExit) as done:
        runpy.run_module("bertflow_mini", run_name="__main__")
    captured = capsys.readouterr()
    assert done.value.code == 0, captured.err[-2000:]
    return captured.out


@pytest.mark.slow  # a 768-wide model and 768 × 768 whitening fits: ~20 s on a quiet 2-core CPU
@pytest.mark.usefixtures("one_torch_thread")
def test_reproduce_with_bert_base_matches_an_independent_computation(
    bert_base_mirror, mini_data, monkeypatch, capsys
):
    from conftest import raw_pairs, raw_sts_year

    monkeypatch.setenv("BERTFLOW_MODELS", str(bert_base_mirror))
    monkeypatch.setenv("BERTFLOW_DATA", str(mini_data))
    command = ["reproduce", "--model", COLAB_MODEL, "--tasks", "STSB STS12"]
    result = json.loads(
        python_m_bertflow_mini([*command, "--json"], monkeypatch, capsys)
    )

    # The table has the paper's shape for bert-base, with the Avg. of each row.
    assert (result["model"], result["pooling"], result["fit"]) == (
        COLAB_MODEL,
        "first-last-avg",
        "target",
    )
    assert list(result["mean"]) == BERT_BASE_METHODS
    for method, row in result["mean"].items():
        assert list(row) == ["STSB", "STS12", "Avg."], method
        assert row["Avg."] == pytest.approx((row["STSB"] + row["STS12"]) / 2, abs=1e-9)
        # one seed: no spread
        assert all(v == 0 for v in result["std"][method].values())

    # The raw row: cosine of first-last averages, Spearman against the gold scores (scipy), computed
    # here from the model folder and the raw files. STS12 is the subset-size-weighted mean (wmean).
    folder = bert_base_mirror / COLAB_MODEL
    stsb = cosine_spearman(folder, raw_pairs(mini_data, "STSB", "test"))
    subsets = raw_sts_year(mini_data, "STS12")
    sts12 = sum(len(t) * cosine_spearman(folder, t) for t in subsets.values()) / sum(
        map(len, subsets.values())
    )
    assert result["mean"]["none"]["STSB"] == pytest.approx(stsb, abs=1e-6)
    assert result["mean"]["none"]["STS12"] == pytest.approx(sts12, abs=1e-6)

    # The paper's rows are printed beside ours, in our columns.
    published = {(row["STSB"], row["STS12"]) for row in result["published"].values()}
    assert set(PAPER_ROWS.values()) <= published, published
    assert all(
        list(row) == ["STSB", "STS12", "Avg."] for row in result["published"].values()
    )

    # What the reader sees without --json (raw row only, to spare a second round of fits): the same
    # numbers to two decimals, and the paper's beside them.
    text = python_m_bertflow_mini([*command, "--methods", "none"], monkeypatch, capsys)
    assert text.startswith(
        f"model: {COLAB_MODEL}   pooling: first-last-avg   fit: target"
    )
    none_row = next(
        line.split() for line in text.splitlines() if line.startswith("none ")
    )
    assert none_row[1:] == [f"{v:.2f}" for v in result["mean"]["none"].values()]
    assert "published (Li et al. 2020" in text and all(
        f"{v:.2f}" in text for v in PAPER_ROWS["flow (target)"]
    )


# ----------------------------------------------------------------------------- what pip installs
def third_party_imports(path: Path) -> dict[str, bool]:
    """Top-level names of the absolute, non-standard-library imports in ``path`` (a module, or a
    notebook's code cells), each mapped to whether it is optional (inside a ``try`` whose handler
    catches ``ImportError``)."""
    if path.suffix == ".ipynb":
        from IPython.core.inputtransformer2 import TransformerManager

        cells = [
            c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"
        ]
        tree = ast.parse(
            "\n".join(
                TransformerManager().transform_cell("".join(c["source"])) for c in cells
            )
        )
    else:
        tree = ast.parse(path.read_text())
    optional = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            h.type is None
            or re.search(r"\b(ImportError|ModuleNotFoundError)\b", ast.unparse(h.type))
            for h in node.handlers
        ):
            optional |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    found: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        else:
            continue
        for top in {n.split(".")[0] for n in names}:
            if top not in sys.stdlib_module_names and top != "bertflow_mini":
                found[top] = found.get(top, True) and id(node) in optional
    return found


def declared(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def test_declared_dependencies_cover_every_import_of_the_package():
    """Every module of the package (what Colab installs) needs only the core dependencies; the
    book's build tooling (tools/bookbuild, with the ``book`` extra) is not part of it."""
    core = declared(PYPROJECT["project"]["dependencies"])
    # import name -> installed distributions
    distributions = importlib.metadata.packages_distributions()
    missing, used = [], set()
    for module in sorted((REPO / "bertflow_mini").rglob("*.py")):
        allowed = core
        for name, optional in third_party_imports(module).items():
            dists = {canonicalize_name(d) for d in distributions.get(name, [])}
            if optional and not dists:
                continue  # an optional import of something not installed here (ipywidgets outside Colab)
            assert dists, (
                f"{module.name} imports {name}, which no installed distribution provides"
            )
            used |= dists
            if not optional and not dists & allowed:
                missing.append(f"{module.name}: {name} ({', '.join(sorted(dists))})")
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
    assert core <= used, f"declared but never imported: {sorted(core - used)}"


def test_every_chapter_imports_only_what_the_colab_install_brings():
    """In Colab the install cell brings the package's core dependencies; IPython is Colab's own."""
    core = declared(PYPROJECT["project"]["dependencies"]) | {"ipython"}
    distributions = importlib.metadata.packages_distributions()
    for chapter in CHAPTERS:
        for name, optional in third_party_imports(chapter).items():
            dists = {canonicalize_name(d) for d in distributions.get(name, [])}
            assert optional or dists & core, (
                f"{chapter.name} imports {name} ({dists}), not a core dependency"
            )


def test_the_import_scan_sees_optional_and_required_imports(tmp_path):
    (tmp_path / "m.py").write_text(
        "import os\nimport numpy as np\nfrom scipy.stats import spearmanr\nfrom . import x\n"
        "try:\n    import ipywidgets\nexcept ImportError:\n    pass\n"
        "def f():\n    import torch.nn\n"
    )
    assert third_party_imports(tmp_path / "m.py") == {
        "numpy": False,
        "scipy": False,
        "ipywidgets": True,
        "torch": False,
    }


# ----------------------------------------------------------------------------- a Colab run, simulated
#: Pairs kept per split in the simulated run ($BERTFLOW_MAX_PAIRS): few, so that eight chapters at
#: bert-base's exact shape run in minutes on two cores. STS-B then has fewer sentences than 768
#: dimensions, and a few word pairs: the chapters' guards for a singular covariance and for too few
#: pairs run too.
COLAB_MAX_PAIRS = 20
#: A cell's time limit: chapter 7 fine-tunes bert-base with SimCSE (120 steps) in one cell, which
#: took 23 minutes here on two busy cores (the whole chapter 10 minutes on two quiet ones).
CELL_TIMEOUT_S = 3600


@pytest.fixture(scope="module")
def colab_runtime(tmp_path_factory) -> dict:
    """What a Colab reader's runtime holds (tests/colab_mirror.py): the package installed from its
    wheel into a fresh virtualenv with ``google.colab`` importable, and a hub stand-in serving
    bert-base-uncased and the MultiBERTs names with random weights of bert-base's *exact* config
    (12 x 768, 30,522 tokens: read from the mirror's bert-base config, not typed here)."""
    from colab_mirror import build, build_wheel, colab_venv
    from conftest import SHARED, need

    need(SHARED / "models" / "bert-base-uncased-tokenizer")
    data = Path(os.environ.get("BERTFLOW_DATA") or SHARED / "data")
    need(data / "sts")
    root = tmp_path_factory.mktemp("colab")
    wheel = build_wheel(root / "wheel")
    venv = colab_venv(root / "venv", wheel).parents[1]
    mirror = build(root / "mirror", (SHARED / "models").resolve(), exact=True)
    url = f"git+{CONFIG['repository']['url']}"
    return {
        "wheel": wheel,
        "venv": venv,
        "mirror": mirror,
        "data": data,
        "urls": [
            url,
            f"{url}@{CONFIG['repository']['branch']}",
            f"{url}@v{bertflow_mini.__version__}",
        ],
    }


@pytest.mark.colab  # builds the runtime: a wheel, a virtualenv, five 440 MB checkpoints
def test_the_simulated_hub_serves_bert_base_at_its_exact_shape(colab_runtime):
    from colab_mirror import NAMES
    from conftest import SHARED

    multiberts_names = [n for n in NAMES if n.startswith("multiberts-")]
    from transformers import AutoConfig

    real = json.loads(
        (SHARED / "models" / "bert-base-uncased-tokenizer" / "config.json").read_text()
    )
    for name in (
        "bert-base-uncased",
        "multiberts-seed_0-step_0k",
        "multiberts-seed_0-step_2000k",
    ):
        config = AutoConfig.from_pretrained(colab_runtime["mirror"] / name)
        shape = (
            config.num_hidden_layers,
            config.hidden_size,
            config.intermediate_size,
            config.vocab_size,
        )
        assert (
            shape
            == (
                real["num_hidden_layers"],
                real["hidden_size"],
                real["intermediate_size"],
                real["vocab_size"],
            )
            == (12, 768, 3072, 30522)
        ), name
    # MultiBERTs as the hub holds them: BertForPreTraining weights in pytorch_model.bin
    for name in multiberts_names:
        folder = colab_runtime["mirror"] / name
        assert (folder / "pytorch_model.bin").is_file(), name
        assert not list(folder.glob("*.safetensors")), name
        config = json.loads((folder / "config.json").read_text())
        assert config["architectures"] == ["BertForPreTraining"], name


@pytest.mark.colab
@pytest.mark.parametrize("chapter", EDITIONS, ids=lambda p: p.name[:2])
def test_every_chapter_runs_top_to_bottom_as_a_colab_reader_with_bert_base(
    chapter, colab_runtime, tmp_path
):
    """A Colab reader's run on the paper's model, offline: the chapter's Colab edition with the one
    switch made (``bf.setup("bert-base-uncased")``), in a kernel of the virtualenv above started
    in an empty folder (no checkout on ``sys.path``), its install cell checked and pointed at the
    wheel, bert-base-uncased and the MultiBERTs served from the mirror (``$BERTFLOW_MODELS``), the
    first ``COLAB_MAX_PAIRS`` pairs of each split, an empty cache (QNLI as its download would
    leave it). Passes when no cell raises; a claim that fails prints its note under its cell."""
    import nbformat
    from colab_mirror import kernel_env, qnli_fixture, run_chapter
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    switched = nbformat.read(chapter, as_version=4)
    setup_cell = next(c for c in switched.cells if c.cell_type == "code")
    setup_cell.source = colab_edit(setup_cell.source)
    chapter = tmp_path / chapter.name
    nbformat.write(switched, chapter)

    cache = tmp_path / "cache"
    qnli_fixture(cache, colab_runtime["data"], pairs=2 * COLAB_MAX_PAIRS)
    env = kernel_env(
        colab_runtime["venv"],
        colab_runtime["wheel"],
        colab_runtime["urls"],
        {
            "BERTFLOW_MODELS": str(colab_runtime["mirror"]),
            "BERTFLOW_DATA": str(colab_runtime["data"]),
            "BERTFLOW_MAX_PAIRS": str(COLAB_MAX_PAIRS),
            "BERTFLOW_CACHE": str(cache),
        },
    )
    work = tmp_path / "work"
    work.mkdir()
    try:
        # a copy: book/ is never written
        nb, report = run_chapter(chapter, work, env, timeout=CELL_TIMEOUT_S)
    except (CellExecutionError, CellTimeoutError) as err:
        lines = str(err).strip().splitlines()
        what = (
            f"{err.ename}: {err.evalue}"
            if isinstance(err, CellExecutionError)
            else lines[0]
        )
        pytest.fail(f"{chapter.name}: {what}\n" + "\n".join(lines[-12:]), pytrace=False)

    # Colab's branches ran: the one install cell installed this package from the configured URL.
    assert report["colab"] and len(report["pip"]) == 1, report["pip"]
    # The package came from the wheel in the virtualenv, and no other folder on the kernel's path holds
    # it (the project's site-packages is on it for torch and co., without the editable install's hook).
    site = Path(report["package"]).resolve().parents[1]
    assert site.is_relative_to(colab_runtime["venv"].resolve()), site
    holders = {
        Path(p).resolve()
        for p in report["sys_path"]
        if p and (Path(p) / "bertflow_mini").is_dir()
    }
    assert holders == {site} and str(REPO) not in report["sys_path"], report["sys_path"]
    printed = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert f"model : {COLAB_MODEL}  (the text describes scratch-bert's" in printed


@pytest.fixture(scope="module")
def book_runtime(tmp_path_factory) -> dict:
    """A Colab reader's runtime on the book's model (tests/colab_mirror.py): the release packed
    from the warm cache and served from localhost, the wheel built with its manifest."""
    from colab_mirror import book_runtime
    from conftest import SHARED, need

    data = Path(os.environ.get("BERTFLOW_DATA") or SHARED / "data")
    need(data / "sts")
    return book_runtime(tmp_path_factory.mktemp("colab-book"), SHARED, data)


@pytest.mark.colab
@pytest.mark.parametrize("chapter", EDITIONS, ids=lambda p: p.name[:2])
def test_every_chapter_runs_as_a_colab_reader_on_the_books_model_from_its_release(
    chapter, book_runtime, tmp_path
):
    """The Colab edition unedited, as a reader opens it: a new session (empty cache), the package
    from its wheel, ``scratch-bert`` the default, its weights (and chapter 7's SimCSE runs)
    fetched from the release and checked, nothing trained. Every claim behind the text is
    checked on the book's model, so a sentence that the run does not bear out fails the test.
    ``benchmarks/bench_colab.py`` times the same runs."""
    from colab_mirror import qnli_fixture, run_chapter

    cache = tmp_path / "cache"
    qnli_fixture(cache, Path(book_runtime["env"]["BERTFLOW_DATA"]))
    env = {**book_runtime["env"], "BERTFLOW_CACHE": str(cache)}
    work = tmp_path / "work"
    work.mkdir()
    nb, report = run_chapter(chapter, work, env, timeout=CELL_TIMEOUT_S)
    assert report["colab"] and len(report["pip"]) == 1, report["pip"]
    printed = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert "model : scratch-bert  (the book's model" in printed
    assert "fetching the book's released weights" in printed
    assert "pretraining it now" not in printed and "fine-tuning" not in printed
    assert "NOTE:" not in printed


@pytest.mark.slow  # builds a wheel: a few seconds
def test_the_installed_package_has_every_subpackage(tmp_path):
    """What `%pip install` puts into Colab: a wheel built from pyproject.toml must hold every
    package folder under bertflow_mini/ (data/, encoders/, …), or the chapters' imports fail there."""
    import zipfile

    from colab_mirror import build_wheel

    wheel = build_wheel(tmp_path)
    shipped = {
        str(Path(n).parent)
        for n in zipfile.ZipFile(wheel).namelist()
        if n.endswith("/__init__.py")
    }
    expected = {
        str(p.parent.relative_to(REPO))
        for p in (REPO / "bertflow_mini").rglob("__init__.py")
    }
    assert expected - shipped == set(), f"the wheel lacks {sorted(expected - shipped)}"


@pytest.mark.slow  # builds a wheel: a few seconds
def test_the_wheel_holds_none_of_the_books_build_tooling(tmp_path):
    """Colab's `%pip install` brings what a reader's code needs: no edition writer, MyST
    converter, output comparator, executor, launch button or release packer (tools/bookbuild),
    and no module that imports what only building the book needs (the ``book`` extra)."""
    import zipfile

    from colab_mirror import build_wheel

    tooling = {p.stem for p in (REPO / "tools" / "bookbuild").glob("*.py")} - {
        "__init__"
    }
    assert {"editions", "myst_markdown", "output_check", "execute"} <= tooling
    wheel = zipfile.ZipFile(build_wheel(tmp_path))
    names = wheel.namelist()
    modules = [n for n in names if n.endswith(".py")]
    assert modules and all(n.startswith("bertflow_mini/") for n in modules), modules
    assert not tooling & {Path(n).stem for n in modules}

    core = declared(PYPROJECT["project"]["dependencies"])
    book_only = declared(PYPROJECT["project"]["optional-dependencies"]["book"]) - core
    distributions = importlib.metadata.packages_distributions()
    unpacked = tmp_path / "unpacked"
    wheel.extractall(unpacked)
    for module in sorted(unpacked.rglob("*.py")):
        for name, optional in third_party_imports(module).items():
            dists = {canonicalize_name(d) for d in distributions.get(name, [])}
            assert optional or not dists & book_only, f"{module.name} imports {name}"
