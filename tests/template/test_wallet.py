"""Issue #31's acceptance, its fast half: a service generated from the template takes another
workflow, a wallet transfer, by writing only its domain's files, and its own checks pass.

The wallet (tests/template/wallet/, paths as in the copy) is what a user writes into a copy made
by `make new-service NAME=wallet-api ENTITY=transfer ID_PREFIX=tr-`: the declaration (debit the
source, pay out through a provider, credit the target, a reversed debit as the compensation, an
audit consumer), its effects, domain, contract, views and provider, its sample events and its own
domain tests; `DELETE` lists the template's files it removes. Then, as the user would, `make
openapi`, and the copy's `make lint` (ruff, mypy --strict), `make test-unit`, `make test-infra`
(both stages with cdk-nag) and `make synth` all pass; the synthesized stacks are the wallet's.
The lab's invariant checker, over the wallet's tables after each of its outcomes, finds nothing,
and sees the second payout an unfenced Payout makes (`wallet_lab`).

Its lab half runs the lab itself in the copy, with the copy's own make targets: `make chaos` (a
short search: 0 violations, violations in the control, the mutant that removes Payout's fence
caught; two more mutants' catch rates printed), `make demo` (every outcome on a local cloud,
invariants OK), `make story` (the new steps) and `make redrive-dlq` (the audit consumer's DLQ
offered). It takes minutes, so it runs under
`make acceptance` (CI, after `make test`), and is skipped elsewhere; so does the copy's `make lint`
(mypy --strict takes minutes on a fresh clone's empty cache).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.template.support import LIBRARY, ROOT, git, run

LAB_SOURCE = ROOT / "lab" / "src"
ACCEPTANCE = "RETRYSAFE_ACCEPTANCE"  # set by `make acceptance`: the lab half runs
# What takes minutes (the lab in the copy; mypy --strict on a cold cache) runs under make acceptance
LAB = pytest.mark.skipif(
    not os.environ.get(ACCEPTANCE), reason=f"minutes in the copy: make acceptance ({ACCEPTANCE}=1)"
)

# With test_copy.py on one worker under `make test` (--dist loadgroup): one copy built at a time.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("template-copy")]

WALLET = Path(__file__).resolve().parent / "wallet"
# Where a domain lives in a copy: anything else a user had to edit would be a template bug.
DOMAIN = ("functions/wallet_api/", "tests/", "events/")
STACKS = ("app", "data")
CHANGE_KINDS = {"A": "added", "M": "replaced", "D": "deleted"}  # git's status letters
STEPS = ("DebitSource", "Payout", "CreditTarget", "Publish", "Complete", "ReverseDebit", "MarkFailed")
PY = f"PY={sys.executable}"
# The copy's make targets with this venv and this checkout's library (as tests/template/support).
LIBRARY_ENV = {
    "PYTHONPATH": str(LIBRARY / "src"),
    "MYPYPATH": str(LIBRARY / "src"),
    "PYTEST_ADDOPTS": "-p no:xdist -q",
    "JSII_RUNTIME_PACKAGE_CACHE_ROOT": str(ROOT / ".cache" / "jsii"),
    # mypy's cache of the library and the stubs, kept between runs (a cold `make lint` takes minutes)
    "MYPY_CACHE_DIR": str(ROOT / ".cache" / "mypy-wallet"),
}


@dataclass
class Wallet:
    """The copy with the wallet applied, what the overlay changed, and how long each tier took."""

    root: Path
    changes: list[tuple[str, str]]  # (git status letter A/M/D, path), against the generated copy
    lines: dict[str, tuple[int, int]]  # path -> (lines added, lines removed)
    seconds: dict[str, float] = field(default_factory=dict)

    def make(self, *target: str) -> str:
        started = time.monotonic()
        done = run(["nice", "-n", "10", "make", *target, PY], self.root, **LIBRARY_ENV)
        self.seconds[" ".join(target)] = round(time.monotonic() - started, 1)
        return done.stdout


def apply_overlay(copy: Path) -> None:
    """The wallet's files over the copy's, and the template's files it does not need removed."""
    for source in WALLET.rglob("*"):
        if source.is_file() and source.name != "DELETE" and "__pycache__" not in source.parts:
            target = copy / source.relative_to(WALLET)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for line in (WALLET / "DELETE").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            (copy / line.strip()).unlink()


@pytest.fixture(scope="module")
def wallet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wallet]:
    copy = tmp_path_factory.mktemp("wallet") / "wallet-api"
    run(
        [
            *("make", "-o", ".venv/.installed", "-o", "node_modules/.installed", "new-service"),
            *("NAME=wallet-api", "ENTITY=transfer", "ID_PREFIX=tr-", f"DEST={copy}"),
        ],
        ROOT,
    )
    git(copy, "commit", "--quiet", "-m", "wallet-api as generated")
    apply_overlay(copy)
    found = Wallet(copy, [], {})
    found.make("openapi")  # the user's next step after a contract change
    git(copy, "add", "--all")
    listed = git(copy, "diff", "--cached", "--no-renames", "--name-status").splitlines()
    found.changes = [(status[0], path) for status, path in (line.split("\t", 1) for line in listed)]
    for line in git(copy, "diff", "--cached", "--no-renames", "--numstat").splitlines():
        added, removed, path = line.split("\t", 2)
        found.lines[path] = (int(added), int(removed))
    yield found
    print(f"\nwallet figures: {json.dumps(figures(found), indent=1)}")


def figures(wallet: Wallet) -> dict[str, Any]:
    by_status = {kind: sorted(p for s, p in wallet.changes if s == kind) for kind in CHANGE_KINDS}
    generated = {"functions/wallet_api/openapi.json"}
    written = {p: n for p, n in wallet.lines.items() if p not in generated}
    return {
        "files": {name: len(by_status[kind]) for kind, name in CHANGE_KINDS.items()},
        "paths": by_status,
        "lines written (added, not counting the generated openapi.json)": sum(a for a, _ in written.values()),
        "lines removed": sum(r for _, r in written.values()),
        "seconds": wallet.seconds,
    }


def test_the_wallet_edits_nothing_outside_its_domain(wallet: Wallet, record_property: Any) -> None:
    assert wallet.changes
    outside = [path for _, path in wallet.changes if not path.startswith(DOMAIN)]
    assert outside == [], f"the wallet had to edit template infrastructure: {outside}"
    record_property("wallet_figures", json.dumps(figures(wallet)))


def test_the_copy_answers_the_wallets_entity_and_id_prefix(wallet: Wallet) -> None:
    answers = yaml.safe_load((wallet.root / ".copier-answers.yml").read_text())
    assert (answers["entity_name"], answers["entity_id_prefix"]) == ("transfer", "tr-")
    declaration = (wallet.root / "functions" / "wallet_api" / "workflow.py").read_text()
    assert 'Entity(name="transfer", id_prefix="tr-"' in declaration


@LAB
def test_the_copys_make_lint_passes_mypy_strict_included(wallet: Wallet) -> None:
    wallet.make("lint")


def test_the_copys_unit_tests_pass_on_the_wallet(wallet: Wallet, record_property: Any) -> None:
    out = wallet.make("test-unit")
    assert " passed" in out
    assert "failed" not in out
    record_property("wallet_unit_tests", out.strip().splitlines()[-1])
    print(f"\nwallet unit tests: {out.strip().splitlines()[-1]}")


def test_the_copys_stacks_synthesize_with_cdk_nag(wallet: Wallet) -> None:
    out = wallet.make("test-infra")
    assert " passed" in out
    print(f"\nwallet infra tests: {out.strip().splitlines()[-1]}")


@pytest.fixture(scope="module")
def stacks(wallet: Wallet) -> dict[str, Any]:
    """The dev stage's two templates, from the copy's `make synth` (it fails on a cdk-nag finding)."""
    wallet.make("synth", "STAGE=dev")
    out = wallet.root / "cdk.out"
    return {kind: json.loads((out / f"wallet-api-dev-{kind}.template.json").read_text()) for kind in STACKS}


def _resources(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def _text(value: Any) -> str:
    """A property that CloudFormation joins (`Fn::Join`), its literal parts as one string."""
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join(part if isinstance(part, str) else "<ref>" for part in value["Fn::Join"][1])
    return str(value)


def test_the_state_machine_runs_the_wallets_steps_and_routes_its_refusals(stacks: dict[str, Any]) -> None:
    (machine,) = _resources(stacks["app"], "AWS::StepFunctions::StateMachine")
    states = json.loads(_text(machine["DefinitionString"]).replace("<ref>", "arn"))["States"]

    assert set(STEPS) <= set(states)
    # Both ends reach the one Succeed state: a refused transfer is a business outcome, not an error
    assert states[states["Complete"]["Next"]]["Type"] == "Succeed"
    assert states["MarkFailed"]["Next"] == states["Complete"]["Next"]
    assert states["ReverseDebit"]["Next"] == "MarkFailed"
    routes = {
        (name, error, catch["Next"])
        for name, state in states.items()
        for catch in state.get("Catch", ())
        for error in catch["ErrorEquals"]
    }
    assert ("DebitSource", "InsufficientFunds", "MarkFailed") in routes
    assert ("Payout", "PayoutRefused", "ReverseDebit") in routes


def test_the_audit_consumer_has_its_queue_dlq_function_and_table(stacks: dict[str, Any]) -> None:
    queues = {q["QueueName"] for q in _resources(stacks["data"], "AWS::SQS::Queue")}
    assert {"wallet-api-dev-audit", "wallet-api-dev-audit-dlq"} <= queues
    tables = {t["TableName"] for t in _resources(stacks["data"], "AWS::DynamoDB::Table")}
    assert {f"wallet-api-dev-{name}" for name in ("transfers", "balances", "payouts", "audit")} <= tables
    functions = {f["FunctionName"] for f in _resources(stacks["app"], "AWS::Lambda::Function")}
    assert "wallet-api-dev-audit" in functions


def test_the_operators_see_every_new_step(stacks: dict[str, Any]) -> None:
    # Each step's function has its own alarms; the dashboard's fence panels SEARCH over the `step`
    # dimension (reliability.cdk.dashboard: a new step shows up without naming it) and its DLQ
    # panel names each queue's DLQ, the audit consumer's too.
    alarms = {a["AlarmName"] for a in _resources(stacks["app"], "AWS::CloudWatch::Alarm")}
    for function in ("debit-source", "payout", "credit-target", "reverse-debit", "mark-failed", "audit"):
        assert f"wallet-api-dev-{function}-errors" in alarms
    (dashboard,) = _resources(stacks["app"], "AWS::CloudWatch::Dashboard")
    body = _text(dashboard["DashboardBody"])
    assert "{wallet-api,service,step}" in body
    assert "audit-dlq" in body


def _lab_check(wallet: Wallet, *flags: str) -> dict[str, Any]:
    """`tests.template.wallet_lab` in the copy: the lab's invariant checker over each outcome."""
    done = run(
        [sys.executable, "-m", "tests.template.wallet_lab", *flags],
        wallet.root,
        PYTHONPATH=":".join(
            (str(wallet.root / "functions"), str(ROOT), str(LIBRARY / "src"), str(LAB_SOURCE))
        ),
        POWERTOOLS_METRICS_NAMESPACE="wallet-lab",
        POWERTOOLS_LOG_LEVEL="WARNING",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
    )
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_the_labs_checker_holds_each_outcome_of_the_wallet_to_its_declaration(wallet: Wallet) -> None:
    report = _lab_check(wallet)

    assert sorted(row["outcome"] for row in report["rows"].values()) == ["compensated", "completed", "failed"]
    assert [row["violations"] for row in report["rows"].values()] == [[], [], []]
    assert report["global"] == []


def test_the_labs_checker_sees_an_unfenced_payout_pay_twice(wallet: Wallet) -> None:
    # What `fence-off:Payout` does once the provider has forgotten the key: a second payout
    report = _lab_check(wallet, "--unfenced-payout")

    completed = next(row for row in report["rows"].values() if row["outcome"] == "completed")
    assert "2 Payout effects (at most 1)" in completed["violations"]


# --- the lab half: the lab's own commands in the copy (make acceptance) ------------------------

SEED = "20261127"
KEEP_TOOLCHAIN = ("-o", ".venv/.installed", "-o", "node_modules/.installed")  # linked, never rebuilt


def lab_make(wallet: Wallet, *target: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """A lab target of the copy, on its own Makefile, with this checkout's venv and CDK CLI linked
    in as its own (their editable library and lab are this checkout's)."""
    for linked in (".venv", "node_modules"):
        if not (wallet.root / linked).exists():
            (wallet.root / linked).symlink_to(ROOT / linked)
    # the copy's own make, not a sub-make of `make acceptance` (no MAKEFLAGS, no directory banners)
    own = ("PYTHONPATH", "LOCALCLOUD_", "AWS_", "MAKE", "MFLAGS")
    env = {k: v for k, v in os.environ.items() if not k.startswith(own)}
    env["JSII_RUNTIME_PACKAGE_CACHE_ROOT"] = str(ROOT / ".cache" / "jsii")
    started = time.monotonic()
    done = subprocess.run(
        ["nice", "-n", "10", "make", "-s", *KEEP_TOOLCHAIN, *target],
        cwd=wallet.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    wallet.seconds[target[0]] = round(time.monotonic() - started, 1)
    if check:
        assert done.returncode == 0, f"make {' '.join(target)}:\n{done.stdout[-6000:]}\n{done.stderr[-4000:]}"
    return done


@LAB
def test_the_fault_search_holds_the_wallet_and_catches_its_unfenced_payout(wallet: Wallet) -> None:
    search = f"--seeds 1 --budget 30 --jobs 1 --seed {SEED}"
    lab_make(
        wallet,
        "chaos",
        f"CHAOS_ARGS=--quick --jobs 1 --seed {SEED}",
        f"MUTATION_ARGS=--only fence-off:Payout,reconcile-off:Payout,dedup-off:audit {search}",
        check=False,  # exits 1 when a mutant is not caught: judged below, mutant by mutant
    )
    results = wallet.root / "results" / "chaos"
    report = json.loads((results / "report.json").read_text())
    mutants = {m["name"]: m for m in json.loads((results / "mutants.json").read_text())["mutants"]}
    print(
        f"\nwallet chaos: {report['invariant_violations']} violations, {report['control_violations']} in the "
        f"control; mutants: {json.dumps({n: m['catch_rate'] for n, m in mutants.items()})}"
    )

    assert report["invariant_violations"] == 0
    assert report["control_violations"] > 0
    assert mutants["fence-off:Payout"]["caught"]
    # reconcile-off:Payout and dedup-off:audit are figures here, not a bar (one seed of 30 worlds):
    # off, the audit's dedup shows as a copy of an applied event dead-lettered


@LAB
def test_the_demo_plays_every_outcome_of_the_wallet_and_its_story_shows_the_new_steps(wallet: Wallet) -> None:
    out = lab_make(wallet, "demo").stdout
    assert "invariants: OK" in out
    for outcome in ("completed", "insufficient-funds", "payout-refused"):
        assert outcome in out
    stories = sorted((wallet.root / ".localcloud" / "stories").glob("tr-*.json"))
    assert stories

    story = lab_make(wallet, "story", f"ID={stories[0].stem}").stdout
    assert f"transfer {stories[0].stem}" in story
    for step in ("DebitSource", "Payout", "CreditTarget", "Complete"):
        assert step in story


@LAB
def test_redrive_dlq_offers_the_audit_consumers_dlq(wallet: Wallet) -> None:
    refused = lab_make(wallet, "redrive-dlq", "QUEUE=no-such-queue", check=False)
    assert refused.returncode != 0
    assert "'audit'" in refused.stderr
    assert "'transfers'" in refused.stderr
