"""The one table of options and defaults: every stage and the model read theirs from here.

No JAX import here, so that a saved model loads without JAX; per-backend tuning is looked up
by backend name (:func:`tuning`), which the JAX stages pass in.
"""

#: Version of the saved (pickle) format; bumped when saved attributes change meaning.
FORMAT_VERSION = 1

# --- Options of AnchorModel (validated at the door, :mod:`._validation`) -------------------------
#: Recovery methods: RecoverL2, RecoverKL, and the original Recover of Arora, Ge & Moitra (2012).
LOSSES = ('L2', 'KL', 'original')
#: How Q is kept: the faster of the two for the corpus, sparse scaled word-document matrix, or
#: dense V x V.
Q_MODES = ('auto', 'implicit', 'dense')
#: Samplers of :func:`gensim_anchor.hybrid.gibbs_refine`.
SAMPLERS = ('collapsed', 'blocked')
#: Refinements of :meth:`gensim_anchor.AnchorModel.refine`.
REFINE_METHODS = ('gibbs', 'vb')

# --- Stage 1: co-occurrence ---------------------------------------------------------------------
#: q_mode='auto' keeps Q dense only if it takes at most this many bytes (V^2 float64) ...
DENSE_Q_BUDGET = 2 ** 30
#: ... and the fit is estimated faster that way, from these costs in nanoseconds (timed once on
#: the 2-core AMD EPYC of benchmarks/results, scipy and OpenBLAS on one thread, by products of
#: the shapes that benchmarks/bench_scale.py runs; the timing script was not kept): per
#: nonzero of H~ and column of a thin sparse product (float32 for the projection, float64); per
#: entry of Q and column of a dense product; per pair of distinct words of a document and per
#: entry of Q when Q is formed from H~ (see cooccurrence.choose_mode).
Q_COSTS = dict(sparse32=0.25, sparse64=0.45, dense32=0.022, dense64=0.037, pair=5.0, entry=5.0)

# --- Stage 1b: rectification --------------------------------------------------------------------
#: Cap on the alternating-projection iterations.
RECTIFY_MAX_ITER = 50
#: Relative change of the iterate at which the alternating projection stops.
RECTIFY_TOL = 1e-4
#: The compressed (ENN) rectification stops once the negative mass (a share of Q, which sums to
#: 1) left in the rows and columns of the words of largest norm is at most RECTIFY_ENN_TOL of
#: the rank-K truncation's, and never aims below RECTIFY_ENN_TOL_FLOOR (float32 products). It
#: was an absolute 2e-3, which removed most of the starting negative mass on KOS (short
#: documents, a noisy Q) but less on NIPS (long ones), whose topics then had fewer unique words
#: than the dense AP's. Over ten seeds, paired against the absolute 2e-3 (standard error in
#: brackets): unique top-20 words +0.24 (0.04) on NIPS, +0.08 (0.05) on 20NG-13k, +0.01 (0.04)
#: on KOS; held-out likelihood +0.0017 (0.0009), -0.0011 (0.0010), -0.0014 (0.0011) nats per
#: token (python benchmarks/bench_rectify.py --corpora nips 20ng-13k kos --methods enn --seeds
#: 0 1 2 3 4 5 6 7 8 9; benchmarks/results/bench_rectify.log, 2026-12-07T03:33Z, against the
#: 2026-12-02T02:06Z and 02:28Z entries; then with the range finder's shift). Since the range
#: finder runs unshifted (rectify.compress) the truncation is the exact one, with less negative
#: mass: KOS 3.5e-2 (20 iterations), NIPS 1.3e-2 (24), 20NG-13k 4.3e-2 (10), where the shifted
#: one had 6.5e-2, 1.5e-2 and 4.6e-2 (the 2026-12-07T06:10Z entry, against the 04:59Z one).
RECTIFY_ENN_TOL = 0.03
RECTIFY_ENN_TOL_FLOOR = 1e-5
#: ENN's l, the words whose negative entries it removes: RECTIFY_ENN_LARGE_FACTOR x K ln K (the
#: authors use 5), lowered to keep the V x l product of each iteration within
#: RECTIFY_ENN_BLOCK_ENTRIES entries (its time: it is made by row blocks) but never below
#: 5 K ln K. At 5 K ln K (K = 50) the unique top-20 words fell short of the dense AP's on NIPS
#: (6.50 against 6.68) and 20 Newsgroups cut to 13,000 words (7.96 against 8.40); at 20 K ln K,
#: over ten seeds, they are the AP's within the seed-to-seed noise on KOS and 20NG-13k and 0.13
#: fewer on NIPS, with held-out likelihood the AP's on KOS and higher on NIPS and 20NG-13k
#: (benchmarks/results/bench_rectify.log; README, "Rectification").
RECTIFY_ENN_LARGE_FACTOR = 20
RECTIFY_ENN_BLOCK_ENTRIES = 2 ** 27
#: ENN's over-relaxation omega: each iteration projects Y Y^T + omega E (+ the sum-1 weight).
#: At 1, the authors' step, the negative mass falls only about as 1/t (KOS: 24 iterations to
#: 2e-3); at 2 (a reflection through the nonnegative set) KOS takes 10, and its rectified fit
#: 3.5 s instead of 6.0 s in the same session, where 1 missed issue 14's 5 s. Over ten seeds,
#: paired (2 minus 1; standard errors in brackets): held-out likelihood -0.0004 (0.0014),
#: -0.0006 (0.0005) and -0.0040 (0.0011) nats/token on KOS, NIPS and 20NG-13k (the last still
#: 0.010 above the dense method's), unique top-20 words -0.11 (0.08), -0.05 (0.05) and +0.11
#: (0.09) (python benchmarks/bench_rectify.py --corpora kos nips 20ng-13k --methods enn --seeds
#: 0 1 2 3 4, with and without --relaxation 2, and --seeds 5 6 7 8 9 --relaxation 2;
#: benchmarks/results/bench_rectify.log, session 35, and the 2026-11-27T15:05Z entry; session
#: 5's single-seed runs had seemed to put 2 below the dense method's NIPS likelihood).
RECTIFY_ENN_RELAXATION = 2.0
#: Methods of rectify=: the compressed epsilon-nonnegative one (Lee et al. 2021; True means it)
#: and the dense alternating projection (Lee, Bindel & Mimno 2015).
RECTIFY_METHODS = ('enn', 'ap')

# --- Stage 2: anchors ---------------------------------------------------------------------------
#: Default projection dimension for FastAnchorWords (none when V is smaller).
DEFAULT_PROJECTION_DIM = 1000
#: The fixed anchor-candidate rule, the lowest threshold of the adaptive one (and the default
#: where that cannot run: dense or rectified statistics): words in at least
#: min(DEFAULT_MIN_DF, DEFAULT_MIN_DF_FRACTION x documents) documents.
DEFAULT_MIN_DF = 100
DEFAULT_MIN_DF_FRACTION = 0.05
#: The thresholds among which the adaptive candidate rule (the default ``anchor_min_df=None``,
#: :func:`gensim_anchor.anchors.choose_candidates`) chooses, those above the fixed rule's: an
#: int is a count of documents, a float a fraction of them (issue 13's fixed thresholds).
CANDIDATE_LEVELS = (100, 0.001, 0.003, 0.01, 0.03)
#: Dimension of the projection on which the adaptive rule scores the thresholds (the first
#: columns of the fit's own projection; the anchors are then found in the full dimension).
CANDIDATE_SCORE_DIM = 256

# --- Stage 3: recovery --------------------------------------------------------------------------
#: The authors' tolerance of the duality-gap test lambda^T x < eps (their EG solver).
EG_EPS = 1e-7
#: Default tolerance per loss. RecoverL2's pairwise solver reaches 1e-10 in about twice the steps
#: of 1e-7, and a gap that small leaves the topics to Q rather than to the path of the solver
#: (benchmarks/bench_recover_l2.py; log benchmarks/results/bench_recover_l2.log).
DEFAULT_EPS = {'L2': 1e-10, 'KL': EG_EPS}
#: Default iteration cap of the exponentiated-gradient solver, per word.
DEFAULT_MAX_ITER = 1000
#: Words that stop before the duality-gap tolerance are reported at INFO, and at WARNING once
#: they are at least this share of the solved words (a handful of near-ties is no news).
CAPPED_WARNING_SHARE = 0.01

# --- Stage 4: Dirichlet prior -------------------------------------------------------------------
#: Particles and Gibbs moves per token of the likelihood estimator (:mod:`.likelihood`) ...
LIKELIHOOD_SAMPLES, LIKELIHOOD_MOVES = 50, 8
#: ... of :func:`gensim_anchor.dirichlet.fit_alpha_scale` called on its own ...
ALPHA_FIT_SAMPLES, ALPHA_FIT_MOVES = 20, 4
#: ... and of the model's alpha grid search, which scores up to ALPHA_DOCS sampled training
#: documents, each cut to at most ALPHA_TOKENS tokens (a seeded subsample, itself an LDA
#: document) and, where enough are long enough, all with more than ALPHA_TOKENS / 2: one padded
#: length, so the estimator compiles once. On KOS this picks the same alpha_0 as the full
#: documents; cutting to 32 tokens biased it low.
ALPHA_DOCS, ALPHA_TOKENS, ALPHA_SAMPLES, ALPHA_MOVES = 100, 64, 10, 2
#: Training documents the model keeps (a reservoir sample of the single pass) for alpha.
ALPHA_SAMPLE = 1000
#: The search over the grid of alpha_0 (:func:`gensim_anchor.dirichlet.window_search`): a first
#: call of ALPHA_SEARCH_WIDTH points around alpha_0 = ALPHA_SEARCH_START x K, then
#: ALPHA_SEARCH_STEP more beyond the end where the best point lies until it lies inside. The fits
#: of KOS, NIPS and 20 Newsgroups at K = 20, 50 and 100 (two seeds each) chose alpha_0 / K from
#: 0.028 to 0.089; on their exhaustively evaluated grids (all 18 unimodal) the search found the
#: best point from 4 points in 15 of the 18 and from 6 in the other 3 (python
#: benchmarks/bench_alpha_search.py, benchmarks/results/bench_alpha_search.log), where the
#: earlier bracketing search made 12 evaluations of up to 10 distinct points for K = 50.
ALPHA_SEARCH_WIDTH, ALPHA_SEARCH_STEP, ALPHA_SEARCH_START = 4, 2, 0.05

# --- Refinement ---------------------------------------------------------------------------------
#: Sub-steps of a collapsed sweep (see :func:`gensim_anchor.hybrid.gibbs_refine`).
DEFAULT_SUBSTEPS = 2
#: Topic-word prior of the sampler. None: 1/K, gensim LdaModel's symmetric default (in
#: :class:`~gensim_anchor.AnchorModel`, the model's own ``eta``, which is 1/K unless given). At
#: K = 50 (0.02) it reached tomotopy's held-out likelihood and UMass on KOS, NIPS and 20
#: Newsgroups in the means over seeds, where the earlier fixed 0.01 (tomotopy's and Griffiths &
#: Steyvers') fell 0.0055 nats/token short on KOS; it has fewer unique top-20 words (KOS 8.81
#: against 8.98, NIPS 9.73 against 9.95, 20NG 11.09 against 11.67). Command: python
#: benchmarks/bench_seeds.py --corpus kos --seeds 0 1 2 3 4 --etas default 0.02 (and --corpus
#: nips, 20ng, seeds 0 1 2; benchmarks/results/bench_seeds.log, 2026-11-27T08:13Z to 08:38Z,
#: where 'default' is 0.01).
DEFAULT_ETA = None
#: The cap on sweeps of the Gibbs refinement, and the fixed burn-in of earlier versions (now
#: chosen by the convergence rule unless given).
DEFAULT_SWEEPS, DEFAULT_BURN_IN = 200, 100
#: The Gibbs refinement's sampler (one of SAMPLERS), and whether a refinement updates alpha.
DEFAULT_SAMPLER, DEFAULT_OPTIMIZE_ALPHA = 'collapsed', True
#: Passes of the 'vb' refinement (gensim's LdaModel.update from the anchor solution).
DEFAULT_VB_PASSES = 2
#: The convergence rule of :func:`gensim_anchor.hybrid.gibbs_refine`: every REFINE_CHECK_EVERY
#: sweeps, burn-in ends (after at least REFINE_MIN_BURN_IN) once the log joint per token rose
#: by less than REFINE_TOL nats per sweep; the topics are then averaged over
#: max(REFINE_AVERAGE, burn-in) sweeps. At 2e-3 (K = 50, eta 1/K) the one-call refined model
#: stopped after 110 sweeps on KOS, 80 on NIPS and 160 on 20 Newsgroups (python
#: benchmarks/bench_firstfit.py --corpus kos --split --refined --score, and nips, 20ng;
#: benchmarks/results/bench_firstfit.log, the 2026-11-27T13:50Z entry), where 1e-3 ran 140, 130
#: and the 200-sweep cap (the 09:09Z to 09:20Z entries), and its held-out likelihood stayed
#: above tomotopy's 1000 iterations on all three in the means over seeds (bench_seeds.log, the
#: 13:44Z entry); the curves are in bench_refine.log (the 12:53Z entry).
REFINE_CHECK_EVERY, REFINE_MIN_BURN_IN, REFINE_AVERAGE, REFINE_TOL = 5, 10, 10, 2e-3
#: The concentration alpha_0 at which ``refine='gibbs'`` starts alpha (shape p(z)) when the
#: sampler fits alpha itself (optimize_alpha), instead of the grid search's: the sum of
#: LdaModel's symmetric default, 1/K per topic. The chains end as well as from the grid's
#: choice, seed for seed (held-out likelihood, unique words and UMass within the seeds' spread
#: on KOS, NIPS and 20 Newsgroups; python benchmarks/bench_seeds.py --corpus kos --seeds 0 1 2 3
#: 4 --methods refined --alpha-start default grid, then --corpus nips and --corpus 20ng with
#: seeds 0 1 2; benchmarks/results/bench_seeds.log, the 2026-11-29T21:31Z entry), and the fit
#: saves the grid and its compilation.
REFINE_ALPHA_START = 1.0
#: Each refinement's options and their defaults: the one table from which both doors,
#: ``AnchorModel(refine=..., refine_options=...)`` and ``AnchorModel.refine``'s keywords, are
#: completed (:func:`gensim_anchor._validation.check_refine_options`).
REFINE_OPTIONS = dict(
    gibbs=dict(num_sweeps=DEFAULT_SWEEPS, burn_in=None, eta=DEFAULT_ETA,
               optimize_alpha=DEFAULT_OPTIMIZE_ALPHA, sampler=DEFAULT_SAMPLER,
               substeps=DEFAULT_SUBSTEPS, tol=REFINE_TOL),
    vb=dict(passes=DEFAULT_VB_PASSES, optimize_alpha=DEFAULT_OPTIMIZE_ALPHA))

# --- Per-backend tuning -------------------------------------------------------------------------
#: One row per JAX backend; any backend not named (GPU, TPU) is an accelerator.
#:
#: * ``eg_lanes``: width of the lane pool of the batched EG solver, fixed so that a word's
#:   result does not depend on how many words are solved with it. A CPU's few cores are kept
#:   busy by a small pool; an accelerator needs thousands of lanes (4,096 in the H200 runs of
#:   benchmarks/results/gpu_h200_kos_20ng.log).
#: * ``eg_steps``: EG iterations between two checks of the lane pool.
#: * ``pair_lanes``, ``pair_steps``: the same for RecoverL2's pairwise solver (its steps cost
#:   O(K), so a CPU pool is narrower and checks less often).
#: * ``kl_lanes``: lanes of RecoverKL's projected Newton pool.
#: * ``kl_block_entries``: entries of Q-bar (block_rows x V) in one RecoverKL block: 64 MB in
#:   float64 on a CPU, 2 GB on an accelerator (a block must hold a pool of lanes).
#: * ``gibbs_token_block``: tokens per block of the sampler's inverse-CDF draw (a CPU keeps a
#:   block in cache).
BACKEND_TUNING = {
    'cpu': dict(eg_lanes=128, eg_steps=1, pair_lanes=32, pair_steps=8, kl_lanes=64,
                kl_block_entries=1 << 23,
                gibbs_token_block=1 << 13),
    'accelerator': dict(eg_lanes=4096, eg_steps=16, pair_lanes=4096, pair_steps=16,
                        kl_lanes=1024, kl_block_entries=1 << 28,
                        gibbs_token_block=1 << 18),
}


def tuning(backend):
    """The :data:`BACKEND_TUNING` row of a JAX backend name (``jax.default_backend()``)."""
    return BACKEND_TUNING.get(backend, BACKEND_TUNING['accelerator'])
