"""Defaults and option names shared by the stages and the model (no JAX import here, so that a
saved model loads without JAX)."""

#: Recovery methods: RecoverL2, RecoverKL, and the original Recover of Arora, Ge & Moitra (2012).
LOSSES = ('L2', 'KL', 'original')
#: Default tolerance of the duality-gap test lambda^T x < eps, per loss (the authors' 1e-7).
DEFAULT_EPS = {'L2': 1e-7, 'KL': 1e-7}
#: Default iteration cap of the exponentiated-gradient solver, per word.
DEFAULT_MAX_ITER = 1000
#: Default projection dimension for FastAnchorWords (none when V is smaller).
DEFAULT_PROJECTION_DIM = 1000
#: How Q is kept: the faster of the two for the corpus, sparse scaled word-document matrix, or
#: dense V x V.
Q_MODES = ('auto', 'implicit', 'dense')
#: q_mode='auto' keeps Q dense only if it takes at most this many bytes (V^2 float64) ...
DENSE_Q_BUDGET = 2 ** 30
#: ... and the fit is estimated faster that way, from these costs in nanoseconds (timed once on
#: the 2-core AMD EPYC of benchmarks/results, scipy and OpenBLAS on one thread, by products of
#: the shapes that benchmarks/bench_scale.py runs; the timing script was not kept): per
#: nonzero of H~ and column of a thin sparse product (float32 for the projection, float64); per
#: entry of Q and column of a dense product; per pair of distinct words of a document and per
#: entry of Q when Q is formed from H~ (see cooccurrence.choose_mode).
Q_COSTS = dict(sparse32=0.25, sparse64=0.45, dense32=0.022, dense64=0.037, pair=5.0, entry=5.0)
#: Samplers of :func:`gensim_anchor.hybrid.gibbs_refine`.
SAMPLERS = ('collapsed', 'blocked')
#: Sub-steps of a collapsed sweep (see :func:`gensim_anchor.hybrid.gibbs_refine`).
DEFAULT_SUBSTEPS = 2
#: Topic-word prior of the sampler (tomotopy's and Griffiths & Steyvers' 0.01).
DEFAULT_ETA = 0.01
