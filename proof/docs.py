"""What the sample's own error codes mean to a client, for the site's API error table
(`ops.docs_site`: the library's codes are explained there, a service's beside them here)."""

from __future__ import annotations

ERROR_MEANINGS: dict[str, str] = {
    "OrderNotFound": "no such order, or another caller's order",
    "UnknownSku": "a sku not in the catalog (a retry of an order already placed gets that order instead)",
}
