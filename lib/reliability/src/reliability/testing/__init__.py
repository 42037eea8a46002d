"""Test seams of the reliability layer: what chaos tests, the simulator and the local cloud use to
kill a function at a named point or fail an AWS call (``crashpoints``: the variables and their
syntax; ``crashplan``: the plan that parses them, counts hits and hooks clients).

Production code never imports this package: it calls the hook points of ``reliability.faults``,
which load ``crashplan`` only when ``RETRYSAFE_CRASH_POINTS`` arms a plan in the process.
"""
