"""The papers' numbers in the package against the source of truth, ../shared/reference/published-results.md,
parsed here on its own (markdown tables and the quoted prose), plus the averages the file itself prints."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from bertflow_mini.evaluation.published import COLUMNS, PUBLISHED, published_table
from bertflow_mini.evaluation.reproduce import published_rows
from bertflow_mini.geometry.frequency import bucket_labels, published_table1

REFERENCE = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "reference"
    / "published-results.md"
)
NUMBER = r"\d+(?:\.\d+)?"


@pytest.fixture(scope="module")
def reference() -> str:
    from conftest import need

    need(REFERENCE)
    return REFERENCE.read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The body of the markdown section whose heading line starts with ``heading``."""
    match = re.search(
        rf"^#+ {re.escape(heading)}.*?$(.*?)(?=^#+ |\Z)", text, flags=re.M | re.S
    )
    assert match, f"no section {heading!r} in {REFERENCE.name}"
    return match.group(1)


def table_rows(body: str) -> dict[str, list[float]]:
    """``| label | 1.0 | 2.0 | … |`` rows of a markdown table → label → numbers (header rows skipped)."""
    rows = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if (
            line.startswith("|")
            and len(cells) > 1
            and all(re.fullmatch(NUMBER, c) for c in cells[1:])
        ):
            rows[cells[0]] = [float(c) for c in cells[1:]]
    return rows


def slash_list(body: str, after: str, n: int = 7) -> list[float]:
    """The ``n`` numbers of ``a / b / c …`` that follow the words ``after`` in running text."""
    match = re.search(
        re.escape(after) + r"\s+(" + NUMBER + r"(?:\s*/\s*" + NUMBER + r")*)",
        body.replace("\n", " "),
    )
    assert match, f"{after!r} not found"
    values = [float(v) for v in match.group(1).split("/")]
    assert len(values) == n, (after, values)
    return values


def reference_rows(
    text: str,
) -> dict[tuple[str, str, str, str, str], tuple[str, list[float]]]:
    """Every STS row of the reference file, keyed the way :data:`PUBLISHED` keys them.

    The mapping from the file's row labels to (paper, model, pooling, method, fit) is written out
    here by hand; the numbers and the aggregation are read from the file.
    """
    li = table_rows(section(text, "Li et al. 2020"))
    su = table_rows(section(text, "Su et al. 2021"))
    simcse = section(text, "Gao et al. 2021")
    # SBERT's rows are quoted in prose under Li et al.
    quoted = section(text, "Li et al. 2020")
    assert (
        '"all" aggregation' in quoted
        and '"all" aggregation' in text.split("## Gao et al. 2021")[1].splitlines()[0]
    )
    li_keys = {
        "bert-base, last-layer avg": ("bert-base-uncased", "last-avg", "none", "-"),
        'bert-base, "last2avg" (first + last layer, see below)': (
            "bert-base-uncased",
            "first-last-avg",
            "none",
            "-",
        ),
        "bert-base-flow (NLI)": ("bert-base-uncased", "first-last-avg", "flow", "nli"),
        "bert-base-flow (target)": (
            "bert-base-uncased",
            "first-last-avg",
            "flow",
            "target",
        ),
        "bert-large, last-layer avg": ("bert-large-uncased", "last-avg", "none", "-"),
        'bert-large, "last2avg"': ("bert-large-uncased", "first-last-avg", "none", "-"),
        "bert-large-flow (NLI)": (
            "bert-large-uncased",
            "first-last-avg",
            "flow",
            "nli",
        ),
        "bert-large-flow (target)": (
            "bert-large-uncased",
            "first-last-avg",
            "flow",
            "target",
        ),
    }
    su_keys = {
        "bert-base-whitening (target)": ("bert-base-uncased", "whitening", "target"),
        "bert-base-whitening-256 (target)": (
            "bert-base-uncased",
            "whitening-256",
            "target",
        ),
        "bert-base-whitening (NLI)": ("bert-base-uncased", "whitening", "nli"),
        "bert-large-whitening (target)": ("bert-large-uncased", "whitening", "target"),
        "bert-large-whitening-384 (target)": (
            "bert-large-uncased",
            "whitening-384",
            "target",
        ),
    }
    assert set(li) == set(li_keys) and set(su) == set(su_keys), (
        "the reference tables changed: update the mapping"
    )
    rows = {("BERT-flow", *key): ("wmean", li[label]) for label, key in li_keys.items()}
    rows.update(
        {
            ("whitening", model, "first-last-avg", method, fit): ("wmean", su[label])
            for label, (model, method, fit) in su_keys.items()
        }
    )
    rows[("SBERT", "glove-840B-300d", "avg", "none", "-")] = (
        "all",
        slash_list(quoted, "avg GloVe"),
    )
    rows[("SBERT", "bert-base-uncased", "last-avg", "none", "-")] = (
        "all",
        slash_list(quoted, "avg BERT"),
    )
    rows[("SBERT", "bert-base-uncased", "cls", "none", "-")] = (
        "all",
        slash_list(quoted, "BERT CLS"),
    )
    unsup = re.search(
        r"STS-B (\S+), SICK-R (\S+), STS12 (\S+), STS13 (\S+), STS14 (\S+), STS15 (\S+), STS16 ([\d.]+)",
        simcse,
    )
    rows[("SimCSE", "bert-base-uncased", "cls", "simcse-unsup", "-")] = (
        "all",
        [float(v) for v in unsup.groups()],
    )
    wmean = re.search(
        r'Under "wmean" \(SimCSE Table B.3\): ((?:[\d.]+ / ){6}[\d.]+)', simcse
    )
    rows[("SimCSE (Table B.3)", "bert-base-uncased", "cls", "simcse-unsup", "-")] = (
        "wmean",
        [float(v) for v in wmean.group(1).split(" / ")],
    )
    # SimCSE's Table 5 holds the NLI fits of BERT-flow and whitening, its Table C.1 the target fits
    table5, table_c1 = simcse.split("Table 5")[1].split("Table C.1")
    assert "**NLI** fits" in table5 and "**target** fits" in table_c1
    for fit, body in (("nli", table5), ("target", table_c1)):
        for method in ("flow", "whitening"):
            rows[("SimCSE", "bert-base-uncased", "first-last-avg", method, fit)] = (
                "all",
                slash_list(body, method),
            )
    return rows


def test_the_parser_reads_known_cells(reference):
    # A few cells read off the file by eye, so a parser that silently shifts columns cannot pass.
    rows = reference_rows(reference)
    assert (
        rows[("BERT-flow", "bert-base-uncased", "first-last-avg", "flow", "target")][1][
            0
        ]
        == 70.72
    )
    assert (
        rows[
            (
                "whitening",
                "bert-large-uncased",
                "first-last-avg",
                "whitening-384",
                "target",
            )
        ][1][6]
        == 75.90
    )
    assert rows[("SBERT", "bert-base-uncased", "cls", "none", "-")][1][6] == 38.03
    assert (
        rows[("SimCSE", "bert-base-uncased", "first-last-avg", "flow", "target")][1][2]
        == 53.15
    )
    assert (
        rows[("SimCSE", "bert-base-uncased", "first-last-avg", "whitening", "target")][
            1
        ][2]
        == 42.88
    )
    assert (
        rows[("SimCSE", "bert-base-uncased", "first-last-avg", "flow", "nli")][1][0]
        == 68.66
    )
    assert (
        rows[("SimCSE", "bert-base-uncased", "first-last-avg", "whitening", "nli")][1][
            6
        ]
        == 71.31
    )


def test_every_published_row_matches_the_reference_file(reference):
    want = reference_rows(reference)
    assert set(PUBLISHED) == set(want)
    # the file's column order, read from its "Columns:" line, is the package's (STS-B spelt STSB)
    listed = re.search(r"^Columns: ([^.]+)\.", reference, re.M).group(1).split(", ")
    assert tuple(c.replace("STS-B", "STSB") for c in listed) == COLUMNS
    for key, (aggregation, scores) in PUBLISHED.items():
        assert (aggregation, list(scores)) == want[key], key


def test_published_averages_match_the_averages_the_papers_print(reference):
    # The reference file prints SimCSE's own averages next to each row it quotes.
    printed = {
        ("simcse-unsup", "-"): "(average 76.25)",
        ("flow", "nli"): "(average 66.55)",
        ("whitening", "nli"): "(66.28)",
        ("flow", "target"): "(66.31)",
        ("whitening", "target"): "(64.26)",
    }
    table = published_table(paper="SimCSE").set_index(["method", "fit"])
    for key, text in printed.items():
        assert text in reference, text
        assert table.loc[key, "Avg."] == float(text.strip("()").split()[-1]), key
    b3 = published_table(paper="SimCSE (Table B.3)")
    assert (
        "(average 76.46)" in reference
        and b3["Avg."].tolist() == [76.46]
        and b3["aggregation"].tolist() == ["wmean"]
    )
    assert (
        len(published_table()) == len(PUBLISHED)
        and len(published_table(model="bert-large-uncased")) == 6
    )


def test_published_rows_select_the_model_pooling_and_tasks():
    rows = published_rows("bert-base-uncased", "first-last-avg", ["STS-B", "STS16"])
    flow = rows.loc["BERT-flow: flow (target, wmean)"]
    assert list(rows.columns) == ["STSB", "STS16", "Avg."]
    assert (flow["STSB"], flow["STS16"]) == (70.72, 75.37)
    # the average of the chosen columns only
    assert flow["Avg."] == pytest.approx((70.72 + 75.37) / 2)
    # SBERT's rows are last-avg and CLS, not first-last
    assert "SBERT: none (-, all)" not in rows.index
    assert list(published_rows("bert-base-uncased", "cls").index) == [
        "SBERT: none (-, all)",
        "SimCSE: simcse-unsup (-, all)",
        "SimCSE (Table B.3): simcse-unsup (-, wmean)",
    ]
    assert published_rows("all-MiniLM-L6-v2", "first-last-avg").empty
    assert published_rows(
        "bert-base-uncased", (1, 12)
    ).empty  # explicit layer tuples have no published row


def test_table1_matches_the_reference_file(reference):
    body = section(reference, "Table 1 of the same paper")
    lines = [line for line in body.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")][1:]
    assert header[:3] == ["[0,100)", "[100,500)", "[500,5K)"] and header[3].startswith(
        "[5K, …)"
    )
    # The table repeats "k=5" / "k=7" under distance and then under dot product: read it in order.
    kind = None
    want = {}
    for line in lines[2:]:
        label, *cells = [c.strip() for c in line.strip("|").split("|")]
        if "distance" in label:
            kind = "k-NN ℓ2 distance"
        elif "dot product" in label:
            kind = "k-NN dot product"
        name = "mean ℓ2 norm" if "norm" in label else f"{kind}, {label.split(', ')[-1]}"
        want[name] = [float(c) for c in cells]
    assert len(want) == 7
    ours = published_table1()
    assert list(ours.columns) == ["[0,100)", "[100,500)", "[500,5K)", "[5K,…)"]
    # frequency_table's default buckets are the paper's
    assert bucket_labels() == list(ours.columns)
    assert ours.loc["words"].isna().all()  # the paper gives no bucket sizes
    for name, values in want.items():
        np.testing.assert_array_equal(ours.loc[name].to_numpy(), values, err_msg=name)
    # read off the file by eye
    assert want["k-NN dot product, k=7"] == [
        0.72,
        0.90,
        1.17,
        1.60,
    ]


def test_qnli_and_pooling_tables_are_one_copy_each_with_the_papers_shape():
    """Li et al.'s Table 4 lives once (entailment re-exports it); SimCSE's Table 6 has its four
    poolers, each an (unsupervised, supervised) pair of Spearman × 100 values."""
    from bertflow_mini.evaluation import entailment
    from bertflow_mini.evaluation.published import QNLI_TABLE4, SIMCSE_TABLE6

    assert entailment.PUBLISHED_QNLI is QNLI_TABLE4
    # Table 4: the flow helps both sizes, the target fit more than the NLI fit
    for size in ("base", "large"):
        raw, nli, target = (
            QNLI_TABLE4[f"BERT-{size}-NLI{s}"]
            for s in (", last2avg", "-flow (NLI)", "-flow (target)")
        )
        assert raw < nli < target
    assert list(SIMCSE_TABLE6) == [
        "[CLS] w/ MLP",
        "[CLS] w/ MLP (train)",
        "[CLS] w/o MLP",
        "First-last avg.",
    ]
    assert all(
        len(v) == 2 and 50 < min(v) and max(v) < 100 for v in SIMCSE_TABLE6.values()
    )
