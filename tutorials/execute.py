"""Run the tutorials at full size and keep their outputs: ``python tutorials/execute.py [NAME ...]``.

Each notebook runs top to bottom in a fresh ``python3`` kernel (ipykernel of this environment),
in a temporary working directory, and is written back in place with its outputs. Progress-bar
updates in the outputs are collapsed to their final state. Without names, all ``*.ipynb`` here.
The test suite runs the same notebooks with ``GENSIM_ANCHOR_TUTORIAL_SMALL=1``
(``tests/test_tutorials.py``); this script refuses to run with that variable set.
"""
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def main(names):
    if os.environ.get('GENSIM_ANCHOR_TUTORIAL_SMALL'):
        sys.exit("unset GENSIM_ANCHOR_TUTORIAL_SMALL: the committed outputs are those of a full run")
    paths = [HERE / name for name in names] if names else sorted(HERE.glob('*.ipynb'))
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as workdir:
            NotebookClient(nb, timeout=600, kernel_name='python3', coalesce_streams=True,
                           record_timing=False, resources={'metadata': {'path': workdir}}).execute()
        nbformat.write(nb, path)
        print("%s: %.0f s" % (path.name, time.perf_counter() - start))


if __name__ == '__main__':
    main(sys.argv[1:])
