"""The invariant checker: reads the stores and says, per business entity and run, whether every
declared effect happened as the declaration says.

    python -m ops.invariants            # against the target ops.target resolves; exit 1 on violations

What it holds each run to is derived from the service's declaration (`ops.service.service()`):
the effects are the items each step and consumer declares it writes and the provider calls of
its leased steps (`ops.invariants.effects`), counted per entity and run (`make rerun` starts run
N+1 of a failed entity; each effect item says its run). The current run is judged by the
entity's status, each earlier run as the compensated failed run it was, and an effect of a run
the entity never reached is a violation. The rules (`ops.invariants.rules`): each effect at most
once per (entity, run); exactly once on a completed run for the steps on its path and for each
consumer (or its event in that consumer's DLQ with a reason); every applied effect of a failed
run compensated by the step declared to undo it; a dead letter excuses an unfinished entity only
when nothing it did is left standing; step records (where the declaration puts them,
`ops.service.record_at`) agree with the effects, and a status-setting step (`Step.status`) is done
exactly when the entity has that status.

A service adds its own rules through one hook (`Service.proof`'s `violations`: the sample's
`proof.invariants`, amounts agree, stock conserved, day counters), which also counts what the
generic count cannot read (its `COUNTS`: a provider's calls, an item laid out its own way).

Works against anything boto3 reaches: moto in-process, the local cloud, or AWS. Only reads.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from functools import partial
from typing import Any

from ops.invariants.effects import Effects, new_counts, tally_declared
from ops.invariants.report import EntityRow, Report
from ops.invariants.rules import Exemptions, check_runs
from ops.invariants.stores import DeadLetter, Stores, fences_of, peek_dead_letters, step_records, table_scans
from ops.service import domain_invariants, hook_counts
from ops.target import Target
from reliability.cdk.config import FENCE_WINDOWS, outlived

__all__ = ["DeadLetter", "EntityRow", "Report", "Stores", "check", "main", "peek_dead_letters"]


def check(stores: Stores, *, allow_in_flight: bool = False, left_to_operator: Collection[str] = ()) -> Report:
    """Read every store and check the invariants. `allow_in_flight` tolerates unfinished entities
    that are not (yet) dead-lettered, for checks taken while work is still moving;
    `left_to_operator` tolerates them for those entities only (an operator's redrive was refused:
    past the windows in which a redrive or a restart is safe, finishing them is a person's
    decision). Every other rule still holds for them, and every rule honours the same exemptions
    (`rules.Exemptions`): these two, and fences TTL may have deleted once an entity is old enough."""
    items = table_scans(stores)  # each table read once, whichever rules read it
    declared = stores.declared
    entity = declared.entity
    effects = Effects.of(declared, hook_counts(declared))
    entities = [i for i in items(entity.table) if i.get("sk") == entity.name]
    fences = step_records(items, declared)
    counts = new_counts()
    tally_declared(items, effects, counts)
    # The service's own hook counts what it lays out its own way and answers its rules over whole
    # tables (the sample's: provider calls, amounts, stock, day counters)
    global_violations = domain_invariants(declared)(items, counts)

    dead: list[DeadLetter] = []
    id_field = entity.id_field
    for name, url in stores.dlq_urls.items():
        dead.extend(peek_dead_letters(stores.sqs, url, name, id_field=id_field))
    dead_by_entity: dict[str, list[DeadLetter]] = defaultdict(list)
    for letter in dead:
        if letter.entity_id:
            dead_by_entity[letter.entity_id].append(letter)

    rows = []
    for item in sorted(entities, key=lambda i: (i.get("created_at", ""), i["pk"])):
        entity_id = effects.entity_id(item["pk"]) or item["pk"]
        rows.append(
            check_runs(
                effects,
                item,
                counts[entity_id],
                partial(fences_of, entity_id, fences),
                dead=dead_by_entity[entity_id],
                exempt=Exemptions(
                    unfinished_allowed=allow_in_flight or entity_id in left_to_operator,
                    fences_may_be_gone=older_than_fence_windows(item, stores.clock()),
                ),
            )
        )
    known = {row.entity_id for row in rows}
    global_violations.extend(
        f"{entity_id}: effects recorded for an {entity.name} that does not exist"
        for entity_id in sorted(set(counts) - known)
    )
    return Report(rows=rows, dead_letters=dead, global_violations=global_violations)


def older_than_fence_windows(entity: Mapping[str, Any], now: float) -> bool:
    """Every fence of the entity was written after it was created and must live at least the fence
    windows (reliability.cdk.config; a synth refuses a shorter TTL): younger than that, a missing
    fence is a violation; older, TTL may have deleted it."""
    created = datetime.fromisoformat(str(entity["created_at"])).timestamp()
    return now - created >= outlived(FENCE_WINDOWS)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check the declared workflow's invariants.")
    parser.add_argument("--allow-in-flight", action="store_true", help="tolerate entities still running")
    parser.add_argument("--json", action="store_true", help="print the per-entity rows as JSON")
    args = parser.parse_args(list(argv) if argv is not None else None)
    target = Target.resolve()
    report = check(Stores.from_outputs(target.outputs, target.client), allow_in_flight=args.allow_in_flight)
    if args.json:
        print(
            json.dumps(
                {
                    "ok": report.ok,
                    "violations": report.violations,
                    "rows": [{**vars(r), "verdict": r.verdict} for r in report.rows],
                },
                indent=2,
            )
        )
    else:
        print(report.to_text())
    return 0 if report.ok else 1
