"""The field checks of the queue bodies: the library's (`reliability.fields`), named here for the
sample's event model (orders.events)."""

from reliability.fields import ShapeError, integer, record, text

__all__ = ["ShapeError", "integer", "record", "text"]
