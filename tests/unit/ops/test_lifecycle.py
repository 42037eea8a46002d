"""ops.lifecycle: a tool drives the local cloud of the stage it asked for, never another's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ops import lifecycle
from ops.local.outputs import Outputs
from ops.service import service
from reliability.declaration import Entity

ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:retrysafe-{}-order-workflow"


def _serving(stage: str) -> Outputs:
    return Outputs(
        endpoint="http://127.0.0.1:1",
        api_url=None,
        region="us-east-1",
        outputs={"StateMachineArn": ARN.format(stage)},
    )


def test_a_local_cloud_of_another_entity_serves_its_own_stage_only() -> None:
    # Given a service whose entity is a transfer (its state machine `<service>-<stage>-transfer-workflow`)
    wallet = replace(service(), entity=Entity(name="transfer", id_prefix="tr-", table="transfers"))
    transfers = ARN.replace("-order-", "-transfer-")

    def serving(stage: str) -> Outputs:
        return replace(_serving(stage), outputs={"StateMachineArn": transfers.format(stage)})

    # Then its local cloud serves its stage, and only that one
    assert lifecycle.serves(serving("local"), "local", wallet)
    assert lifecycle.serves(serving("local-express"), "local-express", wallet)
    assert not lifecycle.serves(serving("local-express"), "local", wallet)


def test_a_local_cloud_serves_its_own_stage_only() -> None:
    assert lifecycle.serves(_serving("local"), "local")
    assert lifecycle.serves(_serving("local-express"), "local-express")
    assert not lifecycle.serves(_serving("local-express"), "local")  # its names also hold `-local-`
    assert not lifecycle.serves(_serving("local"), "local-express")


def test_a_running_local_cloud_of_another_stage_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(lifecycle, "running", lambda _dir: _serving("local"))
    with pytest.raises(lifecycle.StageMismatch, match="is not stage local-express"):  # noqa: SIM117
        with lifecycle.local_cloud(tmp_path, print, stage="local-express"):
            pass
    with lifecycle.local_cloud(tmp_path, print, stage="local") as (out, started_here):
        assert (out.outputs["StateMachineArn"], started_here) == (ARN.format("local"), False)
