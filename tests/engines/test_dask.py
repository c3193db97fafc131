"""chrf_core.engines.dask on Dask DataFrames (the local scheduler, and a distributed LocalCluster on loopback):
corpus scores byte for byte one process's for every partitioning (per group too), every statistics row checked
where Dask's reduction sums it, row scores and MBR rows equal to the library's calls, bad input as our error naming
the column, row and partition."""

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
pd = need("pandas")
dd = need("dask.dataframe")

from chrf_core import CHRF, InvalidInputError  # noqa: E402
from chrf_core.engines import dask as chrf_dask  # noqa: E402

TEXT = pd.ArrowDtype(pa.string())
TEXTS = pd.ArrowDtype(pa.list_(pa.string()))
NUMBERS = pd.ArrowDtype(pa.list_(pa.float64()))


def pandas_part(part, types=None):
    types = {name: ("int64" if name == "id" else TEXT) for name in part} | (types or {})
    return pd.DataFrame({name: pd.Series(values, dtype=types[name]) for name, values in part.items()})


def frame(columns, parts, types=None):
    """A Dask DataFrame of exactly these partitions: the corpus cut as ``split`` cuts it (empty parts included)."""
    data = dd.from_map(pandas_part, split(columns, parts), types=types)
    assert data.npartitions == parts
    return data


@pytest.mark.parametrize("parts", PARTITIONINGS)
@pytest.mark.parametrize(("name", "chrf", "references"), CASES, ids=[case[0] for case in CASES])
def test_the_corpus_score_of_a_dataframe_is_one_process_s_for_any_partitioning(name, chrf, references, parts):
    report = chrf_dask.corpus_score(frame(CORPUS, parts), chrf, "hypothesis", REFERENCE_COLUMNS[:references])
    assert json.dumps(report.to_dict()) == json.dumps(expected(chrf, references).to_dict())


@pytest.mark.parametrize("parts", [2, 64])
def test_segment_scores_are_a_column_equal_to_segment_scores(parts):
    chrf = CHRF(word_order=2, normalize="NFC")
    scored = chrf_dask.segment_scores(frame(CORPUS, parts), chrf, references=REFERENCE_COLUMNS).compute()
    assert scored["chrf"].tolist() == expected_scores(chrf, 3).tolist()
    assert list(scored.columns) == ["id", "system", "hypothesis", *REFERENCE_COLUMNS, "chrf"]


def test_statistics_are_kept_as_parquet_and_summed_again(tmp_path):
    chrf = CHRF(word_order=2)
    chrf_dask.statistics(frame(CORPUS, 7), chrf).to_parquet(str(tmp_path / "statistics"))
    kept = dd.read_parquet(str(tmp_path / "statistics"))
    assert len(kept) == 7  # one row per partition
    assert chrf.report(chrf_dask.counts(kept)).to_dict() == expected(chrf, 1).to_dict()


@pytest.mark.parametrize(("method", "weighted"), [("aggregate", False), ("aggregate", True), ("pairwise", False)])
def test_mbr_rows_equal_the_batch_calls_and_pick_the_same_winners(method, weighted):
    chrf = CHRF(word_order=2)
    sets, weights = mbr_sets()
    columns = {"id": list(range(len(sets))), "candidates": sets, "weights": weights}
    data = frame(columns, 7, {"id": "int64", "candidates": TEXTS, "weights": NUMBERS})
    rows = chrf_dask.mbr(data, chrf, weights="weights" if weighted else None, method=method,
                         matrix=method == "pairwise", threads=2).compute()
    if method == "pairwise":
        matrices = chrf.pairwise_batch(sets, sets)
        assert rows["mbr_matrix"].tolist() == [matrix.tolist() for matrix in matrices]
        utilities = [matrix.mean(axis=1) for matrix in matrices]
    elif weighted:
        utilities = [chrf.aggregate(texts, texts, weights=share) for texts, share in zip(sets, weights)]
    else:
        utilities = chrf.aggregate_batch(sets, sets)
    assert rows["mbr_utilities"].tolist() == [scores.tolist() for scores in utilities]
    assert rows["mbr_best"].tolist() == [int(scores.argmax()) for scores in utilities]
    assert rows["mbr_winner"].tolist() == [texts[int(scores.argmax())] for texts, scores in zip(sets, utilities)]


def test_bad_input_is_our_error_naming_the_column_row_and_partition():
    chrf = CHRF()
    null_cell = frame({"hypothesis": ["a", "b", None, "d"], "reference": ["a", "b", "c", "d"]}, 2)
    with pytest.raises(InvalidInputError, match=r"^partition 1: hypothesis\[0\]: must be a string, got null$"):
        chrf_dask.corpus_score(null_cell, chrf)
    numbers = dd.from_pandas(pd.DataFrame({"hypothesis": [1, 2], "reference": ["a", "b"]}), npartitions=1)
    with pytest.raises(InvalidInputError, match=r"^hypothesis: must be a column of strings, got int64$"):
        chrf_dask.corpus_score(numbers, chrf)
    import dask

    with dask.config.set({"dataframe.convert-string": False}):  # else Dask itself makes the 5 a "5" on the way in
        mixed = dd.from_pandas(pd.DataFrame({"hypothesis": pd.Series(["a", 5], dtype=object),
                                             "reference": pd.Series(["a", "b"], dtype=object)}), npartitions=1)
        with pytest.raises(InvalidInputError, match=r"^partition 0: hypothesis\[1\]: must be a string, got the "
                                                    r"number 5$"):
            chrf_dask.corpus_score(mixed, chrf)
    with pytest.raises(InvalidInputError, match=r"^ref: no such column \(the columns: hypothesis, reference\)$"):
        chrf_dask.segment_scores(null_cell, chrf, references="ref")
    weights = frame({"candidates": [["a", "b"]], "w": [[1.0, 2.0, 3.0]]}, 1, {"candidates": TEXTS, "w": NUMBERS})
    with pytest.raises(InvalidInputError) as raised:  # lazy: raised where it is computed, as the workers send it
        chrf_dask.mbr(weights, chrf, weights="w").compute()
    # lazy: raised where it is computed, our error with our message (not its JSON)
    assert str(raised.value) == raised.value.message == "partition 0: w[0]: must have one weight per reference (2), " \
                                                        "got 3"


def test_statistics_of_other_settings_are_refused_by_name():
    data = frame(CORPUS, 2)
    mixed = dd.concat([chrf_dask.statistics(data, CHRF()), chrf_dask.statistics(data, CHRF(beta=3))])
    with pytest.raises(ValueError, match=r"statistics of other settings \((beta 2 vs 3|beta 3 vs 2)\)"):
        chrf_dask.counts(mixed)


def statistics_frame(tables):
    """A Dask DataFrame of statistics rows, one partition per table."""
    return dd.from_map(lambda table: table.to_pandas(types_mapper=pd.ArrowDtype), tables)


@pytest.mark.parametrize(("kind", "message"), FORGERIES, ids=[kind for kind, _ in FORGERIES])
def test_rows_no_texts_could_give_are_refused_where_dask_sums_them(kind, message):
    """Issue 64: Dask's sum added a forged row (98.39 for a genuine 44.72), negative matches, and three rows of -2^62
    whose int64 sum wrapped back to 100.0; Dask's reduction now adds up rows each checked where they lie."""
    rows, whole = genuine_statistics()
    genuine = CHRF(word_order=2).report(chrf_dask.counts(statistics_frame(rows)))
    assert json.dumps(genuine.to_dict()) == json.dumps(whole.to_dict())
    with pytest.raises(InvalidInputError, match=f"^partition 1: {message}$"):
        chrf_dask.counts(statistics_frame(forged(kind, rows)))


def test_equal_settings_written_as_other_json_merge():
    rows, _ = genuine_statistics()
    assert chrf_dask.counts(statistics_frame(respaced(rows))) == chrf_dask.counts(statistics_frame(rows))


@pytest.mark.parametrize("parts", PARTITIONINGS)
def test_scores_per_group_are_each_groups_corpus_score_for_any_partitioning(parts):
    chrf = CHRF(word_order=2)
    grouped = chrf_dask.corpus_score(frame(CORPUS, parts), chrf, references=REFERENCE_COLUMNS, by="system")
    assert grouped_json(grouped) == expected_groups(chrf, 3)
    two = chrf_dask.corpus_score(frame(CORPUS, parts), chrf, by=["system", "reference_3"])
    assert grouped_json(two) == expected_groups(chrf, 1, by=["system", "reference_3"])


def test_statistics_per_group_are_kept_as_parquet_and_summed_again(tmp_path):
    chrf = CHRF()
    chrf_dask.statistics(frame(CORPUS, 7), chrf, by="system").to_parquet(str(tmp_path / "kept"))
    summed = chrf_dask.counts(dd.read_parquet(str(tmp_path / "kept")), by="system")
    assert {key: json.dumps(chrf.report(counts).to_dict()) for key, counts in summed.items()} == \
        expected_groups(chrf, 1)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, "A", "B", "C"]), st.sampled_from([None, 1, 2])), min_size=1,
                max_size=40), st.integers(1, 8))
def test_scores_per_group_of_any_groups_and_partitions_are_each_groups_corpus_score(keys, parts):
    columns = {"system": [key[0] for key in keys], "lp": [key[1] for key in keys],
               "hypothesis": CORPUS["hypothesis"][:len(keys)], "reference": CORPUS["reference"][:len(keys)]}
    data = frame(columns, parts, {"system": TEXT, "lp": pd.ArrowDtype(pa.int64()), "hypothesis": TEXT,
                                  "reference": TEXT})
    for by in ("system", ["system", "lp"]):
        grouped = chrf_dask.corpus_score(data, CHRF(), by=by)
        assert grouped_json(grouped) == expected_groups(CHRF(), 1, columns, by)


def test_a_column_of_lists_through_dasks_defaults_is_refused_with_the_fix_not_scored_as_its_text():
    """dd.from_pandas' defaults turn a column of Python lists into their printed text before any of our code sees it
    (15.0 / 52.2 instead of 100.0): refused where the frame's own data shows it, and scored as lists otherwise."""
    import dask

    data = pd.DataFrame({"hyp": ["a cat", "the dog"], "refs": [["a cat"], ["the dog", "a dog"]]})
    with pytest.raises(InvalidInputError, match=r"^refs: Dask's string conversion \(dataframe.convert-string\) turns "
                                                r"this column of Python objects \(mixed\) into their text; .*"
                                                r"'dataframe.convert-string': False"):
        chrf_dask.corpus_score(dd.from_pandas(data, npartitions=1), CHRF(), "hyp", "refs")
    with dask.config.set({"dataframe.convert-string": False}):
        assert chrf_dask.corpus_score(dd.from_pandas(data, npartitions=2), CHRF(), "hyp", "refs").score == 100.0
    arrow_lists = data.astype({"refs": TEXTS})
    assert chrf_dask.corpus_score(dd.from_pandas(arrow_lists, npartitions=2), CHRF(), "hyp", "refs").score == 100.0
    candidates = pd.DataFrame({"candidates": [["a b", "a c"]]})
    with pytest.raises(InvalidInputError, match=r"^candidates: Dask's string conversion"):
        chrf_dask.mbr(dd.from_pandas(candidates, npartitions=1), CHRF())


def test_a_distributed_cluster_gives_the_same_bytes():
    distributed = need("distributed")
    chrf = CHRF(word_order=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                  processes=True) as cluster, distributed.Client(cluster):
        report = chrf_dask.corpus_score(frame(CORPUS, 7), chrf, references=REFERENCE_COLUMNS)
        scored = chrf_dask.segment_scores(frame(CORPUS, 7), chrf, references=REFERENCE_COLUMNS).compute()
        grouped = chrf_dask.corpus_score(frame(CORPUS, 7), chrf, references=REFERENCE_COLUMNS, by="system")
        rows, _ = genuine_statistics()
        with pytest.raises(InvalidInputError, match=r"^partition 1: statistics\[0\]: char1_matching_ngrams: "):
            chrf_dask.counts(statistics_frame(forged("negative matches", rows)))  # our error, from another process
    assert json.dumps(report.to_dict()) == json.dumps(expected(chrf, 3).to_dict())
    assert scored["chrf"].tolist() == expected_scores(chrf, 3).tolist()
    assert grouped_json(grouped) == expected_groups(chrf, 3)
