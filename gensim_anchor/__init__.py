"""gensim-anchor: the anchor-words topic model of Arora et al. (ICML 2013) for gensim.

The pipeline, one module per stage:

* :mod:`gensim_anchor.cooccurrence`: bag-of-words stream -> co-occurrence Q (one pass);
* :mod:`gensim_anchor.anchors`: FastAnchorWords with the cleanup pass (JAX, jitted);
* :mod:`gensim_anchor.recovery`: RecoverL2 / RecoverKL by exponentiated gradient (JAX,
  vmapped over words) and the original Recover; A, R and p(z);
* :mod:`gensim_anchor.anchormodel`: :class:`AnchorModel`, the gensim-facing model.
"""
import logging

from .anchormodel import AnchorModel

__version__ = "0.1.0"
__all__ = ["AnchorModel", "__version__"]

logging.getLogger(__name__).addHandler(logging.NullHandler())
