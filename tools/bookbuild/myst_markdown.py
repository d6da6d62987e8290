"""MyST Markdown as plain Markdown: what a chapter's text becomes in its Colab edition.

Colab and Jupyter render CommonMark with ``$``/``$$`` math and raw HTML, and know nothing of MyST.
So each role and directive the chapters use is rewritten as what it means on the rendered page:
``{term}`` a link into the glossary, ``{cite:p}``/``{cite:t}`` author–year links, ``{doc}`` and
relative links the book's pages, ``{glue:text}`` the book's model's value marked as such,
``{dropdown}`` a ``<details>`` block, admonitions an HTML blockquote with a bold title (Markdown and
math inside both still render: the HTML stands on lines of its own with blank lines around the
body), ``{bibliography}`` the works the page cited. A role or directive not listed here raises
``ValueError`` naming it, so a new one in a chapter is taught here rather than shown raw.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

ROLE = re.compile(r"\{([a-zA-Z][\w:+-]*)\}`([^`]+)`")
FENCE = re.compile(r"^( {0,3})(`{3,}|:{3,})\s*(.*?)\s*$")
DIRECTIVE = re.compile(r"^\{([\w:-]+)\}\s*(.*)$")
OPTION = re.compile(r"^:([\w-]+):\s*(.*)$")
TARGET = re.compile(r"^\s*\([^()\s]+\)=\s*$")
MYST_COMMENT = re.compile(r"^%")
#: Inline math (not ``$$``, not an escaped ``\$``), and code spans, which it must skip.
INLINE_MATH = re.compile(r"`[^`]*`|(?<![\\$])\$(?!\$)[^$]+?(?<![\\$])\$(?!\$)")
LINK = re.compile(r"(!?\[[^\]]*\])\(([^()\s]+)\)")
SOLUTION_TITLE = re.compile(r"^(solution|answer)s?\b", re.I)
ADMONITIONS = {
    "note": "Note",
    "tip": "Tip",
    "hint": "Hint",
    "important": "Important",
    "warning": "Warning",
    "caution": "Caution",
    "attention": "Attention",
    "danger": "Danger",
    "error": "Error",
    "seealso": "See also",
}
#: Directives that exist only for the HTML build: dropped from the Colab edition.
HTML_ONLY = {"eval-rst", "glue:figure", "glue", "glue:any", "tableofcontents"}


@dataclass(frozen=True)
class Reference:
    """One work of ``references.bib`` as the editions cite it."""

    label: str  # the authors as an author-year citation names them: "Li et al."
    year: str
    text: str  # the whole entry on one line: authors, year, title, venue
    url: str | None  # its DOI, URL or arXiv page, where the entry gives one


@dataclass(frozen=True)
class BookSite:
    """The rendered book a Colab edition links into: its address, glossary and bibliography."""

    baseurl: str  # the rendered book's address, ending in "/"
    repository: str  # the repository's URL
    tag: str  # the release the editions install and link to
    terms: dict[str, str]  # the glossary's terms, by their lower-case spelling
    references: dict[str, Reference]  # references.bib, by key
    titles: dict[str, str]  # each page's title, by docname ("book/measurements")
    macros: dict[str, str] = field(
        default_factory=dict
    )  # MathJax macros of _config.yml

    def colab(self, name: str, edition: str) -> str:
        """Where the ``edition`` ("colab" or "student") of notebook ``name`` opens in Colab, at
        the release the editions install."""
        repository = self.repository.removeprefix("https://github.com/")
        return (
            f"https://colab.research.google.com/github/{repository}/blob/{self.tag}"
            f"/book/{edition}/{name}"
        )

    def page(self, docname: str, fragment: str = "") -> str:
        """The rendered page of ``docname`` (a path under the book without suffix)."""
        return f"{self.baseurl}{docname}.html" + (f"#{fragment}" if fragment else "")

    def glossary_link(self, term: str) -> str:
        """The glossary entry of ``term``, matched without regard to case as Sphinx does."""
        entry = self.terms.get(" ".join(term.split()).lower())
        if entry is None:
            raise ValueError(f"{{term}}`{term}` names no entry of book/glossary.md")
        return self.page("book/glossary", glossary_anchor(entry))


@dataclass
class Page:
    """The page being converted: its docname, its glued values, what it has cited so far."""

    docname: str
    glued: dict[
        str, str
    ]  # glue name -> the value's text/plain, as the chapter stored it
    student: bool = False  # the student edition: solutions left out
    cited: list[str] = field(default_factory=list)


def closing_fence(lines: list[str], start: int, fence: str) -> int:
    """The index of the line that closes the fence ``fence`` opened on line ``start`` (a run of
    at least as many of its character), or ``len(lines)`` when none does."""
    closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    j = start + 1
    while j < len(lines) and not closing.match(lines[j]):
        j += 1
    return j


def glossary_anchor(term: str) -> str:
    """The HTML id Sphinx gives a glossary term (``sphinx.util.nodes.make_id`` with "term")."""
    text = unicodedata.normalize("NFKD", f"term-{term}")
    text = re.sub(
        r"[^a-zA-Z0-9._]+",
        "-",
        " ".join(text.encode("ascii", "ignore").decode().split()),
    )
    return re.sub(r"^[-0-9._]+|-+$", "", text)


def glue_text(page: Page, spec: str) -> str:
    """The text a ``{glue:text}`key:format``` role shows, formatted as myst-nb formats it."""
    from myst_nb.core.variables import format_plain_text

    key, _, fmt = spec.partition(":")
    if key not in page.glued:
        raise ValueError(
            f"{page.docname}: {{glue}} `{key}` has no stored value (glued in no cell output: "
            "execute the chapter before generating its editions)"
        )
    return format_plain_text(page.glued[key], fmt or "s")


def _target(content: str) -> tuple[str, str]:
    """A role's ``text <target>`` split into (text, target); a bare target is its own text."""
    m = re.fullmatch(r"(.*?)\s*<([^<>]+)>", " ".join(content.split()), re.S)
    return (m.group(1), m.group(2)) if m else (" ".join(content.split()),) * 2


def _cite(site: BookSite, page: Page, keys: str, textual: bool) -> str:
    links = []
    for key in (k.strip() for k in keys.split(",")):
        ref = site.references.get(key)
        if ref is None:
            raise ValueError(
                f"{page.docname}: cited key {key!r} is not in references.bib"
            )
        if key not in page.cited:
            page.cited.append(key)
        url = ref.url or site.page("book/bibliography")
        text = f"{ref.label} ({ref.year})" if textual else f"{ref.label}, {ref.year}"
        links.append(f"[{text}]({url})")
    return "; ".join(links) if textual else f"({'; '.join(links)})"


def _doc(site: BookSite, page: Page, content: str) -> str:
    text, target = _target(content)
    base = PurePosixPath(page.docname).parent
    docname = target.lstrip("/") if target.startswith("/") else str(base / target)
    if docname not in site.titles:
        raise ValueError(
            f"{page.docname}: {{doc}}`{content}` names no page of the book"
        )
    label = site.titles[docname] if text == target else text
    return f"[{label}]({site.page(docname)})"


def _role(site: BookSite, page: Page, name: str, content: str) -> str:
    if name == "term":
        text, target = _target(content)
        return f"[{text}]({site.glossary_link(target)})"
    if name in ("cite", "cite:p", "cite:t"):
        return _cite(site, page, content, textual=name == "cite:t")
    if name == "doc":
        return _doc(site, page, content)
    if name in ("glue:text", "glue:", "glue"):
        return glue_text(page, content.strip())
    if name == "math":
        return f"${content}$"
    raise ValueError(
        f"{page.docname}: the MyST role {{{name}}} has no Colab form yet "
        "(teach bookbuild.myst_markdown)"
    )


def _link(site: BookSite, page: Page, m: re.Match) -> str:
    """A relative link to another page becomes a link to its rendered page; to a file, the file
    at the release on the repository; absolute and in-page links stay as they are."""
    label, href = m.group(1), m.group(2)
    if re.match(r"^[a-z][a-z+.-]*:|^#", href):
        return m.group(0)
    path, _, fragment = href.partition("#")
    resolved = PurePosixPath(page.docname).parent / path
    parts: list[str] = []
    for part in resolved.parts:  # "book/../_static/x.png" -> "_static/x.png"
        if part == "..":
            parts.pop()
        elif part != ".":
            parts.append(part)
    target = "/".join(parts)
    if target.endswith((".ipynb", ".md")):
        url = site.page(target.rsplit(".", 1)[0], fragment)
    else:
        url = f"{site.repository}/raw/{site.tag}/{target}"
    return f"{label}({url})"


def _one_line_math(text: str) -> str:
    """Inline ``$…$`` math on one line: a formula wrapped before "+ x" or "- x" would start a
    list in a renderer that parses Markdown before math (nbconvert's; MyST parses math first)."""
    return INLINE_MATH.sub(
        lambda m: m.group(0) if m.group(0)[0] == "`" else m.group(0).replace("\n", " "),
        text,
    )


def _inline(text: str, site: BookSite, page: Page) -> str:
    text = _one_line_math(text)
    text = ROLE.sub(lambda m: _role(site, page, m.group(1), m.group(2)), text)
    return LINK.sub(lambda m: _link(site, page, m), text)


def _html_inline(text: str) -> str:
    """Markdown's inline code and emphasis as HTML: inside a raw HTML line such as ``<summary>``,
    Jupyter and Colab render no Markdown (math is left to MathJax, which reads the whole page)."""
    text = re.sub(
        r"`([^`]+)`", lambda m: f"<code>{html.escape(m.group(1))}</code>", text
    )
    text = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", text)
    return re.sub(r"(?<![*\w])\*([^*\s][^*]*)\*(?![*\w])", r"<i>\1</i>", text)


def _options(body: list[str]) -> tuple[dict[str, str], list[str]]:
    """A directive's leading ``:name: value`` lines, and the content after them."""
    options: dict[str, str] = {}
    i = 0
    while i < len(body) and (m := OPTION.match(body[i].strip())):
        options[m.group(1)] = m.group(2)
        i += 1
    while i < len(body) and not body[i].strip():
        i += 1
    return options, body[i:]


def _references(site: BookSite, page: Page) -> list[str]:
    """What ``{bibliography}`` shows on a chapter's page: the works it cited, by author and year."""
    refs = sorted(
        (site.references[k] for k in page.cited),
        key=lambda r: (r.label, r.year, r.text),
    )
    return [
        f"- {ref.text}" + (f" [{ref.url}]({ref.url})" if ref.url else "")
        for ref in refs
    ]


def is_solution_directive(name: str, argument: str, options: dict[str, str]) -> bool:
    """Whether a directive is a solution the student editions leave out: a ``{solution}``, or a
    collapsed block (``{dropdown}``, ``{exercise}``, an admonition of class ``dropdown``) titled
    "Solution…" or "Answer…". ``argument`` is the title after the name, ``options`` its
    ``:name: value`` lines."""
    collapsed = "dropdown" in options.get("class", "").split()
    if name == "solution":
        return True
    if name not in ("dropdown", "exercise") and not collapsed:
        return False
    title = argument or ADMONITIONS.get(name, name.capitalize())
    return bool(SOLUTION_TITLE.match(title))


def _directive(
    name: str, argument: str, body: list[str], site: BookSite, page: Page
) -> list[str]:
    options, content = _options(body)
    convert: Callable[[list[str]], list[str]] = lambda lines: _blocks(lines, site, page)  # noqa: E731
    if name in HTML_ONLY:
        return []
    collapsed = (
        "dropdown" in options.get("class", "").split()
    )  # an admonition as a dropdown
    if name in ("dropdown", "solution", "exercise") or collapsed:
        title = argument or ADMONITIONS.get(name, name.capitalize())
        if page.student and is_solution_directive(name, argument, options):
            return []
        if name == "exercise":
            return ["", f"**{_inline(title, site, page)}**", "", *convert(content), ""]
        opened = " open" if "open" in options else ""
        summary = f"<details{opened}><summary>{_html_inline(_inline(title, site, page))}</summary>"
        return ["", summary, "", *convert(content), "", "</details>", ""]
    if name == "admonition" or name in ADMONITIONS:
        title = argument if name == "admonition" else ADMONITIONS[name]
        bold = f"**{_inline(title, site, page)}**"
        return [
            "",
            "<blockquote>",
            "",
            bold,
            "",
            *convert(content),
            "",
            "</blockquote>",
            "",
        ]
    if name == "math":
        return ["", "$$", *content, "$$", ""]
    if name == "bibliography":
        return ["", *_references(site, page), ""]
    raise ValueError(
        f"{page.docname}: the MyST directive {{{name}}} has no Colab form yet "
        "(teach bookbuild.myst_markdown)"
    )


def _blocks(lines: list[str], site: BookSite, page: Page) -> list[str]:
    """Convert a run of lines: fenced directives recursively, code blocks verbatim, text inline."""
    out: list[str] = []
    text: list[str] = []

    def flush() -> None:
        if text:
            out.extend(_inline("\n".join(text), site, page).split("\n"))
            text.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m is None:
            if not (TARGET.match(line) or MYST_COMMENT.match(line)):
                text.append(re.sub(r"^(\$\$)\s*\([^()\s]+\)\s*$", r"\1", line))
            i += 1
            continue
        flush()
        fence, info = m.group(2), m.group(3)
        j = closing_fence(lines, i, fence)
        directive = DIRECTIVE.match(info)
        if directive:
            out.extend(
                _directive(
                    directive.group(1), directive.group(2), lines[i + 1 : j], site, page
                )
            )
        else:
            out.extend(lines[i : j + 1])
        i = j + 1
    flush()
    return out


def expand_macros(text: str, macros: dict[str, str]) -> str:
    """Replace the book's MathJax macros (``\\R`` …), which Colab's MathJax does not define."""
    for name, value in macros.items():
        text = re.sub(rf"\\{name}(?![A-Za-z])", lambda _: value, text)
    return text


def to_markdown(text: str, site: BookSite, page: Page) -> str:
    """A markdown cell's MyST source as plain Markdown (see the module's docstring)."""
    lines = _blocks(text.split("\n"), site, page)
    joined = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
    return expand_macros(joined, site.macros)
