"""The times the constructs derive their settings from, each written once.

Pure Python (no aws_cdk): a service's capacity plan and tools read it too. Three kinds:

- AWS's own limits (the redrive window, Express's time limit, Lambda's longest timeout, SQS's
  longest retention) and AWS's guidance for a queue that triggers a function (visibility = 6 x its
  timeout);
- the fence lease and the waits for it: a leased step's lease is its function's timeout (an
  attempt can run no longer), and `FenceBusy`/`StaleFence` are waited out on the lease
  (`fence_wait_interval_seconds`), not on jitter;
- the windows a key must outlive (`Window`, `outlived`) and the guard a synth runs: a record TTL
  shorter than the windows by which its key can come back is refused (`check_outlives`).

The service's own values (its queues' retention, the TTL margin, which windows make up each
record's) stay where the service configures them and are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 24 * SECONDS_PER_HOUR

# Step Functions accepts a redrive of a failed Standard execution for 14 days after it stopped.
REDRIVE_WINDOW_DAYS = 14
# SQS keeps a message at most 14 days (a DLQ's retention is at most this).
SQS_MAX_RETENTION_DAYS = 14
# AWS stops an Express execution 5 minutes after it started ("Maximum duration" of Express
# workflows, https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html); a Standard
# one may run a year.
EXPRESS_TIME_LIMIT_SECONDS = 300
LAMBDA_MAX_TIMEOUT_SECONDS = 900
# AWS's guidance for Lambda event sources: a visibility timeout of at least six times the function
# timeout (plus the batching window), so a batch still running is not redelivered mid-flight.
VISIBILITY_TIMEOUT_FACTOR = 6

# FenceBusy (an earlier attempt holds the step's lease, typically one that died) and StaleFence (a
# leased step's completion lost its fence to a later attempt) are waited out on the lease, not on
# jitter: retries at 1/4, 3/4, 7/4 and 15/4 of the lease after the first refusal, so the third
# comes after any dead attempt's lease has expired. The contention is one execution with itself,
# or a copy of it, never a herd. reliability.cdk.workflow puts this Retry on every task.
FENCE_WAIT_BACKOFF_RATE = 2
FENCE_WAIT_MAX_ATTEMPTS = 4


def visibility_timeout_seconds(consumer_timeout_seconds: float, batch_window_seconds: float = 0) -> int:
    """A queue's visibility timeout for the function that consumes it."""
    return int(consumer_timeout_seconds * VISIBILITY_TIMEOUT_FACTOR + batch_window_seconds)


def fence_wait_interval_seconds(lease_seconds: int) -> int:
    """The first FenceBusy/StaleFence retry's wait for a step whose lease (= timeout) is this."""
    return max(1, lease_seconds // 4)


def fence_ride_out_seconds(lease_seconds: int) -> int:
    """Every FenceBusy/StaleFence wait of one step, back to back: the longest a run waits for a
    dead attempt's lease before the retries give up."""
    first = fence_wait_interval_seconds(lease_seconds)
    return sum(first * FENCE_WAIT_BACKOFF_RATE**n for n in range(FENCE_WAIT_MAX_ATTEMPTS))


@dataclass(frozen=True)
class Window:
    """A stretch of time after which the same key can still come back."""

    name: str
    seconds: int

    def __str__(self) -> str:
        return f"{self.name} {days_text(self.seconds)}"


def window(name: str, days: int) -> Window:
    return Window(name, days * SECONDS_PER_DAY)


def days_text(seconds: int) -> str:
    """`32 d` for whole hours, else `<n> s`."""
    return f"{seconds / SECONDS_PER_DAY:g} d" if seconds % SECONDS_PER_HOUR == 0 else f"{seconds} s"


def outlived(windows: tuple[Window, ...]) -> int:
    """The seconds a key must outlive: the windows back to back (each path can follow the last)."""
    return sum(w.seconds for w in windows)


def derived_ttl_days(windows: tuple[Window, ...], *, margin_days: int) -> int:
    """Whole days past the windows, plus a margin (an execution's own running time, clock skew;
    DynamoDB TTL only ever deletes late, never early, so no margin is needed for it)."""
    return -(-outlived(windows) // SECONDS_PER_DAY) + margin_days


class TtlTooShort(ValueError):
    """A record would expire while its key can still come back."""


def check_outlives(what: str, ttl_seconds: int, windows: tuple[Window, ...]) -> None:
    """`ttl_seconds` covers every window back to back, or TtlTooShort naming the TTL and the windows
    (the same key could come back after its record expired and act twice)."""
    needed = outlived(windows)
    if ttl_seconds < needed:
        raise TtlTooShort(
            f"the {what} is {days_text(ttl_seconds)}, shorter than the {days_text(needed)} it must "
            f"outlive ({' + '.join(str(w) for w in windows)}); the same key could come back after "
            "its record expired and act twice"
        )
