"""chrf_core.engines.arrow and the statistics' Arrow form: Arrow data scored by column names, every split of a corpus
merging to one process's report byte for byte (per group too), every statistics row checked where it is summed,
errors naming the column and row, memory flat over a reader."""

import itertools
import json
import tracemalloc

import pytest
from conftest import (
    CASES,
    CORPUS,
    FORGERIES,
    PARTITIONINGS,
    REFERENCE_COLUMNS,
    expected,
    expected_groups,
    expected_scores,
    forged,
    genuine_statistics,
    grouped_json,
    mbr_sets,
    need,
    respaced,
    split,
)
from hypothesis import given, settings
from hypothesis import strategies as st

pa = need("pyarrow")

from chrf_core import CHRF, Counts, InvalidInputError  # noqa: E402
from chrf_core.engines import arrow  # noqa: E402
from chrf_core.engines import statistics as form  # noqa: E402


def table(columns):
    return pa.table(columns)


@pytest.mark.parametrize("parts", PARTITIONINGS)
@pytest.mark.parametrize(("name", "chrf", "references"), CASES, ids=[case[0] for case in CASES])
def test_statistics_of_any_split_merge_to_the_report_of_the_whole(name, chrf, references, parts):
    columns = REFERENCE_COLUMNS[:references]
    pieces = [arrow.statistics(table(part), chrf, "hypothesis", columns) for part in split(CORPUS, parts)]
    whole = expected(chrf, references).to_dict()
    rows = pa.concat_tables(pieces)  # the Arrow form, kept and read back
    merged = arrow.counts(rows)
    assert json.dumps(chrf.report(merged).to_dict()) == json.dumps(whole)
    assert json.dumps(arrow.corpus_score(table(CORPUS), chrf, "hypothesis", columns).to_dict()) == json.dumps(whole)
    assert Counts.from_dict(json.loads(json.dumps(merged.to_dict()))) == merged  # and the JSON form


def test_the_statistics_arrow_form_is_versioned_int64_columns_with_the_settings_as_json():
    chrf = CHRF(word_order=2, normalize="NFC")
    batch = form.to_arrow(chrf.corpus_counts(["a b"], ["a c"]))
    assert batch.schema.metadata == {b"chrf_components.statistics": b"1"}
    assert batch.schema.names[:3] == ["settings", "segment_count", "char1_hypothesis_ngrams"]
    assert batch.schema.names[-1] == "word2_matching_ngrams" and len(batch.schema) == 2 + 3 * 8
    assert {str(field.type) for field in batch.schema if field.name != "settings"} == {"int64"}
    assert json.loads(batch.column("settings")[0].as_py()) == {
        "char_order": 6, "word_order": 2, "beta": 2, "lowercase": False, "include_whitespace": False,
        "averaging": "precision_recall", "normalize": "NFC"}
    assert chrf.corpus_counts(["a b"], ["a c"]).to_dict()["version"] == 1


def test_statistics_of_other_settings_are_refused_by_name_when_read_back_together():
    rows = pa.concat_tables([form.to_arrow(CHRF().corpus_counts(["a"], ["a"])),
                             form.to_arrow(CHRF(beta=3).corpus_counts(["a"], ["b"]))])
    with pytest.raises(ValueError, match=r"^statistics\[1\]: statistics of other settings \(beta 2 vs 3\)$"):
        arrow.counts(rows)


def test_statistics_of_another_version_or_with_impossible_counts_are_refused():
    batch = form.to_arrow(CHRF().corpus_counts(["ab"], ["ab"]))
    with pytest.raises(ValueError, match="version 2 is not one this library reads"):
        arrow.counts(batch.replace_schema_metadata({b"chrf_components.statistics": b"2"}))
    tampered = batch.set_column(4, "char1_matching_ngrams", pa.array([5], pa.int64()))
    with pytest.raises(ValueError, match=r"^statistics\[0\]: char 1: 5 matches but 2 hypothesis and 2 reference "
                                         r"n-grams$"):
        arrow.counts(tampered)


@pytest.mark.parametrize(("kind", "message"), FORGERIES, ids=[kind for kind, _ in FORGERIES])
def test_rows_no_texts_could_give_are_refused_naming_the_row_never_summed(kind, message):
    """Issue 64: a forged row of 1000 n-grams took a genuine 44.7 to 98.4, negative matches took it down, and three
    rows of -2^62 wrapped an int64 sum back to a plausible total; every row is checked before anything is summed."""
    rows, whole = genuine_statistics()
    assert json.dumps(CHRF(word_order=2).report(arrow.counts(rows)).to_dict()) == json.dumps(whole.to_dict())
    with pytest.raises(InvalidInputError, match=f"^{message}$"):
        arrow.counts(forged(kind, rows))
    with pytest.raises(InvalidInputError, match=f"^{message}$"):
        arrow.counts(pa.concat_tables(forged(kind, rows)))


def test_equal_settings_written_as_other_json_merge():
    rows, _ = genuine_statistics()
    assert arrow.counts(respaced(rows)) == arrow.counts(rows)


@pytest.mark.parametrize(("build", "message"), [
    (lambda rows: {"settings": ["x"]}, r"^statistics: expected a pyarrow Table or RecordBatch of statistics rows "
                                       r"\(or an iterable of them\), got a dict$"),
    (lambda rows: pa.Table.from_arrays([rows.column(0), *rows.columns], names=["settings", *rows.column_names]),
     r"^statistics: the column settings appears 2 times$"),
    (lambda rows: rows.drop_columns(["word2_matching_ngrams"]), r"^statistics: the columns of chrF2\+\+ statistics "
                                                                r"are settings, .*\(missing: word2_matching_ngrams\)$"),
    (lambda rows: rows.drop_columns(["settings"]), r"^statistics: no settings column \(the columns: segment_count, "),
    (lambda rows: rows.replace_schema_metadata({b"chrf_components.statistics": b"1.0"}),
     r"^statistics: version 1.0 is not one this library reads \(1\)$"),
    (lambda rows: rows.set_column(2, "char1_hypothesis_ngrams", rows.column(2).cast(pa.float64())),
     r"^statistics: char1_hypothesis_ngrams must be a column of integers \(int64\), got double$"),
    (lambda rows: rows.set_column(0, "settings", pa.array(['{"version": true}'])),
     r"^statistics\[0\]: settings must name every setting, integers as integers$"),
    (lambda rows: rows.set_column(0, "settings", pa.array([None], pa.string())),
     r"^statistics\[0\]: settings: must be the settings as a JSON object, got null$"),
])
def test_a_malformed_statistics_table_is_one_line_naming_what_is_wrong(build, message):
    rows = pa.concat_tables(genuine_statistics()[0][:1])
    with pytest.raises((InvalidInputError, TypeError), match=message) as raised:
        arrow.counts(build(rows))
    assert "\n" not in str(raised.value)


def test_the_json_form_reads_a_version_that_is_the_integer_1_only():
    counts = CHRF().corpus_counts(["ab"], ["ab"]).to_dict()
    for version in (True, 1.0, "1"):
        with pytest.raises(ValueError, match=r"counts: version .* is not one this library reads"):
            Counts.from_dict({**counts, "version": version})


def test_an_empty_part_counts_nothing_and_no_segments_at_all_is_the_corpus_error():
    chrf = CHRF()
    empty = arrow.statistics(pa.table({"hypothesis": pa.array([], pa.string()),
                                       "reference": pa.array([], pa.string())}), chrf)
    assert arrow.counts(empty) == Counts.empty(chrf)
    assert arrow.counts([empty, form.to_arrow(chrf.corpus_counts(["a"], ["a"]))]).segment_count == 1
    with pytest.raises(InvalidInputError, match="hypotheses: at least 1 segment, got 0"):
        chrf.report(arrow.counts(empty))
    with pytest.raises(InvalidInputError, match="hypotheses: at least 1 segment, got 0"):
        arrow.counts(empty.slice(0, 0))


@pytest.mark.parametrize("parts", [1, 7])
def test_segment_scores_of_arrow_data_are_those_of_the_lists(parts):
    chrf = CHRF(word_order=2)
    got = [score for part in split(CORPUS, parts)
           for score in arrow.segment_scores(table(part), chrf, references=REFERENCE_COLUMNS).column("chrf")
           .to_pylist()]
    assert got == expected_scores(chrf, 3).tolist()
    scored = arrow.segment_scores(table(CORPUS), chrf, references=REFERENCE_COLUMNS, column="score")
    assert scored.column_names == [*CORPUS, "score"] and scored.column("id").to_pylist() == CORPUS["id"]


def test_a_column_of_reference_lists_is_each_segments_references():
    chrf = CHRF(word_order=2)
    lists = [[text for text in texts if text is not None] for texts in zip(*(CORPUS[name] for name in
                                                                            REFERENCE_COLUMNS))]
    data = pa.table({"hyp": CORPUS["hypothesis"], "refs": lists})
    assert arrow.corpus_score(data, chrf, "hyp", "refs").to_dict() == expected(chrf, 3).to_dict()
    assert arrow.segment_scores(data, chrf, "hyp", "refs").column("chrf").to_pylist() == \
        expected_scores(chrf, 3).tolist()


def test_memory_stays_flat_over_a_reader_of_many_batches():
    chrf = CHRF(word_order=2)
    schema = pa.schema([("hypothesis", pa.string()), ("reference", pa.string())])
    text = CORPUS["hypothesis"][:40]

    def peak(batches):
        reader = pa.RecordBatchReader.from_batches(schema, (pa.record_batch(
            [pa.array(text * 25), pa.array(CORPUS["reference"][:40] * 25)], schema=schema) for _ in range(batches)))
        tracemalloc.start()
        counts = arrow.counts(arrow.statistics(reader, chrf))
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
    ({"hypothesis": ["a", "b"], "reference": [["a"], ["b", None]]}, "reference[1]: item 1: must be a string, got null"),
    ({"hypothesis": ["a", "b"], "reference": pa.array([["a"], None], pa.list_(pa.string()))},
     "reference[1]: must be a list of strings (the segment's references), got null"),
    ({"hypothesis": ["a", "\ud800"], "reference": ["a", "b"]}, None),
])
def test_bad_arrow_data_is_an_error_naming_the_column_and_row(data, message):
    if message is None:  # Arrow itself cannot hold a lone surrogate: it refuses at the door
        with pytest.raises(UnicodeEncodeError):
            pa.table(data)
        return
    for call in (arrow.statistics, arrow.segment_scores, lambda *given: arrow.corpus_score(*given, by="hypothesis")):
        with pytest.raises(InvalidInputError) as raised:
            call(pa.table(data), CHRF())
        assert str(raised.value) == message


def test_bytes_that_are_not_utf8_in_a_string_column_are_named_by_column_and_row():
    """Arrow holds a string column's bytes as given: invalid UTF-8 was a bare UnicodeDecodeError."""
    offsets = pa.py_buffer(b"\x00\x00\x00\x00\x01\x00\x00\x00\x03\x00\x00\x00")
    invalid = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"a\xff\xfe")])
    first = pa.record_batch({"hypothesis": ["x"] * 3, "reference": ["y"] * 3})
    with pytest.raises(InvalidInputError, match=r"^hypothesis\[4\]: must be valid UTF-8"):
        arrow.statistics([first, pa.record_batch({"hypothesis": invalid, "reference": ["a", "b"]})], CHRF())


def test_a_column_named_twice_is_one_line_naming_it():
    data = pa.Table.from_arrays([pa.array(["a"]), pa.array(["a"]), pa.array(["b"])],
                                names=["hypothesis", "reference", "reference"])
    with pytest.raises(InvalidInputError, match=r"^reference: 2 columns have this name \(rename all but one\)$"):
        arrow.corpus_score(data, CHRF())


def test_rows_are_counted_from_the_first_row_of_the_data_across_batches():
    batches = [pa.record_batch({"hypothesis": ["a"] * 3, "reference": ["b"] * 3}),
               pa.record_batch({"hypothesis": ["a", None], "reference": ["b", "c"]})]
    with pytest.raises(InvalidInputError, match=r"hypothesis\[4\]: must be a string, got null"):
        arrow.statistics(batches, CHRF())
    with pytest.raises(InvalidInputError, match=r"hypothesis\[4\]: must be a string, got null"):
        arrow.segment_scores(batches, CHRF())


@pytest.mark.parametrize("method", ["aggregate", "pairwise"])
@pytest.mark.parametrize("weighted", [False, True])
def test_mbr_rows_are_the_batch_calls_with_the_same_winners(method, weighted):
    chrf = CHRF(word_order=2)
    sets, weights = mbr_sets()
    data = pa.table({"candidates": sets, "weights": weights})
    decoded = arrow.mbr(data, chrf, weights="weights" if weighted else None, method=method, matrix=True, threads=2)
    assert decoded.column_names[:2] == ["candidates", "weights"]  # the data, with the columns added
    if method == "aggregate":
        utilities = ([chrf.aggregate(texts, texts, weights=share) for texts, share in zip(sets, weights)] if weighted
                     else chrf.aggregate_batch(sets, sets))
    else:
        matrices = chrf.pairwise_batch(sets, sets)
        assert decoded.column("mbr_matrix").to_pylist() == [matrix.tolist() for matrix in matrices]
        import numpy
        from chrf_core.mbr import weight_shares

        utilities = [numpy.average(matrix, axis=1, weights=weight_shares(share, len(share)) if weighted else None)
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
        arrow.mbr(pa.table(columns), CHRF(), **options)
    assert str(raised.value) == message


def test_pairwise_utilities_weighted_at_any_scale_are_the_weighted_means():
    """Weights of 1e-300 and 1e308 raised OverflowError (their exact integer proportions given to NumPy); the shares
    of the weight are the same proportions, each at most 1."""
    texts = ["a b c", "a b d", "x y z"]
    decoded = arrow.mbr(pa.table({"candidates": [texts], "w": [[1e-300, 1e308, 1.0]]}), CHRF(), weights="w",
                        method="pairwise", matrix=True)
    matrix = decoded.column("mbr_matrix")[0].as_py()
    # the 1e308 reference all but alone (1e-308 of the weight on the third, 1e-608 on the first)
    assert decoded.column("mbr_utilities")[0].as_py() == pytest.approx([row[1] for row in matrix], abs=1e-305)
    assert decoded.column("mbr_winner").to_pylist() == ["a b d"]


TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(TEXTS, TEXTS), min_size=1, max_size=30), st.lists(st.integers(0, 30), max_size=6),
       st.sampled_from([case[1] for case in CASES]))
def test_statistics_of_random_unicode_split_anywhere_merge_to_the_whole(pairs, cuts, chrf):
    hypotheses, references = [pair[0] for pair in pairs], [pair[1] for pair in pairs]
    bounds = sorted({0, len(pairs), *(min(cut, len(pairs)) for cut in cuts)})
    pieces = [arrow.statistics(pa.table({"hypothesis": hypotheses[start:end],
                                         "reference": pa.array(references[start:end], pa.string())}), chrf)
              for start, end in itertools.pairwise(bounds)]
    assert arrow.counts(pieces) == chrf.corpus_counts(hypotheses, [references])


GROUP_KEYS = st.one_of(st.none(), st.sampled_from(["A", "B", "ü", "😀"]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(GROUP_KEYS, st.integers(0, 2), TEXTS, TEXTS), min_size=1, max_size=30),
       st.lists(st.integers(0, 30), max_size=6), st.sampled_from([case[1] for case in CASES]))
def test_scores_per_group_of_random_unicode_split_anywhere_are_each_groups_corpus_score(rows, cuts, chrf):
    columns = {"system": [row[0] for row in rows], "lp": [row[1] for row in rows],
               "hypothesis": [row[2] for row in rows], "reference": [row[3] for row in rows]}
    data = pa.table({**columns, "system": pa.array(columns["system"], pa.string()),
                     "lp": pa.array(columns["lp"], pa.int32())})
    bounds = sorted({0, len(rows), *(min(cut, len(rows)) for cut in cuts)})
    batches = [batch for start, end in itertools.pairwise(bounds) for batch in data.slice(start, end - start)
               .to_batches()] or data.to_batches()
    for by in ("system", ["system", "lp"]):
        grouped = arrow.corpus_score(batches, chrf, by=by)
        assert grouped_json(grouped) == expected_groups(chrf, 1, columns, by)
        pieces = [arrow.statistics(batch, chrf, by=by) for batch in batches]
        assert {key: chrf.report(counts) for key, counts in arrow.counts(pieces, by=by).items()} == grouped


@pytest.mark.parametrize("parts", PARTITIONINGS)
@pytest.mark.parametrize(("name", "chrf", "references"), CASES[:3], ids=[case[0] for case in CASES[:3]])
def test_scores_per_group_are_each_groups_corpus_score_for_any_split(name, chrf, references, parts):
    pieces = [arrow.statistics(table(part), chrf, references=REFERENCE_COLUMNS[:references], by="system")
              for part in split(CORPUS, parts)]
    grouped = arrow.corpus_score(table(CORPUS), chrf, references=REFERENCE_COLUMNS[:references], by="system")
    assert grouped_json(grouped) == expected_groups(chrf, references)
    assert list(grouped) == [None, "A", "B", "C", "only one"]  # nulls first, then in order
    summed = arrow.counts(pieces, by="system")
    assert {key: json.dumps(chrf.report(counts).to_dict()) for key, counts in summed.items()} == \
        expected_groups(chrf, references)


def test_scores_per_group_come_as_a_table_of_keys_scores_and_statistics():
    chrf = CHRF(word_order=2)
    grouped = arrow.corpus_score(table(CORPUS), chrf, by=["system", "id"])
    assert len(grouped) == len(CORPUS["id"]) and all(isinstance(key, tuple) for key in grouped)
    rows = arrow.corpus_score(table(CORPUS), chrf, by="system").to_arrow()
    assert rows.column_names[:3] == ["system", "score", "settings"] and rows.num_rows == 5
    assert rows.column("score").to_pylist() == [report.score for report in
                                                arrow.corpus_score(table(CORPUS), chrf, by="system").values()]
    assert arrow.counts(rows.drop_columns(["score"]), by="system") == arrow.counts(
        arrow.statistics(table(CORPUS), chrf, by="system"), by="system")


@pytest.mark.parametrize(("by", "message"), [
    ("nope", r"^nope: no such column \(the columns: id, system, hypothesis"),
    ("segment_count", r"^segment_count: is the name of a statistics or score column: group by other columns"),
    ("score", r"^score: is the name of a statistics or score column"),
    (["system", "system"], r"^system: is named twice"),
    ([], r"^by: name at least one column to group by"),
    ("weight", r"^weight: a group column must hold strings, integers, booleans, dates or times .*got double$"),
])
def test_a_group_column_that_cannot_group_is_named(by, message):
    data = table(CORPUS).append_column("weight", pa.array([0.5] * len(CORPUS["id"])))
    with pytest.raises(InvalidInputError, match=message):
        arrow.corpus_score(data, CHRF(), by=by)


def test_the_modules_examples_run_as_doctests():
    import doctest

    import chrf_core.engines.arrow

    result = doctest.testmod(chrf_core.engines.arrow)
    assert result.attempted >= 5 and result.failed == 0
