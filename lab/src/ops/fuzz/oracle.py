"""What every answer must be, from the published OpenAPI description and the request's intent.

- never a 5xx;
- an error answer is exactly `{"error": <str>, "message": <str>}` as application/json, its status
  is one the document lists for that operation (or for unmatched requests), and its code one the
  document lists for that status;
- a 2xx body is the operation's documented model;
- when the request says what must come back (`Request.expect`), it does.
State (no change from a rejected request, every accepted entity readable) is checked by the runner.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import jsonschema

from ops.fuzz.requests import Request
from ops.service import openapi_document

# Where the document describes the answers to requests no operation matches (the service's
# document generator writes it; every service's edge answers those the same way).
UNMATCHED = "x-retrysafe-unmatched-requests"


@dataclass(frozen=True)
class Answer:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        found = [value for key, value in self.headers if key.lower() == name.lower()]
        return found[-1] if found else None


@dataclass
class Tally:
    """The figures of a run; `problems` holds one line per finding (the first few per kind)."""

    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    five_xx: int = 0
    unshaped: int = 0
    undocumented: int = 0
    unexpected: int = 0
    throttled: int = 0
    accepted: int = 0
    rejected: int = 0
    state_changes: int = 0
    unreadable: int = 0
    problems: list[str] = field(default_factory=list)

    def finding(self, kind: str, request: Request, detail: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if sum(line.startswith(kind) for line in self.problems) < 5:
            self.problems.append(
                f"{kind}: {request.method} {request.path[:80]} [{request.kind}] {detail[:300]}"
            )

    @property
    def ok(self) -> bool:
        return not (
            self.five_xx
            or self.unshaped
            or self.undocumented
            or self.unexpected
            or self.state_changes
            or self.unreadable
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "answers_5xx": self.five_xx,
            "error_answers_without_the_shape": self.unshaped,
            "answers_not_in_the_openapi_description": self.undocumented,
            "answers_other_than_the_contract_promises": self.unexpected,
            "state_changes_from_rejected_requests": self.state_changes,
            "accepted_entities": self.accepted,
            "accepted_entities_not_readable": self.unreadable,
            "rejected_requests": self.rejected,
            "throttled_429_then_resent": self.throttled,
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "kinds": len(self.kinds),
            "problems": self.problems,
        }


class Oracle:
    """Judges answers by the service's OpenAPI document (`ops.service.openapi_document`): each
    request is matched to the documented operation by method and path template, whatever the
    service's routes are."""

    def __init__(self, stage: str, document: dict[str, Any] | None = None) -> None:
        self.stage = stage
        self.document = document or openapi_document()

    def operation(self, request: Request) -> tuple[dict[str, Any], str | None]:
        """The documented responses for the request, and the success model's schema name."""
        parts = [unquote(part) for part in request.path.split("?")[0].split("/") if part]
        if parts[:1] == [self.stage]:
            for template, item in self.document["paths"].items():
                operation = item.get(request.method.lower())
                if operation is not None and _matches(template, parts[1:]):
                    return operation["responses"], _success_model(operation)
        return self.document[UNMATCHED]["responses"], None

    def check(self, request: Request, answer: Answer, tally: Tally) -> None:
        tally.requests += 1
        tally.statuses[answer.status] += 1
        tally.kinds[request.kind] += 1
        if answer.status >= 500:
            tally.finding("five_xx", request, f"{answer.status} {answer.body[:200]!r}")
        if request.expect is not None and answer.status not in request.expect:
            tally.finding(
                "unexpected",
                request,
                f"{answer.status} not in {sorted(request.expect)}: {answer.body[:200]!r}",
            )
        responses, model = self.operation(request)
        documented = responses.get(str(answer.status))
        if documented is None:
            tally.finding("undocumented", request, f"status {answer.status} {answer.body[:200]!r}")
            return
        if request.method == "HEAD":
            return  # HTTP sends no body with a HEAD answer
        if answer.status >= 400:
            tally.rejected += 1
            self._check_error(request, answer, documented, tally)
        elif model is not None:
            schema = self.document["components"]["schemas"][model]
            try:
                jsonschema.Draft202012Validator(schema).validate(json.loads(answer.body))
            except (ValueError, jsonschema.ValidationError) as error:
                tally.finding("undocumented", request, f"{answer.status} body: {error}")

    @staticmethod
    def _check_error(request: Request, answer: Answer, documented: dict[str, Any], tally: Tally) -> None:
        media_type = (answer.header("Content-Type") or "").split(";")[0].strip().lower()
        try:
            body = json.loads(answer.body)
        except ValueError:
            body = None
        shaped = (
            media_type == "application/json"
            and isinstance(body, dict)
            and set(body) == {"error", "message"}
            and all(isinstance(value, str) for value in body.values())
        )
        if not shaped:
            tally.finding("unshaped", request, f"{answer.status} {media_type} {answer.body[:200]!r}")
            return
        schema = documented["content"]["application/json"]["schema"]
        if not jsonschema.Draft202012Validator(schema).is_valid(body):
            tally.finding("undocumented", request, f"{answer.status} code {body['error']!r}")


def _matches(template: str, parts: list[str]) -> bool:
    """`/seats/{seat_id}` matches `["seats", "s-1"]`: each parameter one non-empty segment."""
    expected = [part for part in template.split("/") if part]
    return len(expected) == len(parts) and all(
        want.startswith("{") or want == got for want, got in zip(expected, parts, strict=True)
    )


def _success_model(operation: dict[str, Any]) -> str | None:
    """The schema name of the operation's 2xx JSON body (`#/components/schemas/<name>`)."""
    for status, response in operation["responses"].items():
        if status.startswith("2"):
            ref = response.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref", "")
            return ref.rsplit("/", 1)[-1] or None
    return None
