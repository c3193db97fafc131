"""chrF beyond one process: Arrow data (:mod:`.arrow`), Ray Data (:mod:`.ray`), Spark (:mod:`.spark`), Dask
(:mod:`.dask`), a torchmetrics metric (:mod:`.torchmetrics`) and the mbrs metric backend (:mod:`.mbrs`), with the
statistics' Arrow form they share (:mod:`.statistics`). None of it is in the Lambda layer, and none of it is
imported by ``import chrf_core``: each module imports its engine when it is imported.

Arrow, Ray, Spark and Dask offer the same calls, in the same order: ``corpus_score(data, chrf, hypothesis,
references, by=None)``, ``statistics(data, chrf, hypothesis, references, by=None)``, ``counts(statistics,
by=None)``, ``segment_scores(data, chrf, hypothesis, references, column="chrf")`` and ``mbr(data, chrf,
candidates, references=None, weights=None, method="aggregate", matrix=False, threads=None)``.
"""
