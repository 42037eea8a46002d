"""The item-key layout is spelled once (orders.items) and imports only the standard library."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from orders import items


def test_the_key_module_imports_only_the_standard_library():
    # the ops tools, the simulator and chaos import it without loading the runtime's dependencies
    tree = ast.parse(Path(items.__file__).read_text())
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert {name.split(".")[0] for name in imported} <= sys.stdlib_module_names | {"__future__"}


def test_an_order_partition_round_trips_and_other_partitions_are_not_orders():
    assert items.order_pk("o-1") == "order#o-1"
    assert items.order_id_of(items.order_pk("o-1")) == "o-1"
    assert items.order_id_of(items.sku_pk("sku-1")) is None
    assert items.order_id_of(items.day_pk("2026-01-01")) is None


def test_typed_keys_for_the_low_level_client():
    assert items.catalog_key("sku-1") == {"pk": {"S": "sku#sku-1"}, "sk": {"S": "catalog"}}
    assert items.order_key("o-1") == {"pk": {"S": "order#o-1"}, "sk": {"S": "order"}}
