"""The in-process cloud: the whole chain on moto in this process, deployed from the synthesized
cloud assembly, with the real handler code, simulated time and what AWS does as it passes.

    from simulator.cloud import running_cloud, Clock
    with running_cloud(assembly) as cloud:
        cloud.api("POST", "/<entity>s", ...); cloud.settle(); cloud.advance(2 * 86400)

- `simulator.cloud`: `InProcessCloud`, `running_cloud`, `stores()` for `ops.invariants`; built from
  `simulator.deploy` (the templates onto moto), `simulator.lambdas` (the real handlers run in this
  process) and `simulator.consumers` (SQS driven by hand: `pump`/`drain`);
- `simulator.clock`: the `Clock`; `simulator.expiry`: DynamoDB TTL deletion as time passes;
- `simulator.events`: REST and SQS events (the SQS record is the local cloud's pollers' shape);
- `emulator.templates`: reading synthesized templates without CDK; `emulator.synth`: the
  cached synthesis of a stage (`.cache/test-cdk.out/<stage>`).

Tests, `make chaos` (`lab/src/chaos/`) and benchmarks import it; it never imports `tests/`.
"""
