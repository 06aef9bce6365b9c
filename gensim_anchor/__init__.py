"""gensim-anchor: the anchor-words topic model of Arora et al. (ICML 2013) for gensim.

The pipeline, one module per stage:

* :mod:`gensim_anchor.cooccurrence`: bag-of-words stream -> co-occurrence Q (one pass);
  :mod:`gensim_anchor.distributed`: the same on a Dask cluster;
* :mod:`gensim_anchor.rectify`: optional rectification of Q (Lee, Bindel & Mimno 2015);
* :mod:`gensim_anchor.anchors`: FastAnchorWords with the cleanup pass, seeded and tandem
  anchors (JAX, jitted);
* :mod:`gensim_anchor.recovery`: RecoverL2 / RecoverKL by exponentiated gradient (JAX,
  vmapped over words) and the original Recover; A, R and p(z);
* :mod:`gensim_anchor.dirichlet`: alpha = scale x p(z), the scale by likelihood;
* :mod:`gensim_anchor.inference`, :mod:`gensim_anchor.likelihood`: document topics and the
  held-out likelihood estimate;
* :mod:`gensim_anchor.hybrid`: optional Gibbs refinement from the anchor solution;
* :mod:`gensim_anchor.anchormodel`: :class:`AnchorModel`, the gensim-facing model.

Around it: :mod:`gensim_anchor.evaluation` (topic recovery error, coherence, unique words) and
:mod:`gensim_anchor.synthetic` (the paper's semi-synthetic corpora).
"""
import logging

from .anchormodel import AnchorModel

__version__ = "0.1.0"
__all__ = ["AnchorModel", "__version__"]

logging.getLogger(__name__).addHandler(logging.NullHandler())
