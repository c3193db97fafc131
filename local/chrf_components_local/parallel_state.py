"""A Parallel state on the local runner (amazon-states-language-parallel-state.html): each branch runs on the same
input in a thread of its own (at most BRANCH_THREADS at once: more branches wait their turn), with its own stop
signal and scope of variables; the result is the branches' outputs in their order. When one branch fails, the others
are stopped and the Parallel fails with that branch's error (Retry and Catch then apply to it)."""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING, Any

from .asl import Parallel, StatesError
from .execution import Context, Control, Stopped, checked_size

if TYPE_CHECKING:
    from .states import StateMachine

BRANCH_THREADS = 16  # branches of one Parallel running at once


def run_parallel(runner: StateMachine, state: Parallel, branch_input: Any, context: Context) -> list[Any]:
    context.event("ParallelStateStarted")
    controls = [Control(context.control) for _ in state.branches]
    contexts = [context.branch(control) for control in controls]
    pool = concurrent.futures.ThreadPoolExecutor(min(len(state.branches), BRANCH_THREADS),
                                                 thread_name_prefix=f"branch-{state.name[:20]}")
    failure: BaseException | None = None
    try:
        futures = [pool.submit(runner.run, branch, branch_input, inner)
                   for branch, inner in zip(state.branches, contexts, strict=True)]
        pending = set(futures)
        while pending and failure is None:
            done, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_EXCEPTION)
            for future in done:
                error = future.exception()
                if error is not None and failure is None:
                    failure = error
        if failure is not None:
            for control in controls:  # the other branches stop where they are
                control.stop.set()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    if failure is not None:
        if isinstance(failure, StatesError):
            context.event("ParallelStateFailed")
        raise failure if isinstance(failure, (StatesError, Stopped)) else StatesError(
            "States.Runtime", f"a branch of {state.name} failed: {type(failure).__name__}")
    outputs = [future.result() for future in futures]
    context.previous = max(context.previous, *(inner.previous for inner in contexts))
    context.event("ParallelStateSucceeded")
    checked_size(outputs, f"output of state {state.name}")
    return outputs
