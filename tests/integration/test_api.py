"""The public API, through the api function, on the in-process chain."""

from __future__ import annotations

import base64
import json

import pytest

from ops.invariants import check
from orders import items
from reliability.testing.crashpoints import CrashPlan
from simulator.cloud import InProcessCloud, LambdaError, running_cloud
from simulator.events import rest_event

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

ORDER = {"customer_id": "customer-1", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 2}]}


def _orders(cloud: InProcessCloud) -> list[dict]:
    items = cloud.dynamodb.scan(TableName=cloud.outputs["OrdersTableName"])["Items"]
    return [i for i in items if i["sk"]["S"] == "order"]


def test_the_same_request_five_times_is_one_order_and_four_replays(cloud: InProcessCloud):
    # Given one client request, When it is sent five times with the same key
    responses = [
        cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "five-times"}) for _ in range(5)
    ]

    # Then every answer is the same 202, four of them replays, and there is one order
    assert {r.status for r in responses} == {202}
    assert len({r.body["order_id"] for r in responses}) == 1
    assert [r.header("Idempotent-Replayed") for r in responses] == [None, "true", "true", "true", "true"]
    assert responses[0].body["status"] == "ACCEPTED"
    assert responses[0].body["status_url"].endswith(f"/orders/{responses[0].body['order_id']}")
    assert len(_orders(cloud)) == 1

    # And the chain runs it once
    cloud.settle()
    assert len(cloud.executions()) == 1
    status = cloud.api("GET", f"/orders/{responses[0].body['order_id']}")
    assert status.status == 200
    assert status.body["status"] == "COMPLETED"
    assert len(status.body["charges"]) == 1
    report = check(cloud.stores())
    assert report.ok, report.to_text()


def test_whitespace_and_key_order_do_not_make_a_different_payload(cloud: InProcessCloud):
    first = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "k-format"})
    reordered = (
        '{"items": [{"quantity": 2, "sku": "sku-1"}],\n "currency": "EUR", "customer_id": "customer-1"}'
    )
    second = cloud.api("POST", "/orders", body=reordered, headers={"idempotency-key": "k-format"})
    assert second.status == 202
    assert second.body == first.body
    assert second.header("Idempotent-Replayed") == "true"


@pytest.mark.parametrize(
    ("body", "headers", "status", "code"),
    [
        (ORDER, {}, 400, "IdempotencyKeyMissing"),
        ('{"customer_id": "c", "items": [', {"Idempotency-Key": "bad-json"}, 400, "MalformedBody"),
        ("", {"Idempotency-Key": "empty-body"}, 400, "MalformedBody"),
        ("[1, 2]", {"Idempotency-Key": "array-body"}, 422, "InvalidRequest"),
        ({**ORDER, "coupon": "FREE"}, {"Idempotency-Key": "extra-field"}, 422, "InvalidRequest"),
        ({**ORDER, "currency": "eur"}, {"Idempotency-Key": "bad-currency"}, 422, "InvalidRequest"),
        ({**ORDER, "items": []}, {"Idempotency-Key": "no-items"}, 422, "InvalidRequest"),
        (
            {**ORDER, "items": [{"sku": "sku-1", "quantity": 101}]},
            {"Idempotency-Key": "qty"},
            422,
            "InvalidRequest",
        ),
        (
            {**ORDER, "items": [{"sku": "sku-1", "quantity": "2"}]},
            {"Idempotency-Key": "qty-str"},
            422,
            "InvalidRequest",
        ),
    ],
)
def test_bad_requests_are_4xx_json_and_store_nothing(cloud: InProcessCloud, body, headers, status, code):
    response = cloud.api("POST", "/orders", body=body, headers=headers)

    assert response.status == status
    assert set(response.body) == {"error", "message"}
    assert response.body["error"] == code
    assert response.body["message"]
    assert _orders(cloud) == []


def test_an_unknown_sku_is_a_422_naming_it(cloud: InProcessCloud):
    body = {**ORDER, "items": [{"sku": "sku-1", "quantity": 1}, {"sku": "sku-404", "quantity": 1}]}

    response = cloud.api("POST", "/orders", body=body, headers={"Idempotency-Key": "unknown-sku"})

    assert response.status == 422
    assert response.body["error"] == "UnknownSku"
    assert "sku-404" in response.body["message"]
    # A 4xx stores nothing: the same key with a corrected body is a new request, not a mismatch
    fixed = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "unknown-sku"})
    assert fixed.status == 202


def test_the_same_key_with_another_payload_is_a_422(cloud: InProcessCloud):
    cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "reused"})
    other = {**ORDER, "items": [{"sku": "sku-2", "quantity": 1}]}

    response = cloud.api("POST", "/orders", body=other, headers={"Idempotency-Key": "reused"})

    assert response.status == 422
    assert response.body["error"] == "IdempotencyKeyReused"
    assert len(_orders(cloud)) == 1


def test_get_an_unknown_order_is_a_404_json(cloud: InProcessCloud):
    response = cloud.api("GET", "/orders/o-nope")
    assert response.status == 404
    assert response.body["error"] == "OrderNotFound"


ALICE = "arn:aws:iam::123456789012:user/alice"
MALLORY = "arn:aws:sts::123456789012:assumed-role/other-service/session-9"


def test_a_key_belongs_to_its_caller_and_an_order_to_its_owner(cloud: InProcessCloud):
    # Given Alice's order under key order-1003
    mine = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "order-1003"}, caller=ALICE)
    # When another caller sends the same key, with Alice's body and with another body
    same = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "order-1003"}, caller=MALLORY)
    other = {**ORDER, "customer_id": "customer-2"}
    theirs = cloud.api("POST", "/orders", body=other, headers={"Idempotency-Key": "k-x"}, caller=MALLORY)
    # Then each is its own new order (never Alice's stored answer, never a 422 about her key)
    assert (mine.status, same.status, theirs.status) == (202, 202, 202)
    assert same.header("Idempotent-Replayed") is None
    assert len({mine.body["order_id"], same.body["order_id"], theirs.body["order_id"]}) == 3
    # And Alice's order is hers alone: another caller's GET is the 404 of an unknown order
    peek = cloud.api("GET", f"/orders/{mine.body['order_id']}", caller=MALLORY)
    assert (peek.status, peek.body["error"]) == (404, "OrderNotFound")
    assert "customer-1" not in str(peek.body)
    assert cloud.api("GET", f"/orders/{mine.body['order_id']}", caller=ALICE).status == 200
    cloud.settle()
    report = check(cloud.stores())
    assert report.ok, report.to_text()


def test_a_retry_after_its_sku_left_the_catalog_gets_its_order(assembly):
    plan = CrashPlan.parse("after:SQS.SendMessage=1", mode="raise")
    with running_cloud(assembly, crash_plan=plan) as cloud:
        # Given the api dies after sending the order's message (the client saw no answer), and
        # the order completes and is charged
        with pytest.raises(LambdaError):
            cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "k-gone"})
        cloud.settle()
        (placed,) = _orders(cloud)
        assert placed["status"]["S"] == "COMPLETED"
        # And its sku leaves the catalog
        sku = "sku-1"  # ORDER's one line
        cloud.dynamodb.delete_item(
            TableName=cloud.outputs["InventoryTableName"],
            Key=items.key(items.sku_pk(sku), items.CATALOG_SK),
        )
        # When the client retries with the same key and body after the in-progress window
        cloud.clock.advance(cloud.functions[cloud.function("Api")].timeout + 1)
        retry = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "k-gone"})
        # Then it gets its order, not 422 UnknownSku, and nothing runs again
        assert retry.status == 202, retry.body
        assert retry.body["order_id"] == placed["order_id"]["S"]
        cloud.settle()
        report = check(cloud.stores())
        assert report.ok, report.to_text()
        assert len(cloud.executions()) == 1


def test_a_crash_between_the_write_and_the_send_heals_on_the_client_retry(assembly):
    plan = CrashPlan.parse("before:SQS.SendMessage=1", mode="raise")
    with running_cloud(assembly, crash_plan=plan) as cloud:
        # Given the api dies after writing the order and before sending its message
        with pytest.raises(LambdaError) as crashed:
            cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "crash-send"})
        assert crashed.value.error_type == "Runtime.ExitError"  # a dead sandbox, as on AWS
        assert "SimulatedCrash" in (cloud.invocations[-1].traceback or "")
        assert len(_orders(cloud)) == 1
        assert cloud.drain("OrdersQueueUrl", "Worker") == 0
        # And a retry within the dead request's in-progress window is still refused
        early = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "crash-send"})
        assert early.status == 409, early.body

        # When the client retries after the in-progress window (the function's timeout, on the clock)
        cloud.clock.advance(cloud.functions[cloud.function("Api")].timeout + 1)
        retry = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "crash-send"})

        # Then the same order is accepted, its message is sent, and the chain completes it once
        assert retry.status == 202
        assert retry.header("Idempotent-Replayed") is None
        assert len(_orders(cloud)) == 1
        cloud.settle()
        report = check(cloud.stores())
        assert report.ok, report.to_text()
        assert report.row(retry.body["order_id"]).verdict == "completed"


def test_an_unknown_route_is_a_404_json(cloud: InProcessCloud):
    response = cloud.api("GET", "/nothing/here/at-all")
    assert response.status == 404
    assert response.body["error"] == "NotFound"


def _raw(cloud: InProcessCloud, event: dict) -> tuple[int, dict, dict]:
    raw = cloud.invoke("Api", event)
    headers = {k: v[-1] for k, v in (raw.get("multiValueHeaders") or {}).items() if v}
    return int(raw["statusCode"]), json.loads(raw["body"]), {**headers, **(raw.get("headers") or {})}


def test_an_accepted_order_is_always_readable_repeated_skus_are_refused(cloud: InProcessCloud):
    # Regression (root cause 1): lines repeating a sku that add up to more than 100 were accepted,
    # merged, and the merged line made GET /orders/{id} a 500
    repeated = {**ORDER, "items": [{"sku": "sku-1", "quantity": 60}, {"sku": "sku-1", "quantity": 60}]}
    refused = cloud.api("POST", "/orders", body=repeated, headers={"Idempotency-Key": "repeat-sku"})
    assert (refused.status, refused.body["error"]) == (422, "InvalidRequest")
    assert "sku-1" in refused.body["message"]
    assert _orders(cloud) == []

    # And an order at the bounds is read back with exactly the items it was sent with
    items = [{"sku": f"sku-{n}", "quantity": 100} for n in range(1, 21)]
    accepted = cloud.api(
        "POST", "/orders", body={**ORDER, "items": items}, headers={"Idempotency-Key": "max"}
    )
    assert accepted.status == 202
    view = cloud.api("GET", f"/orders/{accepted.body['order_id']}")
    assert view.status == 200
    assert view.body["items"] == items


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[" * 5_000, "nested too deeply"),  # RecursionError
        ('{"customer_id": ' + "1" * 5_000 + "}", "not valid JSON"),  # ValueError: int too long
        ('{"customer_id": "' + "x" * 20_000 + '"}', "larger than"),
    ],
)
def test_a_body_json_cannot_parse_is_a_400_not_a_500(cloud: InProcessCloud, body: str, message: str):
    # Regression (root cause 2): RecursionError and ValueError escaped the parser as 500s
    response = cloud.api("POST", "/orders", body=body, headers={"Idempotency-Key": "parse"})
    assert (response.status, response.body["error"]) == (400, "MalformedBody")
    assert message in response.body["message"]
    assert _orders(cloud) == []


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_not_sent_as_json_is_a_415(cloud: InProcessCloud, content_type: str | None):
    # Regression (root cause 2): a valid order sent as text/plain skipped the edge and was accepted
    event = rest_event("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "media"})
    for name in ("headers", "multiValueHeaders"):
        event[name].pop("Content-Type")
        if content_type:
            event[name]["Content-Type"] = content_type if name == "headers" else [content_type]
    status, body, _ = _raw(cloud, event)
    assert (status, body["error"]) == (415, "UnsupportedMediaType")
    assert _orders(cloud) == []


def test_json_with_a_charset_parameter_is_json(cloud: InProcessCloud):
    headers = {"Idempotency-Key": "charset", "Content-Type": "Application/JSON; charset=utf-8"}
    assert cloud.api("POST", "/orders", body=ORDER, headers=headers).status == 202


def test_a_base64_body_that_is_not_utf8_is_a_400(cloud: InProcessCloud):
    event = rest_event("POST", "/orders", body=None, headers={"Idempotency-Key": "b64"})
    event.update(body=base64.b64encode(b'{"customer_id": "\xff"}').decode(), isBase64Encoded=True)
    status, body, _ = _raw(cloud, event)
    assert (status, body["error"]) == (400, "MalformedBody")


@pytest.mark.parametrize(
    ("values", "code"),
    [
        (["key-a", "key-b"], "IdempotencyKeyInvalid"),
        (["caf\u00e9"], "IdempotencyKeyInvalid"),
        (["nul\x00"], "IdempotencyKeyInvalid"),
        (['"unterminated'], "IdempotencyKeyInvalid"),
    ],
)
def test_keys_outside_the_draft_are_a_400(cloud: InProcessCloud, values: list[str], code: str):
    event = rest_event("POST", "/orders", body=ORDER)
    event["headers"]["Idempotency-Key"] = values[-1]
    event["multiValueHeaders"]["Idempotency-Key"] = values
    status, body, _ = _raw(cloud, event)
    assert (status, body["error"]) == (400, code)
    assert _orders(cloud) == []


def test_a_missing_key_is_reported_before_a_bad_body(cloud: InProcessCloud):
    # As API Gateway validates the header before the body
    response = cloud.api("POST", "/orders", body="[" * 5_000, headers={"Content-Type": "text/plain"})
    assert (response.status, response.body["error"]) == (400, "IdempotencyKeyMissing")


@pytest.mark.parametrize(
    ("method", "path", "status", "allow"),
    [
        ("PUT", "/orders", 405, "POST"),
        ("DELETE", "/orders", 405, "POST"),
        ("GET", "/orders", 405, "POST"),
        ("OPTIONS", "/orders", 405, "POST"),
        ("POST", "/orders/o-1", 405, "GET"),
        ("PATCH", "/orders/o-1", 405, "GET"),
        ("GET", "/orders/a/b", 404, None),
        ("GET", "/", 404, None),
    ],
)
def test_other_methods_and_paths_are_404_or_405_in_the_error_shape(
    cloud: InProcessCloud, method: str, path: str, status: int, allow: str | None
):
    # Regression (root cause 4, the function's half): API Gateway's catch-all methods send these here
    event = rest_event(method, path, body=None)
    event["resource"] = "/{proxy+}"
    got, body, headers = _raw(cloud, event)
    assert got == status
    assert set(body) == {"error", "message"}
    assert body["error"] == ("MethodNotAllowed" if allow else "NotFound")
    assert headers.get("Allow") == allow


def test_the_status_url_is_the_apis_own_never_the_clients_host(cloud: InProcessCloud):
    event = rest_event(
        "POST", "/orders", body=ORDER, headers={"Idempotency-Key": "host", "Host": "evil.test"}
    )
    status, body, _ = _raw(cloud, event)
    assert status == 202
    domain = event["requestContext"]["domainName"]
    assert body["status_url"].startswith(f"https://{domain}/{event['requestContext']['stage']}/orders/")
    assert "evil.test" not in body["status_url"]
