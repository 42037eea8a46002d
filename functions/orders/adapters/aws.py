"""SQS and Step Functions adapters: the library's (`reliability.sqs`, `reliability.stepfunctions`),
named here for the lab's tools."""

from reliability.sqs import SqsQueue
from reliability.stepfunctions import ExpressStepFunctionsWorkflow, StepFunctionsWorkflow, execution_arn

__all__ = ["ExpressStepFunctionsWorkflow", "SqsQueue", "StepFunctionsWorkflow", "execution_arn"]
