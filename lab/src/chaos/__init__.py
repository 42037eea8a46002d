"""Proof under faults (issue 6): crash points, fault schedules, interleavings, a control, a report.

- `chaos.points`: a crash controller shared by every function of one in-process cloud; each
  function gets a `FunctionPlan` (a `reliability.testing.crashpoints.CrashPlan`) that records the points
  it reaches, crashes at an armed (function, point, occurrence), loses the answer of an armed
  call (the SDK resends it), and lets the interleaving scheduler pause an attempt at every AWS
  call; the operator tools' clients go through it too.
- `chaos.cloud`: `ChaosCloud`, the integration harness's `InProcessCloud` plus what faults need
  (crashes surface as `Runtime.ExitError`, time that moves with the harness clock, SQS delivery
  with duplicates and visibility fast-forward, client retries, redrives).
- `chaos.control`: the control runtime (fences, HTTP idempotency and dedup switched off by
  injection) that must be caught violating the invariants.
- `chaos.single`, `chaos.schedules`, `chaos.interleave`: the three families of experiments
  (`chaos.scheduler` runs an interleaving's attempts one storage call at a time);
  `chaos.draw` draws the schedules (swarm, effects left across windows, coverage), `chaos.shrink`
  makes a violating one small.
- `chaos.report` and `python -m chaos`: the first half of `make chaos`; `chaos.mutation` (each
  guard off alone, searched by `chaos.search` from fresh seeds, scored by catch rate): the second;
  `chaos.aim` measures which functions each action reaches, what a mutant's search draws first.

Nothing here is imported by `functions/`: a deployment cannot switch a fence off.
"""
