"""The facts both clouds share: the account and region in every ARN they hand out, and how many
concurrent callers an endpoint serves."""

from __future__ import annotations

# moto's default account.
ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
# Concurrent clients the local cloud serves without dropping one (tests/localcloud/test_fast_paths.py);
# also the connection pool of the client the Step Functions Lambda tasks share (patches_speed).
CONCURRENT_CALLS = 64
