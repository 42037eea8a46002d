"""Load the service's reference data into its tables, through its proof hook (`seed` in the
module `Service.proof` names; the sample's is `proof.catalog`: the catalog).

    python -m ops.seed                 # the target ops.target resolves (local cloud or AWS)
    python -m ops.seed --reset         # overwrite what is there (breaks invariants of existing work)

Without --reset what is already there is left alone, so a second seed changes nothing. A service
whose proof declares no `seed` has nothing to load.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from ops.service import seed_hook, service
from ops.stack_outputs import table_names
from ops.target import Target, run_tool
from reliability.declaration import Service


def seed_service(
    dynamodb: Any, outputs: Mapping[str, str], *, declared: Service | None = None, reset: bool = False
) -> int:
    """Seed the declared service's tables (physical names from the stack `outputs`); returns how
    many items were written."""
    declared = declared or service()
    return seed_hook(declared)(dynamodb, table_names(declared, outputs), reset=reset)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reset", action="store_true", help="overwrite what is already there")
    args = parser.parse_args(argv)
    target = Target.resolve()
    written = seed_service(target.client("dynamodb"), target.outputs, reset=args.reset)
    print(f"seeded {written} item(s)")
    return 0


if __name__ == "__main__":
    run_tool(main)
