"""`python -m ops.invariants` (`make invariants`)."""

from ops.invariants import main

raise SystemExit(main())
