"""seglog's own error out of a Spark exception: the one-line message first, Spark's trace after.

A seglog error raised inside Spark (in the planner's Python worker that runs
``DataSource.reader()`` / ``writer()``, or in an executor's ``read()`` / ``write()``) reaches
the driver as a ``pyspark.errors`` exception (``AnalysisException``,
``StreamingQueryException``, ``PythonException``) or a Py4J ``Py4JJavaError`` whose text
holds a ``PYTHON_DATA_SOURCE_ERROR`` header, Java frames and, somewhere inside, the Python
traceback, ending with the line Python's ``traceback`` module writes for the exception::

    seglog.errors.SparkOptionError: unknown option 'startingoffset' for the seglog source; ...

That line is the mark: a module path under ``seglog.``, a class name, ``": "``, the message.
:func:`seglog_error_of` finds the **last** such line (a chained traceback prints the cause
first and the raised error last; Spark may repeat the text, always the same error), imports
the class from the named seglog module and rebuilds the error with that message (the first
line of it: seglog's messages are one line), so ``except SparkOptionError`` works and
``str(error)`` starts with seglog's message. A class seglog no longer has becomes
:class:`SparkJobError`. Attributes set by an error's own constructor (``path``,
``position``) are not rebuilt: only the type and the message cross the Py4J boundary.

It also translates Spark's own refusal of a write without ``.mode(...)``: Spark's default
mode ``ErrorIfExists`` is unsupported for a Python data source and Spark's message says to use
"Append" or "Overwrite"; seglog refuses overwrite (a log is append-only), so the error
becomes a :class:`~seglog.errors.SparkOptionError` saying to add ``.mode("append")``.

:func:`seglog_errors` (a context manager) re-raises the rebuilt error ``from`` the Spark one,
so Python prints Spark's trace as the cause and seglog's error last, and a program catching
``SeglogError`` sees it; seglog's helpers (``export_topic``, ``compact``,
``partition_stats``, decorated with :func:`unwrapping_seglog_errors`) and ``seglog spark
...`` run inside it, and user code can too::

    with seglog_errors():
        df.write.format("seglog").option("path", d).option("topic", "t").save()

Only exceptions of ``pyspark`` and ``py4j`` are looked into; anything else passes unchanged.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from seglog.errors import SeglogError, SparkOptionError

P = ParamSpec("P")
R = TypeVar("R")


class SparkJobError(SeglogError):
    """A seglog error raised inside a Spark task whose class could not be rebuilt here."""


#: The last line of a Python traceback of a seglog error.
_SEGLOG_LINE = re.compile(
    r"^(?P<module>seglog(?:\.[A-Za-z_]\w*)*)\.(?P<name>[A-Z]\w*): (?P<message>[^\r\n]*)$",
    re.MULTILINE,
)
_SAVE_MODE = re.compile(
    r"\[UNSUPPORTED_DATA_SOURCE_SAVE_MODE\][^\n]*?\"seglog\"[^\n]*?\"(?P<mode>\w+)\" mode"
)
_SPARK_MODULES = ("pyspark", "py4j")

MISSING_APPEND_MODE = (
    'the seglog sink only appends: add .mode("append") to the write (Spark\'s default mode '
    "{mode!r} is not supported for a Python data source, and overwrite is refused because a "
    "Kafka log is append-only)"
)


def is_spark_exception(exc: BaseException) -> bool:
    """Whether ``exc`` comes from pyspark or Py4J (the only exceptions looked into)."""
    return type(exc).__module__.split(".")[0] in _SPARK_MODULES


def _spark_text(exc: BaseException) -> str:
    """Everything Spark says about ``exc``: its text and its chain's (a ``Py4JJavaError``
    keeps the Java exception's text, traceback included, in ``str()``)."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        try:
            parts.append(str(current))
        except Exception:
            parts.append(repr(current))
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def _rebuild(module: str, name: str, message: str) -> SeglogError:
    """An instance of ``module.name`` (a seglog error class) with ``message`` as its text."""
    found = sys.modules.get(module)
    if found is None:
        try:
            found = importlib.import_module(module)
        except ImportError:
            found = None
    cls = getattr(found, name, None)
    if not (isinstance(cls, type) and issubclass(cls, SeglogError)):
        return SparkJobError(f"{name}: {message}")
    # The error's own __init__ may want more than a message (path=, position=): bypass it.
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    return error


def seglog_error_of(exc: BaseException) -> SeglogError | None:
    """The seglog error ``exc`` (a pyspark/Py4J exception) carries, rebuilt; None if none.

    A :class:`SeglogError` is returned as it is; an exception of another library, None.
    """
    if isinstance(exc, SeglogError):
        return exc
    if not is_spark_exception(exc):
        return None
    text = _spark_text(exc)
    marks = list(_SEGLOG_LINE.finditer(text))
    if marks:
        last = marks[-1]
        return _rebuild(last["module"], last["name"], last["message"].strip())
    mode = _SAVE_MODE.search(text)
    if mode is not None:
        return SparkOptionError(MISSING_APPEND_MODE.format(mode=mode["mode"]))
    return None


@contextmanager
def seglog_errors() -> Iterator[None]:
    """Re-raise a seglog error found in a Spark exception ``from`` it (module docstring)."""
    try:
        yield
    except SeglogError:
        raise
    except Exception as exc:
        found = seglog_error_of(exc)
        if found is None:
            raise
        raise found from exc


def unwrapping_seglog_errors(function: Callable[P, R]) -> Callable[P, R]:
    """Decorate a seglog helper so that it runs inside :func:`seglog_errors`."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with seglog_errors():
            return function(*args, **kwargs)

    return wrapper


__all__ = [
    "SparkJobError",
    "is_spark_exception",
    "seglog_error_of",
    "seglog_errors",
    "unwrapping_seglog_errors",
]
