"""The orders sample's hooks for the lab: what only its proof needs, named once by the declaration
(`orders.workflow.SERVICE.proof = "proof"`) and loaded by the lab (`ops.service.proof`).

- `violations(items, counts)`: its own invariants over whole tables (one amount everywhere, stock
  conserved, day counters equal to the events counted), beside the generic rules
  (`proof.invariants`).
- `seed(dynamodb, tables, reset=)`: the reference data its workflow needs (the catalog,
  `proof.catalog`).
- `request(outcome, index, variant=0)`, `prepare`, `CHANGES`, `change`, `world_changed`: the
  requests that lead to each outcome of its workflow and the catalog changes its clients' retries
  may meet (`proof.requests`; the lab's `ops.outcomes` derives the outcomes); `observe` and
  `provider_effects`, what the demo shows of a request's world and of its provider.
- `valid_bodies()`, `invalid_bodies()`, `MAX_BODY_BYTES`, `within_contract`, `refusal_problem`:
  its bodies for the API fuzz and its business rules for schemathesis (`proof.fuzz`).

Not part of the Lambda asset (only functions/ is bundled) and imported by nothing of the service:
only the lab and tests load it.
"""

from proof.catalog import seed
from proof.fuzz import MAX_BODY_BYTES, invalid_bodies, refusal_problem, valid_bodies, within_contract
from proof.invariants import violations
from proof.requests import CHANGES, change, observe, prepare, provider_effects, request, world_changed

__all__ = [
    "CHANGES",
    "MAX_BODY_BYTES",
    "change",
    "invalid_bodies",
    "observe",
    "prepare",
    "provider_effects",
    "refusal_problem",
    "request",
    "seed",
    "valid_bodies",
    "violations",
    "within_contract",
    "world_changed",
]
