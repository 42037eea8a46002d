"""`sweep-accepted`, run on a schedule: re-send the message of every order stranded in ACCEPTED
(`reliability.handlers.sweep_handler`: `Reruns.resend_stranded`, the same re-send as
`make rerun`, one `StrandedRun` decision per order re-sent)."""

from __future__ import annotations

# Every invocation re-sends through the run model; orders.runtime imports it only where it builds
# it, so this function imports it here, at init: its cold start.
import orders.runs  # noqa: F401
from orders.config import SweepSettings
from orders.handlers import init_done
from orders.runtime import current
from reliability.handlers import SWEEP_STEP, sweep_handler

SETTINGS = SweepSettings
STEP = SWEEP_STEP

handler = sweep_handler(runtime=lambda: current(SETTINGS))


init_done()  # the end of init (orders.handlers)
