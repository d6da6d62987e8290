"""MyST → plain Markdown (bookbuild.myst_markdown), checked against independent
renderings: markdown-it (the CommonMark reference parser) for what Jupyter makes of the output, the
HTML ids Sphinx gave the book's glossary terms, and myst-nb's own formatting of glued values."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from bookbuild.editions import load_glossary, load_references
from bookbuild.myst_markdown import (
    BookSite,
    Page,
    Reference,
    expand_macros,
    glossary_anchor,
    to_markdown,
)

BASE = "https://example.org/book/"
REFS = {
    "li2020": Reference("Li et al.", "2020", "Li, B. (2020). Flow.", None),
    "su2021": Reference(
        "Su et al.", "2021", "Su (2021). W.", "https://arxiv.org/abs/1"
    ),
}


def site() -> BookSite:
    return BookSite(
        baseurl=BASE,
        repository="https://github.com/o/r",
        tag="v9.9",
        terms={"pooling": "Pooling", "wmean / all": "wmean / all"},
        references=REFS,
        titles={"book/measurements": "Measurements behind the book"},
        macros={"R": r"\mathbb{R}"},
    )


def convert(text: str, student: bool = False, glued: dict | None = None) -> str:
    return to_markdown(text, site(), Page("book/03-x", glued or {}, student=student))


def html(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def test_glossary_anchors_are_the_ids_sphinx_gave_the_book_terms():
    # ids read from the built book's glossary.html (Sphinx 7.4)
    assert glossary_anchor("Gordan's theorem") == "term-Gordan-s-theorem"
    assert glossary_anchor("wmean / all") == "term-wmean-all"
    assert glossary_anchor("AUC (area under the ROC curve)") == (
        "term-AUC-area-under-the-ROC-curve"
    )


def test_terms_cite_doc_and_links_become_links_into_the_rendered_book():
    out = convert(
        "a {term}`pooling <Pooling>` and {term}`wmean / all`, as {cite:t}`li2020` and "
        "others {cite:p}`li2020,su2021` say; see {doc}`measurements`, [Chapter 2]"
        "(02-y.ipynb#sec) and ![fig](../_static/a.png)."
    )
    assert "{" not in out
    assert f"[pooling]({BASE}book/glossary.html#term-Pooling)" in out
    assert f"[wmean / all]({BASE}book/glossary.html#term-wmean-all)" in out
    assert f"[Li et al. (2020)]({BASE}book/bibliography.html)" in out
    assert (
        "([Li et al., 2020]" in out
        and "[Su et al., 2021](https://arxiv.org/abs/1))" in out
    )
    assert f"[Measurements behind the book]({BASE}book/measurements.html)" in out
    assert f"[Chapter 2]({BASE}book/02-y.html#sec)" in out
    assert "![fig](https://github.com/o/r/raw/v9.9/_static/a.png)" in out


def test_a_dropdown_is_a_details_block_whose_markdown_and_math_still_render():
    out = convert(
        "Text.\n\n````{dropdown} Deeper: why $x$\n:open:\nA *claim*, $a^2$:\n\n"
        "$$\nb = 1\n$$\n\n```python\nx = {term}`not a role in code`\n```\n````\nAfter."
    )
    rendered = html(out)
    assert "<details open><summary>Deeper: why $x$</summary>" in rendered
    assert "<p>A <em>claim</em>, $a^2$:</p>" in rendered  # markdown inside the block
    assert "$$\nb = 1\n$$" in out
    assert "x = {term}`not a role in code`" in out  # code blocks stay verbatim
    assert rendered.index("</details>") > rendered.index("<code")
    assert "<p>After.</p>" in rendered


def test_a_dropdown_title_has_its_inline_markdown_as_html():
    # a Markdown renderer leaves a raw HTML line alone: `code` and *emphasis* there stay literal
    rendered = html(
        convert("```{dropdown} Deeper: `scratch-bert`'s *own* <cone>\nText.\n```")
    )
    summary = re.search(r"<summary>(.*)</summary>", rendered).group(1)
    assert summary == "Deeper: <code>scratch-bert</code>'s <i>own</i> <cone>"
    assert "`" not in summary and "*" not in summary


def test_admonitions_are_blockquotes_with_a_bold_title_and_rendered_content():
    rendered = html(
        convert(
            "```{admonition} What the paper reports\n:class: tip\n**Ours**: $x$.\n```\n"
            "```{note}\nPlain.\n```"
        )
    )
    assert rendered.count("<blockquote>") == 2
    assert "<p><strong>What the paper reports</strong></p>" in rendered
    assert "<p><strong>Ours</strong>: $x$.</p>" in rendered
    assert "<p><strong>Note</strong></p>" in rendered and ":class:" not in rendered


def test_glued_values_are_formatted_as_myst_nb_does():
    glued = {"rho": "-0.4712", "word": "'closer'", "n": "1379"}
    out = convert(
        "ρ = {glue:text}`rho:+.2f`, {glue:text}`word`, {glue:text}`n:,`", glued=glued
    )
    assert out == "ρ = -0.47, closer, 1,379"
    with pytest.raises(ValueError, match="`missing` has no stored value"):
        convert("{glue:text}`missing:.1f`")


def test_the_student_edition_drops_solutions_and_keeps_hints():
    text = (
        "**1 (code).** Do it.\n\n```{dropdown} Solution\nThe answer is 42.\n```\n\n"
        "```{dropdown} Hints\nThink of 6 × 7.\n```\n\n:::{solution}\nAlso 42.\n:::\n"
        "```{admonition} Solution, in short\n:class: dropdown\nStill 42.\n```\n"
    )
    student, colab = convert(text, student=True), convert(text)
    assert "42" not in student and "6 × 7" in student and "**1 (code).**" in student
    assert "The answer is 42." in colab and "Also 42." in colab
    assert "<summary>Solution, in short</summary>" in colab


def test_html_only_residue_goes_and_the_bibliography_lists_what_was_cited():
    page = Page("book/03-x", {})
    body = to_markdown(
        "(sec-a)=\n% a MyST comment\n## A\n{cite:p}`su2021`", site(), page
    )
    assert body == "## A\n([Su et al., 2021](https://arxiv.org/abs/1))"
    refs = to_markdown(
        "```{bibliography}\n:filter: docname in docnames\n```", site(), page
    )
    assert refs == "- Su (2021). W. [https://arxiv.org/abs/1](https://arxiv.org/abs/1)"


def test_an_unknown_role_or_directive_or_term_stops_with_its_name():
    with pytest.raises(ValueError, match=r"role \{numref\}"):
        convert("{numref}`fig-1`")
    with pytest.raises(ValueError, match=r"directive \{figure\}"):
        convert("```{figure} a.png\n```")
    with pytest.raises(ValueError, match="names no entry"):
        convert("{term}`Nonsense`")
    with pytest.raises(ValueError, match="not in references.bib"):
        convert("{cite:p}`nobody2000`")


def test_macros_of_the_books_mathjax_are_expanded():
    assert expand_macros(r"$x \in \R^d$, $\Re$", {"R": r"\mathbb{R}"}) == (
        r"$x \in \mathbb{R}^d$, $\Re$"
    )


def test_the_glossary_and_the_bibliography_are_read_as_the_book_builds_them(tmp_path):
    (tmp_path / "g.md").write_text(
        "# G\n\n```{glossary}\nPooling\n  A way.\n\n`wmean` / `all`\n  Two ways.\n```\n"
    )
    assert load_glossary(tmp_path / "g.md") == {
        "pooling": "Pooling",
        "wmean / all": "wmean / all",
    }
    (tmp_path / "r.bib").write_text(
        "@article{a, title={{SimCSE}: Simple}, author={Gao, Tianyu and Yao, Xingcheng and "
        "Chen, Danqi}, journal={arXiv preprint arXiv:2104.08821}, year={2021}}\n"
        "@inproceedings{b, title={Two}, author={Reimers, Nils and Gurevych, Iryna}, "
        "booktitle={EMNLP}, year={2019}, doi={10.1/x}}\n"
    )
    refs = load_references(tmp_path / "r.bib")
    assert (refs["a"].label, refs["a"].year) == ("Gao et al.", "2021")
    assert refs["a"].url == "https://arxiv.org/abs/2104.08821"
    assert refs["a"].text.startswith(
        "Tianyu Gao, Xingcheng Yao and Danqi Chen (2021). SimCSE"
    )
    assert (refs["b"].label, refs["b"].url) == (
        "Reimers and Gurevych",
        "https://doi.org/10.1/x",
    )


def test_inline_math_wrapped_before_a_plus_stays_one_formula_not_a_list():
    out = convert(
        "so $a \\approx b\n+ c$ holds, and `$x\ny$` is code.\n\n$$\nd\n+ e\n$$"
    )
    assert "$a \\approx b + c$" in out and "`$x\ny$`" in out and "$$\nd\n+ e\n$$" in out
    assert "<li>" not in html(out.split("\n\n")[0])
