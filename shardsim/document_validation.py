"""Document validation: a collection's `validator`, `validationLevel` and `validationAction`.

As the server's CollectionImpl::checkValidation does, every insert and every
update's new document is matched against the collection's validator unless

* the level is `off`, the command says `bypassDocumentValidation: true`, or the
  write is a chunk migration's (documents arrive already validated);
* the level is `moderate` and an updated document already failed before the
  update (bad -> bad is allowed; good -> bad is not; inserts are always checked).

A document that fails is refused with DocumentValidationFailure (121),
"Document failed validation", and `errInfo` explaining why
(`shardsim.doc_validation_error`).  With `validationAction: "warn"` it is
written, and the server's warning (id 20294, "Document would fail validation",
with the namespace, the document and the same errInfo) is logged instead.

`parse_options` checks the validation options of `create` and `collMod`:
enum values as the IDL parser does, the validator as a query (with
`$jsonSchema`), and where validators may not be.  A collection with no
validator has `coll.validator is None`: its writes pay nothing here.
"""

from __future__ import annotations

import logging
from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim import json_schema  # noqa: F401  (registers $jsonSchema with the matcher)
from mongosim.shardsim.doc_validation_error import generate_error
from mongosim.shardsim.match_expression import Node, parse_validator
from mongosim.shardsim.query.extensions_callback import FUNCTION_OPS, WHERE_OPS, mentions, where_not_allowed
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.matcher import compile_filter

log = logging.getLogger("mongosim.storage")

LEVELS = ("off", "strict", "moderate")
ACTIONS = ("error", "warn")
INTERNAL_DBS = ("admin", "local", "config")
FAILED = "Document failed validation"


class Validator:
    """A collection's parsed validator and how it applies."""

    __slots__ = ("tree", "match", "level", "action", "ns")

    def __init__(self, ns: str, validator: dict, level: str, action: str) -> None:
        self.ns = ns
        self.match = compile_filter(validator)
        self.tree: Node = parse_validator(validator)
        self.level = level
        self.action = action

    def fails(self, doc: dict) -> bool:
        try:
            return not self.match(doc, None)
        except MongoError:
            return True

    def error(self, doc: dict) -> MongoError:
        return MongoError("DocumentValidationFailure", FAILED, errInfo=generate_error(self.tree, doc))

    def check(self, doc: dict) -> MongoError | None:
        """The error to raise for `doc` (None when it passes, or when the action is warn: then it is logged)."""
        if not self.fails(doc):
            return None
        err = self.error(doc)
        if self.action == "warn":
            log.warning("Document would fail validation",
                        extra={"component": "STORAGE", "log_id": 20294,
                               "attr": {"namespace": self.ns, "document": doc, "errInfo": err.extra["errInfo"]}})
            return None
        return err


def _enum_error(cmd_name: str, field: str, value: Any) -> MongoError:
    if not isinstance(value, str):
        return wrong_type(f"{cmd_name}.{field}", value, "string")
    return MongoError("BadValue", f"Enumeration value '{value}' for field '{cmd_name}.{field}' is not a valid value.")


def check_options(cmd_name: str, db: str, coll: str, opts: dict) -> None:
    """The validation options of `create`/`collMod` (raise the server's error for a bad one)."""
    if "validationLevel" in opts and opts["validationLevel"] not in LEVELS:
        raise _enum_error(cmd_name, "validationLevel", opts["validationLevel"])
    if "validationAction" in opts and opts["validationAction"] not in ACTIONS:
        raise _enum_error(cmd_name, "validationAction", opts["validationAction"])
    if "validator" not in opts:
        return
    validator = opts["validator"]
    if not isinstance(validator, dict):
        raise wrong_type(f"{cmd_name}.validator", validator, "object")
    if not validator:
        return
    if coll.startswith("system."):
        raise MongoError("InvalidOptions", f"Document validators not allowed on system collection {db}.{coll}")
    if db in INTERNAL_DBS:
        raise MongoError("InvalidOptions", f"Document validators are not allowed on collection {db}.{coll} in the "
                                           f"{db} internal database")
    try:
        if mentions(validator, WHERE_OPS):
            raise where_not_allowed()
        if mentions(validator, FUNCTION_OPS):
            raise MongoError(4660800, "$function cannot be used inside a validator.")
        compile_filter(validator)
        parse_validator(validator)
    except MongoError as err:
        raise MongoError(err.code, f"Parsing of collection validator failed :: caused by :: {err.errmsg}") from None


def validator_for(ns: str, options: dict) -> Validator | None:
    validator = options.get("validator")
    if not validator or options.get("validationLevel", "strict") == "off":
        return None
    return Validator(ns, validator, options.get("validationLevel", "strict"), options.get("validationAction", "error"))


def bypassed(cmd: dict, from_migrate: bool) -> bool:
    """DocumentValidationSettings: the command bypasses validation (or a migration writes)."""
    return from_migrate or bool(cmd.get("bypassDocumentValidation"))


def check_insert(validator: Validator, cmd: dict, doc: dict, from_migrate: bool = False) -> None:
    if bypassed(cmd, from_migrate):
        return
    err = validator.check(doc)
    if err is not None:
        raise err


def check_update(validator: Validator, cmd: dict, old: dict, new: dict, from_migrate: bool = False) -> None:
    """An updated document: strict refuses any failing result; moderate only one that passed before."""
    if bypassed(cmd, from_migrate):
        return
    err = validator.check(new)
    if err is None:
        return
    if validator.level == "moderate" and validator.fails(old):
        return  # bad -> bad
    raise err
