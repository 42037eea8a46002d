"""How the chaos clouds bring a schedule to rest: SQS delivery like the event source mapping, with
faults (a crashed batch returns after its visibility timeout, the clock jumping by it; duplicate
deliveries; the redrive policy moving a message to the DLQ after maxReceiveCount receives), the
scheduled functions' ticks, and an operator's redrives; `Recovery` counts what it took.

The operator tools (`ops.rerun`, `ops.redrive`) run on their own clients (`operator_client`), which
faults reach; what a tool answers must agree with what it did (`operator_violations`): a rerun
reported refused that started the run, a tool that fails on the SDK's resend of its own call.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops.redrive import (
    REDRIVABLE_STATUSES,
    RESTART_SAFE_SECONDS,
    Method,
    RedriveError,
    redrive_dlq,
    redrive_failed_executions,
    restart_express_run,
)
from ops.service import service
from ops.stack_outputs import queue_output, table_output
from reliability.errors import RerunRefused
from reliability.run_store import record_key, run_records
from reliability.sqs import SqsQueue
from reliability.workflow_runs import RunMessage, execution_name, run_of_execution
from simulator.cloud import InProcessCloud, Invocation, LambdaError

_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86_400}  # an EventBridge rate() expression's units


@dataclass
class Recovery:
    """What it took to bring a schedule to rest (the report sums these)."""

    client_retries: int = 0
    crashed_invocations: int = 0
    redeliveries: int = 0
    duplicate_deliveries: int = 0
    step_retries: int = 0
    operator_redrives: int = 0
    dlq_redrives: int = 0
    lease_expiries: int = 0
    restarts: int = 0
    refused_redrives: int = 0  # past the 14-day redrive window: the execution stays as it stopped
    stops: int = 0
    stray_runs: int = 0
    reruns: int = 0  # `make rerun` started run N+1 of a FAILED entity
    refused_reruns: int = 0  # `make rerun` of a RUNNING or finished entity: the tool refuses
    concurrent_copies: int = 0  # executions or workers that ran at once with a copy of their run
    time_limit_kills: int = 0  # executions ended TIMED_OUT at their time limit mid-step (Express)

    def add(self, other: Recovery) -> None:
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)


class RecoveringCloud(InProcessCloud):
    """What `ChaosCloud` does as the platform and its operator (a mixin: `ChaosCloud` sets the state)."""

    recovery: Recovery
    awaiting_operator: set[str]
    operator_violations: list[str]  # an operator tool's answer that disagrees with what it did
    failures: dict[str, tuple[str, str | None]]  # execution ARN -> (name, error) of each failure redriven
    step_functions: frozenset[str]  # the saga's, as the synthesized state machine invokes them
    queue_consumers: dict[str, str]  # queue URL output -> consumer function prefix
    dlqs: dict[str, str]  # DLQ URL output -> its source queue's
    restarted_express: set[str]  # Express runs (`<entity>-r<run>`) the operator started again
    _visibility: dict[str, int]

    # --- SQS, with faults -----------------------------------------------------------------------
    def visibility_timeout(self, queue_output: str) -> int:
        if queue_output not in self._visibility:
            attributes = self.sqs.get_queue_attributes(
                QueueUrl=self.outputs[queue_output], AttributeNames=["VisibilityTimeout"]
            )["Attributes"]
            self._visibility[queue_output] = int(attributes.get("VisibilityTimeout", 30))
        return self._visibility[queue_output]

    def deliver(self, queue_output: str, *, duplicates: int = 0, batch_size: int = 10) -> int:
        """One poll of the event source mapping: receive a batch, invoke the consumer (1 +
        `duplicates` times with the same records), delete what succeeded at least once. What did
        not comes back after the visibility timeout (the clock jumps by it)."""
        messages, event = self.receive_batch(queue_output, batch_size=batch_size)
        if not messages:
            return 0
        succeeded: set[str] = set()
        for copy in range(1 + duplicates):
            if copy:
                self.recovery.duplicate_deliveries += 1
            try:
                response = self.invoke(self.queue_consumers[queue_output], event)
            except LambdaError:
                continue
            failed = {item["itemIdentifier"] for item in (response or {}).get("batchItemFailures", [])}
            succeeded |= {m["MessageId"] for m in messages} - failed
        self.acknowledge(queue_output, messages, succeeded)
        return len(messages)

    def acknowledge(self, queue_output: str, messages: list[dict[str, Any]], succeeded: set[str]) -> None:
        """After a poll: delete what succeeded at least once; the rest comes back after the
        visibility timeout (the clock jumps by it)."""
        url = self.outputs[queue_output]
        returned = 0
        for message in messages:
            if message["MessageId"] in succeeded:
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            else:
                returned += 1
                self.sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
        if returned:
            self.recovery.redeliveries += returned
            self.clock.advance(self.visibility_timeout(queue_output))

    def drain_queue(self, queue_output: str, *, max_rounds: int = 30) -> int:
        handled = 0
        for _ in range(max_rounds):
            received = self.deliver(queue_output)
            if not received:
                break
            handled += received
        return handled

    def redrive_dlqs(self) -> int:
        moved = 0
        sqs = self.operator_client("ops.redrive", "sqs")
        for dlq, source in self.dlqs.items():
            try:
                result = redrive_dlq(sqs, dlq_url=self.outputs[dlq], destination_url=self.outputs[source])
            except (ClientError, BotoCoreError) as error:
                self.operator_violations.append(
                    f"ops.redrive of {dlq} failed: {type(error).__name__}: {error}"
                )
                continue
            moved += result.moved or 0
        self.recovery.dlq_redrives += moved
        return moved

    def rerun_entity(self, entity_id: str) -> None:
        """An operator's `make rerun` of the entity (`ops.rerun`), once the platform has come to rest
        by itself (the operator reruns an entity seen FAILED): run N+1 when its run N ended FAILED
        (counted in `reruns`); an ACCEPTED entity's message is sent again; any other the tool
        refuses, which is counted, not a fault. What run N left behind (a message in a DLQ, a failed
        execution) can still come back after it: later actions redrive, restart and deliver."""
        self.rest()
        self.rerun_now(entity_id)

    def rerun_now(self, entity_id: str) -> None:
        """`make rerun` of the entity as the cloud stands (`rerun_entity` without coming to rest
        first): counted, and a tool that said no yet moved the run is the tool's violation."""
        before = self.entity_item(entity_id)
        try:
            rerun = self.rerun(entity_id)
        except RerunRefused as refused:
            self.recovery.refused_reruns += 1
            after = self.entity_item(entity_id)
            if before is not None and after is not None and int(after["run"]["N"]) > int(before["run"]["N"]):
                # Nothing else ran meanwhile: the tool's own transition landed, and it said no.
                self.operator_violations.append(
                    f"{entity_id}: make rerun answered RerunRefused ({refused}) but started run "
                    f"{after['run']['N']} (status {after['status']['S']})"
                )
            return
        except (ClientError, BotoCoreError) as error:
            self.operator_violations.append(
                f"{entity_id}: make rerun failed: {type(error).__name__}: {error}"
            )
            return
        if before is not None and rerun.run > int(before["run"]["N"]):
            self.recovery.reruns += 1

    def send_next_run(self, entity_id: str) -> None:
        """A message for the entity's next run (`{"<entity>_id", "run", "idempotency_key"}`) that no
        operator decided on: an old tool, a replayed export. Only `make rerun` may start a run."""
        item = self.entity_item(entity_id)
        if item is None:
            return
        run, key = int(item["run"]["N"]) + 1, item["idempotency_key"]["S"]
        declared = service()
        message = RunMessage(entity_id=entity_id, run=run, idempotency_key=key).body(declared.entity)
        self.sqs.send_message(
            QueueUrl=self.outputs[queue_output(declared.queue)], MessageBody=json.dumps(message)
        )
        self.recovery.stray_runs += 1

    def entity_item(self, entity_id: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self.dynamodb.get_item(
            TableName=self.outputs[table_output(service().entity.table)],
            Key=record_key(service().entity, entity_id),
            ConsistentRead=True,
        ).get("Item")
        return item

    # --- Step Functions -------------------------------------------------------------------------
    def step_lease_seconds(self) -> int:
        return max(self.functions[name].timeout for name in self.step_functions)

    def redrive_failed(self) -> int:
        """An operator's redrive of every failed execution (`ops.redrive`: resumed at the failed
        state; past the window, restarted under the same token or REFUSED), once the dead attempts'
        leases have passed. A REFUSED one's entity is left to a person (`awaiting_operator`): the
        tool says so and exits 1, and no automatic path may finish it once its fences may be gone."""
        failed = [e for e in self.executions() if e["status"] in REDRIVABLE_STATUSES]
        if self.express:
            return self._restart_express_runs(failed)
        if not failed:
            return 0
        for execution in failed:  # what each ended on, before a redrive makes it run again
            if execution["status"] == "FAILED":
                described = self.described(execution["executionArn"])
                self.failures.setdefault(
                    execution["executionArn"], (execution["name"], described.get("error"))
                )
        self.clock.advance(self.step_lease_seconds() + 1)
        try:
            results = redrive_failed_executions(
                self.operator_client("ops.redrive", "stepfunctions"),
                state_machine_arn=self.outputs["StateMachineArn"],
                now=self.clock(),
            )
        except (ClientError, BotoCoreError) as error:
            self.operator_violations.append(
                f"ops.redrive of failed executions failed: {type(error).__name__}: {error}"
            )
            return 0
        redriven = [r for r in results if r.method != Method.REFUSED]
        self.recovery.operator_redrives += len(redriven)
        self.recovery.refused_redrives += len(results) - len(redriven)
        for refused in (r for r in results if r.method == Method.REFUSED):
            described = self.described(refused.failed_execution_arn)
            self.awaiting_operator.add(run_of_execution(described["name"])[0])
        return len(redriven)

    def _restart_express_runs(self, failed: list[dict[str, Any]]) -> int:
        """Express has no RedriveExecution: the operator's `make redrive-workflow ID=<id>`
        sends an unfinished entity's current-run message again (`restart_express_entity`), once per
        run: the queue itself retries every failed execution (maxReceiveCount times), so the
        operator acts once it gave up. Besides the entities of failed executions, every entity still
        RUNNING at rest: on Express the worker's queue is the run's only retry, and a worker killed
        before its execution started leaves no execution, only the message, which SQS deletes
        once the DLQ's retention has passed (counted from its first enqueue)."""
        runs: dict[str, str] = {}  # `<entity>-r<run>` -> entity
        entity = service().entity
        for execution in failed:
            entity_id, number = run_of_execution(self.described(execution["executionArn"])["name"])
            runs[execution_name(entity_id, number)] = entity_id
        for item in self.dynamodb.scan(TableName=self.outputs[table_output(entity.table)]).get("Items", []):
            if item.get("sk", {}).get("S") == entity.name and item.get("status", {}).get("S") == "RUNNING":
                entity_id = item[entity.id_field]["S"]
                runs[execution_name(entity_id, int(item.get("run", {}).get("N", "1")))] = entity_id
        due = {run: entity_id for run, entity_id in runs.items() if run not in self.restarted_express}
        if not due:
            return 0
        self.clock.advance(self.step_lease_seconds() + 1)  # the dead attempts' leases pass first
        restarted = 0
        for run, entity_id in sorted(due.items()):
            self.restarted_express.add(run)
            if self.restart_express_entity(entity_id, self.operator_client("ops.redrive", "sqs")):
                self.recovery.operator_redrives += 1
                restarted += 1
        return restarted

    def restart_express_entity(self, entity_id: str, sqs: Any) -> bool:
        """`ops.redrive.restart_express_run` of one entity with the operator's SQS client: True when
        its run's message was sent again. REFUSED past the restart-safe window leaves the entity to
        a person (`awaiting_operator`), as on Standard; a finished entity has nothing to restart
        (another copy of the run completed it); a failed call is the tool's violation."""
        try:
            result = restart_express_run(
                store=run_records(
                    client=self.dynamodb,
                    table_name=self.outputs[table_output(service().entity.table)],
                    entity=service().entity,
                ),
                queue=SqsQueue(client=sqs, queue_url=self.outputs[queue_output(service().queue)]),
                entity_id=entity_id,
                now=self.clock(),
            )
        except RedriveError:
            return False
        except (ClientError, BotoCoreError) as error:
            self.operator_violations.append(
                f"ops.redrive of {service().entity.name} {entity_id} failed: {type(error).__name__}: {error}"
            )
            return False
        if result.method == Method.REFUSED:
            self.recovery.refused_redrives += 1
            self.awaiting_operator.add(entity_id)
            return False
        return True

    def restart_same_token(self) -> int:
        """Start every entity's workflow again under a new name with the same input (same token),
        while its first execution started less than `RESTART_SAFE_SECONDS` ago: the fences only
        promise to outlive that (`reliability.cdk.config.FENCE_WINDOWS`), and `ops.redrive` refuses a
        restart past it. An older token coming back is no path the platform has."""
        started = 0
        seen: set[str] = set()
        for execution in sorted(self.executions(), key=lambda e: e["startDate"]):
            described = self.described(execution["executionArn"])
            if described["input"] in seen:
                continue
            seen.add(described["input"])
            if self.clock() - execution["startDate"].timestamp() >= RESTART_SAFE_SECONDS:
                continue
            self.sfn.start_execution(
                stateMachineArn=self.outputs["StateMachineArn"],
                name=f"{execution['name'].split('-restart-')[0]}-again-{len(self.executions())}",
                input=described["input"],
            )
            started += 1
        self.recovery.restarts += started
        return started

    def recover(self, *, rounds: int = 12) -> None:
        """Drive everything to rest: the platform's own recovery, then an operator's redrives.
        Ends with no execution running, so nothing of this world runs on into the next one
        (moto's backends are process-global)."""
        self.rest(rounds=rounds, operator=True)

    def rest(self, *, rounds: int = 12, operator: bool = False) -> None:
        """What the platform does by itself until nothing moves: the event source mappings poll
        the queues, executions run, and once everything is quiet the scheduled functions run
        (the sweeper, when its bound has passed); with `operator`, failed executions are also
        redriven."""
        tick_due = True  # again only while the last tick failed: EventBridge fires the next one
        for _ in range(rounds):
            worker_queue = queue_output(service().queue)
            moved = self.drain_queue(worker_queue)
            self.wait_all()
            moved += sum(self.drain_queue(q) for q in self.queue_consumers if q != worker_queue)
            if operator:
                moved += self.redrive_failed()
            if moved == 0 and tick_due:
                ticked = self.run_scheduled()
                moved, tick_due = len(ticked), any(i.error_type for i in ticked)
            if moved == 0:
                break
        self.wait_all()

    def pass_time(self, seconds: float) -> int:
        """Days pass: the platform comes to rest by itself (nobody redrives), then the clock
        jumps and DynamoDB deletes what expired meanwhile. Returns the items expired."""
        self.rest()
        return self.advance(seconds)

    # --- scheduled functions (EventBridge rules) ------------------------------------------------
    def scheduled(self) -> list[tuple[str, int]]:
        """(function, seconds until it finds work) of every scheduled rule's target: its period
        plus the age it waits for (the sweeper's STRANDED_AFTER_SECONDS)."""
        resources = self.app_template["Resources"]
        out = []
        for rule in resources.values():
            expression = str(rule["Properties"].get("ScheduleExpression", ""))
            if rule["Type"] != "AWS::Events::Rule" or not expression.startswith("rate("):
                continue
            amount, unit = expression[len("rate(") : -1].split()
            period = int(amount) * _UNIT_SECONDS[unit.rstrip("s")]
            for target in rule["Properties"].get("Targets", []):
                name = resources[target["Arn"]["Fn::GetAtt"][0]]["Properties"]["FunctionName"]
                age = int(self.functions[name].environment.get("STRANDED_AFTER_SECONDS", 0))
                out.append((name, period + age))
        return out

    def run_scheduled(self) -> list[Invocation]:
        """Let the scheduled functions' time come (the simulator fires each schedule whose tick
        the jump crosses, `simulator.rules`); returns the invocations that made."""
        due = self.scheduled()
        before = len(self.invocations)
        if due:
            self.advance(max(wait for _, wait in due))
        return self.invocations[before:]

    def invocation_errors(self) -> Counter[str]:
        return Counter(i.error_type for i in self.invocations if i.error_type)
