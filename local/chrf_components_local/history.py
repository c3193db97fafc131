"""An execution's history, as GetExecutionHistory answers it
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_GetExecutionHistory.html and the HistoryEvent
shape): events numbered from 1, each naming the event before it in its thread of the execution (previousEventId: a
Parallel's branches are threads of their own), typed as AWS types them (``PassStateEntered``, ``TaskScheduled``,
``MapRunStarted``, ...) with their details under AWS's keys.

The data events carry (inputs, outputs, parameters, assigned variables) is bounded: every execution's history draws on
one budget of HISTORY_DATA_BYTES for the whole endpoint; past it an event's data is left out and its details say
``truncated``, as AWS says of data it does not include. A Standard execution's events are bounded too (25,000,
execution.HISTORY_LIMIT: past it the execution fails).
"""

from __future__ import annotations

import datetime
import threading
from typing import Any

HISTORY_DATA_BYTES = 256 * 1024 * 1024  # characters of event data kept, for all the executions remembered
DATA_KEYS = {"input": "inputDetails", "output": "outputDetails", "parameters": None,
             "assignedVariables": "assignedVariablesDetails"}


class Allowance:
    """An amount that can be taken and given back (thread-safe): the histories' event data (Budget), an
    execution's branch threads (execution.py)."""

    def __init__(self, total: int) -> None:
        self.left, self.lock = total, threading.Lock()

    def take(self, wanted: int, partial: bool = False) -> int:
        """``wanted`` of it, or 0 if that much is not left; with ``partial``, as much of it as is left."""
        with self.lock:
            taken = min(wanted, self.left) if partial else wanted if wanted <= self.left else 0
            self.left -= taken
            return taken

    def give(self, amount: int) -> None:
        with self.lock:
            self.left += amount


class Budget(Allowance):
    """Characters of event data the histories may still keep."""

    def __init__(self, total: int = HISTORY_DATA_BYTES) -> None:
        super().__init__(total)


class History:
    """One execution's events, in order (thread-safe: a Parallel's branches add theirs as they run)."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.budget = budget or Budget()
        self.kept = 0  # characters of data drawn from the budget

    def add(self, kind: str, previous: int, key: str | None, details: dict[str, Any] | None) -> int:
        """Add an event (its details under ``key``), after the event ``previous`` (0: none); its id."""
        if details is not None:
            details = self._bounded(details)
        with self.lock:
            number = len(self.events) + 1
            event: dict[str, Any] = {"timestamp": datetime.datetime.now(datetime.UTC).timestamp(), "type": kind,
                                     "id": number, "previousEventId": previous}
            if key is not None:
                event[key] = details or {}
            self.events.append(event)
            return number

    def _bounded(self, details: dict[str, Any]) -> dict[str, Any]:
        bounded = dict(details)
        for field, flag in DATA_KEYS.items():
            value = bounded.get(field)
            if value is None:
                continue
            size = len(value) if isinstance(value, str) else sum(len(k) + len(v) for k, v in value.items())
            included = size == 0 or self.budget.take(size) == size
            if included:
                self.kept += size
            else:
                del bounded[field]
            if flag is not None:
                bounded[flag] = {"truncated": not included}
        return bounded

    def release(self) -> None:
        """The execution is forgotten: its data goes back to the budget."""
        self.budget.give(self.kept)
        self.kept = 0

    def page(self, reverse: bool, include_data: bool) -> list[dict[str, Any]]:
        """The events (newest first if ``reverse``), without their input and output unless ``include_data``."""
        with self.lock:
            events = list(reversed(self.events) if reverse else self.events)
        if include_data:
            return events
        return [{key: ({name: value for name, value in inner.items() if name not in ("input", "output")}
                       if key.endswith("EventDetails") and isinstance(inner, dict) else inner)
                 for key, inner in event.items()} for event in events]
