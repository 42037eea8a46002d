"""Business errors of a pretend domain, registered by class name like the real one's."""

from reliability.errors import BusinessError


class DemoOutOfStock(BusinessError):
    pass


class DemoPaymentDeclined(BusinessError):
    def __init__(self, reason: str) -> None:
        super().__init__(f"payment declined: {reason}", details={"reason": reason})
