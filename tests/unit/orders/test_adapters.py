"""DynamoDB, SQS and Step Functions adapters on moto; ClientError codes mapped to domain errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeSerializer
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws

from orders.adapters._dynamo import attribute_value, from_item, to_item
from orders.adapters.aws import StepFunctionsWorkflow, execution_arn
from orders.adapters.dynamo import DynamoCatalog
from orders.adapters.order_store import DynamoOrderStore
from orders.domain import Line, Order, OrderStatus
from orders.errors import ExecutionConflict, OrderConflict
from reliability.errors import transient_errors


def _order(order_id: str = "o-1", customer: str = "c") -> Order:
    return Order(
        order_id=order_id,
        customer_id=customer,
        currency="EUR",
        lines=(Line("sku-1", 2, 199),),
        idempotency_key="k",
        created_at=datetime.now(UTC).isoformat(),
        owner="caller-a",
    )


def test_the_catalog_returns_known_skus_only(ddb: Any):
    found = DynamoCatalog(client=ddb, table_name="inventory").lookup(["sku-1", "nope", "sku-20", "sku-1"])
    assert set(found) == {"sku-1", "sku-20"}
    assert found["sku-1"].price_cents == 199


def test_create_is_idempotent_and_refuses_a_different_order_under_the_same_id(ddb: Any):
    store = DynamoOrderStore(client=ddb, table_name="orders")
    first = store.create(_order())
    assert store.create(_order()) == first  # the client's retry finds the same order
    with pytest.raises(OrderConflict):
        store.create(_order(customer="someone-else"))
    stored = store.get("o-1")
    assert stored is not None
    assert stored.status == OrderStatus.ACCEPTED
    assert stored.lines == first.lines


def test_mark_running_never_moves_a_finished_order_back(ddb: Any):
    store = DynamoOrderStore(client=ddb, table_name="orders")
    store.create(_order())
    store.mark_running("o-1", run=1, execution_arn="arn:1")
    assert store.get("o-1").status == OrderStatus.RUNNING  # type: ignore[union-attr]
    ddb.transact_write_items(TransactItems=[store.status_write("o-1", OrderStatus.COMPLETED).entry])

    store.mark_running("o-1", run=1, execution_arn="arn:2")

    order = store.get("o-1")
    assert order is not None
    assert (order.status, order.execution_arn) == (OrderStatus.COMPLETED, "arn:2")


def test_other_client_errors_propagate_intact():
    error = ClientError({"Error": {"Code": "ValidationException", "Message": "bad"}}, "PutItem")
    with pytest.raises(ClientError), transient_errors("op"):
        raise error


def test_execution_arn_is_built_from_the_state_machine_arn():
    machine = "arn:aws:states:eu-west-1:111122223333:stateMachine:retrysafe-dev-order-workflow"
    assert execution_arn(machine, "o-1-r1") == (
        "arn:aws:states:eu-west-1:111122223333:execution:retrysafe-dev-order-workflow:o-1-r1"
    )


def test_starting_twice_with_the_same_input_is_one_execution_and_another_input_conflicts():
    with mock_aws():
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        machine = sfn.create_state_machine(
            name="m",
            definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}),
            roleArn="arn:aws:iam::123456789012:role/r",
        )["stateMachineArn"]
        workflow = StepFunctionsWorkflow(client=sfn, state_machine_arn=machine)
        payload = {"order_id": "o-1", "run": 1, "token": "t"}

        first = workflow.start(name="o-1-r1", payload=payload)
        second = workflow.start(name="o-1-r1", payload=dict(reversed(payload.items())))

        assert first == second == execution_arn(machine, "o-1-r1")
        assert len(sfn.list_executions(stateMachineArn=machine)["executions"]) == 1
        with pytest.raises(ExecutionConflict):
            workflow.start(name="o-1-r1", payload={**payload, "token": "other"})


# What the domain writes: integers (cents, counts), strings, flags, and lists and maps of them.
ATTRIBUTE_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**18), 10**18) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)


@given(ATTRIBUTE_VALUES)
def test_attribute_values_are_written_as_boto3_writes_them_and_read_back_the_same(value: Any):
    assert attribute_value(value) == TypeSerializer().serialize(value)
    assert from_item(to_item({"a": value})) == ({"a": value} if value is not None else {})


def test_a_float_has_no_attribute_value_as_in_boto3():
    with pytest.raises(TypeError, match="float"):
        attribute_value({"price": 1.5})
