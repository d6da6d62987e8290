"""What each exercise's solution computes, recomputed for any model: the self-checks' expected answers.

A solver takes a model name and returns the value the chapter's solution cell computes for that
model, by the package calls the solution makes on the same data. Sentence vectors come from the
embedding cache the chapter filled, so most solvers take seconds; the few that fit a flow take
seconds per fit. :func:`_solve` computes each (exercise, model, data cap) once per process.

Exercises whose answer does not depend on the model (pen-and-paper results, toys drawn from a fixed
seed) have no solver: their one key serves every model (``answers.json``). Nothing here is public:
every function returns an answer key (:mod:`bertflow_mini.chapters.exercises` is the way in).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from bertflow_mini.data import load_sts
from bertflow_mini.data.pairs import max_pairs
from bertflow_mini.data.sts import task_sentences
from bertflow_mini.encoders import control_of, load_encoder
from bertflow_mini.encoders.encoder import Encoder, encode
from bertflow_mini.evaluation.reproduce import Embedded, Evaluation, embed_task
from bertflow_mini.evaluation.sts import score_pairs
from bertflow_mini.postprocess.flow import FlowTransform
from bertflow_mini.postprocess.whitening import Whitening

#: (exercise, model, data cap) → the answer computed in this process (and a fit two answers share).
_SOLVED: dict[tuple[str, str, int | None], Any] = {}


def _solve(exercise: str, model: str) -> Any:
    """The answer to ``exercise`` on ``model``, as its solution computes it: once per process and
    data cap (a quick run, ``$BERTFLOW_MAX_PAIRS``, has answers of its own)."""
    if exercise not in _SOLVERS:
        raise KeyError(
            f"exercise {exercise!r} has no solver; those that do: {', '.join(sorted(_SOLVERS))}"
        )
    memo = (exercise, model, max_pairs())
    if memo not in _SOLVED:
        _SOLVED[memo] = _SOLVERS[exercise](model)
    return _SOLVED[memo]


def _slow(exercise: str, model: str) -> str:
    """What will take time if ``exercise`` is solved on ``model`` now ("" when quick or done)."""
    return "" if (exercise, model, max_pairs()) in _SOLVED else _SLOW.get(exercise, "")


def _forget() -> None:
    """Drop every memoised answer, encoder and fit (a test that swaps the model behind a name)."""
    _SOLVED.clear()
    _encoder.cache_clear()


@lru_cache(maxsize=2)
def _encoder(model: str) -> Encoder:
    return load_encoder(model)


def _stsb(model: str, pooling: str) -> Embedded:
    """Every STS-B sentence of ``model`` under ``pooling``: the chapters' ``bf.embed_task`` (cached)."""
    return embed_task(_encoder(model), "STSB", pooling, progress=False)


def _vocab(enc: Encoder) -> tuple[np.ndarray, list[str]]:
    """The input embedding matrix of ``enc`` and the token of each of its rows."""
    E = enc.model.get_input_embeddings().weight.detach().cpu().numpy()
    return E, enc.tokenizer.convert_ids_to_tokens(list(range(E.shape[0])))


def _scores_after(
    model: str, pooling: str, post: Any, columns: slice = slice(None)
) -> float:
    """STS-B test Spearman × 100 (``all``) of ``model`` after the fitted ``post`` (None: raw)."""
    test, emb = load_sts("STSB", "test"), _stsb(model, pooling)
    a, b = emb(test.sent1), emb(test.sent2)
    if post is not None:
        a, b = post.transform(a), post.transform(b)
    return score_pairs(test, a[:, columns], b[:, columns]).all


# ------------------------------------------------------------------------------------ chapter 0
def _mean_cosine_all_pairs(model: str) -> float:
    """Mean cosine over all pairs of distinct STS-B test sentences, ``last-avg``."""
    from bertflow_mini.geometry.isotropy import mean_random_cosine

    sentences = load_sts("STSB", "test").sentences()
    return mean_random_cosine(_stsb(model, "last-avg")(sentences), n_pairs=None)


# ------------------------------------------------------------------------------------ chapter 2
def _weakest_directions(model: str) -> list[float]:
    """STS-B Spearman of the model and of its random-init control with only the 32 whitened
    directions of smallest variance (``first-last-avg``, whitening fitted on every STS-B sentence)."""
    out = []
    for name in (model, control_of(model)):
        white = Whitening().fit(_stsb(name, "first-last-avg").vectors)
        out.append(_scores_after(name, "first-last-avg", white, slice(-32, None)))
    return out


# ------------------------------------------------------------------------------------ chapter 3
def _rarest_bucket_on_sphere(model: str) -> float:
    """Table 1's mean 5-NN ℓ2 distance of the rarest bucket, on unit-normalised word embeddings."""
    from bertflow_mini.geometry import frequency as fq

    E, vocab = _vocab(_encoder(model))
    # a row of norm 0 (an unused [PAD]) stays 0 instead of dividing by 0, as in the solution
    norms = np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
    unit = fq.frequency_table(E / norms, vocab, unknown="drop")
    return float(unit.loc["k-NN ℓ2 distance, k=5"].iloc[-1])


def _centred_swap_correlation(model: str) -> float:
    """ρ(|frequency gap|, cosine) over the WordNet synonym swaps of the STS-B test sentences, with the
    vectors centred on the mean of every STS-B ``first-last-avg`` vector."""
    import functools

    import wordfreq
    from scipy.stats import spearmanr

    from bertflow_mini.chapters import synonyms as syn
    from bertflow_mini.geometry import frequency as fq

    enc = _encoder(model)
    _, vocab = _vocab(enc)
    words = {vocab[i] for i in fq.whole_word_vocab(vocab)}
    swaps = syn.synonym_swaps(
        load_sts("STSB", "test").sentences(),
        syn.synonym_map(syn.wordnet_synsets(), words),
        functools.partial(wordfreq.word_frequency, lang="en"),
    )
    every = _stsb(model, "first-last-avg")
    mu = every.vectors.mean(axis=0)
    a = every([s.sentence for s in swaps]) - mu
    b = encode(enc, [s.swapped for s in swaps], "first-last-avg", progress=False) - mu
    c = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float(spearmanr(np.abs([s.gap for s in swaps]), c).statistic)


# ------------------------------------------------------------------------------------ chapter 5
def _pair_sentences() -> list[str]:
    """Both sentences of every STS-B pair, duplicates included: chapter 5's (official) fit set."""
    return [
        s
        for split in ("train", "dev", "test")
        for pairs in [load_sts("STSB", split)]
        for s in pairs.sent1 + pairs.sent2
    ]


def _glove_flow_bits(model: str) -> list[float]:
    """Bits/dim on GloVe-50d's vectors (chapter 5's fit set, 64 per step) of the flow with affine
    couplings and LU mixing, and of the paper's flow fitted for 3 epochs: the same for every
    model (GloVe is no BERT), but not for every data cap."""
    from bertflow_mini.postprocess.flow import log_likelihood

    X = _stsb("glove-6B-50d", "last-avg")(_pair_sentences())
    variants = (dict(coupling="affine", permutation="lu"), dict(epochs=3))
    flows = [
        FlowTransform(batch_size=64, progress=False, **kw).fit(X) for kw in variants
    ]
    return [
        float(-log_likelihood(f.flow, X).mean() / (X.shape[1] * np.log(2)))
        for f in flows
        if f.flow is not None
    ]


def _held_out_split() -> tuple[list[str], list[str]]:
    """STS-B's training sentences, and its test sentences that are not among them."""
    train = task_sentences("STSB", ["train"])
    seen = set(train)
    return train, [s for s in task_sentences("STSB", ["test"]) if s not in seen]


def _train_split_flow(model: str) -> FlowTransform:
    """The paper's flow fitted on STS-B's training sentences only (``last-avg``): exercises 5.3 and
    5.4 share one fit per model and data cap."""
    memo = ("train-split flow", model, max_pairs())
    flow: FlowTransform | None = _SOLVED.get(memo)
    if flow is None:
        train, _ = _held_out_split()
        flow = _SOLVED[memo] = FlowTransform(progress=False).fit(
            _stsb(model, "last-avg")(train)
        )
    return flow


def _overfitting_gaps(model: str) -> list[float]:
    """Bits/dim on held-out minus on training sentences: the flow's, then a full Gaussian's
    (the whitening fit read as a linear flow, finite on a singular covariance)."""
    from bertflow_mini.postprocess.flow import log_likelihood

    train, held_out = _held_out_split()
    emb = _stsb(model, "last-avg")
    x_train, x_test = emb(train), emb(held_out)
    d = x_train.shape[1]
    flow = _train_split_flow(model).flow
    assert flow is not None  # fitted
    gauss = Whitening().fit(x_train)

    def bits(nats: np.ndarray) -> float:
        return float(-nats.mean() / (d * np.log(2)))

    return [
        bits(log_likelihood(flow, x_test)) - bits(log_likelihood(flow, x_train)),
        bits(gauss.log_prob(x_test)) - bits(gauss.log_prob(x_train)),
    ]


def _train_split_flow_score(model: str) -> float:
    """STS-B Spearman (``last-avg``) of the flow fitted on the training split only."""
    return _scores_after(model, "last-avg", _train_split_flow(model))


# ------------------------------------------------------------------------------------ chapter 6
def _flow_seed_sd(model: str) -> float:
    """The sd (n − 1) of STS-B ``wmean`` over flow seeds 0–4 (target fit, ``first-last-avg``)."""
    ours = Evaluation(_encoder(model), progress=False)
    flows = [
        ours.score("STSB", "first-last-avg", "flow", "target", seed=s).wmean
        for s in range(5)
    ]
    return float(np.std(flows, ddof=1))


def _truncation_changes(model: str) -> list[list[float]]:
    """On STS-B, then SICK-R: the ``wmean`` of whitening truncated to k directions minus the full
    width's, for each k of 16, 32, …, 256 below the width (whitening fitted on the target,
    ``first-last-avg``)."""
    enc = _encoder(model)
    ours = Evaluation(enc, progress=False)
    ks = [k for k in (16, 32, 64, 128, 256) if k < enc.dim]
    out = []
    for task in ("STSB", "SICK-R"):
        full = ours.score(task, "first-last-avg", "whitening", "target").wmean
        out.append(
            [
                ours.score(task, "first-last-avg", f"whitening-{k}", "target").wmean
                - full
                for k in ks
            ]
        )
    return out


# ------------------------------------------------------------------------------------ chapter 7
def _four_parent_hole_ratios(model: str) -> list[float]:
    """The hole ratio (mixed inside) of random four-parent mixtures, raw and whitened."""
    from bertflow_mini.geometry import holes

    evaluation = Evaluation(_encoder(model), progress=False)
    X = evaluation.embedded("STSB", "first-last-avg").vectors.astype(np.float64)
    query, reference = holes.task_pair_split(evaluation, "STSB", reference=0.5, seed=0)
    query = query[:3000]
    plan = holes.mixture_plan(len(query), 3000, parents=4, kind="random", seed=0)
    white = evaluation.postprocessor("STSB", "first-last-avg", "whitening")
    assert white is not None  # "whitening" is a post-processor, never "none"
    spaces = {"raw": None, "whitened": white.transform}
    four = {
        name: holes.hole_distances(X, f, plan, query, reference, k=10)
        for name, f in spaces.items()
    }
    return [float(r) for r in holes.hole_table(four)["hole ratio, mixed inside"]]


def _whitened_auc_low_overlap(model: str) -> float:
    """AUC × 100 of whitened cosine for SICK entailment on the pairs below the median word overlap
    (``first-last-avg``, whitening fitted on the SICK test sentences)."""
    from bertflow_mini.data.entailment import load_sick_entailment
    from bertflow_mini.evaluation.entailment import auc
    from bertflow_mini.evaluation.sts import cosine_scores, word_overlap

    sick_e = load_sick_entailment("test")
    sick = embed_task(_encoder(model), "SICK-R", "first-last-avg", progress=False)
    overlap = word_overlap(sick_e.first, sick_e.second)
    low = overlap < np.median(overlap)
    post = Whitening().fit(sick(sick_e.sentences()))
    cos = cosine_scores(
        post.transform(sick(sick_e.first)), post.transform(sick(sick_e.second))
    )
    return 100 * auc(cos[low], sick_e.labels[low])


#: exercise → the function of a model name that computes the exercise's answer for that model.
_SOLVERS: dict[str, Callable[[str], Any]] = {
    "0.3": _mean_cosine_all_pairs,
    "2.3": _weakest_directions,
    "3.2": _rarest_bucket_on_sphere,
    "3.3": _centred_swap_correlation,
    "5.2": _glove_flow_bits,
    "5.3": _overfitting_gaps,
    "5.4": _train_split_flow_score,
    "6.2": _flow_seed_sd,
    "6.3": _truncation_changes,
    "7.2": _four_parent_hole_ratios,
    "7.3": _whitened_auc_low_overlap,
}
#: exercise → what makes its solver take more than a few seconds (said before it runs).
_SLOW: dict[str, str] = {
    "3.2": "a nearest-neighbour search over the vocabulary",
    "5.2": "two flows fitted on GloVe's vectors, once per session",
    "5.3": "a flow fit, once per session",
    "5.4": "a flow fit, once per session",
    "6.2": "five flow fits, once per session",
}
