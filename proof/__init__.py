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
- `request(outcome, index, variant=0)`, `prepare`, `CHANGES`, `change`, `world_changed`: the
  requests that lead to each outcome of its workflow and the catalog changes its clients' retries
  may meet (`proof.requests`; the lab's `ops.outcomes` derives the outcomes); `observe` and
  `provider_effects`, what the demo shows of a request's world and of its provider.
- `OUTCOME_SHARES`, `HOT_KEY_TABLES`: the share of its orders that end on each catch route and
  the tables with a hot key, for the scale model (`proof.scale`).
- `story_facts(items)`: what the story of one order shows of its payment provider (`proof.story`);
  `story_total(item)`: the order's total in its header.
- `proof/docs.py`'s `ERROR_MEANINGS`: what its own error codes mean, for the site's error table
  (read from its source, never imported: the site's hook has none of the project's packages).
- `valid_bodies()`, `invalid_bodies()`, `MAX_BODY_BYTES`, `within_contract`, `refusal_problem`:
  its bodies for the API fuzz and its business rules for schemathesis (`proof.fuzz`).

Not part of the Lambda asset (only functions/ is bundled) and imported by nothing of the service:
only the lab and tests load it.
"""

from typing import Any

from proof.catalog import seed
from proof.fuzz import MAX_BODY_BYTES, invalid_bodies, refusal_problem, valid_bodies, within_contract
from proof.invariants import COUNTS, violations
from proof.requests import CHANGES, change, observe, prepare, provider_effects, request, world_changed
from proof.scale import HOT_KEY_TABLES, OUTCOME_SHARES
from proof.story import story_facts, story_total

__all__ = [
    "CHANGES",
    "COUNTS",
    "HOT_KEY_TABLES",
    "MAX_BODY_BYTES",
    "OUTCOME_SHARES",
    "change",
    "invalid_bodies",
    "mutants",
    "observe",
    "prepare",
    "provider_effects",
    "refusal_problem",
    "request",
    "seed",
    "story_facts",
    "story_total",
    "valid_bodies",
    "violations",
    "within_contract",
    "world_changed",
]


def mutants(derived: tuple[Any, ...]) -> tuple[Any, ...]:
    """The sample's mutants (`proof.mutants`), imported only when the fault search asks."""
    from proof.mutants import mutants as sample_mutants  # noqa: PLC0415 - the lab's search only

    return sample_mutants(derived)
