"""A Distributed Map's Map Run records, as DescribeMapRun, ListMapRuns and ListExecutions by mapRunArn tell them."""

from __future__ import annotations

import datetime
import threading
from typing import TYPE_CHECKING, Any

from .execution import now

CHILDREN_LISTED = 10000  # child executions a Map Run lists (ListExecutions by mapRunArn): the first ones to end

if TYPE_CHECKING:
    from .asl import Map


class MapRun:
    """A Map Run's record, as DescribeMapRun tells it."""

    def __init__(self, arn: str, execution_arn: str, state: Map, concurrency: int) -> None:
        self.arn, self.execution_arn = arn, execution_arn
        self.start: datetime.datetime = now()
        self.stop: datetime.datetime | None = None
        self.status = "RUNNING"
        self.max_concurrency = concurrency
        self.tolerated_count, self.tolerated_percentage = state.tolerated_count, state.tolerated_percentage
        self.items = dict.fromkeys(("pending", "running", "succeeded", "failed", "timedOut", "aborted", "total",
                                    "resultsWritten"), 0)
        self.executions = dict(self.items)
        self.children: list[dict[str, Any]] = []  # ListExecutions' items, the first CHILDREN_LISTED to end

    def add_child(self, summary: dict[str, Any]) -> None:
        if len(self.children) < CHILDREN_LISTED:
            self.children.append(summary)

    def settle(self) -> None:
        """A Map Run that ended with children still running (stopped, or failed part way): they are aborted, as
        DescribeMapRun counts them once the run has ended (pending and running settle to aborted)."""
        for counts in (self.items, self.executions):
            counts["aborted"] += counts["running"] + counts["pending"]
            counts["running"] = counts["pending"] = 0

    def described(self) -> dict[str, Any]:
        described = {"mapRunArn": self.arn, "executionArn": self.execution_arn, "status": self.status,
                     "startDate": self.start.timestamp(), "maxConcurrency": self.max_concurrency,
                     "toleratedFailurePercentage": float(self.tolerated_percentage or 0),
                     "toleratedFailureCount": self.tolerated_count or 0, "itemCounts": dict(self.items),
                     "executionCounts": dict(self.executions), "redriveCount": 0}
        if self.stop is not None:
            described["stopDate"] = self.stop.timestamp()
        return described


class MapRuns:
    """The Map Runs this runner ran (thread-safe), for DescribeMapRun."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: dict[str, MapRun] = {}

    def add(self, run: MapRun) -> None:
        with self.lock:
            self.runs[run.arn] = run

    def describe(self, arn: str) -> dict[str, Any] | None:
        with self.lock:
            run = self.runs.get(arn)
            return run.described() if run else None

    def children(self, arn: str) -> list[dict[str, Any]] | None:
        """The child executions a Map Run lists (None: no such Map Run)."""
        with self.lock:
            run = self.runs.get(arn)
            return None if run is None else list(run.children)

    def of_execution(self, execution_arn: str) -> list[MapRun]:
        """The Map Runs an execution started, newest first."""
        with self.lock:
            return [run for run in reversed(self.runs.values()) if run.execution_arn == execution_arn]

    def forget(self, execution_arn: str) -> None:
        """Forget the Map Runs of an execution no longer remembered."""
        with self.lock:
            for run in [run for run in self.runs.values() if run.execution_arn == execution_arn]:
                del self.runs[run.arn]


