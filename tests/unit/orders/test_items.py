"""The item-key layout is spelled once (orders.items) and imports only the standard library."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from orders import items, workflow


def _name(node: ast.Import | ast.ImportFrom, alias: str) -> str:
    if isinstance(node, ast.Import):
        return alias
    return f"orders.{alias}" if node.module == "orders" else node.module or ""


def test_the_key_module_imports_only_the_standard_library():
    # the ops tools, the simulator and chaos import it without loading the runtime's dependencies;
    # besides the standard library, only the step declarations (themselves stdlib only, test_workflow)
    tree = ast.parse(Path(items.__file__).read_text())
    imported = {
        _name(node, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    project = {name for name in imported if name.startswith("orders.")}
    assert project <= {"orders.workflow"}
    assert {name.split(".")[0] for name in imported - project} <= sys.stdlib_module_names | {"__future__"}


def test_an_order_partition_round_trips_and_other_partitions_are_not_orders():
    assert items.order_pk("o-1") == "order#o-1"
    assert items.order_id_of(items.order_pk("o-1")) == "o-1"
    assert items.order_id_of(items.sku_pk("sku-1")) is None
    assert items.order_id_of(items.day_pk("2026-01-01")) is None


def test_typed_keys_for_the_low_level_client():
    assert items.catalog_key("sku-1") == {"pk": {"S": "sku#sku-1"}, "sk": {"S": "catalog"}}
    assert items.order_key("o-1") == {"pk": {"S": "order#o-1"}, "sk": {"S": "order"}}


def test_every_step_record_has_one_place_and_a_carried_one_is_the_item_its_run_writes():
    fence_id = "saga#dev#r1#v:x"
    for entry in workflow.STEPS:
        at = items.record_at(entry.name, order_id="o-1", token="dev.o-1.r1", fence_id=fence_id)
        if entry.record is None:
            assert at == items.RecordAt(items.FENCES, {"id": {"S": fence_id}})
            continue
        # a carrier is an atomic step's port, keyed by the order and the run's token
        assert entry.kind == "atomic"
        assert at.carried
        assert at.table in entry.ports
        assert at.key["pk"] == {"S": "order#o-1"}
        assert at.key["sk"]["S"].endswith("#dev.o-1.r1")
    carried = {s.name: items.carrier_of(s.name) for s in workflow.STEPS if s.record}
    assert set(carried) == {"ReserveInventory", "RecordLedger"}
    assert items.record_tables() == ("fences", "inventory", "ledger")
