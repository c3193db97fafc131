"""chrf_core.torchmetrics.CHRFScore: integer states summed by torchmetrics, equal to one corpus_score after any
updates and merges, and across real processes (torch.distributed, gloo, on loopback); other settings refused by
name before anything is summed; sums past int64 refused."""

import json
import os

import pytest
from conftest import CASES, CORPUS, PARTITIONINGS, REFERENCE_COLUMNS, expected, loopback_port, need, split

torch = need("torch")
need("torchmetrics")

from chrf_core import CHRF, InvalidInputError  # noqa: E402
from chrf_core.torchmetrics import CHRFScore  # noqa: E402


def targets(part, references):
    """torchmetrics' layout: each segment's references (a missing one left out)."""
    return [[text for text in texts if text is not None] for texts in zip(*(part[name] for name in
                                                                            REFERENCE_COLUMNS[:references]))]


@pytest.mark.parametrize("parts", PARTITIONINGS)
@pytest.mark.parametrize(("name", "chrf", "references"), CASES, ids=[case[0] for case in CASES])
def test_updates_and_merges_give_one_process_s_report(name, chrf, references, parts):
    metrics = [CHRFScore(chrf) for _ in range(3)]  # three "processes", each given every third part
    for index, part in enumerate(split(CORPUS, parts)):
        metrics[index % 3].update(part["hypothesis"], targets(part, references))
    metrics[0].merge_state(metrics[1])
    metrics[0].merge_state({key: value for key, value in metrics[2].metric_state.items()})
    report = metrics[0].compute()
    assert json.dumps(report.to_dict()) == json.dumps(expected(chrf, references).to_dict())


def test_forward_gives_the_batch_score_and_keeps_the_total():
    chrf = CHRF(word_order=2)
    metric = CHRFScore(chrf)
    first = metric(CORPUS["hypothesis"][:10], CORPUS["reference"][:10])  # a flat list: one reference each
    assert first == chrf.corpus_score(CORPUS["hypothesis"][:10], [CORPUS["reference"][:10]])
    metric(CORPUS["hypothesis"][10:], CORPUS["reference"][10:])
    assert metric.compute().to_dict() == expected(chrf, 1).to_dict()
    metric.reset()
    metric.update("one hypothesis", ["its reference", "another"])  # torchmetrics: one segment, its references
    assert metric.compute() == chrf.sentence_score("one hypothesis", ["its reference", "another"])


def test_states_are_integers_that_torchmetrics_sums():
    metric = CHRFScore(CHRF(word_order=2))
    assert {name: (str(value.dtype), metric._reductions[name].__name__) for name, value in
            metric.metric_state.items()} == {"settings": ("torch.int64", "_one_settings"),
                                             "statistics": ("torch.int64", "dim_zero_sum"),
                                             "segments": ("torch.int64", "dim_zero_sum"),
                                             "updates": ("torch.int64", "dim_zero_sum"),
                                             "largest": ("torch.int64", "dim_zero_max")}
    assert metric.statistics.shape == (8, 3)


def test_merging_other_settings_is_refused_by_name_and_changes_nothing():
    metric, other = CHRFScore(CHRF(word_order=2)), CHRFScore(CHRF(word_order=2, beta=3))
    metric.update(["a b"], [["a c"]])
    other.update(["a b"], [["a b"]])
    before = {name: value.clone() for name, value in metric.metric_state.items()}
    with pytest.raises(ValueError, match=r"statistics of other settings \(beta 3 vs 2\)"):
        metric.merge_state(other)
    assert all(torch.equal(before[name], value) for name, value in metric.metric_state.items())


def test_bad_input_is_our_error():
    metric = CHRFScore(CHRF())
    with pytest.raises(InvalidInputError, match=r"hypotheses\[1\]: must be a string, got null"):
        metric.update(["a", None], [["a"], ["b"]])
    with pytest.raises(InvalidInputError, match="must have as many segments as hypotheses"):
        metric.update(["a", "b"], [["a"]])
    with pytest.raises(InvalidInputError, match="hypotheses: at least 1 segment, got 0"):
        metric.compute()  # nothing seen: as corpus_score of nothing
    with pytest.raises(TypeError, match=r"chrf: expected a chrf_core\.CHRF"):
        CHRFScore({"word_order": 2})


def test_a_sum_that_int64_cannot_hold_is_refused_not_wrapped():
    metric = CHRFScore(CHRF(char_order=1))
    metric.update(["a"], [["a"]])
    metric.statistics += 2**62
    metric.largest = torch.tensor(2**62)
    metric.updates += 3
    with pytest.raises(OverflowError, match=r"4 rows of up to 4611686018427387904 may sum past 2\^63 - 1"):
        metric.compute()


def _rank(rank, world, port, settings, queue):
    """One process of a torch.distributed group: its share of the corpus, then compute() (which synchronises)."""
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        metric = CHRFScore(CHRF(**settings[rank]))
        for index, part in enumerate(split(CORPUS, 7)):
            if index % world == rank:
                metric.update(part["hypothesis"], targets(part, 3))
        try:
            queue.put((rank, json.dumps(metric.compute().to_dict())))
        except ValueError as error:
            queue.put((rank, f"ValueError: {error}"))
    finally:
        dist.destroy_process_group()


def run_group(settings):
    multiprocessing = torch.multiprocessing.get_context("spawn")
    queue, port = multiprocessing.Queue(), loopback_port()
    processes = [multiprocessing.Process(target=_rank, args=(rank, len(settings), port, settings, queue))
                 for rank in range(len(settings))]
    for process in processes:
        process.start()
    try:
        return dict(queue.get(timeout=120) for _ in processes)
    finally:
        for process in processes:
            process.join(timeout=60)
            if process.is_alive():
                process.kill()


def test_two_processes_synchronise_to_one_process_s_report():
    results = run_group([{"word_order": 2}, {"word_order": 2}])
    whole = json.dumps(expected(CHRF(word_order=2), 3).to_dict())
    assert results == {0: whole, 1: whole}


def test_processes_with_other_settings_refuse_to_synchronise():
    results = run_group([{"word_order": 2}, {"word_order": 2, "lowercase": True}])
    assert results == {rank: "ValueError: merge: statistics of other settings (lowercase False vs True)"
                       for rank in (0, 1)}


def test_the_modules_example_runs_as_a_doctest():
    import doctest

    import chrf_core.torchmetrics

    result = doctest.testmod(chrf_core.torchmetrics)
    assert result.attempted >= 5 and result.failed == 0
