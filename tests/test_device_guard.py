"""Every tensor that meets a model lives on the model's device: a chapter run on a GPU must not stop
on "Expected all tensors to be on the same device".

No GPU is needed to check it:

* **The chapters (static).** Each chapter's code cells are parsed (``ast``, in order, names carried
  from cell to cell). A name bound to a model that may sit on CUDA — what ``load_mlm``,
  ``load_encoder``, ``fit_flow``, ``from_pretrained`` … return (they put it on
  :func:`~bertflow_mini.encoders.encoder.default_device`), or an attribute of one (``enc.model``,
  ``mlm.cls``) — must never meet, in one call or one arithmetic operation, a tensor created on the
  CPU: ``torch.randn(…)``, ``torch.tensor(…)``, ``torch.from_numpy(…)``, a tokenizer's
  ``return_tensors="pt"`` … without ``device=`` and not moved with ``.to(…)``/``.cuda()``, or a name
  bound to one. Tensors that never meet such a model (a ``torch.nn.LayerNorm`` built in the cell, a
  flow built on the CPU) are fine and not flagged.
* **The package's chapter helpers (run).** ``flow_toys`` and ``mlm_probe`` take a model and make
  tensors for it. They run here with the model on PyTorch's ``meta`` device: a tensor made on the
  CPU and fed to it raises a device error, while a correct function gets as far as copying a
  result back (which a meta tensor cannot do). With a GPU, the same functions also run on CUDA
  and must give the CPU's numbers.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch
from conftest import tiny_mlm

matplotlib.use("Agg")

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(REPO.glob("book/[0-9][0-9]-*.ipynb"))

#: Package calls that return a model (or a fit holding one) on the default device, a GPU when there is one.
DEVICE_MODELS = {
    "load_mlm",
    "load_encoder",
    "simcse_encoder",
    "fit_flow",
    "from_pretrained",
    "FlowTransform",
    "AutoModel",
    "AutoModelForMaskedLM",
    "BertModel",
    "BertForMaskedLM",
}
#: torch functions that create a tensor, on the CPU unless given ``device=``.
FACTORIES = {
    "randn",
    "rand",
    "randint",
    "randperm",
    "zeros",
    "ones",
    "empty",
    "full",
    "eye",
    "arange",
    "linspace",
    "logspace",
    "tensor",
    "as_tensor",
    "from_numpy",
    "normal",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
    "stack",
    "cat",
}
#: Methods that bring a tensor back to the CPU (after them, a model's output is plain data).
TO_HOST = {"cpu", "numpy", "item", "tolist"}
#: Methods that move a tensor to a device.
TO_DEVICE = {"to", "cuda"}


@dataclass(frozen=True)
class Finding:
    cell: int
    line: int
    code: str

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: {self.code}"


def code_cells(notebook: Path) -> list[tuple[int, str]]:
    """(index among all cells, Python source with IPython's magics turned into calls) of each code cell."""
    from IPython.core.inputtransformer2 import TransformerManager

    cells = json.loads(notebook.read_text())["cells"]
    return [
        (i, TransformerManager().transform_cell("".join(c["source"])))
        for i, c in enumerate(cells)
        if c["cell_type"] == "code"
    ]


def _callee(node: ast.AST) -> str | None:
    """The last name of a call's function: ``torch.randn`` → ``randn``; ``x.to`` → ``to``."""
    func = node.func if isinstance(node, ast.Call) else None
    return (
        func.attr
        if isinstance(func, ast.Attribute)
        else func.id
        if isinstance(func, ast.Name)
        else None
    )


class DeviceScan(ast.NodeVisitor):
    """Walks a chapter's cells in order; collects :class:`Finding` s (see the module's docstring)."""

    def __init__(self) -> None:
        # names of models that may be on CUDA, or parts of them
        self.on_device: set[str] = set()
        self.on_cpu: set[str] = set()  # names of tensors made on the CPU
        self.findings: list[Finding] = []
        self.cell, self.source = 0, ""
        self._parents: dict[int, ast.AST] = {}

    def scan(self, cell: int, source: str) -> None:
        tree = ast.parse(source)
        self.cell, self.source = cell, source
        self._parents = {
            id(child): parent
            for parent in ast.walk(tree)
            for child in ast.iter_child_nodes(parent)
        }
        for (
            statement
        ) in tree.body:  # in execution order: a binding counts from its statement on
            self.visit(statement)

    # -- what an expression is
    def _moved(self, node: ast.AST) -> bool:
        """``node`` is the receiver of ``.to(…)`` or ``.cuda()``."""
        parent = self._parents.get(id(node))
        grand = self._parents.get(id(parent)) if parent is not None else None
        return (
            isinstance(parent, ast.Attribute)
            and parent.attr in TO_DEVICE
            and isinstance(grand, ast.Call)
            and grand.func is parent
        )

    def is_cpu_tensor(self, node: ast.AST) -> bool:
        """A tensor made on the CPU: a factory call without ``device=`` (or a tokenizer's
        ``return_tensors="pt"``), not moved; or a name bound to one, or a method chain on one."""
        if isinstance(node, ast.Name):
            return node.id in self.on_cpu
        if isinstance(node, ast.Call):
            keywords = {k.arg: k.value for k in node.keywords}
            factory = (
                _callee(node) in FACTORIES
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "torch"
            )
            tokenized = (
                isinstance(keywords.get("return_tensors"), ast.Constant)
                and keywords["return_tensors"].value == "pt"
            )
            if (factory or tokenized) and "device" not in keywords:
                return not self._moved(node)
            if isinstance(node.func, ast.Attribute) and _callee(node) not in TO_DEVICE:
                # h.double(), …
                return self.is_cpu_tensor(node.func.value) and not self._moved(node)
        if isinstance(node, ast.Attribute | ast.Subscript):
            return self.is_cpu_tensor(node.value)
        if isinstance(node, ast.BinOp):
            return self.is_cpu_tensor(node.left) or self.is_cpu_tensor(node.right)
        return False

    def is_on_device(self, node: ast.AST) -> bool:
        """A model that may be on CUDA, a part of one, or what it computes (until ``.cpu()`` …)."""
        if isinstance(node, ast.Name):
            return node.id in self.on_device
        if isinstance(node, ast.Call):
            if _callee(node) in DEVICE_MODELS:  # even with device=: it may name a GPU
                return True
            if _callee(node) in TO_HOST:
                return False
            return self.is_on_device(node.func)
        if isinstance(node, ast.Attribute):
            return node.attr not in TO_HOST and self.is_on_device(node.value)
        if isinstance(node, ast.Subscript):
            return self.is_on_device(node.value)
        return False

    # -- bindings
    def _bind(self, target: ast.AST, value: ast.AST) -> None:
        names = [t.id for t in ast.walk(target) if isinstance(t, ast.Name)]
        device, cpu = (
            self.is_on_device(value),
            self.is_cpu_tensor(value) and not self.is_on_device(value),
        )
        for name in names:
            (self.on_device.add if device else self.on_device.discard)(name)
            (self.on_cpu.add if cpu else self.on_cpu.discard)(name)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        for target in node.targets:
            self._bind(target, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if node.value is not None:
            self._bind(node.target, node.value)

    def visit_withitem(self, node: ast.withitem) -> None:
        self.generic_visit(node)
        if node.optional_vars is not None:
            self._bind(node.optional_vars, node.context_expr)

    # -- meetings
    def _flag(self, node: ast.AST) -> None:
        code = ast.get_source_segment(self.source, node) or ast.unparse(node)
        self.findings.append(
            Finding(self.cell, node.lineno, " ".join(code.split())[:120])
        )

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        args = [*node.args, *(k.value for k in node.keywords)]
        args = [a.value if isinstance(a, ast.Starred) else a for a in args]
        model = self.is_on_device(node.func) or any(self.is_on_device(a) for a in args)
        if (
            model
            and _callee(node) not in TO_DEVICE
            and any(self.is_cpu_tensor(a) for a in args)
        ):
            self._flag(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self.generic_visit(node)
        sides = (node.left, node.right)
        if any(map(self.is_on_device, sides)) and any(
            self.is_cpu_tensor(s) and not self.is_on_device(s) for s in sides
        ):
            self._flag(node)


def cpu_tensors_meeting_models(notebook: Path) -> list[Finding]:
    """Where ``notebook`` feeds a CPU-made tensor to a model that may be on CUDA."""
    scan = DeviceScan()
    for cell, source in code_cells(notebook):
        scan.scan(cell, source)
    return scan.findings


def notebook(tmp_path: Path, *cells: str) -> Path:
    """A minimal notebook file holding ``cells`` as code cells."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    path = tmp_path / "fixture.ipynb"
    nbformat.write(nb, path)
    return path


# ----------------------------------------------------------------------------- the chapters
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name[:2])
def test_no_chapter_feeds_a_cpu_tensor_to_a_model_that_may_be_on_cuda(chapter):
    found = cpu_tensors_meeting_models(chapter)
    assert not found, (
        f"{chapter.name}: a tensor made on the CPU meets a model that is on the GPU when there "
        "is one (create it with device=…, or .to(model.device)):\n"
        + "\n".join(map(str, found))
    )


# The guard, on fixture notebooks: chapter 1's cell as it was (fails), as fixed (passes), and variants.
SETUP = "import torch\nfrom bertflow_mini.chapters import mlm_probe\nmlm = mlm_probe.load_mlm(MODEL)\n"
BAD = {
    "chapter 1, cell 31, as it was": "h = torch.randn(8, mlm.config.hidden_size, generator=torch.Generator().manual_seed(0))\n"
    "with torch.no_grad():\n    _, by_hand = mlm_probe.head_by_hand(mlm, h)\n"
    "    gap = (by_hand - mlm.cls(h)).abs().max().item()",
    "inline, into a part of the model": "out = mlm.cls(torch.zeros(2, 768))",
    "a later cell, a method chain": "h = torch.randn(3, 768)",  # + the next cell
    "tokenizer output": "batch = tok(['a b'], return_tensors='pt')\nenc = load_encoder('x')\nenc.model(**batch)",
    "arithmetic with a weight": "w = mlm.get_input_embeddings().weight\ny = torch.ones(768) @ w.T",
    "a fitted flow": "fit = fit_flow(X)\nz = fit.flow(torch.from_numpy(X))",
}
GOOD = {
    "chapter 1, cell 31, fixed": "h = torch.randn(\n    8, mlm.config.hidden_size, generator=torch.Generator().manual_seed(0)\n"
    ").to(mlm.device)\nwith torch.no_grad():\n    _, by_hand = mlm_probe.head_by_hand(mlm, h)\n"
    "    gap = (by_hand - mlm.cls(h)).abs().max().item()",
    "device= given": "out = mlm.cls(torch.zeros(2, 768, device=mlm.device))",
    "tokenizer output moved": "enc = load_encoder('x')\nbatch = enc.tokenizer(['a'], return_tensors='pt').to(enc.device)\n"
    "enc.model(**batch)",
    "a CPU module of the cell's own": "ln = torch.nn.LayerNorm(8)\ny = ln(torch.randn(10, 8) * 3 + 1)",
    "the model's output brought back": "v = mlm.cls(h2).cpu().numpy()\nw = torch.from_numpy(v) + 1",
    "rebound to a device tensor": "h = torch.randn(3, 768)\nh = h.to(mlm.device)\nmlm.cls(h)",
}


@pytest.mark.parametrize("case", BAD)
def test_the_guard_finds_a_cpu_tensor_meeting_a_model(case, tmp_path):
    cells = [SETUP, BAD[case]] + (
        ["mlm.cls(h.double())"] if "later cell" in case else []
    )
    found = cpu_tensors_meeting_models(notebook(tmp_path, *cells))
    assert found and all(f.cell == len(cells) - 1 for f in found), found


@pytest.mark.parametrize("case", GOOD)
def test_the_guard_passes_tensors_on_the_models_device_and_cpu_only_work(
    case, tmp_path
):
    assert (
        cpu_tensors_meeting_models(
            notebook(
                tmp_path, SETUP, "h2 = torch.zeros(1, device=mlm.device)", GOOD[case]
            )
        )
        == []
    )


def test_the_guard_reads_cells_with_magics_and_reports_where(tmp_path):
    path = notebook(
        tmp_path,
        "%matplotlib inline\n" + SETUP,
        "x = 1\n\nmlm(torch.tensor([[101, 102]]))",
    )
    (finding,) = cpu_tensors_meeting_models(path)
    assert (finding.cell, finding.line, finding.code) == (
        1,
        3,
        "mlm(torch.tensor([[101, 102]]))",
    )


# ----------------------------------------------------------------------------- the package's helpers
#: What a function that made its tensors on the model's device raises on ``meta``: it got as far as
#: reading a result back. A device error means a CPU tensor met the meta model.
REACHED_THE_END = re.compile(
    r"Cannot copy out of meta tensor|item\(\) cannot be called on meta tensors|"
    r"can't convert meta device type tensor to numpy"
)
DEVICE_ERROR = re.compile(r"device", re.IGNORECASE)


def on_meta(call) -> str:
    """Run ``call()`` (which puts a model on ``meta``); returns how it ended, failing on a device error."""
    try:
        call()
    except (RuntimeError, NotImplementedError, TypeError) as err:
        message = str(err)
        if REACHED_THE_END.search(message):
            return "reached the end"
        assert not DEVICE_ERROR.search(message), (
            f"a CPU tensor met the meta model: {message[:300]}"
        )
        raise
    return "ran through"


def _coupling(kind: str):
    from bertflow_mini.chapters.flow_toys import randomize
    from bertflow_mini.postprocess.flow import AdditiveCoupling, AffineCoupling

    return randomize({"additive": AdditiveCoupling, "affine": AffineCoupling}[kind](2))


@pytest.mark.parametrize("kind", ["additive", "affine"])
def test_flow_toys_make_their_tensors_on_the_blocks_device(kind):
    from bertflow_mini.chapters import flow_toys as ft

    x = ft.make_moons(64)
    assert (
        on_meta(lambda: ft.plot_before_after(_coupling(kind).to("meta"), x, "block"))
        == "reached the end"
    )
    assert on_meta(lambda: ft.excite_coupling(_coupling(kind).to("meta"), x)) in (
        "reached the end",
        "ran through",
    )
    assert (
        on_meta(lambda: ft.check_block(_coupling(kind).to("meta"), torch.randn(3, 2)))
        == "reached the end"
    )
    assert (
        on_meta(lambda: ft.latent(_coupling(kind).to("meta"), x)) == "reached the end"
    )
    assert on_meta(lambda: ft.randomize(_coupling(kind).to("meta"))) == "ran through"


def test_the_meta_check_fails_a_helper_that_makes_its_input_on_the_cpu():
    from bertflow_mini.chapters import flow_toys as ft

    def plot_as_it_was(block, x):  # flow_toys.plot_before_after before the fix
        with torch.no_grad():
            return block.float().eval()(torch.from_numpy(x))[0].numpy()

    with pytest.raises(AssertionError, match="a CPU tensor met the meta model"):
        on_meta(
            lambda: plot_as_it_was(_coupling("affine").to("meta"), ft.make_moons(8))
        )


def _contexts():
    from bertflow_mini.chapters import mlm_probe

    rng = np.random.default_rng(0)
    seqs = [np.array([1, *rng.integers(5, 50, 6), 2]) for _ in range(30)]
    return seqs, mlm_probe.frequent_contexts(seqs, 50, n_contexts=4)


def test_mlm_probe_makes_its_tensors_on_the_models_device():
    from bertflow_mini.chapters import mlm_probe

    seqs, contexts = _contexts()
    model = tiny_mlm(vocab=50).to("meta")
    kwargs = {"mask_id": 3, "pad_id": 0, "special_ids": [0, 1, 2, 3], "per_context": 2}
    assert (
        on_meta(lambda: mlm_probe.context_logits(model, seqs, contexts, **kwargs))
        == "reached the end"
    )
    assert on_meta(lambda: mlm_probe.output_bias(model)) == "reached the end"
    hidden = torch.zeros(2, 16, device="meta")
    assert on_meta(lambda: mlm_probe.head_by_hand(model, hidden)) == "ran through"


@pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="no GPU here: the meta-device checks above stand in",
)
def test_on_cuda_the_helpers_give_the_cpus_numbers():
    from bertflow_mini.chapters import flow_toys as ft
    from bertflow_mini.chapters import mlm_probe

    x = ft.make_moons(64)
    for kind in ("additive", "affine"):
        cpu = ft.latent(ft.excite_coupling(_coupling(kind), x), x)
        gpu = ft.latent(ft.excite_coupling(_coupling(kind).cuda(), x), x)
        np.testing.assert_allclose(gpu, cpu, atol=1e-5)
        ft.plot_before_after(_coupling(kind).cuda(), x, kind)
        assert (
            max(ft.check_block(_coupling(kind).cuda(), torch.randn(3, 2)).values())
            < 1e-8
        )
    seqs, contexts = _contexts()
    kwargs = {"mask_id": 3, "pad_id": 0, "special_ids": [0, 1, 2, 3], "per_context": 2}
    cpu = mlm_probe.context_logits(
        tiny_mlm(vocab=50), seqs, contexts, **kwargs
    ).mean_logits
    gpu = mlm_probe.context_logits(
        tiny_mlm(vocab=50).cuda(), seqs, contexts, **kwargs
    ).mean_logits
    np.testing.assert_allclose(gpu, cpu, atol=1e-4)
