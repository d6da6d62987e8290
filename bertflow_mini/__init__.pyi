"""The names ``import bertflow_mini as bf`` gives (``bf.setup``, ``bf.Whitening``, …), listed once:
lazy_loader imports each from its module on first use (importing the package stays cheap), and
type checkers and editors read this file as the package's interface. Grouped by job, not sorted."""

# chapters: set-up and the chapter it returns (its prose checks and exercises' self-checks), figures
from .chapters.chapter import (
    setup as setup,
    Chapter as Chapter,
    glue as glue,
    rounded as rounded,
    seed_everything as seed_everything,
)
from .chapters.plotting import (
    COLORS as COLORS,
    set_style as set_style,
    projection_scatter as projection_scatter,
)
from .chapters.exercises import solution as solution
from .chapters.strength import (
    model_strength as model_strength,
    describe_strength as describe_strength,
)

# one chapter's experiments, each a module: bf.pmi.make_joint, bf.puzzle.cosine_by_stage, …
from .chapters import (
    cooccurrence as cooccurrence,
    flow_toys as flow_toys,
    mlm_probe as mlm_probe,
    pmi as pmi,
    puzzle as puzzle,
    synonyms as synonyms,
)

# data
from .data import (
    TASKS as TASKS,
    load_sts as load_sts,
    task_sentences as task_sentences,
    load_glove as load_glove,
)
from .data.corpus import (
    corpus_sentences as corpus_sentences,
    split_held_out as split_held_out,
    unigram_entropy as unigram_entropy,
)
from .data.entailment import (
    load_sick_entailment as load_sick_entailment,
    load_qnli as load_qnli,
)

# encoders
from .encoders import (
    BOOK_MODEL as BOOK_MODEL,
    PAPER_MODEL as PAPER_MODEL,
    CONTRAST_MODEL as CONTRAST_MODEL,
    control_of as control_of,
    load_encoder as load_encoder,
    build as build,
    resolve_model as resolve_model,
    checkpoints_along_training as checkpoints_along_training,
    parameter_count as parameter_count,
    encode as encode,
    encode_layers as encode_layers,
    encode_with_dropout as encode_with_dropout,
    pooling_grid as pooling_grid,
)
from .encoders import (
    mlm as mlm,
    pretrain as pretrain,
    simcse as simcse,
)
from .encoders.checkpoints import (
    checkpoint_token_counts as checkpoint_token_counts,
    load_mlm as load_mlm,
)
from .encoders.simcse import simcse_name as simcse_name
from .encoders.names import (
    simcse_seeds as simcse_seeds,
    training_log_of as training_log_of,
)

# post-processors
from .postprocess import flow as flow
from .postprocess.whitening import (
    Whitening as Whitening,
    AllButTheTop as AllButTheTop,
)
from .postprocess.flow import (
    FlowConfig as FlowConfig,
    FlowTransform as FlowTransform,
    fit_flow as fit_flow,
)

# evaluation
from .evaluation.sts import (
    spearman as spearman,
    score_pairs as score_pairs,
    score_similarities as score_similarities,
    Embedded as Embedded,
    subset_table as subset_table,
    word_overlap as word_overlap,
    cosine_after as cosine_after,
)
from .evaluation.vectors import cosine_scores as cosine_scores
from .evaluation.reproduce import (
    embed_task as embed_task,
    Evaluation as Evaluation,
    fitting_sentences as fitting_sentences,
    rows_table as rows_table,
    word_overlap_row as word_overlap_row,
    published_rows as published_rows,
    reproduce as reproduce,
)
from .evaluation.methods import (
    default_methods as default_methods,
    truncated_whitening as truncated_whitening,
    split_method as split_method,
)
from .evaluation.published import (
    published_table as published_table,
    LEXICAL_TABLE6 as LEXICAL_TABLE6,
)
from .evaluation.bootstrap import (
    paired_bootstrap as paired_bootstrap,
    average_difference as average_difference,
    subset_mean_difference as subset_mean_difference,
)
from .evaluation.lexical import (
    lexical_table as lexical_table,
    word_edit_distances as word_edit_distances,
)
from .evaluation import (
    bootstrap as bootstrap,
    lexical as lexical,
)
from .evaluation.entailment import (
    PUBLISHED_QNLI as PUBLISHED_QNLI,
    auc as auc,
    resampled_aucs as resampled_aucs,
)

# the shipped measurements, and what pretraining earns
from .evaluation.measured import (
    CONTROLS_FILE as CONTROLS_FILE,
    DICTIONARY_SEEDS_FILE as DICTIONARY_SEEDS_FILE,
    PRETRAIN_SEEDS_FILE as PRETRAIN_SEEDS_FILE,
    SCALE_FILE as SCALE_FILE,
    colab_minutes as colab_minutes,
    controls_table as controls_table,
    earned_table as earned_table,
    pretrain_seeds as pretrain_seeds,
    scale_curve as scale_curve,
)
from .evaluation.controls import (
    control_summary as control_summary,
    pretrain_seed_spread as pretrain_seed_spread,
)
from .evaluation.earned import (
    earned as earned,
    SHAPE_OF as SHAPE_OF,
    earned_live as earned_live,
)
from .evaluation.scale import (
    scale_gaps as scale_gaps,
    step_zero as step_zero,
)
from .evaluation.harness import (
    harness_spread as harness_spread,
    beyond_harness as beyond_harness,
    harness_gaps as harness_gaps,
)

# geometry: the modules a chapter uses whole (bf.isotropy.iso_score, …), and single measurements
from .geometry import (
    bases as bases,
    contextual as contextual,
    corpus_counts as corpus_counts,
    degeneration as degeneration,
    frequency as frequency,
    holes as holes,
    isotropy as isotropy,
    rare_tokens as rare_tokens,
    similarity as similarity,
    token_geometry as token_geometry,
)
from .geometry.alignment import method_geometry as method_geometry
from .geometry.masked_inputs import masked_softmax_inputs as masked_softmax_inputs
from .geometry.neighbours import knn_overlap as knn_overlap
from .chapters.plotting import (
    plot_earned as plot_earned,
    plot_scale_curve as plot_scale_curve,
)

__version__: str
__all__: list[str]
