"""chrf_core.engines.ray on Ray Data (local, 2 CPUs): corpus scores byte for byte one process's for every
partitioning (per group too), every statistics row checked where Ray's aggregation sums it, row scores and MBR rows
equal to the library's calls, bad input as our error naming the column and row."""

import itertools
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
need("ray")

from chrf_core import CHRF, InvalidInputError  # noqa: E402
from chrf_core.engines import ray as chrf_ray  # noqa: E402
from chrf_core.engines.relay import found_in  # noqa: E402


def dataset(ray, columns, parts):
    """A dataset of exactly these blocks: the corpus cut as ``split`` cuts it (empty parts included)."""
    tables = [pa.table(part) if part["id"] else pa.table(part).slice(0, 0) for part in split(columns, parts)]
    return ray.data.from_arrow(tables)


@pytest.mark.parametrize("parts", PARTITIONINGS)
@pytest.mark.parametrize(("name", "chrf", "references"), CASES, ids=[case[0] for case in CASES])
def test_the_corpus_score_of_a_dataset_is_one_process_s_for_any_partitioning(ray_session, name, chrf, references,
                                                                              parts):
    data = dataset(ray_session, CORPUS, parts)
    report = chrf_ray.corpus_score(data, chrf, "hypothesis", REFERENCE_COLUMNS[:references])
    assert json.dumps(report.to_dict()) == json.dumps(expected(chrf, references).to_dict())


@pytest.mark.parametrize("parts", [2, 64])
def test_segment_scores_are_a_column_equal_to_segment_scores(ray_session, parts):
    chrf = CHRF(word_order=2, eps_smoothing=True)
    scored = chrf_ray.segment_scores(dataset(ray_session, CORPUS, parts), chrf, references=REFERENCE_COLUMNS,
                                     column="chrf").to_arrow_refs()
    table = pa.concat_tables(ray_session.get(scored)).sort_by("id")
    assert table.column("chrf").to_pylist() == expected_scores(chrf, 3).tolist()
    assert table.column("hypothesis").to_pylist() == CORPUS["hypothesis"]  # every other column kept


def test_statistics_are_kept_as_a_dataset_and_summed_again(ray_session, tmp_path):
    chrf = CHRF(word_order=2)
    chrf_ray.statistics(dataset(ray_session, CORPUS, 7), chrf).write_parquet(str(tmp_path / "statistics"))
    kept = ray_session.data.read_parquet(str(tmp_path / "statistics"))
    assert kept.count() == 7  # one row per block
    assert chrf.report(chrf_ray.counts(kept)).to_dict() == expected(chrf, 1).to_dict()


@pytest.mark.parametrize(("method", "weighted"), [("aggregate", False), ("aggregate", True), ("pairwise", False)])
def test_mbr_rows_equal_the_batch_calls_and_pick_the_same_winners(ray_session, method, weighted):
    chrf = CHRF(word_order=2)
    sets, weights = mbr_sets()
    data = ray_session.data.from_arrow([pa.table({"id": list(range(start, start + 8)),
                                                  "candidates": sets[start:start + 8],
                                                  "weights": weights[start:start + 8]}) for start in (0, 8, 16)])
    rows = chrf_ray.mbr(data, chrf, weights="weights" if weighted else None, method=method,
                        matrix=method == "pairwise", threads=2).take_all()
    rows.sort(key=lambda row: row["id"])
    if method == "pairwise":
        matrices = chrf.pairwise_batch(sets, sets)
        assert [row["mbr_matrix"] for row in rows] == [matrix.tolist() for matrix in matrices]
        utilities = [matrix.mean(axis=1) for matrix in matrices]
    elif weighted:
        utilities = [chrf.aggregate(texts, texts, weights=share) for texts, share in zip(sets, weights)]
    else:
        utilities = chrf.aggregate_batch(sets, sets)
    assert [list(row["mbr_utilities"]) for row in rows] == [scores.tolist() for scores in utilities]
    assert [row["mbr_winner"] for row in rows] == [texts[int(scores.argmax())] for texts, scores in
                                                   zip(sets, utilities)]


def test_bad_input_is_our_error_naming_the_column_and_row(ray_session):
    chrf = CHRF()
    null_cell = ray_session.data.from_arrow(pa.table({"hypothesis": ["a", None], "reference": ["a", "b"]}))
    with pytest.raises(InvalidInputError, match=r"^hypothesis\[1\]: must be a string, got null$"):
        chrf_ray.corpus_score(null_cell, chrf)
    numbers = ray_session.data.from_arrow(pa.table({"hypothesis": [1, 2], "reference": ["a", "b"]}))
    with pytest.raises(InvalidInputError, match=r"^hypothesis: must be a column of strings, got int64$"):
        chrf_ray.corpus_score(numbers, chrf)
    with pytest.raises(InvalidInputError, match=r"^hyp: no such column \(the columns: hypothesis, reference\)$"):
        chrf_ray.corpus_score(null_cell, chrf, hypothesis="hyp")
    weights = ray_session.data.from_arrow(pa.table({"candidates": [["a", "b"]], "w": [[1.0, 2.0, 3.0]]}))
    # a lazy dataset fails where it is consumed, in Ray's own error, whose cause is ours, with its message
    with pytest.raises(Exception, match=r"w\[0\]: must have one weight per reference \(2\), got 3") as raised:
        chrf_ray.mbr(weights, chrf, weights="w").take_all()
    assert found_in(raised.value).message == "w[0]: must have one weight per reference (2), got 3"
    # found only when a block runs (the schema is not known before): the error still is ours, alone
    lazy = null_cell.map_batches(lambda batch: batch, batch_format="pyarrow")
    with pytest.raises(InvalidInputError, match=r"^hypothesis\[1\]: must be a string, got null$"):
        chrf_ray.corpus_score(lazy, chrf)


def test_statistics_of_other_settings_are_refused_by_name(ray_session):
    data = dataset(ray_session, CORPUS, 2)
    mixed = chrf_ray.statistics(data, CHRF()).union(chrf_ray.statistics(data, CHRF(beta=3)))
    with pytest.raises(ValueError, match=r"statistics of other settings \((beta 2 vs 3|beta 3 vs 2)\)"):
        chrf_ray.counts(mixed)


@pytest.mark.parametrize(("kind", "message"), FORGERIES, ids=[kind for kind, _ in FORGERIES])
def test_rows_no_texts_could_give_are_refused_where_ray_sums_them(ray_session, kind, message):
    """Issue 64: Ray's Sum added a forged row (98.39 for a genuine 44.72), negative matches, and three rows of -2^62
    whose int64 sum wrapped back to 100.0; Ray's aggregation now sums rows each checked where its block lies."""
    rows, whole = genuine_statistics()
    genuine = CHRF(word_order=2).report(chrf_ray.counts(ray_session.data.from_arrow(rows)))
    assert json.dumps(genuine.to_dict()) == json.dumps(whole.to_dict())
    with pytest.raises(InvalidInputError, match=f"^{message}$"):
        chrf_ray.counts(ray_session.data.from_arrow(forged(kind, rows)))
    grouped = [table.add_column(0, "system", pa.array(["A"] * table.num_rows)) for table in forged(kind, rows)]
    with pytest.raises(InvalidInputError, match=f"^{message}$"):
        chrf_ray.counts(ray_session.data.from_arrow(grouped), by="system")


def test_equal_settings_written_as_other_json_merge(ray_session):
    rows, _ = genuine_statistics()
    assert chrf_ray.counts(ray_session.data.from_arrow(respaced(rows))) == \
        chrf_ray.counts(ray_session.data.from_arrow(rows))


@pytest.mark.parametrize("parts", [1, 7, 64])
def test_scores_per_group_are_each_groups_corpus_score_for_any_partitioning(ray_session, parts):
    chrf = CHRF(word_order=2)
    grouped = chrf_ray.corpus_score(dataset(ray_session, CORPUS, parts), chrf, references=REFERENCE_COLUMNS,
                                    by="system")
    assert grouped_json(grouped) == expected_groups(chrf, 3)
    two = chrf_ray.corpus_score(dataset(ray_session, CORPUS, parts), chrf, by=["system", "reference_3"])
    assert grouped_json(two) == expected_groups(chrf, 1, by=["system", "reference_3"])


def test_statistics_per_group_are_kept_and_summed_again(ray_session, tmp_path):
    chrf = CHRF()
    chrf_ray.statistics(dataset(ray_session, CORPUS, 7), chrf, by="system").write_parquet(str(tmp_path / "kept"))
    kept = ray_session.data.read_parquet(str(tmp_path / "kept"))
    summed = chrf_ray.counts(kept, by="system")
    assert {key: json.dumps(chrf.report(counts).to_dict()) for key, counts in summed.items()} == \
        expected_groups(chrf, 1)


@settings(max_examples=6, deadline=None)
@given(st.lists(st.sampled_from([None, "A", "B", "C"]), min_size=1, max_size=40),
       st.lists(st.integers(0, 40), max_size=4))
def test_scores_per_group_of_any_groups_and_blocks_are_each_groups_corpus_score(ray_session, systems, cuts):
    columns = {"system": systems, "hypothesis": CORPUS["hypothesis"][:len(systems)],
               "reference": CORPUS["reference"][:len(systems)]}
    bounds = sorted({0, len(systems), *(min(cut, len(systems)) for cut in cuts)})
    data = pa.table({**columns, "system": pa.array(systems, pa.string())})
    blocks = [data.slice(start, end - start) for start, end in itertools.pairwise(bounds)]
    grouped = chrf_ray.corpus_score(ray_session.data.from_arrow(blocks), CHRF(), by="system")
    assert grouped_json(grouped) == expected_groups(CHRF(), 1, columns)
