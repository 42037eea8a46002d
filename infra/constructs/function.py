"""The service's choice of Lambda runtime and architecture, and the Powertools layer that matches.

The function construct itself is the library's (reliability.cdk.function.ServiceFunction); the
stacks pass it these, and the layer build (ops/layer.py) reads them too.
"""

from __future__ import annotations

from aws_cdk import aws_lambda as lambda_

# The newest Python runtime that both this aws-cdk-lib and the AWS-managed Powertools layer
# support (the layer is published for python3.10-3.14 under the SSM path below).
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
# Public SSM parameter kept by the Powertools team in every commercial region; resolved by
# CloudFormation at deploy time, so the template stays region- and account-agnostic. It becomes a
# stack parameter whose default is this name: emulators without public parameters deploy the same
# template with that parameter overridden (`ops.deploy`, LocalStack) or answer the name themselves
# (the local cloud), so there is one template per stage whatever the target.
POWERTOOLS_LAYER_PARAMETER = "/aws/service/powertools/python/arm64/python3.14/latest"
