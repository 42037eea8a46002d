"""The lab's one emulator core: what the local cloud (`localcloud`) and the in-process simulator
(`simulator`) both build on, written once.

- `config`: the account, region and concurrency every emulated endpoint shares;
- `shapes`: the events AWS hands a function (REST proxy, SQS records) and what a function hands
  back (an error payload, a partial batch failure);
- `functions`, `lambda_runtime`: a deployed function's spec and environment, its Lambda context and
  handler loader (the local cloud's worker processes run `lambda_runtime` as their bootstrap);
- `synth`, `templates`, `apigw_template`: the synthesized cloud assembly, made once per session and
  read without CDK (functions, state machine, queues, the REST API's routes);
- `patches_dynamo`, `patches_speed`, `patches_express`: the changes to moto both clouds apply
  (DynamoDB's hot paths, work moto repeats per request, Express workflows as AWS runs them).

It imports neither cloud, nor the operator tools (`ops`) or the fault search (`chaos`): the layers
are `pyproject.toml`'s `[tool.importlinter]` contracts, checked by `make lint`.
"""
