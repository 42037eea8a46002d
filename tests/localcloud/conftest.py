"""Fixtures for the local cloud's own tests: the fixture assembly and free ports."""

from __future__ import annotations

import io
import socket
import zipfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
ASSEMBLY = FIXTURES / "assembly"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def assembly() -> Path:
    """A real two-stack CDK assembly shaped like retrysafe (see fixtures/cdk_app/app.py)."""
    return ASSEMBLY


@pytest.fixture
def handlers_zip() -> bytes:
    """The fixture handlers zipped, as the CDK CLI packages a directory asset."""
    directory = FIXTURES / "cdk_app" / "handlers"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*.py")):
            archive.write(path, path.relative_to(directory).as_posix())
    return buffer.getvalue()
