"""The orders sample's hooks for the lab: what only its proof needs, named once by the declaration
(`orders.workflow.SERVICE.proof = "proof"`) and loaded by the lab (`ops.service.proof`).

- `violations(items, counts)`: its own invariants over whole tables (one amount everywhere, stock
  conserved, day counters equal to the events counted), beside the generic rules, and the count
  of the effects the generic count cannot read, its `COUNTS` (`proof.invariants`).
- `mutants(derived)`: the mutants the fault search derives from its declaration, those its
  effects make equivalent marked so (with why), then its own, guards that are its use cases
  (`proof.mutants`), loaded only by the fault search.
- `seed(dynamodb, tables, reset=)`: the reference data its workflow needs (the catalog,
  `proof.catalog`).

Not part of the Lambda asset (only functions/ is bundled) and imported by nothing of the service:
only the lab and tests load it.
"""

from typing import Any

from proof.catalog import seed
from proof.invariants import COUNTS, violations

__all__ = ["COUNTS", "mutants", "seed", "violations"]


def mutants(derived: tuple[Any, ...]) -> tuple[Any, ...]:
    """The sample's mutants (`proof.mutants`), imported only when the fault search asks."""
    from proof.mutants import mutants as sample_mutants  # noqa: PLC0415 - the lab's search only

    return sample_mutants(derived)
