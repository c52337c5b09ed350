"""The engine's Python-side exceptions (a JavaScript `throw` travels as `JSThrow`)."""

from __future__ import annotations


class JSSyntaxError(Exception):
    """The source does not parse (the server reports `SyntaxError: <message>`)."""


class JSThrow(Exception):
    """A JavaScript exception in flight; `value` is the thrown JS value."""

    def __init__(self, value) -> None:
        super().__init__(value)
        self.value = value


class JSBudgetExceeded(Exception):
    """The script ran past its step budget or deadline (the interrupt the server's watchdog gives)."""
