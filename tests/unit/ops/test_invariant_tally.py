"""An order's effects are tallied from its items: a notification counts its sends (the sample's
hook counts the items the generic count cannot read)."""

from __future__ import annotations

from ops.invariants.effects import new_counts
from orders import items as layout
from proof.invariants import NOTIFY, tally_notifications


def test_a_notification_sent_twice_counts_twice() -> None:
    # Given one notification item per event, one of them sent twice (a dedup that did not hold)
    notifications = [
        {"pk": layout.order_pk("o-1"), "sk": f"{layout.NOTIFICATION}e-1", layout.SENDS: 1},
        {"pk": layout.order_pk("o-2"), "sk": f"{layout.NOTIFICATION}e-2", layout.SENDS: 2},
    ]
    counts = new_counts()
    # When they are tallied
    tally_notifications(notifications, counts)
    # Then the duplicate send is a second notification
    assert (counts["o-1"][0][NOTIFY], counts["o-2"][0][NOTIFY]) == (1, 2)
