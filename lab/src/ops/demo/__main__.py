"""`python -m ops.demo` (`make demo`)."""

import sys

from ops.demo import main

sys.exit(main())
