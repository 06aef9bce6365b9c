"""XLA:CPU's loop emitters against its default fusion emitters, program by program: compile time
(the first call in a fresh process, with the compile caches off) and run time (the best of the
warm calls after it), on KOS (K = 50, the 90% split of ``bench_dropin.py``).

Each program is timed through the stage that calls it:

* ``anchors``: FastAnchorWords (``anchors._fast_anchor_words``), a default fit's anchor stage;
* ``l2``: RecoverL2 (``recovery._solve_l2_pairwise``), its recovery stage;
* ``filter``: the likelihood's particle filter (``likelihood._filter_batch``), its alpha grid
  (the ``dirichlet`` stage) and ``log_perplexity`` of 300 held-out documents;
* ``infer``: ``model.inference`` of the same 300 documents (``inference._infer_chunk``);
* ``kl``: RecoverKL's Newton solver (``recovery._solve_kl``), a K = 20 KL fit's recovery stage;
* ``sweep``: the Gibbs sampler (``hybrid``'s sweep, counts, log-joint and first-topics
  programs), 20 sweeps;
* ``rectify``: the dense alternating projection (``rectify._rectify``), a ``rectify='ap'`` fit's
  rectification (its ``rectify`` stage).

Usage (needs ``../shared/data``)::

    python benchmarks/bench_emitters.py [--repeat 2] [--stages fit sweeps kl rectify]
                                        [--loop anchors l2 filter infer kl sweep counts
                                         log_joint first_topics rectify]

Every column runs in a fresh process, in alternation: ``fusion`` with XLA's default emitters for
every one of the package's stored programs, ``loop`` with the loop emitters for the programs
named by ``--loop`` (default: all) and the defaults for the others. ``--stages`` picks the
stages timed (``fit``: the default fit's anchors, recovery and alpha grid, then
``log_perplexity`` and inference). Appends to ``benchmarks/results/bench_emitters.log``.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOG = HERE / 'results' / 'bench_emitters.log'

PROGRAMS = ('anchors', 'l2', 'filter', 'infer', 'kl', 'sweep', 'counts', 'log_joint', 'first_topics',
            'rectify')

CHILD = r"""
import json, sys, time
sys.path.insert(0, %(here)r)
from bench_dropin import load, split
from gensim_anchor import _compile_cache, anchors, hybrid, inference, likelihood, recovery
from gensim_anchor import AnchorModel
from gensim_anchor import rectify
loop = set(sys.argv[2].split(',')) if sys.argv[1] == 'loop' else set()
stages = sys.argv[3].split(',')
sampler = hybrid._programs()
programs = dict(anchors=[anchors._fast_anchor_words], l2=[recovery._solve_l2_pairwise, recovery._solve_l2],
                filter=[likelihood._filter_batch], infer=[inference._infer_chunk], kl=[recovery._solve_kl],
                sweep=[sampler['sweep']], counts=[sampler['counts']], log_joint=[sampler['log_joint']],
                first_topics=[sampler['first_topics']], rectify=[rectify._rectify])
for name, group in programs.items():
    for program in group:
        program._loop_emitters = name in loop
corpus, dictionary = load('kos')
train, heldout = split(corpus, 0)
docs = heldout[:300]
out = {}

def timed(label, run, repeat=3):
    seconds = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        value = run()
        seconds.append(time.perf_counter() - start)
    out[label] = (seconds[0], min(seconds[1:]))
    return value

fits = []
def fit(**kw):
    fits.append(AnchorModel(train, num_topics=50, id2word=dictionary, random_state=0, **kw))
    return fits[-1]
if 'fit' in stages:
    timed('fit', fit, repeat=2)
    first, best = fits[0].timings, {k: min(f.timings[k] for f in fits[1:]) for k in fits[0].timings}
    for stage in ('anchors', 'recovery', 'dirichlet'):
        out[stage] = (first[stage], best[stage])
    timed('log_perplexity', lambda: fits[-1].log_perplexity(docs), repeat=2)
    timed('inference', lambda: fits[-1].inference(docs))
if 'sweeps' in stages:
    model = fits[-1] if fits else AnchorModel(train, num_topics=50, id2word=dictionary,
                                              alpha='symmetric', random_state=0)
    timed('sweeps', lambda: model.refine(train, 'gibbs', num_sweeps=20, burn_in=10, random_state=0),
          repeat=2)
if 'kl' in stages:
    kl = []
    timed('kl_fit', lambda: kl.append(AnchorModel(train, num_topics=20, id2word=dictionary, loss='KL',
                                                  alpha='symmetric', random_state=0)), repeat=1)
    out['kl_recovery'] = (kl[0].timings['recovery'], kl[1].timings['recovery'])
if 'rectify' in stages:
    ap = []
    timed('ap_fit', lambda: ap.append(AnchorModel(train, num_topics=50, id2word=dictionary,
                                                  rectify='ap', alpha='symmetric', random_state=0)),
          repeat=1)
    out['ap_rectify'] = (ap[0].timings['rectify'], ap[1].timings['rectify'])
print(json.dumps(out))
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=2, help="processes per setting")
    parser.add_argument('--stages', nargs='+', default=['fit', 'sweeps', 'kl'],
                        choices=['fit', 'sweeps', 'kl', 'rectify'])
    parser.add_argument('--loop', nargs='+', default=list(PROGRAMS), choices=list(PROGRAMS),
                        help="the programs that get the loop emitters in the 'loop' columns")
    args = parser.parse_args(argv)
    env = dict(os.environ, GENSIM_ANCHOR_CACHE_DIR='off')
    env['PYTHONPATH'] = str(HERE.parent) + os.pathsep + env.get('PYTHONPATH', '')
    rows = []
    for _ in range(args.repeat):
        for mode in ('fusion', 'loop'):
            out = subprocess.run([sys.executable, '-c', CHILD % dict(here=str(HERE)), mode,
                                  ','.join(args.loop), ','.join(args.stages)], env=env,
                                 capture_output=True, text=True, check=True)
            rows.append((mode, json.loads(out.stdout.strip().splitlines()[-1])))
            print(mode, rows[-1][1], flush=True)
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=HERE, capture_output=True,
                            text=True).stdout.strip()
    lines = ['# %s  commit %s  $ python benchmarks/bench_emitters.py %s'
             % (datetime.datetime.utcnow().strftime('%Y-%m-%dT%H:%MZ'), commit,
                ' '.join(argv if argv is not None else sys.argv[1:])),
             '# seconds: first call (compile and run) / best warm call; each column a fresh process']
    labels = list(rows[0][1])
    lines.append('%-15s ' % 'stage' + ' '.join('%15s' % mode for mode, _ in rows))
    for label in labels:
        lines.append('%-15s ' % label + ' '.join('%7.2f/%-7.3f' % tuple(r[label]) for _, r in rows))
    text = '\n'.join(lines)
    print(text)
    LOG.parent.mkdir(exist_ok=True)
    with open(LOG, 'a') as f:
        f.write(text + '\n')


if __name__ == '__main__':
    main()
