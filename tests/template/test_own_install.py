"""A copy sets itself up as a new user's would: `make new-service`, then in the copy its own
`make install` (a venv of its own, the pinned toolchain from the package registries, this
checkout's library and lab by the file references `make new-service` answers) and its own
`make test`. The other template tests lend the copy this checkout's venv; this one does not.
Minutes and the registries: `make acceptance` (CI) only."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.template.support import ROOT, run
from tests.template.test_wallet import ACCEPTANCE

pytestmark = pytest.mark.skipif(
    not os.environ.get(ACCEPTANCE), reason=f"minutes and the registries: make acceptance ({ACCEPTANCE}=1)"
)


def _own_make(copy: Path, target: str) -> subprocess.CompletedProcess[str]:
    """The copy's own make, in an environment that lends it nothing of this checkout's."""
    lent = ("PYTHONPATH", "VIRTUAL_ENV", "PY", "MAKE", "MFLAGS", "LOCALCLOUD_", "AWS_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(lent) and k != "PATH"}
    env["PATH"] = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))
    )
    env["JSII_RUNTIME_PACKAGE_CACHE_ROOT"] = str(ROOT / ".cache" / "jsii")  # ~185 MB, unpacked once
    return subprocess.run(
        ["make", target], cwd=copy, env=env, capture_output=True, text=True, timeout=1800, check=False
    )


def test_a_copy_installs_its_own_toolchain_and_its_tests_pass(tmp_path: Path) -> None:
    copy = tmp_path / "payments-api"
    run(
        [
            *("make", "-o", ".venv/.installed", "-o", "node_modules/.installed", "new-service"),
            *("NAME=payments-api", f"DEST={copy}"),
        ],
        ROOT,
    )
    for target in ("install", "test"):
        done = _own_make(copy, target)
        assert done.returncode == 0, f"make {target}:\n{done.stdout[-6000:]}\n{done.stderr[-4000:]}"
    assert (copy / ".venv" / ".installed").exists()
    assert not (copy / ".venv").is_symlink()
    assert " passed" in done.stdout
