"""``python -m gensim_anchor``: the ``gensim-anchor`` command line (:mod:`gensim_anchor.cli`)."""
import sys

from .cli import main

sys.exit(main())
