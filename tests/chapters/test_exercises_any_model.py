"""The self-checks on a model the book was not computed with: a random stand-in of bert-base's shape
(768 wide, 12 heads, 2 layers) served under bert-base-uncased's name, on a few real STS-B and SICK
pairs.

The oracle of each exercise is its solution cell as the chapter writes it (the same package calls
on the same data, transcribed from the notebook): every check must accept that value and reject it
perturbed beyond the exercise's tolerance. The book's model keeps its stored key: on the warm cache
(``-m notebook``) the solvers compute what is stored.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA_DIR, need, save_tiny_bert

import bertflow_mini as bf
from bertflow_mini.chapters import exercises, solvers
from bertflow_mini.chapters.chapter import Chapter

STAND_IN = "bert-base-uncased"
#: Lines kept of each real file: more STS-B training sentences and more SICK sentences than
#: :data:`WIDTH`, so that every covariance fitted has full rank but for the LayerNorm direction, as
#: on the book's model (with fewer, the floored directions' rounding noise decides whitened
#: cosines); SICK pairs of both labels below the median overlap.
LINES = {"sts-train.csv": 600, "sts-dev.csv": 24, "sts-test.csv": 60, "sick": 500}
#: bert-base's width and heads (more than the 32 directions exercise 2.3 keeps).
WIDTH, HEADS = 768, 12


@pytest.fixture(scope="module")
def stand_in_mirrors(tmp_path_factory) -> tuple[Path, Path]:
    """(data, models): the first lines of the real STS-B and SICK files with the real WordNet and
    GloVe, and a 2-layer random BERT of bert-base's width and heads with its vocabulary, under
    its name."""
    for folder in ("sts/STSBenchmark", "sick", "wordnet", "glove"):
        need(DATA_DIR / folder)
    data = tmp_path_factory.mktemp("data")
    for src in sorted((DATA_DIR / "sts" / "STSBenchmark").glob("sts-*.csv")):
        dst = data / "sts" / "STSBenchmark" / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        lines = src.read_text(encoding="utf-8").split("\n")[: LINES[src.name]]
        dst.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (data / "sick").mkdir()
    for src in sorted((DATA_DIR / "sick").glob("SICK_*.txt")):
        lines = src.read_text(encoding="utf-8").split("\n")[: LINES["sick"] + 1]
        (data / "sick" / src.name).write_text("\n".join(lines) + "\n", "utf-8")
    for folder in ("wordnet", "glove"):
        (data / folder).symlink_to(DATA_DIR / folder)
    models = tmp_path_factory.mktemp("models")
    save_tiny_bert(
        models / STAND_IN, seed=3, layers=2, hidden=WIDTH, heads=HEADS, intermediate=256
    )
    return data, models


@pytest.fixture
def stand_in(stand_in_mirrors, monkeypatch) -> Iterator[str]:
    """The stand-in served from the mirrors (its name is returned: a test runs its chapter on it,
    ``Chapter(model=stand_in)``); no answer memoised from another test's model."""
    data, models = stand_in_mirrors
    monkeypatch.setenv("BERTFLOW_DATA", str(data))
    monkeypatch.setenv("BERTFLOW_MODELS", str(models))
    monkeypatch.delenv("BERTFLOW_MAX_PAIRS", raising=False)
    solvers._forget()
    yield STAND_IN
    solvers._forget()


# --------------------------------------------------------------------------- the solution cells
def _embedded(model: str, pooling: str, task: str = "STSB"):
    return bf.embed_task(bf.load_encoder(model), task, pooling, progress=False)


def solution_0_3(model: str) -> float:
    test = bf.load_sts("STSB", "test")
    V = _embedded(model, "last-avg")(test.sentences())
    U = V / np.linalg.norm(V, axis=1, keepdims=True)
    n = len(U)
    return (np.sum(U.sum(axis=0) ** 2) - n) / (n * (n - 1))


def solution_2_3(model: str) -> list[float]:
    test = bf.load_sts("STSB", "test")
    weakest = {}
    for name in [model, bf.control_of(model)]:
        e_ = _embedded(name, "first-last-avg")
        white_ = bf.Whitening().fit(e_.vectors)
        a = white_.transform(e_(test.sent1))[:, -32:]
        b_ = white_.transform(e_(test.sent2))[:, -32:]
        weakest[name] = bf.score_pairs(test, a, b_).all
    return list(weakest.values())


def _vocab(model: str):
    enc = bf.load_encoder(model)
    E = enc.model.get_input_embeddings().weight.detach().cpu().numpy()
    return enc, E, enc.tokenizer.convert_ids_to_tokens(list(range(E.shape[0])))


def solution_3_2(model: str) -> float:
    from bertflow_mini.geometry import frequency as fq

    _, E, vocab = _vocab(model)
    norms = np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
    unit = fq.frequency_table(E / norms, vocab, unknown="drop")
    return unit.loc["k-NN ℓ2 distance, k=5"].iloc[-1]


def solution_3_3(model: str) -> float:
    import wordfreq
    from scipy.stats import spearmanr

    from bertflow_mini.chapters import synonyms as syn
    from bertflow_mini.geometry import frequency as fq

    enc, _, vocab = _vocab(model)
    words = {vocab[i] for i in np.array(fq.whole_word_vocab(vocab))}
    test = bf.load_sts("STSB", "test")
    frequency = functools.partial(wordfreq.word_frequency, lang="en")
    swaps = syn.synonym_swaps(
        test.sentences(), syn.synonym_map(syn.wordnet_synsets(), words), frequency
    )
    every = bf.embed_task(enc, "STSB", "first-last-avg", progress=False)
    mu = every.vectors.mean(axis=0)
    a = every([s.sentence for s in swaps]) - mu
    b = (
        bf.encode(enc, [s.swapped for s in swaps], "first-last-avg", progress=False)
        - mu
    )
    c = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return spearmanr(np.abs([s.gap for s in swaps]), c).statistic


def _chapter_5(model: str):
    emb = _embedded(model, "last-avg")
    pair_sentences = [
        s
        for split in ("train", "dev", "test")
        for pairs in [bf.load_sts("STSB", split)]
        for s in pairs.sent1 + pairs.sent2
    ]
    test = bf.load_sts("STSB", "test")
    return emb, emb(pair_sentences), test, emb(test.sent1), emb(test.sent2)


def solution_5_2(model: str) -> list[float]:
    from bertflow_mini.postprocess.flow import log_likelihood

    pair_sentences = [
        s
        for split in ("train", "dev", "test")
        for pairs in [bf.load_sts("STSB", split)]
        for s in pairs.sent1 + pairs.sent2
    ]
    G = _embedded("glove-6B-50d", "last-avg")(pair_sentences)
    fits = [
        bf.FlowTransform(
            batch_size=64, coupling="affine", permutation="lu", progress=False
        ).fit(G),
        bf.FlowTransform(batch_size=64, epochs=3, progress=False).fit(G),
    ]
    return [-log_likelihood(ft.flow, G).mean() / (50 * np.log(2)) for ft in fits]


def solution_5_3(model: str) -> list[float]:
    from bertflow_mini.postprocess.flow import log_likelihood

    emb = _embedded(model, "last-avg")
    train_sents = bf.task_sentences("STSB", ["train"])
    seen_train = set(train_sents)
    held_out = [
        s_ for s_ in bf.task_sentences("STSB", ["test"]) if s_ not in seen_train
    ]
    x_train, x_test = emb(train_sents), emb(held_out)
    d = x_train.shape[1]
    ft = bf.FlowTransform(progress=False).fit(x_train)
    gauss_fit = bf.Whitening().fit(x_train)
    row = {}
    for part, v in (("train", x_train), ("held-out", x_test)):
        row[f"flow, {part}"] = -log_likelihood(ft.flow, v).mean() / (d * np.log(2))
        row[f"Gaussian, {part}"] = -gauss_fit.log_prob(v).mean() / (d * np.log(2))
    return [
        row["flow, held-out"] - row["flow, train"],
        row["Gaussian, held-out"] - row["Gaussian, train"],
    ]


def solution_5_4(model: str) -> float:
    emb, _, test, a_test, b_test = _chapter_5(model)
    train_sents = bf.task_sentences("STSB", ["train"])
    train_only = bf.FlowTransform(progress=False).fit(emb(train_sents))
    return bf.score_pairs(
        test, train_only.transform(a_test), train_only.transform(b_test)
    ).all


def solution_6_2(model: str) -> float:
    ours = bf.Evaluation(bf.load_encoder(model), progress=False)
    POOLING = "first-last-avg"
    flows = [
        ours.score("STSB", POOLING, "flow", "target", seed=s).wmean for s in range(5)
    ]
    return np.std(flows, ddof=1)


def solution_6_3(model: str) -> list[list[float]]:
    """Each k's truncated whitening minus the full width: whitening fitted on every sentence of
    the task, Spearman by scipy (not the package's scoring)."""
    from scipy.stats import spearmanr

    encoder = bf.load_encoder(model)
    ours = bf.Evaluation(encoder, progress=False)
    ks = [k for k in (16, 32, 64, 128, 256) if k < encoder.dim]
    changes = []
    for task in ["STSB", "SICK-R"]:
        pairs, emb = ours.pairs(task), ours.embedded(task, "first-last-avg")

        def rho(white) -> float:
            a, b = white.transform(emb(pairs.sent1)), white.transform(emb(pairs.sent2))
            cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
            return 100 * spearmanr(cos, pairs.scores).statistic

        full = rho(bf.Whitening().fit(emb.vectors))
        changes.append([rho(bf.Whitening(k=k).fit(emb.vectors)) - full for k in ks])
    return changes


def solution_7_2(model: str) -> list[float]:
    from bertflow_mini.geometry import holes

    evaluation = bf.Evaluation(bf.load_encoder(model), progress=False)
    X = evaluation.embedded("STSB", "first-last-avg").vectors.astype(np.float64)
    query, reference = holes.task_pair_split(evaluation, "STSB", reference=0.5, seed=0)
    query = query[:3000]
    white = evaluation.postprocessor("STSB", "first-last-avg", "whitening")
    spaces = {"raw": None, "whitened": white.transform}
    plan4 = holes.mixture_plan(len(query), 3000, parents=4, kind="random", seed=0)
    four = {
        name: holes.hole_distances(X, f, plan4, query, reference, k=10)
        for name, f in spaces.items()
    }
    table = holes.hole_table(four)["hole ratio, mixed inside"]
    return table.loc[["raw", "whitened"]].tolist()


def solution_7_3(model: str) -> float:
    from bertflow_mini.evaluation.entailment import auc
    from bertflow_mini.evaluation.sts import word_overlap

    sick_e = bf.load_sick_entailment("test")
    sick = _embedded(model, "first-last-avg", "SICK-R")
    overlap = word_overlap(sick_e.first, sick_e.second)
    low = overlap < np.median(overlap)
    post = bf.Whitening().fit(sick(sick_e.sentences()))
    wa, wb = post.transform(sick(sick_e.first)), post.transform(sick(sick_e.second))
    cos = bf.cosine_scores(wa, wb)
    return 100 * auc(cos[low], sick_e.labels[low])


SOLUTIONS = {
    "0.3": solution_0_3,
    "2.3": solution_2_3,
    "3.2": solution_3_2,
    "3.3": solution_3_3,
    "5.2": solution_5_2,
    "5.3": solution_5_3,
    "5.4": solution_5_4,
    "6.2": solution_6_2,
    "6.3": solution_6_3,
    "7.2": solution_7_2,
    "7.3": solution_7_3,
}


def perturbed(value, exercise: str):
    """``value`` moved just beyond the exercise's tolerance in its first finite entry."""
    tol = exercises._tolerance(exercise)
    out = np.array(value, dtype=float)
    flat = out.reshape(-1)
    i = int(np.flatnonzero(np.isfinite(flat))[0])
    flat[i] += 1.5 * tol.atol + 2 * tol.rtol * abs(flat[i]) + (tol.atol == 0)
    return out.tolist()


# --------------------------------------------------------------------------- tests
def test_every_model_dependent_exercise_has_a_solver_and_an_oracle_here():
    keyed = exercises._answer_key()
    dependent = {e for e, by in keyed.items() if exercises._ANY_MODEL not in by}
    assert dependent == set(solvers._SOLVERS) == set(SOLUTIONS)
    # and one key per model-independent exercise, for every model
    assert all(len(by) == 1 for e, by in keyed.items() if e not in dependent)


#: Exercises whose test takes more than a few seconds (a k-NN over the vocabulary, flow fits).
SLOW_HERE = {"3.2", "5.2", "6.2", "6.3"}


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize(
    "exercise",
    [
        pytest.param(e, marks=[pytest.mark.slow] if e in SLOW_HERE else [])
        for e in sorted(SOLUTIONS)
    ],
)
def test_a_check_on_the_stand_in_accepts_the_solution_and_rejects_it_perturbed(
    exercise, stand_in, capsys
):
    assert (
        exercises._stored(exercise, stand_in) is None
    )  # nothing stored for this model: computed
    # NaN or inf where the solution computes one (5.3's Gaussian: a random BERT's vectors lie on
    # a hyperplane), the same answer is asked for
    solution = SOLUTIONS[exercise](stand_in)
    assert np.isfinite(np.ravel(solution)).any(), solution
    chapter = Chapter(model=stand_in, seed=0)
    assert chapter.check(exercise, solution) is True
    assert chapter.check(exercise, perturbed(solution, exercise)) is False
    out = capsys.readouterr().out
    assert out.count(f"Exercise {exercise}: right.") == 1
    assert out.count(f"Exercise {exercise}: not yet") == 1
    # the computed value never reaches the page
    for number in np.ravel(solution)[np.isfinite(np.ravel(solution))]:
        for digits in (1, 2, 3):
            assert f"{float(number):.{digits}f}" not in out.replace(exercise, "")


def test_a_model_independent_answer_is_checked_on_any_model_without_computing(
    stand_in, monkeypatch, capsys
):
    monkeypatch.setattr(solvers, "_SOLVERS", {})  # nothing may be computed
    for model in (stand_in, "scratch-bert", "some-org/any-model"):
        chapter = Chapter(model=model, seed=0)
        assert chapter.check("4.1", 0.3 * np.sqrt(64)) is True  # |β0|·√d
        assert chapter.check("6.1", 1 - 6 * 54 / (6 * 35)) is True
        assert chapter.check("6.1", 0.54) is False
    assert "not yet" in capsys.readouterr().out


def test_a_slow_check_says_so_once_before_computing(stand_in, monkeypatch, capsys):
    calls = []
    monkeypatch.setitem(solvers._SOLVERS, "5.4", lambda m: calls.append(m) or 61.0)
    chapter = Chapter(model=stand_in, seed=0)
    assert chapter.check("5.4", 61.2) is True
    assert chapter.check("5.4", 63.0) is False
    out = capsys.readouterr().out
    assert calls == [stand_in]
    assert out.count("computing the answer on bert-base-uncased (a flow fit") == 1


# --------------------------------------------------------------------------- model-independent
def shared_1_3() -> list[float]:
    from bertflow_mini.chapters import pmi

    joint = pmi.make_joint(200, 300, rank=8, seed=0)
    counts = pmi.counts_matrix(*pmi.sample_corpus(joint, 1_000_000, seed=0), 200, 300)
    PMI_true, log_px = pmi.pmi_matrix(joint), pmi.log_marginal(joint, axis=0)
    biased = pmi.train_softmax_on_counts(counts, dim=16, steps=500, seed=0, bias=True)
    hw = biased.H @ biased.W.T
    return [
        np.corrcoef(biased.b, log_px)[0, 1],
        pmi.regress_logits_on_pmi(hw, PMI_true, 0 * log_px)["r2"],
    ]


def shared_4_1() -> float:
    from bertflow_mini.geometry import degeneration as dg

    return dg.layernorm_separator(np.ones(64), np.full(64, -0.3))[1]


def shared_4_2() -> float:
    import scipy.stats

    from bertflow_mini.geometry import degeneration as dg

    W_seen = np.random.default_rng(1).normal(size=(20, 2))
    H = dg.make_hidden_states(50, 2, origin_inside=False, seed=0)
    long = dg.unseen_token_dynamics(H, W_seen, steps=200_000, lr=1.0)
    t = np.unique(np.geomspace(10_000, 200_000, 60).astype(int))
    return scipy.stats.linregress(np.log(t), long.norms[t]).slope


def shared_4_3() -> list[float]:
    from bertflow_mini.geometry import degeneration as dg
    from bertflow_mini.geometry import isotropy as iso

    toy = dict(vocab_size=1000, dim=16, n_contexts=200, steps=400, seed=0)
    unseen = []
    for reg in (0.0, 1.0):
        run = dg.train_zipf_softmax(**toy, cosine_reg=reg)
        unseen.append(iso.mean_random_cosine(run.W[run.counts == 0], n_pairs=None))
    return unseen


def shared_6_1() -> float:
    from scipy.stats import spearmanr

    gold_ex, cos_ex = np.arange(1, 7), np.array([0.7, 0.8, 0.9, 0.1, 0.2, 0.3])
    return float(spearmanr(gold_ex, cos_ex).statistic)


SHARED = {
    "1.3": shared_1_3,
    "4.1": shared_4_1,
    "4.2": shared_4_2,
    "4.3": shared_4_3,
    "6.1": shared_6_1,
}


def test_the_answers_stored_for_every_model_are_those_without_a_solver():
    keyed = exercises._answer_key()
    assert {e for e, by in keyed.items() if exercises._ANY_MODEL in by} == set(SHARED)


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(
    "exercise",
    [
        pytest.param(e, marks=[] if e in ("4.1", "6.1") else [pytest.mark.slow])
        for e in sorted(SHARED)
    ],
)
def test_an_answer_stored_for_every_model_is_what_its_solution_computes(exercise):
    key = exercises._answer_key()[exercise][exercises._ANY_MODEL]
    value = SHARED[exercise]()
    assert key.accepts(value), (exercise, key.value, value)
    assert not key.accepts(perturbed(value, exercise))


# --------------------------------------------------------------------------- the book's model
#: Exercises whose solver takes seconds on the warm cache (5.2 and 6.2 fit flows for a minute;
#: their keys are held to the chapters' solutions by ``confirm``).
QUICK = ("2.3", "3.2", "3.3", "5.3", "5.4", "6.3", "7.2", "7.3")


@pytest.mark.notebook
@pytest.mark.parametrize("exercise", QUICK)
def test_on_the_warm_cache_the_solver_computes_the_book_models_stored_key(
    exercise, monkeypatch
):
    monkeypatch.delenv("BERTFLOW_MAX_PAIRS", raising=False)
    key = exercises._stored(exercise, "scratch-bert")
    assert key is not None
    assert key.accepts(solvers._solve(exercise, "scratch-bert"))
