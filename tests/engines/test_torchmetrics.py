"""chrf_core.engines.torchmetrics.CHRFScore: torchmetrics' CHRFScore, exact. Its arguments, its layout and its tensor
(0..1) for torchmetrics' and Lightning's own machinery (MetricCollection, plot, a real Trainer logging it); an int64
counts state summed by torchmetrics, equal to one corpus_score after any updates and merges, and across real
processes (torch.distributed, gloo, on loopback); every state checked where it is merged, loaded or synchronised
(other settings, a floating dtype, counts no texts could give: refused by name); dtype changes leave it exact."""

import json
import os

import pytest
from conftest import CASES, CORPUS, PARTITIONINGS, REFERENCE_COLUMNS, expected, loopback_port, need, split

torch = need("torch")
need("torchmetrics")

from chrf_core import CHRF, InvalidInputError  # noqa: E402
from chrf_core.engines.torchmetrics import CHRFScore  # noqa: E402


def targets(part, references):
    """torchmetrics' layout: each segment's references (a missing one left out)."""
    return [[text for text in texts if text is not None] for texts in zip(*(part[name] for name in
                                                                            REFERENCE_COLUMNS[:references]))]


@pytest.mark.parametrize("parts", PARTITIONINGS)
@pytest.mark.parametrize(("name", "chrf", "references"), CASES, ids=[case[0] for case in CASES])
def test_updates_and_merges_give_one_process_s_report(name, chrf, references, parts):
    metrics = [CHRFScore(chrf=chrf) for _ in range(3)]  # three "processes", each given every third part
    for index, part in enumerate(split(CORPUS, parts)):
        metrics[index % 3].update(part["hypothesis"], targets(part, references))
    metrics[0].merge_state(metrics[1])
    metrics[0].merge_state({key: value for key, value in metrics[2].metric_state.items()})
    whole = expected(chrf, references)
    assert json.dumps(metrics[0].report().to_dict()) == json.dumps(whole.to_dict())
    assert float(metrics[0].compute()) == float(whole.exact / 100)  # torchmetrics' scale, correctly rounded


def test_forward_gives_the_batch_score_and_keeps_the_total():
    chrf = CHRF(word_order=2)
    metric = CHRFScore()  # torchmetrics' defaults: chrF++
    first = metric(CORPUS["hypothesis"][:10], CORPUS["reference"][:10])  # a flat list: one reference each
    batch = chrf.corpus_score(CORPUS["hypothesis"][:10], [CORPUS["reference"][:10]])
    assert first.dtype == torch.float64 and first.item() == float(batch.exact / 100)
    metric(CORPUS["hypothesis"][10:], CORPUS["reference"][10:])
    assert metric.report().to_dict() == expected(chrf, 1).to_dict()
    metric.reset()
    metric.update("one hypothesis", ["its reference", "another"])  # torchmetrics: one segment, its references
    assert metric.report() == chrf.sentence_score("one hypothesis", ["its reference", "another"])


def test_compute_is_a_tensor_on_torchmetrics_scale_as_torchmetrics_own_gives_it():
    """float(metric.compute()), torch.as_tensor and comparisons work as with torchmetrics' CHRFScore (0..1); on real
    English MT output, where their definitions coincide (docs/at-scale.md says where they do not), the two agree to
    float32's precision."""
    from payloads import DATA
    from torchmetrics.text import CHRFScore as TorchmetricsCHRF

    hypotheses = (DATA / "example.hyp.en").read_text(encoding="utf-8").splitlines()
    references = [[text] for text in (DATA / "example.ref.en").read_text(encoding="utf-8").splitlines()]
    ours, theirs = CHRFScore(), TorchmetricsCHRF()
    ours.update(hypotheses, references)
    theirs.update(hypotheses, references)
    value = ours.compute()
    assert isinstance(value, torch.Tensor) and value.shape == () and 0 < float(value) < 1
    assert float(value) == float(ours.report().exact / 100) == torch.as_tensor(value).item()
    assert float(value) == pytest.approx(float(theirs.compute()), abs=1e-6)


def test_torchmetrics_own_arguments_make_the_same_settings_so_that_switching_is_an_import():
    metric = CHRFScore(n_char_order=4, n_word_order=1, beta=3.0, lowercase=True, whitespace=True)
    assert metric.chrf == CHRF(char_order=4, word_order=1, beta=3, lowercase=True, whitespace=True)
    assert CHRFScore().chrf == CHRF(word_order=2)  # torchmetrics' default is chrF++
    assert CHRFScore(CHRF(normalize="NFC")).chrf == CHRFScore(chrf=CHRF(normalize="NFC")).chrf
    with pytest.raises(InvalidInputError, match=r"^beta: must be an integer from 1 to 16, got the number 2.5$"):
        CHRFScore(beta=2.5)
    with pytest.raises(TypeError, match="either as a CHRF"):
        CHRFScore(chrf=CHRF(), n_word_order=0)
    sentences = CHRFScore(return_sentence_level_score=True)
    corpus, each = sentences(CORPUS["hypothesis"][:5], [[text] for text in CORPUS["reference"][:5]])
    assert each.tolist() == (CHRF(word_order=2).segment_scores(CORPUS["hypothesis"][:5], CORPUS["reference"][:5])
                             / 100).tolist()
    assert float(corpus) == float(sentences.report().exact / 100)


def test_a_bare_str_is_refused_as_corpus_score_refuses_it():
    """update("the cat sat", "the cat sat") scored the hypothesis against each character of the reference (38.46)."""
    metric = CHRFScore()
    with pytest.raises(TypeError, match=r"^target: expected each segment's references \(a list\), got a single str"):
        metric.update("the cat sat", "the cat sat")
    assert metric.counts.sum().item() == 0


def test_the_states_are_int64_counts_that_torchmetrics_reduces_with_a_check():
    metric = CHRFScore()
    assert {name: str(value.dtype) for name, value in metric.metric_state.items()} == {"settings": "torch.int64",
                                                                                        "counts": "torch.int64"}
    assert metric.counts.shape == (1 + 3 * 8,)  # the statistics' row: segments, then three counts per order


def test_dtype_changes_leave_the_counting_states_int64_and_the_score_exact():
    """set_dtype(torch.float32) turned every state float: 13.855175 against 13.855172 at 300k lines, and at 10^6 a
    misleading "impossible counts"."""
    metric = CHRFScore()
    metric.update(CORPUS["hypothesis"], [[text] for text in CORPUS["reference"]])
    big = metric.counts * (2**30 + 1)  # counts past float32's 2^24, as a long evaluation reaches
    metric.counts = big.clone()
    before = metric.report()
    for change in (lambda m: m.set_dtype(torch.float32), lambda m: m.set_dtype(torch.float16), lambda m: m.half(),
                   lambda m: m.double(), lambda m: m.float(), lambda m: m.to(torch.float64), lambda m: m.to("cpu")):
        changed = change(metric) or metric
        assert changed.counts.dtype == torch.int64 and changed.settings.dtype == torch.int64
        assert torch.equal(changed.counts, big) and changed.report() == before


@pytest.mark.parametrize("kind", ["plus 1000", "negative matches", "wrapping"])
def test_states_no_texts_could_give_are_refused_when_merged_or_loaded(kind):
    metric = CHRFScore()
    metric.update(CORPUS["hypothesis"][:30], [[text] for text in CORPUS["reference"][:30]])
    forged = metric.counts.clone()
    if kind == "plus 1000":
        forged[1:] = 1000
    elif kind == "negative matches":
        forged[3::3] = -forged[3::3]
    else:
        forged[:] = -2**62
    before = metric.counts.clone()
    with pytest.raises(ValueError, match=r"^merge: a counts state no texts could give"):
        metric.merge_state({"settings": metric.settings, "counts": forged})
    assert torch.equal(metric.counts, before)
    metric.persistent(True)
    with pytest.raises(ValueError, match=r"^load_state_dict: a counts state no texts could give"):
        metric.load_state_dict({"settings": metric.settings, "counts": forged})
    assert torch.equal(metric.counts, before)


def test_floating_states_and_other_settings_are_refused_when_merged_or_loaded():
    """load_state_dict of a lowercase=True metric into a cased one was accepted and reported cased."""
    metric, lowercased = CHRFScore(), CHRFScore(lowercase=True)
    for each in (metric, lowercased):
        each.update(CORPUS["hypothesis"][:30], [[text] for text in CORPUS["reference"][:30]])
        each.persistent(True)
    before = metric.report()
    with pytest.raises(ValueError, match=r"^load_state_dict: statistics of other settings \(lowercase False vs "
                                         r"True\)$"):
        metric.load_state_dict(lowercased.state_dict())
    floats = {**metric.state_dict(), "counts": metric.counts.double()}
    with pytest.raises(TypeError, match=r"^counts: a state of torch.float64; chrF's counting states are int64"):
        metric.load_state_dict(floats)
    with pytest.raises(TypeError, match=r"^counts: a state of torch.float32"):
        metric.merge_state({"settings": metric.settings, "counts": metric.counts.float()})
    assert metric.report() == before
    metric.load_state_dict(metric.state_dict())  # its own states load
    assert metric.report() == before


def test_it_sits_in_a_metric_collection_beside_torchmetrics_own_and_plots():
    matplotlib = need("matplotlib")
    matplotlib.use("Agg")
    from torchmetrics import MetricCollection
    from torchmetrics.text import BLEUScore

    collection = MetricCollection({"chrf": CHRFScore(), "bleu": BLEUScore()})
    collection.update(CORPUS["hypothesis"][:20], [[text] for text in CORPUS["reference"][:20]])
    values = collection.compute()
    assert set(values) == {"chrf", "bleu"} and float(values["chrf"]) == float(
        CHRF(word_order=2).corpus_score(CORPUS["hypothesis"][:20], [CORPUS["reference"][:20]]).exact / 100)
    figure, axis = collection["chrf"].plot()
    assert axis.get_ylim()[1] >= 1.0 and figure is not None


def test_a_lightning_trainer_validating_logs_the_metric():
    """A real pytorch_lightning Trainer (CPU, a few steps) logs the metric with self.log, as it logs torchmetrics'."""
    lightning = need("pytorch_lightning")
    data = [(CORPUS["hypothesis"][start:start + 8], [[text] for text in CORPUS["reference"][start:start + 8]])
            for start in range(0, 48, 8)]

    class Texts(torch.utils.data.Dataset):
        def __len__(self):
            return len(data)

        def __getitem__(self, index):
            return index

    class Translator(lightning.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)
            self.chrf = CHRFScore()

        def training_step(self, batch, _):
            return self.layer(batch.float().unsqueeze(1)).sum()

        def validation_step(self, batch, _):
            for index in batch.tolist():
                self.chrf.update(*data[index])
            self.log("chrf", self.chrf, on_step=False, on_epoch=True, batch_size=len(batch))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    loader = torch.utils.data.DataLoader(Texts(), batch_size=2)
    trainer = lightning.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                                enable_progress_bar=False, enable_model_summary=False, limit_train_batches=2)
    trainer.fit(Translator(), loader, loader)
    hypotheses = [text for batch in data for text in batch[0]]
    references = [texts[0] for batch in data for texts in batch[1]]
    assert float(trainer.callback_metrics["chrf"]) == float(
        CHRF(word_order=2).corpus_score(hypotheses, [references]).exact / 100)


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
        metric.report()  # nothing seen: as corpus_score of nothing
    with pytest.raises(TypeError, match=r"chrf: expected a chrf_core\.CHRF"):
        CHRFScore(chrf={"word_order": 2})


def test_a_sum_that_int64_cannot_hold_is_refused_not_wrapped():
    metric, other = CHRFScore(CHRF(char_order=1)), CHRFScore(CHRF(char_order=1))
    metric.update(["a"], [["a"]])
    metric.counts = torch.full((4,), 2**62, dtype=torch.int64)
    other.counts = torch.full((4,), 2**62, dtype=torch.int64)
    with pytest.raises(OverflowError, match=r"^segment_count: the sum 9223372036854775808 passes 2\^63 - 1"):
        metric.merge_state(other)
    metric.counts = torch.full((4,), 2**63 - 1, dtype=torch.int64)
    with pytest.raises(OverflowError, match=r"^segment_count: the sum 9223372036854775808 passes 2\^63 - 1"):
        metric.update(["a"], [["a"]])
    assert metric.counts.tolist() == [2**63 - 1] * 4  # unchanged


def _rank(rank, world, port, settings, queue):
    """One process of a torch.distributed group: its share of the corpus, then compute() (which synchronises)."""
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        metric = CHRFScore(CHRF(**{key: value for key, value in settings[rank].items() if key != "forged"}))
        for index, part in enumerate(split(CORPUS, 7)):
            if index % world == rank:
                metric.update(part["hypothesis"], targets(part, 3))
        if settings[rank].get("forged"):
            metric.counts[3] += 10**6  # matches no texts could give
        try:
            queue.put((rank, json.dumps([metric.report().to_dict(), float(metric.compute())])))
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
    report = expected(CHRF(word_order=2), 3)
    whole = json.dumps([report.to_dict(), float(report.exact / 100)])
    assert results == {0: whole, 1: whole}


def test_a_process_whose_counts_no_texts_could_give_is_refused_when_synchronised():
    results = run_group([{"word_order": 2}, {"word_order": 2, "forged": True}])
    assert len(results) == 2 and all(result.startswith("ValueError: merge: a counts state no texts could give (char "
                                                        "1: ") for result in results.values()), results


def test_processes_with_other_settings_refuse_to_synchronise():
    results = run_group([{"word_order": 2}, {"word_order": 2, "lowercase": True}])
    assert results == {rank: "ValueError: merge: statistics of other settings (lowercase False vs True)"
                       for rank in (0, 1)}


def test_the_modules_example_runs_as_a_doctest():
    import doctest

    import chrf_core.engines.torchmetrics

    result = doctest.testmod(chrf_core.engines.torchmetrics)
    assert result.attempted >= 5 and result.failed == 0
