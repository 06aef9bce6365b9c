"""Seeded and tandem anchors (Lund et al. 2017): user-given anchor words and groups of words,
the other anchors found around them, and recovery from pseudo-rows of Q-bar."""
import numpy as np
import pytest
from gensim.corpora import Dictionary
from gensim.test.utils import get_tmpfile

from conftest import dirichlet_second_moment, exact_cooccurrence, lda_corpus, matched_l1, separable_topics
from gensim_anchor import AnchorModel
from gensim_anchor.anchors import anchor_rows, combine_rows, find_anchors, project_rows
from gensim_anchor.cooccurrence import build_cooccurrence
from gensim_anchor.recovery import recover

V, K = 80, 4


def _corpus(anchors_per_topic, seed):
    rng = np.random.default_rng(seed)
    A, anchors = separable_topics(rng, V, K, anchors_per_topic=anchors_per_topic, anchor_mass=0.1)
    return A, anchors, lda_corpus(rng, A, 0.5, 3000, 50)


ID2WORD = {i: 'w%d' % i for i in range(V)}
KW = dict(num_topics=K, id2word=ID2WORD, random_state=0, alpha='symmetric')


@pytest.fixture(scope='module')
def single():
    """One anchor word per topic; the unseeded model finds all of them."""
    A, anchors, docs = _corpus(1, 0)
    model = AnchorModel(docs, **KW)
    assert sorted(model.anchors.tolist()) == sorted(anchors[:, 0].tolist())
    return dict(A=A, anchors=anchors[:, 0], docs=docs, model=model)


@pytest.fixture(scope='module')
def pairs():
    """Two anchor words per topic."""
    A, anchors, docs = _corpus(2, 1)
    return dict(A=A, anchors=anchors, docs=docs)


def test_seeding_all_true_anchors_gives_the_unseeded_model(single):
    unseeded = single['model']
    order = unseeded.anchors[::-1].tolist()
    seeded = AnchorModel(single['docs'], anchors=order, **KW)
    assert seeded.anchors.tolist() == order
    assert seeded.anchor_groups == [[a] for a in order]
    np.testing.assert_allclose(seeded.get_topics(), unseeded.get_topics()[::-1], atol=1e-7)
    np.testing.assert_allclose(seeded.R, unseeded.R[::-1, ::-1], rtol=1e-6, atol=1e-12)


def test_seeding_one_word_fixes_its_topic_and_finds_the_others(single):
    word = int(single['anchors'][2])
    model = AnchorModel(single['docs'], anchors=[word], **KW)
    assert model.anchors[0] == word
    assert sorted(model.anchors.tolist()) == sorted(single['anchors'].tolist())
    assert np.all(model.get_topics()[1:, word] == 0)  # pinned to topic 0
    error, _ = matched_l1(single['A'], model.get_topics().T)
    baseline, _ = matched_l1(single['A'], single['model'].get_topics().T)
    np.testing.assert_allclose(np.sort(error), np.sort(baseline), atol=1e-7)


def test_seeded_word_need_not_pass_anchor_min_df(single):
    df = single['model']._cooccurrence.doc_freq
    rare, threshold = int(np.argmin(df)), int(np.median(df))
    model = AnchorModel(single['docs'], anchors=[rare], anchor_min_df=threshold, **KW)
    assert model.anchors[0] == rare and df[rare] < threshold
    assert np.all(df[model.anchors[1:]] >= threshold)


def test_tandem_group_from_one_topic_recovers_it(pairs):
    a, b = (int(w) for w in pairs['anchors'][1])
    model = AnchorModel(pairs['docs'], anchors=[[ID2WORD[a], ID2WORD[b]]], **KW)
    assert model.anchors[0] == -1 and model.anchor_groups[0] == sorted([a, b])
    assert model.anchor_words[0] == '+'.join(ID2WORD[w] for w in sorted([a, b]))
    topic = model.get_topics()[0]
    error = np.abs(topic - pairs['A'][:, 1]).sum()
    others = [np.abs(topic - pairs['A'][:, k]).sum() for k in range(K) if k != 1]
    # Measured 0.074: the sampling error of the unseeded topics (0.06-0.07).
    assert error < 0.12 and min(others) > 1.0
    assert matched_l1(pairs['A'], model.get_topics().T)[0].max() < 0.12


def test_strings_and_ids_give_the_same_model(pairs):
    a, b, c = (int(w) for w in (pairs['anchors'][0, 0], pairs['anchors'][2, 0], pairs['anchors'][2, 1]))
    by_id = AnchorModel(pairs['docs'], anchors=[a, [b, c]], **KW)
    by_word = AnchorModel(pairs['docs'], anchors=[ID2WORD[a], (ID2WORD[b], ID2WORD[c])], **KW)
    dictionary = Dictionary([[ID2WORD[i]] for i in range(V)])  # ids 0..V-1 in this order
    assert all(dictionary.token2id[ID2WORD[i]] == i for i in range(V))
    by_dictionary = AnchorModel(pairs['docs'], anchors=[ID2WORD[a], [ID2WORD[b], ID2WORD[c]]],
                                **dict(KW, id2word=dictionary))
    # numpy arrays of ids or words, as the groups already could be (at the top level they were
    # refused).
    by_array = AnchorModel(pairs['docs'], anchors=np.array([a, b]), **KW)
    assert by_array.anchor_groups[:2] == [[a], [b]]
    by_rows = AnchorModel(pairs['docs'], anchors=np.array([[ID2WORD[b], ID2WORD[c]]]), **KW)
    for other in (by_word, by_dictionary):
        np.testing.assert_array_equal(other.get_topics(), by_id.get_topics())
        assert other.anchor_groups == by_id.anchor_groups
    assert by_rows.anchor_groups[0] == [b, c]


def test_unknown_word_warns_and_is_left_out(pairs):
    a, b = (int(w) for w in pairs['anchors'][0])
    docs = pairs['docs'] + [[(V, 1)]]  # word V occurs only in a one-token document
    id2word = {**ID2WORD, V: 'lonely'}
    with pytest.warns(UserWarning, match=r"left out 'nonexistent', 'lonely'"):
        model = AnchorModel(docs, anchors=[[ID2WORD[a], 'nonexistent', 'lonely'], ID2WORD[b]],
                            **dict(KW, id2word=id2word))
    assert model.anchor_groups[:2] == [[a], [b]]


def test_wholly_unknown_group_raises(pairs):
    with pytest.raises(ValueError, match=r"\['nope', 'neither'\]: none of its words"):
        AnchorModel(pairs['docs'], anchors=['w1', ['nope', 'neither']], **KW)
    with pytest.raises(ValueError, match=r"seeded anchor 999: none"):
        AnchorModel(pairs['docs'], anchors=[999], **KW)


def test_seed_argument_is_validated():
    with pytest.raises(ValueError, match='5 seeded anchors for num_topics=4'):
        AnchorModel(anchors=[0, 1, 2, 3, 4], **KW)
    with pytest.raises(TypeError, match=r'anchors\[1\] must be a word'):
        AnchorModel(anchors=['w1', []], **KW)
    with pytest.raises(TypeError, match=r'anchors\[0\] must be a word'):
        AnchorModel(anchors=[1.5], **KW)
    with pytest.raises(TypeError, match='anchors must be a list'):
        AnchorModel(anchors='w1', **KW)
    with pytest.raises(TypeError, match='anchors must be a list'):
        AnchorModel(anchors=np.array('w1'), **KW)
    with pytest.raises(TypeError, match=r'anchors\[0\] must be a word'):
        AnchorModel(anchors=np.array([1.5, 2.0]), **KW)
    with pytest.raises(ValueError, match='need id2word'):
        AnchorModel(corpus=[[(0, 2)]], num_topics=2, anchors=['w1'])
    with pytest.raises(ValueError, match="loss='L2' or 'KL'"):
        AnchorModel(anchors=[[0, 1]], loss='original', **KW)


def test_duplicate_seeds_raise(pairs):
    with pytest.raises(ValueError, match='#0 and #1 are the same words'):
        AnchorModel(pairs['docs'], anchors=['w3', [3, 'w3']], **KW)


def test_save_load_keeps_the_groups(pairs):
    a, b = (int(w) for w in pairs['anchors'][3])
    model = AnchorModel(pairs['docs'], anchors=[[a, b]], **KW)
    fname = get_tmpfile('seeded.model')
    model.save(fname)
    loaded = AnchorModel.load(fname)
    assert loaded.anchor_groups == model.anchor_groups
    assert loaded.anchor_words == model.anchor_words and loaded.seed_anchors == [[a, b]]
    np.testing.assert_array_equal(loaded.anchors, model.anchors)
    assert loaded.show_topics(num_topics=1, log=True)


# ----------------------------------------------------------------------------------------------
# The stages
# ----------------------------------------------------------------------------------------------

def test_find_anchors_starts_from_seeds_and_cleanup_leaves_them():
    rng = np.random.default_rng(5)
    vertices = np.eye(4)
    inside = rng.dirichlet(np.ones(4), size=30)
    Y = np.vstack([vertices, inside, [[0.25, 0.25, 0.25, 0.25]]])  # row 34: the centre
    found = find_anchors(Y, 4, candidates=np.arange(35) < 34, seeds=[34])
    assert found.indices[0] == 34 and found.greedy_indices[0] == 34
    assert len(set(found.indices[1:].tolist()) & {0, 1, 2, 3}) == 3
    with pytest.raises(ValueError, match='seeded anchors are linearly dependent'):
        find_anchors(Y, 3, seeds=[0, 34, 0])
    with pytest.raises(ValueError, match='5 seeded anchors for num_topics=4: at most one per topic'):
        find_anchors(Y, 4, seeds=[0, 1, 2, 3, 34])


@pytest.mark.parametrize('mode', ['implicit', 'dense'])
def test_extra_rows_use_the_same_projection(pairs, mode):
    cooc = build_cooccurrence(pairs['docs'][:500], V, mode=mode)
    p_w = cooc.row_sums()
    words = np.array([3, 17, 40])
    Y = project_rows(cooc, p_w, np.arange(V), 20, seed=4, extra=anchor_rows(cooc, p_w, [[w] for w in words]))
    assert Y.shape == (V + 3, 20)
    np.testing.assert_allclose(Y[V:], Y[words], rtol=1e-4, atol=1e-7)
    exact = project_rows(cooc, p_w, words, None, extra=anchor_rows(cooc, p_w, [[3, 17]]))
    np.testing.assert_allclose(exact[3], combine_rows(exact[:2]))


def test_combine_rows_is_the_normalised_harmonic_mean():
    rows = np.array([[0.2, 0.3, 0.5, 0.0], [0.4, 0.4, 0.1, 0.1]])
    combined = combine_rows(rows)
    hmean = 2 / (1 / rows[:, :3]).sum(axis=0)
    np.testing.assert_allclose(combined[:3], hmean / hmean.sum())
    assert combined[3] == 0 and combined.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(combine_rows(rows[:1]), rows[0])


def test_recover_with_a_group_is_exact_on_population_data():
    rng = np.random.default_rng(2)
    A, anchors = separable_topics(rng, 40, 3, anchors_per_topic=2, anchor_mass=0.2)
    R = dirichlet_second_moment(np.full(3, 0.4))
    cooc = exact_cooccurrence(A @ R @ A.T)
    groups = [anchors[0].tolist(), [int(anchors[1, 0])], [int(anchors[2, 1])]]
    for r_method in ('pinv', 'diagonal'):
        rec = recover(cooc, groups, 'L2', eps=1e-12, max_iter=5000, r_method=r_method)
        np.testing.assert_allclose(rec.A, A, atol=1e-5)
        np.testing.assert_allclose(rec.R, R, rtol=1e-4, atol=1e-7)
    # Only single words are pinned: the group's words are solved (and land on their topic).
    # (A solved word may take no pairwise step, when its best vertex is already optimal.)
    assert not np.isin(groups[1] + groups[2], rec.solved).any()
    assert np.isin(groups[0], rec.solved).all()
    assert np.all(rec.solver.n_iter[groups[1] + groups[2]] == 0)
    with pytest.raises(ValueError, match='one word per topic'):
        recover(cooc, groups, 'original')
