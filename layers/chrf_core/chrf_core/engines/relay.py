"""Our errors across an engine's workers: raised in a task with where it happened (``partition 3: hyp[17]: ...``),
and on the driver our error alone, with our message, not the engine's wrapping of it.

Dask passes a worker's exception back as the object it was (pickled: :class:`InvalidInputError` pickles as itself);
Ray and Spark wrap it in their own, whose text holds the worker's traceback, ours last, which :func:`found_in`
reads back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import InvalidInputError

RAISED = re.compile(r"^chrf_core\.errors\.InvalidInputError: (.+)$", re.MULTILINE)  # a traceback's last line


@contextmanager
def in_worker(where: str = "") -> Iterator[None]:
    """Our errors raised in an engine's task, ``where`` first."""
    try:
        yield
    except InvalidInputError as error:
        if not where or error.message.startswith(f"{where}: "):
            raise
        raise InvalidInputError.relayed(error.field, f"{where}: {error.message}", error.line) from None


@contextmanager
def on_driver() -> Iterator[None]:
    """An engine's exception that carries our error from a worker becomes that error, alone."""
    try:
        yield
    except InvalidInputError as error:
        if type(error) is InvalidInputError:
            raise
        ours = found_in(error)
        raise ours if ours is not None else error from None
    except Exception as error:
        ours = found_in(error)
        if ours is None:
            raise
        raise ours from None


def found_in(error: BaseException) -> InvalidInputError | None:
    """The InvalidInputError an engine's exception carries from a worker (itself, as its cause, or as the last line
    of the worker's traceback in its text), relayed; None if none."""
    seen: set[int] = set()
    pending: list[Any] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if type(current) is InvalidInputError:  # not an engine's class made to look like it (Ray's)
            return InvalidInputError.relayed(current.field, current.message, current.line)
        pending += [getattr(current, "cause", None), current.__context__, current.__cause__]
    raised = RAISED.findall(str(error))  # the last: the worker's own error, under any chained before it
    return InvalidInputError.relayed(None, raised[-1], None) if raised else None
