"""ops.new_service: the rename that turns this project into another service.

The names here are made up (acme-shop, shopfront), not this project's: this file is copied and
renamed with the rest, and must mean the same in the copy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ops.new_service import ROOT, NewServiceError, Rename, create, old_name, renamed_files, spelling_pattern


@pytest.mark.parametrize(
    ("old", "text", "expected"),
    [
        ("acme-shop", "stack acme-shop-dev-app", "stack payments-api-dev-app"),
        ("acme-shop", "ACME_SHOP_STAGE=dev", "PAYMENTS_API_STAGE=dev"),
        ("acme-shop", 'ContextVar("acme_shop_keys")', 'ContextVar("payments_api_keys")'),
        ("acme-shop", "# Acme Shop", "# Payments Api"),
        ("acme-shop", "class AcmeShopStack", "class PaymentsApiStack"),
        ("shopfront", "shopfront_keys, SHOPFRONT_STAGE, /shopfront/emulator/", None),
        ("shopfront", "service = 'Shop Front'", "service = 'Payments Api'"),
        ("shopfront", "shop_front", "payments_api"),
    ],
)
def test_each_spelling_is_respelled_in_its_own_form(old: str, text: str, expected: str | None) -> None:
    renamed = Rename(old=old, new="payments-api").text(text, "f")

    if expected is None:
        expected = "payments_api_keys, PAYMENTS_API_STAGE, /payments-api/emulator/"
    assert renamed == expected


@pytest.mark.parametrize("odd", ["acme.shop", "Acme-Shop", "acme_Shop"])
def test_a_spelling_in_no_known_form_is_refused_with_its_place(odd: str) -> None:
    with pytest.raises(NewServiceError, match=r"^f\.py:2: .* in no known form"):
        Rename(old="acme-shop", new="payments-api").text(f"first line\nname = {odd}\n", "f.py")


def test_every_spelling_of_this_projects_name_is_renamed_and_none_is_left() -> None:
    # Given every file git tracks
    old = old_name()

    # When the whole tree is renamed in memory (what `make new-service` writes)
    files = renamed_files(ROOT, Rename(old=old, new="zz-new-service"))

    # Then no path and no text file spells the old name any more, in any form; a spelling the
    # rename does not know has already failed above, naming its file and line
    pattern = spelling_pattern(old)
    left = [
        path
        for path, data, _ in files
        if pattern.search(path) or pattern.search(data.decode(errors="ignore"))
    ]
    assert left == []
    assert len(files) > 100
    assert any(b'"service": "zz-new-service"' in data for path, data, _ in files if path == "cdk.json")


def test_an_invalid_or_overlapping_name_and_a_used_directory_are_refused(tmp_path: Path) -> None:
    with pytest.raises(NewServiceError, match="service must match"):
        create("Payments API", tmp_path / "a")
    with pytest.raises(NewServiceError, match="must not contain each other"):
        create(old_name()[:-1], tmp_path / "b")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "keep.txt").write_text("mine")
    with pytest.raises(NewServiceError, match="not empty"):
        create("payments-api", tmp_path / "c")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]
