"""The orders sample's own mutants: guards that are its use cases, not the library's (the run
guard of its worker, its callers' scope, its consumers' verification, ...), each the old
behaviour back (`proof.behaviours`); and which of the mutants derived from its declaration its
effects make equivalent, or the search seldom reaches, and why. The fault search loads them
through the declaration's proof hook (`proof.mutants(derived)`, `ops.service.service_mutants`).
"""

from __future__ import annotations

from dataclasses import replace

from chaos import unguarded
from chaos.mutant import Mutant
from orders.workflow import SERVICE
from proof import behaviours

OWN: tuple[Mutant, ...] = (
    Mutant(
        "run-guard",
        "the worker starts only the order's current run (a later run's message is poison, an earlier "
        "run's a duplicate)",
        frozenset({"worker"}),
        runtime=behaviours.WorkerWithoutRunGuard,
        issue10=unguarded.ISSUE10[5],
    ),
    Mutant(
        "stranded-resend",
        "an ACCEPTED order's message is sent again, by the client's retry and by the sweeper",
        frozenset({"api", "sweep-accepted"}),
        runtime=behaviours.ApiWithoutResend,
        template=unguarded.no_sweeper,
        issue10=unguarded.ISSUE10[4],
    ),
    Mutant(
        "caller-scope",
        "an Idempotency-Key and its order belong to the caller who sent it (another caller's is 404)",
        frozenset({"api"}),
        runtime=behaviours.ApiWithoutCallers,
    ),
    Mutant(
        "retry-finds-order",
        "a retry with the same key and body gets its order, whatever the catalog became (found before "
        "pricing refuses)",
        frozenset({"api"}),
        runtime=behaviours.ApiPricingFirst,
    ),
    Mutant(
        "consumer-verifies",
        "a consumer dedupes on the fact an event states and dead-letters what it cannot verify",
        frozenset(c.name for c in SERVICE.consumers),
        runtime=behaviours.ConsumerTrustingEvents,
    ),
    Mutant(
        "late-copy-duplicate",
        "a late copy of an earlier run's message is a duplicate (acknowledged), not poison for the DLQ",
        frozenset({"worker"}),
        runtime=behaviours.WorkerPagingOnLateCopies,
    ),
)

# Derived mutants no schedule can tell from the original, for what the sample's effects are.
EQUIVALENT: dict[str, str] = {
    "fence-off:RecordLedger": "its effect is one ledger entry keyed by the run's token, which also carries "
    "its record: a second attempt writes the same item again, so nothing is applied twice "
    "(searched: 0/3 seeds of 30 worlds, base seed 1795800000)",
    "fence-off:MarkCompleted": "its effect sets the order's status, a value: a second attempt sets the same "
    "value again (searched: 0/3 seeds of 30 worlds, base seed 1795800000)",
}
# Derived mutants a world tells apart that the search seldom reaches, and why (`Mutant.blind`).
# (None now: fence-off:MarkFailed, once declared equivalent and refuted by
# tests/chaos/test_refuted_equivalents.py, is caught by the search's operator races, `chaos.races`.)
BLIND: dict[str, str] = {}


def mutants(derived: tuple[Mutant, ...]) -> tuple[Mutant, ...]:
    """The hook: the derived mutants (those equivalent or blind here marked so), then the sample's own."""
    marked = (
        replace(m, equivalent=EQUIVALENT.get(m.name, m.equivalent), blind=BLIND.get(m.name, m.blind))
        for m in derived
    )
    return (*marked, *OWN)
