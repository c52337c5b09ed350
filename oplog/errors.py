"""MongoError: the one exception every layer raises for a server error.

It carries what a server reply carries: `code`, `codeName`, `errmsg`, optional
`errorLabels` and extra fields (e.g. `keyPattern`/`keyValue` of a DuplicateKey),
and renders itself as the reply document `{ok: 0, errmsg, code, codeName, ...}`.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.error_codes import CATEGORIES, CODES

_NAMES: dict[int, str] = {code: name for name, code in CODES.items()}


def code_of(name: str) -> int:
    """The numeric code of `name` (KeyError for an unknown name)."""
    return CODES[name]


def name_of(code: int) -> str:
    """The codeName of `code`; unknown codes are named `Location<code>` as the server does."""
    return _NAMES.get(code, f"Location{code}")


def in_category(code: int, category: str) -> bool:
    return code in CATEGORIES.get(category, ())


class MongoError(Exception):
    """A server error: `MongoError("BadValue", "unknown operator: $foo")` or by number."""

    def __init__(
        self,
        code: int | str,
        errmsg: str,
        *,
        labels: list[str] | tuple[str, ...] = (),
        **extra: Any,
    ) -> None:
        if isinstance(code, str):
            self.code_name = code
            self.code = CODES[code]
        else:
            self.code = int(code)
            self.code_name = name_of(self.code)
        self.errmsg = errmsg
        self.labels = list(labels)
        self.extra = extra
        super().__init__(f"{self.code_name} ({self.code}): {errmsg}")

    def add_label(self, label: str) -> None:
        if label not in self.labels:
            self.labels.append(label)

    def to_reply(self) -> dict[str, Any]:
        """The error reply body, in the server's field order."""
        reply: dict[str, Any] = {"ok": 0.0, "errmsg": self.errmsg, "code": self.code, "codeName": self.code_name}
        reply.update(self.extra)
        if self.labels:
            reply["errorLabels"] = list(self.labels)
        return reply

    @classmethod
    def from_write_error(cls, error: dict[str, Any]) -> "MongoError":
        """The error an element of `writeErrors` describes (the inverse of `to_write_error`)."""
        extra = {k: v for k, v in error.items() if k not in ("index", "code", "errmsg")}
        return cls(int(error["code"]), error.get("errmsg", ""), **extra)

    def to_write_error(self, index: int) -> dict[str, Any]:
        """The element of a write reply's `writeErrors` array."""
        err: dict[str, Any] = {"index": index, "code": self.code}
        err.update(self.extra)
        err["errmsg"] = self.errmsg
        return err
