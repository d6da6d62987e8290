"""The book as readers get it: the table of contents, each notebook's hygiene, the HTML build with
warnings as errors, and the built pages opened in a real headless Chromium with no network (the
last two marked ``html``: ``make test`` runs them after the chapters' nbval check)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import directive_fences, exercise_section, tags
from IPython.core.inputtransformer2 import TransformerManager

import bertflow_mini
from bookbuild.output_check import cell_tolerance

REPO = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((REPO / "_config.yml").read_text())
TOC = yaml.safe_load((REPO / "_toc.yml").read_text())


def toc_files() -> list[str]:
    files = [TOC["root"]]
    for part in TOC.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    files += [c["file"] for c in TOC.get("chapters", [])]
    return files


CHAPTERS = sorted(REPO.glob("book/[0-9][0-9]-*.ipynb"))


def load_nb(path: Path) -> dict:
    return json.loads(path.read_text())


def markdown_of(path: Path) -> str:
    """Every markdown cell of a notebook (the text of a page that is not one)."""
    if not path.exists():
        return path.with_suffix(".md").read_text("utf-8")
    return "\n".join(
        source(c) for c in load_nb(path)["cells"] if c["cell_type"] == "markdown"
    )


def source(cell: dict) -> str:
    return "".join(cell["source"])


# ----------------------------------------------------------------------------- structure
def test_toc_and_book_folder_agree():
    listed = toc_files()
    for f in listed:
        assert any((REPO / f).with_suffix(s).exists() for s in (".md", ".ipynb")), (
            f"{f} in _toc.yml does not exist"
        )
    for nb in CHAPTERS:
        assert str(nb.relative_to(REPO).with_suffix("")) in listed, (
            f"{nb.name} is not in _toc.yml"
        )


@pytest.mark.parametrize("nb_path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_hygiene(nb_path):
    nb = load_nb(nb_path)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    text = "\n".join(source(c) for c in nb["cells"])
    # committed with outputs, executed top to bottom in one clean run, no errors
    counts = [c["execution_count"] for c in code]
    assert all(isinstance(n, int) for n in counts), (
        f"{nb_path.name}: unexecuted code cells"
    )
    assert counts == list(range(1, len(code) + 1)), (
        f"{nb_path.name}: not run top to bottom in one kernel"
    )
    assert not [
        o for c in code for o in c.get("outputs", []) if o["output_type"] == "error"
    ]
    assert any(
        o.get("output_type") in ("display_data", "execute_result")
        and "image/png" in o.get("data", {})
        for c in code
        for o in c.get("outputs", [])
    ), f"{nb_path.name}: no figure"
    # first code cell installs the package only in Colab, from the repository named in _config.yml
    first = source(code[0])
    assert "google.colab" in first and CONFIG["repository"]["url"] in first, (
        f"{nb_path.name}: Colab set-up cell"
    )
    # the set-up binds the chapter (its claims and self-checks run on its model) and its model
    assert re.search(r"^ch = bf\.setup\(", first, re.M) and re.search(
        r"^MODEL = ch\.model$", first, re.M
    ), f"{nb_path.name}: no `ch = bf.setup(…)` and `MODEL = ch.model` in the set-up"
    # checked cells: nbval compares them with a fresh run (book/conftest.py). The tag and the
    # tolerance live in the cell's metadata: a reader sees no test machinery in the code
    # (cell_tolerance raises on a marker left in a source, or a tolerance without the tag).
    assert any(cell_tolerance(c) is not None for c in code), (
        f"{nb_path.name}: no cell tagged nbval-check-output"
    )
    assert "NBVAL" not in text and "# tolerance" not in text, (
        f"{nb_path.name}: test markers in a cell's source"
    )
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    # code fits the page (88 columns, `ruff format book/`); the browser check sees no sideways scrolling
    wide = [line for c in code for line in source(c).splitlines() if len(line) > 88]
    assert not wide, (
        f"{nb_path.name}: {len(wide)} code lines over 88 columns, e.g. {wide[0]!r}"
    )
    # exercises whose solutions the student edition can find and remove (bertflow_mini.chapters.
    # colab_edition): each exercise answered in a block titled "Solution" (or given "Hints"), and
    # every code cell of the section a hidden solution or check (a visible one would reach students)
    exercises = exercise_section(nb)
    assert exercises is not None, f"{nb_path.name}: no Exercises section"
    numbers = re.findall(r"^\*\*(\d+)\b", exercises["text"], re.M)
    assert len(numbers) >= 3, f"{nb_path.name}: fewer than 3 exercises"
    for number, block in zip(
        numbers, re.split(r"^\*\*\d+\b", exercises["text"], flags=re.M)[1:]
    ):
        titles = [i.split("}", 1)[1].strip() for i, _ in directive_fences(block)]
        assert any(re.match(r"(Solution|Hints)\b", t) for t in titles), (
            f"{nb_path.name}: exercise {number} has no Solution (or Hints) dropdown"
        )
    visible = [
        c for c in exercises["code"] if not {"hide-cell", "remove-cell"} & tags(c)
    ]
    assert not visible, f"{nb_path.name}: a visible code cell among the exercises"


@pytest.mark.parametrize(
    "nb_path", sorted(REPO.glob("book/*.ipynb")), ids=lambda p: p.name
)
def test_a_page_reaches_the_package_through_bf_names_only(nb_path):
    """One public surface: ``import bertflow_mini as bf`` and ``bf.NAME`` (or ``bf.MODULE.NAME``),
    never a deep import, and every ``bf.NAME`` a page uses is one the package gives."""
    used, deep, as_ipython_runs = set(), [], TransformerManager()
    for cell in load_nb(nb_path)["cells"]:
        if cell["cell_type"] != "code":
            continue
        # as IPython runs it: a magic (%pip) becomes a get_ipython() call
        code = as_ipython_runs.transform_cell(source(cell))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "bertflow_mini"
            ):
                deep.append(node.module)
            elif isinstance(node, ast.Import):
                deep += [
                    a.name
                    for a in node.names
                    if a.name.startswith("bertflow_mini")
                    and (a.name, a.asname) != ("bertflow_mini", "bf")
                ]
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "bf"
            ):
                used.add(node.attr)
    assert not deep, f"{nb_path.name}: deep imports {deep}"
    missing = sorted(n for n in used if not hasattr(bertflow_mini, n))
    assert not missing, f"{nb_path.name}: bf has no {missing}"


# ----------------------------------------------------------------------------- HTML build
@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    """Build the HTML book from the committed outputs, with warnings as errors."""
    out = tmp_path_factory.mktemp("book")
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run(
        [
            str(jb),
            "build",
            str(REPO),
            "--path-output",
            str(out),
            "--warningiserror",
            "--keep-going",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    html = out / "_build" / "html"
    assert (html / "index.html").exists()
    return html


@pytest.mark.html
def test_html_serves_its_own_mathjax_and_links_no_cdn_script(built_book):
    assert (built_book / "_static" / "mathjax" / "tex-chtml.js").exists()
    for page in built_book.rglob("*.html"):
        for src in re.findall(r'<script[^>]+src="([^"]+)"', page.read_text()):
            assert not src.startswith(("http:", "https:", "//")), (
                f"{page.name} loads a script from {src}"
            )


@pytest.mark.html
def test_the_colab_editions_links_into_the_book_reach_its_pages_and_terms(built_book):
    """The editions link glossary terms and pages by the ids Sphinx gave them: each one exists."""
    base = CONFIG["html"]["baseurl"]
    link = re.compile(rf"\]\({re.escape(base)}([^)#\s]+)(?:#([^)\s]+))?\)")
    pages = {}
    for nb_path in sorted((REPO / "book" / "colab").glob("*.ipynb")):
        cells = load_nb(nb_path)["cells"]
        text = "\n".join(source(c) for c in cells if c["cell_type"] == "markdown")
        for path, fragment in link.findall(text):
            if path not in pages:
                page = built_book / path
                assert page.exists(), f"{nb_path.name} links to {path}, not in the book"
                pages[path] = page.read_text()
            assert not fragment or f'id="{fragment}"' in pages[path], (
                f"{nb_path.name}: {path} has no #{fragment}"
            )
    assert "book/glossary.html" in pages


@pytest.mark.html
def test_colab_launch_buttons_open_the_colab_editions(built_book):
    """A chapter's rocket button opens its generated Colab edition at the pinned release (a file
    the repository has), never the MyST source; the teachers' page, with no edition, has none."""
    repo = CONFIG["repository"]["url"].removeprefix("https://github.com/")
    launch = re.compile(r'class="dropdown dropdown-launch-buttons">(.*?)</ul>', re.S)
    colab = re.compile(r'href="(https://colab\.research\.google\.com/[^"]+)"')
    for nb_path in CHAPTERS + [REPO / "book" / "measurements.ipynb"]:
        page = (built_book / "book" / nb_path.name).with_suffix(".html").read_text()
        (buttons,) = launch.findall(page)
        (url,) = colab.findall(buttons)
        prefix = f"https://colab.research.google.com/github/{repo}/blob/"
        tag, path = url.removeprefix(prefix).split("/", 1)
        assert tag == f"v{bertflow_mini.__version__}"
        assert path == f"book/colab/{nb_path.name}" and (REPO / path).exists(), url
    teaching = (built_book / "book" / "teaching.html").read_text()
    assert not colab.findall("".join(launch.findall(teaching)))


# ----------------------------------------------------------------------------- browser
def requested_urls(driver) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


PAGES = [f for f in toc_files() if (REPO / f).with_suffix(".ipynb").exists()] or [
    "book/glossary"
]


@pytest.mark.html
@pytest.mark.browser
@pytest.mark.parametrize("page", PAGES)
def test_page_renders_offline_in_chromium(browser, built_book, page):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get_log("performance")  # drop earlier pages' requests
    browser.get((built_book / f"{page}.html").as_uri())
    # a page with TeX in its prose loads MathJax; a page without any does not
    has_tex = "$" in markdown_of(REPO / f"{page}.ipynb")
    if has_tex:
        # MathJax typesets asynchronously; wait until it has finished (or give up after 30 s)
        WebDriverWait(browser, 30).until(
            lambda d: d.execute_script(
                "return !!(window.MathJax && MathJax.startup && MathJax.startup.promise)"
            )
        )
        browser.execute_async_script(
            "const done = arguments[0]; MathJax.startup.promise.then(() => done(true));"
        )
    title = browser.execute_script(
        "return (document.querySelector('article h1') || {}).textContent || ''"
    )
    assert len(title.strip()) > 3 and browser.title.startswith(
        title.strip().rstrip("#").strip()[:10]
    )
    if has_tex:
        n_math = browser.execute_script(
            "return document.querySelectorAll('mjx-container').length"
        )
        n_err = browser.execute_script(
            "return document.querySelectorAll('mjx-merror, .MathJax_Error').length"
        )
        assert n_math > 0 and n_err == 0, (
            f"{page}: {n_math} equations rendered, {n_err} MathJax errors"
        )
        # every formula typeset: no TeX delimiter left in the prose, as a "$$" inside a list item or
        # a line of a formula that starts with "+ " (read as a list) leaves it
        untypeset = browser.execute_script(
            "const walk = document.createTreeWalker(document.querySelector('article'), NodeFilter.SHOW_TEXT);"
            "const found = []; let node;"
            "while ((node = walk.nextNode())) {"
            "  if (node.parentElement.closest('pre, code, .cell_output, mjx-container, script')) continue;"
            "  if (/\\$|\\\\[()\\[\\]]/.test(node.textContent)) found.push(node.textContent.trim().slice(0, 80));"
            "}"
            "return found;"
        )
        assert not untypeset, f"{page}: TeX left untypeset: {untypeset[:3]}"
        # MathJax's own web fonts came from the book, not a CDN
        fonts = browser.execute_script(
            "return [...document.fonts].filter(f => f.family.includes('MJX') && f.status === 'loaded').length"
        )
        assert fonts > 0, f"{page}: MathJax fonts did not load"
    if page != "book/glossary":
        images = browser.execute_script(
            "return [...document.querySelectorAll('main img')].map(i => i.complete && i.naturalWidth > 0)"
        )
        assert all(images), f"{page}: {images.count(False)} images did not render"
        # every chapter draws figures; a planning page may have none
        assert images or not re.match(r"book/\d\d-", page), f"{page}: no image"
        errors = browser.execute_script(
            "return document.querySelectorAll('.cell_output .output.error, .cell_output .output.traceback').length"
        )
        assert errors == 0, f"{page}: {errors} error outputs"
        # at a 1280-px window every line of chapter code is visible without a horizontal scroll bar
        scrolling = browser.execute_script(
            "return [...document.querySelectorAll('.cell_input pre')]"
            ".filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent.slice(0, 60))"
        )
        assert not scrolling, (
            f"{page}: {len(scrolling)} code blocks scroll sideways, e.g. {scrolling[0]!r}"
        )
    external = [
        u
        for u in requested_urls(browser)
        if not u.startswith(("file:", "data:", "blob:", "about:"))
    ]
    assert not external, f"{page} asked the network for {external[:5]}"
