"""gensim compatibility helpers that need no model state of their own."""
import numpy as np
from gensim.matutils import hellinger, jaccard_distance, jensen_shannon, kullback_leibler

_DISTANCES = {
    'kullback_leibler': kullback_leibler,
    'hellinger': hellinger,
    'jaccard': jaccard_distance,
    'jensen_shannon': jensen_shannon,
}


def _floored(topics, floor=1e-12):
    topics = np.maximum(np.asarray(topics, dtype=np.float64), floor)
    return topics / topics.sum(axis=1, keepdims=True)


def topic_diff(model, other, distance, num_words, n_ann_terms, diagonal, annotation, normed):
    """LdaModel.diff for any two gensim topic models over the same vocabulary."""
    if distance not in _DISTANCES:
        raise ValueError("distance must be one of %s, got %r" % (", ".join(map(repr, _DISTANCES)), distance))
    if not hasattr(other, 'get_topics') or not hasattr(other, 'show_topic'):
        raise TypeError("other must be a gensim topic model (with get_topics and show_topic), got %s"
                        % type(other).__name__)
    # Floored and renormalised: anchor words have probability exactly 0 in the other topics,
    # which would make every KL distance infinite (LdaModel's topics never contain zeros).
    d1, d2 = (_floored(m.get_topics()) for m in (model, other))
    if d1.shape[1] != d2.shape[1]:
        raise ValueError("the models have different vocabularies (%d and %d terms)" % (d1.shape[1], d2.shape[1]))
    t1, t2 = d1.shape[0], d2.shape[0]
    if diagonal and t1 != t2:
        raise ValueError("diagonal=True needs the same number of topics in both models (%d and %d)" % (t1, t2))
    first = [{w for w, _ in model.show_topic(k, topn=num_words)} for k in range(t1)]
    second = [{w for w, _ in other.show_topic(k, topn=num_words)} for k in range(t2)]
    if distance == 'jaccard':
        d1, d2 = first, second
    func = _DISTANCES[distance]
    shape = (t1,) if diagonal else (t1, t2)
    z = np.zeros(shape)
    terms = np.zeros(shape, dtype=list) if annotation else None
    for cell in np.ndindex(shape):
        i, j = (cell[0], cell[0]) if diagonal else cell
        z[cell] = func(d1[i], d2[j])
        if annotation:
            common = list(first[i] & second[j])[:n_ann_terms]
            differ = list(first[i].symmetric_difference(second[j]))[:n_ann_terms]
            terms[cell] = [common, differ]
    if normed and np.abs(np.max(z)) > 1e-8:
        z /= np.max(z)
    return z, terms
