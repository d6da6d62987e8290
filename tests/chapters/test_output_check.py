"""The tolerant comparison of checked cells, on hand-computed cases: which numbers are found, how far
each may drift, and which differences fail."""

from __future__ import annotations

import pytest

from bookbuild.output_check import (
    DEFAULT,
    EXACT,
    Tolerance,
    cell_tolerance,
    compare_cell,
    compare_notebook,
    compare_text,
    parse_tolerance,
    split_numbers,
)


def failures(committed: str, fresh: str, tolerance: Tolerance = DEFAULT) -> list[str]:
    return [str(m) for m in compare_text(committed, fresh, tolerance)[0]]


def code_cell(source: str, *outputs: dict, metadata: dict | None = None) -> dict:
    return {
        "cell_type": "code",
        "source": source,
        "metadata": metadata or {},
        "execution_count": 1,
        "outputs": list(outputs),
    }


def checked_cell(tolerance: str | None, *outputs: dict) -> dict:
    """A checked cell (nbval's tag), with ``tolerance`` in its metadata (None: checked exactly)."""
    metadata: dict = {"tags": ["nbval-check-output"]}
    if tolerance is not None:
        metadata["tolerance"] = tolerance
    return code_cell("print(x)", *outputs, metadata=metadata)


def stdout(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


# ----------------------------------------------------------------------------- finding numbers
def test_numbers_and_the_words_between_them():
    words, numbers = split_numbers("rho = 0.58 (n=1,379)")
    assert words == ["rho =", "(n=", ")"]
    assert [(n.value, n.step, n.is_int) for n in numbers] == [
        (0.58, pytest.approx(0.01), False),
        (1379, 1, True),
    ]


def test_digits_inside_names_are_text():
    text = "STS12 x1 log10 top1_var [unused96] ℓ2 token0"
    assert split_numbers(text) == ([text], [])


@pytest.mark.parametrize(
    "text, value, step",
    [
        (
            "1.776e-03",
            1.776e-3,
            1e-6,
        ),  # step: one unit in the mantissa's last digit, times 10^exponent
        ("-1.295e-02", -1.295e-2, 1e-5),
        ("5.6e-06", 5.6e-6, 1e-7),
        ("1e-10", 1e-10, 1e-10),
    ],
)
def test_exponent_notation(text, value, step):
    (number,) = split_numbers(f"x = {text};")[1]
    assert (
        number.value == pytest.approx(value)
        and number.step == pytest.approx(step)
        and not number.is_int
    )


def test_signs_belong_to_numbers_but_hyphens_in_names_do_not():
    words, numbers = split_numbers("whitening-128: -0.83, +11.7 and 3-4")
    assert [n.value for n in numbers] == [
        128,
        -0.83,
        11.7,
        3,
        4,
    ]  # "3-4" is a range, not 3 and -4
    assert words == ["whitening-", ":", ",", "and", "-", ""]


def test_percentages_are_rounded_ratios_not_counts():
    (number,) = split_numbers("16% of cells never seen")[1]
    assert (number.value, number.step, number.is_int) == (16, 1, False)
    assert failures("16%", "17%") == []  # one step of a rounded ratio
    assert failures("16%", "18%") != []  # 2 > max(0.02 * 16, 1)


# ----------------------------------------------------------------------------- tolerance
@pytest.mark.parametrize(
    "committed, fresh",
    [
        ("0.580", "0.573"),  # 0.007 <= 0.02 * 0.580 = 0.0116
        ("60.0", "59.7"),  # 0.3 <= 1.2
        ("1.775e-03", "1.776e-03"),  # 1e-06 <= 3.55e-05
        ("0.00", "0.01"),  # 0.01 <= one step; 2% of 0 is 0
        ("-0.83", "-0.84"),
    ],
)
def test_a_number_drifting_within_the_default_tolerance_passes(committed, fresh):
    assert failures(f"isotropy {committed} done", f"isotropy {fresh} done") == []


@pytest.mark.parametrize(
    "committed, fresh",
    [
        ("0.580", "0.560"),  # 0.020 > 0.0116
        ("60.0", "58.7"),  # 1.3 > 1.2
        ("1.775e-03", "1.875e-03"),  # 1e-04 > 3.55e-05
        ("0.00", "0.02"),  # 0.02 > one step
        ("-0.83", "0.83"),  # a sign flip
    ],
)
def test_a_number_drifting_beyond_the_default_tolerance_fails(committed, fresh):
    (message,) = failures(f"isotropy {committed} done", f"isotropy {fresh} done")
    assert f"{committed} is now {fresh}" in message


def test_counts_must_match_exactly_unless_the_cell_allows_drift():
    assert failures("338 paraphrases", "339 paraphrases") != []
    assert failures("338 paraphrases", "339 paraphrases", Tolerance(ints=1)) == []
    assert failures("1,000,000 pairs", "1,000,001 pairs") != []


def test_an_integer_printed_as_a_float_is_a_different_output():
    assert failures("mean [0. 1]", "mean [0. 1.0]") != []


def test_differing_text_fails_even_when_every_number_agrees():
    assert (
        failures("origin in hull = True (n=50)", "origin in hull = False (n=50)") != []
    )
    assert failures("man -> ['woman', 'girl']", "man -> ['girl', 'woman']") != []


def test_a_different_count_of_numbers_fails():
    (message,) = failures("R² = 0.94", "R² = 0.94 0.95")
    assert "1 numbers committed, 2 now" in message


def test_table_alignment_may_shift_when_a_number_gains_a_sign():
    committed = "          mean\nraw       0.00\nflow      0.28"
    fresh = "          mean\nraw      -0.01\nflow      0.28"
    assert failures(committed, fresh) == []
    assert (
        failures("a b 0.1", "ab 0.1") != []
    )  # words still need the space between them


# ----------------------------------------------------------------------------- the metadata
def test_the_tag_and_the_metadata_state_the_cells_tolerance():
    assert cell_tolerance(code_cell("x = 1")) is None
    assert cell_tolerance(code_cell("x = 1", metadata={"tags": ["hide-input"]})) is None
    assert cell_tolerance(checked_cell(None)) == EXACT
    assert cell_tolerance(checked_cell("rtol=0.02")) == DEFAULT
    tolerance = cell_tolerance(checked_cell("atol=0.5 rtol=0"))
    assert tolerance == Tolerance(
        rtol=0.0, atol=0.5, ulps=DEFAULT.ulps, ints=DEFAULT.ints
    )


@pytest.mark.parametrize("options", ["rtoll=0.1", "rtol", "rtol=wide"])
def test_a_misspelt_override_is_an_error_not_the_default(options):
    with pytest.raises(ValueError):
        cell_tolerance(checked_cell(options))
    with pytest.raises(ValueError):
        parse_tolerance(options)


def test_a_tolerance_without_the_tag_is_an_error_since_it_would_check_nothing():
    with pytest.raises(ValueError, match="checks nothing"):
        cell_tolerance(code_cell("x = 1", metadata={"tolerance": "atol=0.1"}))


@pytest.mark.parametrize(
    "source",
    [
        "# NBVAL_CHECK_OUTPUT\nx = 1",
        "# tolerance: atol=0.1\nx = 1",
        "x = 1  # NBVAL_IGNORE_OUTPUT",
    ],
)
def test_markers_a_reader_would_see_in_the_source_are_an_error(source):
    with pytest.raises(ValueError, match="metadata"):
        cell_tolerance(code_cell(source))


def test_per_cell_override_widens_and_narrows_the_default():
    committed, fresh = (
        "rho x 100: 80.4",
        "rho x 100: 79.8",
    )  # drift 0.6; default allows 0.02 * 80.4 = 1.608
    assert (
        compare_cell(
            checked_cell("rtol=0.02", stdout(committed)),
            checked_cell("rtol=0.02", stdout(fresh)),
            "cell",
        )[0]
        == []
    )
    strict = "atol=0.5 rtol=0"
    (mismatch,) = compare_cell(
        checked_cell(strict, stdout(committed)),
        checked_cell(strict, stdout(fresh)),
        "cell",
    )[0]
    assert "drift 0.6, allowed 0.5" in str(mismatch)
    wide = "rtol=0.1"
    assert (
        compare_cell(
            checked_cell(wide, stdout("0.50")),
            checked_cell(wide, stdout("0.54")),
            "cell",
        )[0]
        == []
    )


# ----------------------------------------------------------------------------- whole notebooks
def notebook(*cells: dict) -> dict:
    return {"cells": list(cells)}


def test_only_marked_cells_are_compared_but_any_error_fails():
    committed = notebook(
        code_cell("print(1)", stdout("1.00")), checked_cell("rtol=0.02", stdout("0.50"))
    )
    fresh = notebook(
        code_cell("print(1)", stdout("7.00")), checked_cell("rtol=0.02", stdout("0.50"))
    )
    assert compare_notebook(committed, fresh)[0] == []
    error = {
        "output_type": "error",
        "ename": "ValueError",
        "evalue": "boom",
        "traceback": [],
    }
    broken = notebook(
        code_cell("print(1)", error), checked_cell("rtol=0.02", stdout("0.50"))
    )
    (mismatch,) = compare_notebook(committed, broken)[0]
    assert "ValueError: boom" in str(mismatch)


def test_a_new_warning_in_a_checked_cell_fails_and_figures_are_not_compared():
    figure = {
        "output_type": "display_data",
        "data": {"image/png": "AAA", "text/plain": "<Figure 640x480>"},
    }
    committed = notebook(checked_cell("rtol=0.02", stdout("0.50"), figure))
    redrawn = notebook(
        checked_cell(
            "rtol=0.02", stdout("0.50"), dict(figure, data={"image/png": "BBB"})
        )
    )
    assert compare_notebook(committed, redrawn)[0] == []
    warned = notebook(
        checked_cell(
            "rtol=0.02",
            stdout("0.50"),
            {"output_type": "stream", "name": "stderr", "text": "UserWarning: ..."},
            figure,
        )
    )
    (mismatch,) = compare_notebook(committed, warned)[0]
    assert "['stdout'] are now ['stdout', 'stderr']" in str(mismatch)


def test_drifts_report_every_number_that_moved_and_its_share_of_the_tolerance():
    committed = notebook(checked_cell("rtol=0.02", stdout("a 0.50 b 60.0 c 7")))
    fresh = notebook(checked_cell("rtol=0.02", stdout("a 0.51 b 59.4 c 7")))
    mismatches, drifts = compare_notebook(committed, fresh)
    assert mismatches == []
    assert [(d.committed.text, d.fresh.text) for d in drifts] == [
        ("0.50", "0.51"),
        ("60.0", "59.4"),
    ]
    assert [round(d.share, 3) for d in drifts] == [
        1.0,
        0.5,
    ]  # 0.01 of 0.01 allowed; 0.6 of 1.2


def test_the_command_reports_every_moved_number_and_fails_on_a_mismatch(
    tmp_path, capsys
):
    """``python -m bookbuild.output_check BEFORE AFTER``: what ``make refresh`` prints."""
    import json

    from bookbuild.output_check import main

    tolerant, exact = "rtol=0.02", None
    before = notebook(
        checked_cell(tolerant, stdout("a 0.50 b 60.0")),
        checked_cell(exact, stdout("n = 7")),
    )
    within = notebook(
        checked_cell(tolerant, stdout("a 0.51 b 59.4")),
        checked_cell(exact, stdout("n = 7")),
    )
    beyond = notebook(
        checked_cell(tolerant, stdout("a 0.51 b 50.0")),
        checked_cell(exact, stdout("n = 8")),
    )
    for name, nb in {"before": before, "within": within, "beyond": beyond}.items():
        (tmp_path / f"{name}.ipynb").write_text(json.dumps(nb))
    assert main([str(tmp_path / "before.ipynb"), str(tmp_path / "within.ipynb")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "before.ipynb: 2 numbers moved, largest:",
        "    1.00 of tolerance: cell 0 [1] (stdout): 0.50 is now 0.51 (drift 0.01, allowed 0.01)",
        "    0.50 of tolerance: cell 0 [1] (stdout): 60.0 is now 59.4 (drift 0.6, allowed 1.2)",
    ]
    assert main([str(tmp_path / "before.ipynb"), str(tmp_path / "beyond.ipynb")]) == 1
    out = capsys.readouterr().out
    assert (
        "MISMATCH cell 0 [1] (stdout): 60.0 is now 50.0 (drift 10, allowed 1.2)" in out
    )
    assert "MISMATCH cell 1 [1] (stdout): 7 is now 8 (drift 1, allowed 0)" in out


def test_the_command_fails_on_a_number_beyond_the_allowed_share_and_lists_unchecked_moves(
    tmp_path, capsys
):
    """``--max-share 0.5``: a number within its tolerance but past half of it fails (the
    portability runs require that margin); ``--unchecked`` lists how unchecked cells changed: a
    moved number, and a ranking whose words changed (near-tied tokens swapping places)."""
    import json

    from bookbuild.output_check import main

    unchecked = {
        "cell_type": "code",
        "metadata": {},
        "source": "",
        "execution_count": 1,
    }
    before = notebook(
        checked_cell("rtol=0.02", stdout("a 60.0")),
        {**unchecked, "outputs": [stdout("top: the (35)")]},
        {**unchecked, "outputs": [stdout("model: ['act', 'person']")]},
    )
    after = notebook(
        checked_cell("rtol=0.02", stdout("a 59.1")),
        {**unchecked, "outputs": [stdout("top: the (36)")]},
        {**unchecked, "outputs": [stdout("model: ['person', 'act']")]},
    )
    for name, nb in {"before": before, "after": after}.items():
        (tmp_path / f"{name}.ipynb").write_text(json.dumps(nb))
    paths = [str(tmp_path / "before.ipynb"), str(tmp_path / "after.ipynb")]
    assert main(paths) == 0  # 0.9 of 1.2 allowed: within the tolerance
    capsys.readouterr()
    assert main([*paths, "--max-share", "0.5", "--unchecked"]) == 1
    out = capsys.readouterr().out
    assert "OVER 0.5 OF TOLERANCE (0.75)" in out
    assert "UNCHECKED cell 1 (stdout): 35 is now 36" in out
    assert (
        "UNCHECKED cell 2 (stdout): text \"model: ['act', 'person']\" is now "
        "\"model: ['person', 'act']\"" in out
    )
    assert main([*paths, "--max-share", "0.8"]) == 0
