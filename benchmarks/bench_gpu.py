"""GPU check and timings: the same JAX code on an accelerator, against reference topics.

Run where ``jax.default_backend()`` is ``'gpu'``. It prints, for KOS at K=50:

* the L2 fit, cold (with compilation) and warm, and the largest difference of its topics from
  CPU topics saved beforehand with ``--save-reference`` (same seed, same anchors expected);
* the RecoverKL fit (the EG solver over whole rows of Q-bar) with its iteration counts;

and then the drop-in benchmark (:mod:`bench_dropin`) on the corpora named by ``--dropin``,
RecoverKL included, which is too slow for a 2-core CPU on 20 Newsgroups.

Usage::

    python benchmarks/bench_gpu.py --save-reference benchmarks/results/kos_l2_cpu.npz   # on a CPU
    python benchmarks/bench_gpu.py --reference benchmarks/results/kos_l2_cpu.npz --dropin 20ng
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_dropin  # noqa: E402


def _fit(corpus, dictionary, **kw):
    from gensim_anchor import AnchorModel
    start = time.perf_counter()
    model = AnchorModel(corpus, num_topics=50, id2word=dictionary, alpha='symmetric', random_state=0,
                        **kw)
    return model, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--save-reference', metavar='NPZ')
    parser.add_argument('--reference', metavar='NPZ')
    parser.add_argument('--dropin', nargs='*', default=[], choices=['kos', '20ng'])
    parser.add_argument('--skip-kos-kl', action='store_true')
    args = parser.parse_args(argv)
    import jax
    print("jax %s, backend %s, devices %s" % (jax.__version__, jax.default_backend(), jax.devices()),
          flush=True)
    corpus, dictionary = bench_dropin.load('kos')
    model, cold = _fit(corpus, dictionary)
    _, warm = _fit(corpus, dictionary)
    print("KOS L2: cold fit %.2f s, warm fit %.2f s, stages %s" % (
        cold, warm, {k: round(v, 3) for k, v in model.timings.items()}), flush=True)
    if args.save_reference:
        np.savez_compressed(args.save_reference, topics=model.get_topics(), anchors=model.anchors)
        print("saved", args.save_reference)
    if args.reference:
        ref = np.load(args.reference)
        same = np.array_equal(ref['anchors'], model.anchors)
        diff = float(np.abs(ref['topics'] - model.get_topics()).max())
        print("KOS L2 vs CPU reference: anchors identical %s, max |topic difference| %.3g"
              % (same, diff), flush=True)
    if not args.skip_kos_kl:
        kl, t = _fit(corpus, dictionary, loss='KL')
        it = kl.solver_n_iter[kl.solver_n_iter > 0]
        print("KOS KL: fit %.2f s, EG iterations mean %.0f, capped %d, not converged %d" % (
            t, it.mean(), int((it >= kl.max_iter).sum()), int((~kl.solver_converged).sum())),
            flush=True)
    if args.dropin:
        bench_dropin.main(['--corpora'] + args.dropin + ['--with-kl'])


if __name__ == '__main__':
    main()
