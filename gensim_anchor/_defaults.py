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
#: How Q is kept: sparse scaled word-document matrix, or dense V x V.
Q_MODES = ('implicit', 'dense')
