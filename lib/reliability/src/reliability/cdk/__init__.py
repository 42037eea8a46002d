"""The reliability layer's infrastructure half: AWS CDK constructs for what the runtime half needs.

Install with the `cdk` extra (`retrysafe-reliability[cdk]`: aws-cdk-lib, constructs, cdk-nag).
The runtime half (`reliability` and its modules) never imports this package, and a Lambda asset
need not ship it. Importing this package itself loads nothing of aws_cdk: `windows` is pure
Python; each other module is imported by its name.

- `windows`: AWS's limits, the fence lease and its waits, the windows a record TTL must outlive
  (`check_outlives`, the guard a synth runs).
- `workflow`: `FencedWorkflow`, the saga as a Step Functions state machine (Standard or Express)
  with the Retry/Catch policy whose error names are the runtime's exception classes.
- `queue`: `QueueWithDlq` (queue, DLQ, the DLQ's alarm) and `consume` (the event source mapping
  with partial batch responses).
- `table`: `ServiceTable`, and the record tables' shape (`RECORD_KEY`, `RECORD_TTL_ATTRIBUTE`).
- `function`: `ServiceFunction` (own role, log group, JSON logs, tracing, error/throttle alarms).
- `dashboard`: `DecisionDashboard`, a panel for every `reliability.telemetry.Decision`, the DLQs'
  depths, the executions, alarms on stale completions and takeovers.
- `key`, `log_group`, `nag`: the stage's KMS key, log groups, cdk-nag/checkov acknowledgements.

A service's whole assembly, from its declaration (`reliability.declaration.Service`):
- `service`: `ServiceStacks`, both stacks of one stage (what a service's CDK app calls).
- `data_stack`, `app_stack`: `ServiceDataStack`, `ServiceAppStack`; `access`: what each function
  may touch; `sizing`: each function's handler, timeout and memory; `api`: `OpenApiRestApi`, the
  REST API from the OpenAPI document (`api_model`: its body models in draft 4);
  `service_dashboard`: the decision dashboard with the worker queue's and sweeper's alarms.
- Pure Python: `declared` (the declaration loaded by path, checked at synth), `config` (the
  stage's cdk.json entry), `capacity` (the capacity plan). `asset`: the Lambda asset builder.
"""
