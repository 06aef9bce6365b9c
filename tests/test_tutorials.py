"""The tutorials (``tutorials/*.ipynb``) run from top to bottom, so a broken tutorial fails the suite.

Each notebook is executed in a fresh Jupyter kernel with ``GENSIM_ANCHOR_TUTORIAL_SMALL=1``, which
makes it use small corpora and short trainings; the outputs committed with the notebooks come from
a full-size run (``python tutorials/execute.py``)."""
import base64
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip('nbformat', reason="the tutorials are executed with nbformat and "
                               "nbclient (pip install -e '.[test]')")
nbclient = pytest.importorskip('nbclient', reason="the tutorials are executed with nbclient "
                               "(pip install -e '.[test]')")
# The 'python3' kernel: ipykernel in this environment. jupyter_client finds it without
# `ipykernel install` and starts it with this interpreter (sys.executable).
pytest.importorskip('ipykernel', reason="the tutorials run in an ipykernel kernel (pip install -e '.[test]')")

TUTORIALS = Path(__file__).resolve().parents[1] / 'tutorials'
NOTEBOOKS = ('01_quick_start.ipynb', '02_paper_in_an_afternoon.ipynb', '03_going_big.ipynb')
#: Seconds a cell may run in the small setting (the slowest takes about 15 s on 2 busy cores).
CELL_TIMEOUT = 300
PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


def execute(name, tmp_path, monkeypatch):
    """The notebook executed in the small setting, with its working directory in tmp_path."""
    monkeypatch.setenv('GENSIM_ANCHOR_TUTORIAL_SMALL', '1')  # inherited by the kernel
    nb = nbformat.read(TUTORIALS / name, as_version=4)
    # A cell that raises makes execute() raise CellExecutionError, with the cell and traceback.
    nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name='python3',
                            resources={'metadata': {'path': str(tmp_path)}}).execute()
    return nb


def stdout(nb):
    return ''.join(out.get('text', '') for cell in nb.cells if cell.cell_type == 'code'
                   for out in cell.outputs if out.output_type == 'stream' and out.name == 'stdout')


def images(nb):
    """The PNG figures among the outputs, decoded."""
    return [base64.b64decode(out.data['image/png']) for cell in nb.cells if cell.cell_type == 'code'
            for out in cell.outputs if 'image/png' in out.get('data', {})]


def numbers_after(text, label):
    number = r'[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?'
    return [float(x) for x in re.findall(re.escape(label) + r'\s*(' + number + ')', text)]


def test_quick_start(tmp_path, monkeypatch):
    nb = execute(NOTEBOOKS[0], tmp_path, monkeypatch)
    text = stdout(nb)
    assert 'AnchorModel<num_terms=' in text
    (coherence,) = numbers_after(text, 'Average topic coherence:')
    assert coherence < 0  # UMass: a mean of log ratios of document frequencies
    assert 'same topics: True' in text and 'same document topics: True' in text
    assert "'method': 'gibbs'" in text  # refine() ran and recorded itself
    figures = images(nb)
    assert len(figures) == 2 and all(f.startswith(PNG_MAGIC) for f in figures)


def test_paper_in_an_afternoon(tmp_path, monkeypatch):
    nb = execute(NOTEBOOKS[1], tmp_path, monkeypatch)
    text = stdout(nb)
    assert text.count('mean L1 error per topic') == 2
    for method in ('Recover', 'RecoverKL', 'RecoverL2'):
        assert len(re.findall(r'^%s\s+[0-9.]+' % method, text, flags=re.M)) == 2
    figures = images(nb)
    assert len(figures) == 2 and all(f.startswith(PNG_MAGIC) for f in figures)


def test_going_big(tmp_path, monkeypatch):
    nb = execute(NOTEBOOKS[2], tmp_path, monkeypatch)
    text = stdout(nb)
    # implicit vs dense Q, and the Dask model vs the updated single-machine one: the same topics.
    differences = numbers_after(text, 'largest difference between their topics:') + \
        numbers_after(text, 'largest difference from the updated single-machine model:')
    assert len(differences) == 2 and max(differences) < 1e-6
    assert re.search(r'^\d+ documents now, updated in', text, flags=re.M)
    # The refinement on the cluster ran over the five partitions, with no worker lost.
    assert "'method': 'gibbs'" in text and "'partitions': 5" in text and "'recovered': 0" in text
    figures = images(nb)
    assert len(figures) == 1 and figures[0].startswith(PNG_MAGIC)


@pytest.mark.parametrize('name', NOTEBOOKS)
def test_committed_notebooks_keep_their_outputs(name):
    """The committed notebooks were run top to bottom in one kernel and kept the outputs."""
    nb = nbformat.read(TUTORIALS / name, as_version=4)
    nbformat.validate(nb)
    counts = [cell.execution_count for cell in nb.cells if cell.cell_type == 'code']
    assert counts == list(range(1, len(counts) + 1))
    outputs = [out for cell in nb.cells if cell.cell_type == 'code' for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == 'error']
    assert images(nb)
