"""chrf_core.arrow and the statistics' Arrow form: Arrow data scored by column names, every split of a corpus
merging to one process's report byte for byte, errors naming the column and row, memory flat over a reader."""

import itertools
import json
import tracemalloc

import pytest
from conftest import CASES, CORPUS, PARTITIONINGS, REFERENCE_COLUMNS, expected, expected_scores, mbr_sets, need, split
from hypothesis import given, settings
from hypothesis import strategies as st

pa = need("pyarrow")

from chrf_core import CHRF, Counts, InvalidInputError, arrow  # noqa: E402


def table(columns):
    return pa.table(columns)


@pytest.mark.parametrize("parts", PARTITIONINGS)
@pytest.mark.parametrize(("name", "chrf", "references"), CASES, ids=[case[0] for case in CASES])
def test_statistics_of_any_split_merge_to_the_report_of_the_whole(name, chrf, references, parts):
    columns = REFERENCE_COLUMNS[:references]
    pieces = [arrow.statistics(chrf, table(part), "hypothesis", columns) for part in split(CORPUS, parts)]
    merged = Counts.merge(pieces)
    whole = expected(chrf, references).to_dict()
    assert json.dumps(chrf.report(merged).to_dict()) == json.dumps(whole)
    rows = pa.Table.from_batches([piece.to_arrow() for piece in pieces])  # the Arrow form, kept and read back
    assert json.dumps(chrf.report(Counts.from_arrow(rows)).to_dict()) == json.dumps(whole)
    assert Counts.from_dict(json.loads(json.dumps(merged.to_dict()))) == merged  # and the JSON form


def test_the_statistics_arrow_form_is_versioned_int64_columns_with_the_settings_as_json():
    chrf = CHRF(word_order=2, normalize="NFC")
    batch = chrf.corpus_counts(["a b"], ["a c"]).to_arrow()
    assert batch.schema.metadata == {b"chrf_components.statistics": b"1"}
    assert batch.schema.names[:3] == ["settings", "segment_count", "char1_hypothesis_ngrams"]
    assert batch.schema.names[-1] == "word2_matching_ngrams" and len(batch.schema) == 2 + 3 * 8
    assert {str(field.type) for field in batch.schema if field.name != "settings"} == {"int64"}
    assert json.loads(batch.column("settings")[0].as_py()) == {
        "char_order": 6, "word_order": 2, "beta": 2, "lowercase": False, "include_whitespace": False,
        "averaging": "precision_recall", "normalize": "NFC"}
    assert chrf.corpus_counts(["a b"], ["a c"]).to_dict()["version"] == 1


def test_statistics_of_other_settings_are_refused_by_name_when_read_back_together():
    rows = pa.Table.from_batches([CHRF().corpus_counts(["a"], ["a"]).to_arrow(),
                                  CHRF(beta=3).corpus_counts(["a"], ["b"]).to_arrow()])
    with pytest.raises(ValueError, match=r"statistics of other settings \(beta 2 vs 3\)"):
        Counts.from_arrow(rows)


def test_statistics_of_another_version_or_with_impossible_counts_are_refused():
    batch = CHRF().corpus_counts(["ab"], ["ab"]).to_arrow()
    with pytest.raises(ValueError, match="version 2 is not one this library reads"):
        Counts.from_arrow(batch.replace_schema_metadata({b"chrf_components.statistics": b"2"}))
    tampered = batch.set_column(4, "char1_matching_ngrams", pa.array([5], pa.int64()))
    with pytest.raises(ValueError, match="char 1: 5 matches but 2 hypothesis and 2 reference n-grams"):
        Counts.from_arrow(tampered)


def test_an_engine_sum_is_taken_only_where_no_int64_sum_can_have_wrapped():
    chrf = CHRF(char_order=1)
    columns = ["segment_count", "char1_hypothesis_ngrams", "char1_reference_ngrams", "char1_matching_ngrams"]
    text = json.dumps({**chrf.as_dict(), "normalize": None}, separators=(",", ":"))
    big = 2**61
    exact = Counts.of_sums([text], 3, dict.fromkeys(columns, 3 * big), dict.fromkeys(columns, big))
    assert exact.orders == ((3 * big, 3 * big, 3 * big),) and exact.segment_count == 3 * big
    with pytest.raises(OverflowError, match="segment_count: 4 rows of up to 2305843009213693952 may sum past"):
        Counts.of_sums([text], 4, dict.fromkeys(columns, -2**63), dict.fromkeys(columns, big))
    with pytest.raises(OverflowError, match="char1_hypothesis_ngrams"):  # Spark's try_sum gives null
        Counts.of_sums([text], 2, {**dict.fromkeys(columns, 2), "char1_hypothesis_ngrams": None},
                       dict.fromkeys(columns, 1))


def test_an_empty_part_counts_nothing_and_no_segments_at_all_is_the_corpus_error():
    chrf = CHRF()
    empty = arrow.statistics(chrf, pa.table({"hypothesis": pa.array([], pa.string()),
                                             "reference": pa.array([], pa.string())}))
    assert empty == Counts.empty(chrf) and Counts.merge([empty, chrf.corpus_counts(["a"], ["a"])]).segment_count == 1
    with pytest.raises(InvalidInputError, match="hypotheses: at least 1 segment, got 0"):
        chrf.report(empty)
    with pytest.raises(InvalidInputError, match="hypotheses: at least 1 segment, got 0"):
        Counts.from_arrow(empty.to_arrow().slice(0, 0))


@pytest.mark.parametrize("parts", [1, 7])
def test_segment_scores_of_arrow_data_are_those_of_the_lists(parts):
    chrf = CHRF(word_order=2)
    got = [score for part in split(CORPUS, parts)
           for score in arrow.segment_scores(chrf, table(part), references=REFERENCE_COLUMNS).to_pylist()]
    assert got == expected_scores(chrf, 3).tolist()


def test_a_column_of_reference_lists_is_each_segments_references():
    chrf = CHRF(word_order=2)
    lists = [[text for text in texts if text is not None] for texts in zip(*(CORPUS[name] for name in
                                                                            REFERENCE_COLUMNS))]
    data = pa.table({"hyp": CORPUS["hypothesis"], "refs": lists})
    assert chrf.report(arrow.statistics(chrf, data, "hyp", "refs")).to_dict() == expected(chrf, 3).to_dict()
    assert arrow.segment_scores(chrf, data, "hyp", "refs").to_pylist() == expected_scores(chrf, 3).tolist()


def test_memory_stays_flat_over_a_reader_of_many_batches():
    chrf = CHRF(word_order=2)
    schema = pa.schema([("hypothesis", pa.string()), ("reference", pa.string())])
    text = CORPUS["hypothesis"][:40]

    def peak(batches):
        reader = pa.RecordBatchReader.from_batches(schema, (pa.record_batch(
            [pa.array(text * 25), pa.array(CORPUS["reference"][:40] * 25)], schema=schema) for _ in range(batches)))
        tracemalloc.start()
        counts = arrow.statistics(chrf, reader)
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert counts.segment_count == batches * 1000
        return top

    small, large = peak(10), peak(100)
    assert large < 1.5 * small, (small, large)  # ten times the batches, not ten times the memory


@pytest.mark.parametrize(("data", "message"), [
    ({"hypothesis": ["a", None, "c"], "reference": ["a", "b", "c"]}, "hypothesis[1]: must be a string, got null"),
    ({"hypothesis": ["a", "b"], "reference": ["a", None]}, "reference[1]: must be a string, got null"),
    ({"hypothesis": [1, 2], "reference": ["a", "b"]}, "hypothesis: must be a column of strings, got int64"),
    ({"hyp": ["a"], "reference": ["a"]}, "hypothesis: no such column (the columns: hyp, reference)"),
    ({"hypothesis": ["a", "b"], "reference": [["a"], []]}, "reference[1]: at least 1 reference per segment, got 0"),
    ({"hypothesis": ["a", "\ud800"], "reference": ["a", "b"]}, None),
])
def test_bad_arrow_data_is_an_error_naming_the_column_and_row(data, message):
    if message is None:  # Arrow itself cannot hold a lone surrogate: it refuses at the door
        with pytest.raises(UnicodeEncodeError):
            pa.table(data)
        return
    with pytest.raises(InvalidInputError) as raised:
        arrow.statistics(CHRF(), pa.table(data))
    assert str(raised.value) == message


def test_rows_are_counted_from_the_first_row_of_the_data_across_batches():
    batches = [pa.record_batch({"hypothesis": ["a"] * 3, "reference": ["b"] * 3}),
               pa.record_batch({"hypothesis": ["a", None], "reference": ["b", "c"]})]
    with pytest.raises(InvalidInputError, match=r"hypothesis\[4\]: must be a string, got null"):
        arrow.statistics(CHRF(), batches)
    with pytest.raises(InvalidInputError, match=r"hypothesis\[4\]: must be a string, got null"):
        arrow.segment_scores(CHRF(), batches)


@pytest.mark.parametrize("method", ["aggregate", "pairwise"])
@pytest.mark.parametrize("weighted", [False, True])
def test_mbr_rows_are_the_batch_calls_with_the_same_winners(method, weighted):
    chrf = CHRF(word_order=2)
    sets, weights = mbr_sets()
    data = pa.table({"candidates": sets, "weights": weights})
    decoded = arrow.mbr(chrf, data, weights="weights" if weighted else None, method=method, matrix=True, threads=2)
    if method == "aggregate":
        utilities = ([chrf.aggregate(texts, texts, weights=share) for texts, share in zip(sets, weights)] if weighted
                     else chrf.aggregate_batch(sets, sets))
    else:
        matrices = chrf.pairwise_batch(sets, sets)
        assert decoded.column("mbr_matrix").to_pylist() == [matrix.tolist() for matrix in matrices]
        import numpy

        utilities = [numpy.average(matrix, axis=1, weights=share if weighted else None)
                     for matrix, share in zip(matrices, weights)]
    assert decoded.column("mbr_utilities").to_pylist() == [list(map(float, scores)) for scores in utilities]
    best = [int(max(range(len(scores)), key=lambda k, scores=scores: (scores[k], -k))) for scores in utilities]
    assert decoded.column("mbr_best").to_pylist() == best
    assert decoded.column("mbr_winner").to_pylist() == [texts[k] for texts, k in zip(sets, best)]


@pytest.mark.parametrize(("columns", "options", "message"), [
    ({"candidates": [["a", "b"], None]}, {}, "candidates[1]: must be a list, got null"),
    ({"candidates": [["a", "b"], ["c", None]]}, {}, "candidates[1]: item 1: must be a string, got null"),
    ({"candidates": [["a"], []]}, {}, "candidates[1]: at least 1 segment, got 0"),
    ({"candidates": [["a", "b"], ["c", "d"]], "w": [[1, 2], [1, 2, 3]]}, {"weights": "w"},
     "w[1]: must have one weight per reference (2), got 3"),
    ({"candidates": [["a", "b"]], "w": [[1, None]]}, {"weights": "w"}, "w[0]: item 1: expected a number, got NoneType"),
    ({"candidates": [["a", "b"]], "refs": [["x"]], "w": [[1, 1]]}, {"weights": "w", "references": "refs"},
     "w[0]: must have one weight per reference (1), got 2"),
    ({"candidates": ["a", "b"]}, {}, "candidates: must be a column of lists of strings, got string"),
    ({"cands": [["a"]]}, {}, "candidates: no such column (the columns: cands)"),
])
def test_bad_mbr_rows_are_errors_naming_the_column_and_row(columns, options, message):
    with pytest.raises(InvalidInputError) as raised:
        arrow.mbr(CHRF(), pa.table(columns), **options)
    assert str(raised.value) == message


TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(TEXTS, TEXTS), min_size=1, max_size=30), st.lists(st.integers(0, 30), max_size=6),
       st.sampled_from([case[1] for case in CASES]))
def test_statistics_of_random_unicode_split_anywhere_merge_to_the_whole(pairs, cuts, chrf):
    hypotheses, references = [pair[0] for pair in pairs], [pair[1] for pair in pairs]
    bounds = sorted({0, len(pairs), *(min(cut, len(pairs)) for cut in cuts)})
    pieces = [arrow.statistics(chrf, pa.table({"hypothesis": hypotheses[start:end],
                                               "reference": pa.array(references[start:end], pa.string())}))
              for start, end in itertools.pairwise(bounds)]
    assert Counts.from_arrow([piece.to_arrow() for piece in pieces]) == chrf.corpus_counts(hypotheses, [references])


def test_the_modules_examples_run_as_doctests():
    import doctest

    import chrf_core.arrow

    result = doctest.testmod(chrf_core.arrow)
    assert result.attempted >= 5 and result.failed == 0
