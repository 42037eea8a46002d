"""The simulator's REST proxy events take their resource and path parameters from the template's
routes, as API Gateway does (`emulator.apigw_template.find_route`), never from the sample's paths."""

from __future__ import annotations

from emulator.apigw_template import Route
from simulator.events import rest_event

ROUTES = (
    Route("/wallets/{wallet_id}/transfers", "transfers", "POST", "AWS_PROXY"),
    Route("/wallets/{wallet_id}", "wallet", "GET", "AWS_PROXY"),
    Route("/{proxy+}", "proxy", "ANY", "AWS_PROXY"),
)


def test_the_event_names_the_route_the_request_takes():
    event = rest_event("POST", "/wallets/w-1/transfers", body={"amount": 1}, routes=ROUTES)

    assert (event["resource"], event["pathParameters"]) == (
        "/wallets/{wallet_id}/transfers",
        {"wallet_id": "w-1"},
    )
    assert event["requestContext"]["resourceId"] == "transfers"


def test_the_most_specific_route_wins_and_the_catch_all_takes_the_rest():
    assert rest_event("GET", "/wallets/w-2", routes=ROUTES)["pathParameters"] == {"wallet_id": "w-2"}
    assert rest_event("DELETE", "/wallets/w-2", routes=ROUTES)["resource"] == "/{proxy+}"


def test_without_a_matching_route_the_path_is_the_resource():
    event = rest_event("POST", "/transfers")

    assert (event["resource"], event["pathParameters"]) == ("/transfers", None)
