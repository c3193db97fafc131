"""chrf_core.spark on Spark 4 (local[2], Java 17): corpus scores byte for byte one process's for every
partitioning, row scores and MBR rows equal to the library's calls, bad input as our error naming the column, row
and partition."""

import json

import pytest
from conftest import CASES, CORPUS, PARTITIONINGS, REFERENCE_COLUMNS, expected, expected_scores, mbr_sets, need, split

pa = need("pyarrow")
need("pyspark")

from chrf_core import CHRF, InvalidInputError  # noqa: E402
from chrf_core import spark as chrf_spark  # noqa: E402

SCHEMA = "id long, hypothesis string, reference string, reference_2 string, reference_3 string"


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
    assert scored.column_names == ["id", "hypothesis", *REFERENCE_COLUMNS, "chrf"]


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
        utilities = [numpy.average(matrix, axis=1, weights=share) for matrix, share in zip(matrices, weights)]
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
    assert InvalidInputError.found_in(raised.value).message.endswith(
        "w[0]: must have one weight per reference (2), got 3")


def test_statistics_of_other_settings_are_refused_by_name(spark_session):
    data = frame(spark_session, CORPUS, 2)
    mixed = chrf_spark.statistics(data, CHRF()).unionByName(chrf_spark.statistics(data, CHRF(beta=3)))
    with pytest.raises(ValueError, match=r"statistics of other settings \(beta 2 vs 3\)"):
        chrf_spark.counts(mixed)


def test_a_sum_that_int64_cannot_hold_is_refused_not_wrapped(spark_session):
    row = CHRF(char_order=1).corpus_counts(["a"], ["a"]).to_arrow().to_pydict()
    huge = {name: values if name == "settings" else [2**62] for name, values in row.items()}
    data = spark_session.createDataFrame(pa.Table.from_pydict(huge)).unionByName(
        spark_session.createDataFrame(pa.Table.from_pydict(huge)))
    with pytest.raises(OverflowError, match=r"2 rows of up to 4611686018427387904 may sum past 2\^63 - 1"):
        chrf_spark.counts(data)
