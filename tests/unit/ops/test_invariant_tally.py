"""An order's effects are tallied from its items: a notification counts its sends."""

from __future__ import annotations

from ops.invariants.rules import UNATTRIBUTED, new_counts, tally_rows
from orders import items as layout


def test_a_notification_sent_twice_counts_twice() -> None:
    # Given one notification item per event, one of them sent twice (a dedup that did not hold)
    notifications = [
        {"pk": layout.order_pk("o-1"), "sk": f"{layout.NOTIFICATION}e-1", layout.SENDS: 1},
        {"pk": layout.order_pk("o-2"), "sk": f"{layout.NOTIFICATION}e-2", layout.SENDS: 2},
    ]
    counts = new_counts()
    # When they are tallied
    tally_rows(notifications, layout.NOTIFICATION, "notification", counts, times=layout.SENDS)
    # Then the duplicate send is a second notification
    assert (
        counts["o-1"][UNATTRIBUTED]["notification"],
        counts["o-2"][UNATTRIBUTED]["notification"],
    ) == (1, 2)
