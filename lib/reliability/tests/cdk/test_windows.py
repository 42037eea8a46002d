"""reliability.cdk.windows: the fence waits follow the lease, and a record TTL shorter than the
windows its key can come back in is refused, naming them."""

from __future__ import annotations

import pytest

from reliability.cdk.windows import (
    REDRIVE_WINDOW_DAYS,
    SECONDS_PER_DAY,
    TtlTooShort,
    Window,
    check_outlives,
    derived_ttl_days,
    fence_ride_out_seconds,
    fence_wait_interval_seconds,
    outlived,
    visibility_timeout_seconds,
    window,
)

WINDOWS = (window("queue retention", 4), window("DLQ retention", 14), window("redrive", REDRIVE_WINDOW_DAYS))


def test_a_ttl_shorter_than_its_windows_is_refused_naming_them() -> None:
    with pytest.raises(TtlTooShort) as refused:
        check_outlives("fence TTL", 31 * SECONDS_PER_DAY, WINDOWS)
    assert str(refused.value).startswith(
        "the fence TTL is 31 d, shorter than the 32 d it must outlive "
        "(queue retention 4 d + DLQ retention 14 d + redrive 14 d)"
    )


def test_a_ttl_that_covers_its_windows_passes_and_the_derived_one_adds_its_margin() -> None:
    assert outlived(WINDOWS) == 32 * SECONDS_PER_DAY
    check_outlives("fence TTL", 32 * SECONDS_PER_DAY, WINDOWS)
    assert derived_ttl_days(WINDOWS, margin_days=3) == 35
    # A part of a day rounds up to the next whole day before the margin.
    assert derived_ttl_days((*WINDOWS, Window("an hour", 3600)), margin_days=0) == 33


def test_the_fence_waits_outlast_a_dead_attempts_lease() -> None:
    for lease in (1, 8, 20, 40, 900):
        first = fence_wait_interval_seconds(lease)
        assert first == max(1, lease // 4)
        # The third retry comes after the lease of an attempt that died at the first refusal.
        assert first * (1 + 2 + 4) >= lease
        assert fence_ride_out_seconds(lease) == first * (1 + 2 + 4 + 8)


def test_the_visibility_timeout_is_six_times_the_consumers_timeout_plus_its_window() -> None:
    assert visibility_timeout_seconds(30) == 180
    assert visibility_timeout_seconds(30, 5) == 185
