"""Step Functions executions one at a time, in the order they were started: the simulator's
determinism.

moto starts each execution on a thread of its own at StartExecution (`ExecutionWorker.start`),
so two executions' steps interleaved as the OS scheduled the threads, a crash point numbered by
occurrence was reached by either execution first, and the same schedule could end differently
from one run to the next (issue 12). Here StartExecution, and a redrive (which starts the same
execution again, `simulator.redrive`), only queue the execution: to every caller it is RUNNING,
as an AWS execution is until its first state runs. `ExecutionQueue.run()` runs the queued ones
one at a time to their end, in start order; the cloud calls it wherever a caller waits for
executions (`InProcessCloud.wait`, `wait_all`, `settle`). Nothing else runs meanwhile, so one
sequence of actions has one outcome.

StopExecution ends the execution ABORTED at once, as on AWS, even while one of its tasks' Lambda
invocations is in flight: that invocation runs on to its end (its effects land), and its answer is
not used (moto would keep the execution RUNNING until the task returned, then abort it).

Two executions of one run (the same input: a restart while the first still runs) can run at
once instead: `run_together(choose)` runs every queued execution concurrently when two of them
share an input, their steps interleaved at every storage call in the order `choose` picks
(`simulator.concurrent`; a seeded chooser gives one outcome per seed). A second StartExecution
of a queued Standard execution meets it RUNNING (same name and input: the same execution, as on
AWS).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from moto.stepfunctions.parser.api import ExecutionStatus
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

from simulator.concurrent import Choose, Interleaver


class ExecutionQueue:
    def __init__(self) -> None:
        self._queued: list[ExecutionWorker] = []
        self._lock = threading.Lock()

    def run(self) -> None:
        """Run every queued execution to its end, in start order (including those queued while
        these run)."""
        while True:
            with self._lock:
                if not self._queued:
                    return
                worker = self._queued.pop(0)
            worker._execution_logic()  # moto's thread target, run here instead

    def run_together(self, choose: Choose) -> int:
        """Run the queued executions at once, interleaved by `choose`, when two of them are copies
        of one run (the same input); otherwise one at a time, as `run`. Then whatever they queued.
        Returns how many copies ran concurrently (0 when none shared an input)."""
        with self._lock:
            batch, self._queued = self._queued, []
        inputs = [_input_of(worker) for worker in batch]
        copies = sum(1 for value in inputs if inputs.count(value) > 1)
        if copies:
            Interleaver(choose).run([worker._execution_logic for worker in batch])
        else:
            for worker in batch:
                worker._execution_logic()
        self.run()
        return copies

    def __len__(self) -> int:
        with self._lock:
            return len(self._queued)

    @contextmanager
    def installed(self) -> Iterator[ExecutionQueue]:
        """While active, moto queues the executions it starts here instead of starting a thread."""
        queue = self

        def start(self: ExecutionWorker) -> None:
            with queue._lock:
                queue._queued.append(self)

        def stop(self: ExecutionWorker, stop_date: Any, error: str | None, cause: str | None) -> None:
            if self.env is None:  # still queued: it ends ABORTED at its start, where AWS's would
                program = self._get_evaluation_entrypoint()
                stopped = _StoppedAtStart(program, stop_date=stop_date, error=error, cause=cause)
                self._get_evaluation_entrypoint = lambda: stopped  # type: ignore[method-assign,assignment,return-value]
                return
            self.env.set_stop(stop_date=stop_date, cause=cause, error=error)
            _aborted_now(self, stop_date)

        with (
            mock.patch.object(ExecutionWorker, "start", start),
            mock.patch.object(ExecutionWorker, "stop", stop),
        ):
            yield self


def _input_of(worker: ExecutionWorker) -> str:
    return repr(worker._evaluation_details.execution_details.inpt)


def _aborted_now(worker: ExecutionWorker, stop_date: Any) -> None:
    """The execution is ABORTED from its StopExecution on (moto reflects the stop only once the
    program ends, after a task in flight returns), and keeps that stop date when it ends."""
    communication: Any = worker._execution_communication
    execution = communication.execution
    if execution.exec_status != ExecutionStatus.RUNNING:
        return
    execution.exec_status = ExecutionStatus.ABORTED
    execution.stop_date = stop_date
    reflect = communication.terminated

    def terminated() -> None:
        reflect()  # ABORTED again (the program stopped), with the date it ended
        execution.stop_date = stop_date

    communication.terminated = terminated


class _StoppedAtStart:
    """A program stopped before its first state: moto's own evaluation records ExecutionStarted,
    then (the loop over states not entered) ExecutionAborted, and the execution ends ABORTED."""

    def __init__(self, program: Any, *, stop_date: Any, error: str | None, cause: str | None) -> None:
        self._program = program
        self._stop = {"stop_date": stop_date, "error": error, "cause": cause}

    def eval(self, env: Any) -> None:
        env.next_state_name = self._program.start_at.start_at_name  # the environment is running
        env.set_stop(**self._stop)
        self._program._eval_body(env)  # records the end of a program that is not running
