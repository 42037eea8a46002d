"""The orders sample's hooks for the lab: what only its proof needs, named once by the declaration
(`orders.workflow.SERVICE.proof = "proof"`) and loaded by the lab (`ops.service.proof`).

- `violations(items, counts)`: its own invariants over whole tables (one amount everywhere, stock
  conserved, day counters equal to the events counted), beside the generic rules
  (`proof.invariants`).
- `seed(dynamodb, tables, reset=)`: the reference data its workflow needs (the catalog,
  `proof.catalog`).

Not part of the Lambda asset (only functions/ is bundled) and imported by nothing of the service:
only the lab and tests load it.
"""

from proof.catalog import seed
from proof.invariants import violations

__all__ = ["seed", "violations"]
