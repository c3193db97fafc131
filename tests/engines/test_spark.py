"""chrf_core.engines.spark on Spark 4 (local[2], Java 17): corpus scores byte for byte one process's for every
partitioning (per group too), every statistics row checked before Spark sums it, row scores and MBR rows equal to
the library's calls, bad input as our error naming the column, row and partition."""

import json

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
need("pyspark")

from chrf_core import CHRF, InvalidInputError  # noqa: E402
from chrf_core.engines import spark as chrf_spark  # noqa: E402
from chrf_core.engines.relay import found_in  # noqa: E402
from chrf_core.mbr import weight_shares  # noqa: E402

SCHEMA = "id long, system string, hypothesis string, reference string, reference_2 string, reference_3 string"


def frame(spark, columns, parts, schema=SCHEMA):
    """A DataFrame of exactly these partitions: the corpus cut as ``split`` cuts it (empty parts included)."""
    pieces = [list(zip(*part.values())) for part in split(columns, parts)]
    rdd = spark.sparkContext.parallelize(range(len(pieces)), len(pieces)).flatMap(lambda index: pieces[index])
    data = spark.createDataFrame(rdd, schema)
    assert data.rdd.getNumPartitions() == parts
    return data


@pytest.mark.parametrize("parts", PARTITIONINGS)
@pytest.mark.parametrize(("name", "chrf", "references"), CASES, ids=[case[0] for case in CASES])
def test_the_corpus_score_of_a_dataframe_is_one_process_s_for_any_partitioning(spark_session, name, chrf,
                                                                                references, parts):
    data = frame(spark_session, CORPUS, parts)
    report = chrf_spark.corpus_score(data, chrf, "hypothesis", REFERENCE_COLUMNS[:references])
    assert json.dumps(report.to_dict()) == json.dumps(expected(chrf, references).to_dict())


@pytest.mark.parametrize("parts", [2, 64])
def test_segment_scores_are_a_column_equal_to_segment_scores(spark_session, parts):
    chrf = CHRF(word_order=2, lowercase=True)
    scored = chrf_spark.segment_scores(frame(spark_session, CORPUS, parts), chrf, references=REFERENCE_COLUMNS,
                                       column="chrf").toArrow().sort_by("id")
    assert scored.column("chrf").to_pylist() == expected_scores(chrf, 3).tolist()
    assert scored.column_names == ["id", "system", "hypothesis", *REFERENCE_COLUMNS, "chrf"]


def test_statistics_are_kept_as_a_dataframe_and_summed_again(spark_session, tmp_path):
    chrf = CHRF(word_order=2)
    chrf_spark.statistics(frame(spark_session, CORPUS, 7), chrf).write.parquet(str(tmp_path / "statistics"))
    kept = spark_session.read.parquet(str(tmp_path / "statistics"))
    assert kept.count() == 7  # one row per partition
    assert chrf.report(chrf_spark.counts(kept)).to_dict() == expected(chrf, 1).to_dict()


@pytest.mark.parametrize(("method", "weighted"), [("aggregate", False), ("aggregate", True), ("pairwise", True)])
def test_mbr_rows_equal_the_batch_calls_and_pick_the_same_winners(spark_session, method, weighted):
    chrf = CHRF(word_order=2)
    sets, weights = mbr_sets()
    columns = {"id": list(range(len(sets))), "candidates": sets, "weights": weights}
    data = frame(spark_session, columns, 2, "id long, candidates array<string>, weights array<double>")
    rows = chrf_spark.mbr(data, chrf, weights="weights" if weighted else None, method=method,
                          matrix=method == "pairwise").toArrow().sort_by("id").to_pylist()
    if method == "pairwise":
        import numpy

        matrices = chrf.pairwise_batch(sets, sets)
        assert [row["mbr_matrix"] for row in rows] == [matrix.tolist() for matrix in matrices]
        utilities = [numpy.average(matrix, axis=1, weights=weight_shares(share, len(share)))
                     for matrix, share in zip(matrices, weights)]
    elif weighted:
        utilities = [chrf.aggregate(texts, texts, weights=share) for texts, share in zip(sets, weights)]
    else:
        utilities = chrf.aggregate_batch(sets, sets)
    assert [row["mbr_utilities"] for row in rows] == [scores.tolist() for scores in utilities]
    assert [row["mbr_winner"] for row in rows] == [texts[int(scores.argmax())] for texts, scores in
                                                   zip(sets, utilities)]


def test_bad_input_is_our_error_naming_the_column_row_and_partition(spark_session):
    chrf = CHRF()
    null_cell = spark_session.createDataFrame([("a", "a"), ("b", "b"), (None, "c")],
                                              "hypothesis string, reference string").coalesce(1)
    with pytest.raises(InvalidInputError, match=r"^partition 0: hypothesis\[2\]: must be a string, got null$"):
        chrf_spark.corpus_score(null_cell, chrf)
    numbers = spark_session.createDataFrame([(1, "a")], "hypothesis long, reference string")
    with pytest.raises(InvalidInputError, match=r"^hypothesis: must be a column of strings, got int64$"):
        chrf_spark.corpus_score(numbers, chrf)
    with pytest.raises(InvalidInputError, match=r"^ref: no such column \(the columns: hypothesis, reference\)$"):
        chrf_spark.segment_scores(null_cell, chrf, references="ref")
    weights = spark_session.createDataFrame([(["a", "b"], [1.0, 2.0, 3.0])], "candidates array<string>, w "
                                                                             "array<double>")
    # a lazy DataFrame fails where it is collected, in Spark's own error, with our message in it
    with pytest.raises(Exception, match=r"w\[0\]: must have one weight per reference \(2\), got 3") as raised:
        chrf_spark.mbr(weights, chrf, weights="w").collect()
    assert found_in(raised.value).message.endswith(
        "w[0]: must have one weight per reference (2), got 3")


def test_statistics_of_other_settings_are_refused_by_name(spark_session):
    data = frame(spark_session, CORPUS, 2)
    mixed = chrf_spark.statistics(data, CHRF()).unionByName(chrf_spark.statistics(data, CHRF(beta=3)))
    with pytest.raises(ValueError, match=r"statistics of other settings \((beta 2 vs 3|beta 3 vs 2)\)"):
        chrf_spark.counts(mixed)


def statistics_frame(spark, tables):
    """A DataFrame of statistics rows, one partition per table."""
    rows = [table.to_pylist() for table in tables]
    schema = spark.createDataFrame(tables[0]).schema
    return spark.createDataFrame(spark.sparkContext.parallelize(range(len(rows)), len(rows)).flatMap(
        lambda index: [tuple(row.values()) for row in rows[index]]), schema)


@pytest.mark.parametrize(("kind", "message"), FORGERIES, ids=[kind for kind, _ in FORGERIES])
def test_rows_no_texts_could_give_are_refused_before_spark_sums_them(spark_session, kind, message):
    """Issue 64: Spark summed a forged row (98.39 for a genuine 44.72) and negative matches; each partition's rows
    are now checked where they lie, and Spark's try_sum adds up checked rows only."""
    rows, whole = genuine_statistics()
    genuine = CHRF(word_order=2).report(chrf_spark.counts(statistics_frame(spark_session, rows)))
    assert json.dumps(genuine.to_dict()) == json.dumps(whole.to_dict())
    with pytest.raises(InvalidInputError, match=f"^partition 1: {message}$"):
        chrf_spark.counts(statistics_frame(spark_session, forged(kind, rows)))


def test_equal_settings_written_as_other_json_merge(spark_session):
    rows, _ = genuine_statistics()
    assert chrf_spark.counts(statistics_frame(spark_session, respaced(rows))) == \
        chrf_spark.counts(statistics_frame(spark_session, rows))


def test_a_sum_that_a_long_cannot_hold_is_refused_not_wrapped(spark_session):
    from chrf_core.engines import statistics as form

    chrf = CHRF(char_order=1)
    row = form.to_arrow(chrf.corpus_counts(["a"], ["a"]))
    huge = pa.Table.from_pylist([{**row.to_pylist()[0], **{name: 2**62 for name in row.column_names[1:]}}],
                                schema=row.schema)
    with pytest.raises(OverflowError, match=r"^statistics: segment_count: the sum passes 2\^63 - 1"):
        chrf_spark.counts(statistics_frame(spark_session, [huge, huge]))


@pytest.mark.parametrize("parts", [1, 7, 64])
def test_scores_per_group_are_each_groups_corpus_score_for_any_partitioning(spark_session, parts):
    chrf = CHRF(word_order=2)
    data = frame(spark_session, CORPUS, parts)
    grouped = chrf_spark.corpus_score(data, chrf, references=REFERENCE_COLUMNS, by="system")
    assert grouped_json(grouped) == expected_groups(chrf, 3)
    two = chrf_spark.corpus_score(data, chrf, by=["system", "reference_3"])
    assert grouped_json(two) == expected_groups(chrf, 1, by=["system", "reference_3"])


def test_statistics_per_group_are_kept_and_summed_again(spark_session, tmp_path):
    chrf = CHRF()
    chrf_spark.statistics(frame(spark_session, CORPUS, 7), chrf, by="system").write.parquet(str(tmp_path / "kept"))
    summed = chrf_spark.counts(spark_session.read.parquet(str(tmp_path / "kept")), by="system")
    assert {key: json.dumps(chrf.report(counts).to_dict()) for key, counts in summed.items()} == \
        expected_groups(chrf, 1)


@settings(max_examples=6, deadline=None)
@given(st.lists(st.sampled_from([None, "A", "B", "C"]), min_size=1, max_size=40), st.integers(1, 6))
def test_scores_per_group_of_any_groups_and_partitions_are_each_groups_corpus_score(spark_session, systems, parts):
    columns = {"id": list(range(len(systems))), "system": systems,
               "hypothesis": CORPUS["hypothesis"][:len(systems)], "reference": CORPUS["reference"][:len(systems)],
               "reference_2": CORPUS["reference_2"][:len(systems)], "reference_3": CORPUS["reference_3"][:len(systems)]}
    data = frame(spark_session, columns, parts)
    grouped = chrf_spark.corpus_score(data, CHRF(), by="system")
    assert grouped_json(grouped) == expected_groups(CHRF(), 1, columns)
