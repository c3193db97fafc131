"""A Parallel state on the local runner (amazon-states-language-parallel-state.html): each branch runs on the same
input in a thread of its own (at most BRANCH_THREADS at once: more branches wait their turn; at most
execution.BRANCH_THREADS for all of an execution's Parallels, past which a Parallel runs its branches one after
another in its own thread), with its own stop signal and scope of variables; the result is the branches' outputs
in their order. When one branch fails, the others are stopped and the Parallel fails with that branch's error
(Retry and Catch then apply to it)."""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING, Any

from .asl import Parallel, StatesError
from .execution import Context, Control, Stopped, checked_size

if TYPE_CHECKING:
    from .states import StateMachine

BRANCH_THREADS = 16  # branches of one Parallel running at once (execution.BRANCH_THREADS in all)


def run_parallel(runner: StateMachine, state: Parallel, branch_input: Any, context: Context) -> list[Any]:
    context.event("ParallelStateStarted")
    controls = [Control(context.control) for _ in state.branches]
    contexts = [context.branch(control) for control in controls]
    threads = context.branch_threads.take(min(len(state.branches), BRANCH_THREADS), partial=True)
    failure: BaseException | None = None
    outputs: list[Any] = []
    try:
        if threads == 0:  # the execution's branch threads all taken (Parallels in Parallels): one after another here
            try:
                outputs = [runner.run(branch, branch_input, inner)
                           for branch, inner in zip(state.branches, contexts, strict=True)]
            except (StatesError, Stopped) as error:
                failure = error
        else:
            failure, outputs = _in_threads(runner, state, branch_input, contexts, controls, threads)
    finally:
        context.branch_threads.give(threads)
    if failure is not None:
        if isinstance(failure, StatesError):
            context.event("ParallelStateFailed")
        raise failure if isinstance(failure, (StatesError, Stopped)) else StatesError(
            "States.Runtime", f"a branch of {state.name} failed: {type(failure).__name__}")
    context.previous = max(context.previous, *(inner.previous for inner in contexts))
    context.event("ParallelStateSucceeded")
    checked_size(outputs, f"output of state {state.name}")
    return outputs


def _in_threads(runner: StateMachine, state: Parallel, branch_input: Any, contexts: list[Context],
                controls: list[Control], threads: int) -> tuple[BaseException | None, list[Any]]:
    """The branches on ``threads`` threads: the first failure (the others then stopped), or their outputs."""
    pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix=f"branch-{state.name[:20]}")
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
    return failure, [] if failure is not None else [future.result() for future in futures]
