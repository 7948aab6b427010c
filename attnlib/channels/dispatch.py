"""The one dispatch on the task type: :func:`for_task`, and :func:`require_task`, the
one validation of a task's type (nothing outside :mod:`attnlib.channels` asks it)."""

from __future__ import annotations

from attnlib import tasks as _tasks
from attnlib.channels.channel import Channel
from attnlib.channels.hardmax_channel import HardmaxChannel
from attnlib.channels.linear import LinearChannel
from attnlib.channels.softmax import Seq2LabChannel, Seq2SeqChannel

__all__ = ["for_task", "require_task"]

# (task type, channel type), tried in order; any other task gets the generic Channel
_CHANNELS = (
    (_tasks.Linear, LinearChannel),
    (_tasks.Hardmax, HardmaxChannel),
    (_tasks.Seq2Seq, Seq2SeqChannel),
    (_tasks.Seq2Lab, Seq2LabChannel),
)


def for_task(task) -> Channel:
    """The output channel of ``task`` (an :class:`attnlib.tasks.Task`): linear, seq2seq,
    seq2lab, hardmax, or the generic channel of a custom task; the task's noise is part
    of it. Cheap (no compilation): call it at the Python level, outside traced code or
    on the static ``task`` of a compiled function."""
    require_task(task)
    for kind, channel in _CHANNELS:
        if isinstance(task, kind):
            return channel(task)
    return Channel(task)


def require_task(task, kind: type = _tasks.Task, name: str = "task", *, accepted: str = ""):
    """``task`` if it is an instance of ``kind`` (an :class:`attnlib.tasks.Task` type);
    otherwise ``ValueError``: ``"<name> must be <accepted>, got <task>"``, where
    ``accepted`` defaults to ``"an attnlib.tasks.<kind>"``."""
    if not isinstance(task, kind):
        accepted = accepted or f"an attnlib.tasks.{kind.__name__}"
        raise ValueError(f"{name} must be {accepted}, got {task!r}")
    return task
