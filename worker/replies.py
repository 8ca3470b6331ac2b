"""Answers of the load processes as the agent's gRPC replies: errors and typed results."""

from typing import TypeVar

from bgbench.protos import worker_pb2 as pb
from bgbench.worker.contracts import Answer, ErrorInfo

T = TypeVar("T")


def error(kind: str, message: str, field: str = "") -> pb.Error:
    return pb.Error(kind=kind, message=message, field=field)


def error_of(info: ErrorInfo) -> pb.Error:
    return error(info.kind, info.message)


def first_error(answers: list[Answer]) -> pb.Error | None:
    for a in answers:
        if a.error is not None:
            return error_of(a.error)
    return None


def result_of(answer: Answer, kind: type[T]) -> T:
    if not isinstance(answer.result, kind):
        raise TypeError(
            f"a load process answered {type(answer.result).__name__}, not {kind.__name__}"
        )
    return answer.result
