"""The public API contract: the bodies of `POST /transfers` and `GET /transfers/{id}`.

One definition of a valid request: `CreateTransferRequest` is what the API parses and what
the read model returns, so whatever is accepted can be read back. Clients rely on these shapes.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator
from reliability.declaration import StepStatus
from reliability.errors import MalformedBody

from wallet_api.domain import Status
from wallet_api.errors import InvalidRequest

# The most one transfer moves, in the wallet's minor unit (cents).
MAX_AMOUNT = 1_000_000
# A body is a few fields: anything larger is refused before it is parsed.
MAX_BODY_BYTES = 4096
# An account id becomes a key attribute and a log field: letters, digits, '-' and '_'.
AccountId = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CreateTransferRequest(_Strict):
    source: AccountId
    target: AccountId
    amount: Annotated[int, Field(ge=1, le=MAX_AMOUNT, strict=True)]

    @model_validator(mode="after")
    def _two_accounts(self) -> CreateTransferRequest:
        if self.source == self.target:
            raise ValueError("source and target must be two accounts")
        return self


class TransferAccepted(_Strict):
    transfer_id: str
    status: Status


class TransferView(_Strict):
    transfer_id: str
    status: Status
    source: str
    target: str
    amount: int
    # Why a FAILED transfer failed: the refusal's name (InsufficientFunds, PayoutRefused).
    reason: str | None = None
    # Each step's status on the current run, from its fence record (absent: it has not run).
    steps: dict[str, StepStatus] = Field(default_factory=dict)


def parse_create_transfer(body: str | bytes | None) -> CreateTransferRequest:
    """The `POST /transfers` body, or a 4xx for ANY input, never a 5xx: too large, not UTF-8,
    not JSON, nested too deep -> 400 MalformedBody; JSON outside the contract -> 422 InvalidRequest
    naming the fields, never echoing the input."""
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else (body or b"")
    if len(raw) > MAX_BODY_BYTES:
        raise MalformedBody(f"the body is larger than {MAX_BODY_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, ValueError) as error:
        raise MalformedBody("the body is not UTF-8 JSON") from error
    try:
        return CreateTransferRequest.model_validate(data)
    except ValidationError as error:
        problems = [
            f"{'.'.join(str(part) for part in problem['loc']) or 'body'}: {problem['msg']}"
            for problem in error.errors(include_input=False, include_url=False, include_context=False)[:5]
        ]
        raise InvalidRequest("; ".join(problems)) from error
