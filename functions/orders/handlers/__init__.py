"""Thin Lambda entry points: Powertools decorators around one call into the domain.

Each handler module is a function's init, and this package is the first code of it: the collector
is off from here until the module's last line, `init_done()`, which freezes what init built and
turns it back on. Init makes the objects of the sandbox's life, yet its allocations set off full
collections that scan the growing heap again and again, and after init the first invocation's
(clients' endpoint rules, records) would scan it all once more: together 50-120 ms of CPU on a
cold invocation here. The price is the garbage init leaves (~27k objects, ~7 MB, mostly botocore
and X-Ray's import-time leftovers), kept for the sandbox's life rather than collected. gc is
process-wide: a Lambda sandbox runs one handler. The A/B: bench/results/coldstart.notes.md.
"""

import gc

gc.disable()


def init_done() -> None:
    """A handler module's last line: what init built is permanent (`gc.freeze`, never scanned
    again), and the collector runs again for what invocations allocate."""
    gc.freeze()
    gc.enable()
