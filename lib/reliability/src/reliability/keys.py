"""One way to derive every key: namespace + stage + run + business identity.

A key value looks like ``{namespace}#{stage}#r{run}#v:{identity}`` while it stays short, and
``{namespace}#{stage}#r{run}#h:{sha256 of all of it}`` when it would exceed ``MAX_KEY_BYTES``.
The ``v:``/``h:`` marker keeps a readable key from ever equalling a hashed one. ``label`` keeps a
readable prefix of the identity beside the key so an operator can tell what a record is about.

Runs: a deliberate re-execution uses run 2, 3, ... instead of deleting records, so run is part
of every key.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_KEY_BYTES = 256
LABEL_CHARS = 96
# A namespace or stage: what may stand between a key's '#' separators.
SEGMENT_PATTERN = r"^[^#\s]{1,64}$"
_SEGMENT = re.compile(SEGMENT_PATTERN)
_EXECUTION_SAFE = re.compile(r"^[A-Za-z0-9_-]+$")
# Step Functions execution names are at most 80 characters.
MAX_TOKEN_CHARS = 80


# The fence namespace of every workflow step (docs/how-it-works.md, "Fences and step statuses"):
# a key layout fact, so a reader of a step's fence (an API's view) loads no saga.
SAGA_NAMESPACE = "saga"


@dataclass(frozen=True)
class Key:
    """``value`` is the bounded stored key; ``label`` a readable part of the input for operators."""

    value: str
    label: str

    def __str__(self) -> str:
        return self.value


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal mappings give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _check_segment(name: str, value: str) -> None:
    if not _SEGMENT.match(value):
        raise ValueError(f"{name} must be 1-64 characters without '#' or whitespace, got {value!r}")


def derive_key(namespace: str, *, stage: str, identity: str | Mapping[str, Any], run: int = 1) -> Key:
    """Derive the stored key for ``identity`` within ``namespace`` (route, step or consumer)."""
    _check_segment("namespace", namespace)
    _check_segment("stage", stage)
    if run < 1:
        raise ValueError(f"run starts at 1, got {run}")
    text = identity if isinstance(identity, str) else canonical_json(dict(identity))
    if not text:
        raise ValueError("identity must not be empty")
    prefix = f"{namespace}#{stage}#r{run}#"
    readable = f"{prefix}v:{text}"
    label = text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"
    if len(readable.encode()) <= MAX_KEY_BYTES:
        return Key(value=readable, label=label)
    digest = hashlib.sha256(readable.encode()).hexdigest()
    return Key(value=f"{prefix}h:{digest}", label=label)


def execution_token(*, stage: str, business_id: str, run: int) -> str:
    """The token of one workflow run: ``{stage}.{business_id}.r{run}``, usable as an execution name.

    A business id with characters an execution name forbids, or one too long, is replaced by
    ``h-`` + a sha256 prefix, so the token stays at most 80 characters and unambiguous.
    """
    _check_segment("stage", stage)
    if "." in stage:
        raise ValueError("stage must not contain '.'")
    if run < 1:
        raise ValueError(f"run starts at 1, got {run}")
    if not business_id:
        raise ValueError("business_id must not be empty")
    token = f"{stage}.{business_id}.r{run}"
    if _EXECUTION_SAFE.match(business_id) and len(token) <= MAX_TOKEN_CHARS:
        return token
    digest = hashlib.sha256(business_id.encode()).hexdigest()[:40]
    return f"{stage}.h-{digest}.r{run}"


@dataclass(frozen=True)
class Fact:
    """What an event states, named by its business identity: its ``kind`` (the event type), the
    business id it is about (``subject``) and the ``run``. Two deliveries that state the same fact
    are one delivery, whatever id each carries: a consumer dedupes on ``id(stage=<its own>)``,
    never on an id the event declares (another stage's, or a hand-made redrive's)."""

    kind: str
    subject: str
    run: int = 1

    def id(self, *, stage: str) -> str:
        """``{kind}#{stage}#r{run}#v:{subject}``: the id a publisher stamps on the event and the
        token each consumer of ``stage`` keys its dedup record and its per-event items on."""
        return derive_key(self.kind, stage=stage, identity=self.subject, run=self.run).value


@dataclass(frozen=True)
class KeyParts:
    """What a stored key or an execution token says about itself (for telemetry and operators)."""

    run: int
    business_id: str | None  # the identity when it is a plain readable string (not JSON, not hashed)


_KEY = re.compile(r"^[^#\s]+#[^#\s]+#r(?P<run>[0-9]+)#(?:v:(?P<identity>.*)|h:[0-9a-f]+)$", re.DOTALL)
_TOKEN = re.compile(r"^[^.]+\.(?P<business>.+)\.r(?P<run>[0-9]+)$")


def key_parts(value: str) -> KeyParts | None:
    """Run and readable business id of a ``derive_key`` value or an ``execution_token``; None for
    anything else. A hashed id (``h-``/``h:``) or a JSON identity gives ``business_id=None``."""
    if match := _KEY.match(value):
        identity = match["identity"]
        readable = identity is not None and not identity.startswith(("{", "["))
        return KeyParts(run=int(match["run"]), business_id=identity if readable else None)
    if match := _TOKEN.match(value):
        business = match["business"]
        return KeyParts(run=int(match["run"]), business_id=None if business.startswith("h-") else business)
    return None
