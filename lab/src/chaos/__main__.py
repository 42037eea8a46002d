"""`python -m chaos` (what `make chaos` runs): see `chaos.run`."""

import sys

from chaos.run import main

sys.exit(main())
