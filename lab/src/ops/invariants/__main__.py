"""`python -m ops.invariants` (`make invariants`)."""

from ops.invariants import main
from ops.target import run_tool

run_tool(main)
