"""Exceptions shared by every part of tokrag.

Every error a user can cause is a :class:`TokragError`; its message names the file, line or argument
at fault and says what to do. Code that catches a library exception (Java, transformers, datasets)
re-raises one of these with ``from exc`` so that the user never sees a bare stack trace first.
"""

from __future__ import annotations


class TokragError(Exception):
    """Base class of all user-facing tokrag errors."""


class DataError(TokragError, ValueError):
    """Bad input data: a malformed corpus or query file, missing fields, duplicate ids, bad UTF-8."""


class ConfigError(TokragError, ValueError):
    """A bad argument: an unknown or mistyped model argument, an invalid k, an unknown name."""


class IndexNotFoundError(TokragError, FileNotFoundError):
    """An index folder that does not exist, is incomplete, or does not match its corpus."""


class JavaSetupError(TokragError, RuntimeError):
    """Java for Pyserini cannot be set up (for instance a user's JAVA_HOME older than Java 21)."""


class OfflineError(TokragError, OSError):
    """A hub id was asked for but the hub cannot be reached; the message says how to use a local path."""
