"""gensim-anchor: the anchor-words topic model of Arora et al. (ICML 2013) for gensim.

The pipeline, one module per stage, in order (:mod:`gensim_anchor.pipeline` runs them: ``read``
for the single pass, ``fit`` for the rest):

1. :mod:`gensim_anchor.cooccurrence`: bag-of-words stream -> co-occurrence Q (one pass);
   :mod:`gensim_anchor.distributed`: the same on a Dask cluster;
   1b. :mod:`gensim_anchor.rectify`: optional rectification of Q (Lee, Bindel & Mimno 2015);
2. :mod:`gensim_anchor.anchors`: anchor candidates, FastAnchorWords with the cleanup pass,
   seeded and tandem anchors (JAX, jitted);
3. :mod:`gensim_anchor.recovery`: RecoverL2 / RecoverKL by exponentiated gradient (JAX,
   vmapped over words) and the original Recover; A, R and p(z);
4. :mod:`gensim_anchor.dirichlet`: alpha = scale x p(z), the scale by the likelihood of
   :mod:`gensim_anchor.likelihood`.

Then :mod:`gensim_anchor.inference` (document topics), :mod:`gensim_anchor.hybrid` (optional
Gibbs refinement from the anchor solution) and :mod:`gensim_anchor.anchormodel`
(:class:`AnchorModel`, the gensim-facing model: it validates, calls the pipeline, stores and
logs). Below every stage: ``_validation`` (input checks), ``_defaults`` (the one table of options
and defaults), ``_bow`` (the one bag-of-words parser) and ``_sampling`` (document samples).

Around it: :mod:`gensim_anchor.evaluation` (topic recovery error, coherence, unique words) and
:mod:`gensim_anchor.synthetic` (the paper's semi-synthetic corpora).
"""
import logging

from .anchormodel import AnchorModel

__version__ = "0.1.0"
__all__ = ["AnchorModel", "__version__"]

logging.getLogger(__name__).addHandler(logging.NullHandler())
