"""Server parameters: getParameter and setParameter on a mongos or a replica-set member (db/commands/parameters.cpp).

Each front door (its `ServerIdentity`) has its own parameters: the defaults
below, overridden by `identity.parameters` (startup options and setParameter).
`logLevel` and `logComponentVerbosity` are the log verbosity of the process
(shardsim/log_component_settings.py), kept under `_logLevels`.

getParameter: `{getParameter: 1, <name>: 1, ...}` the named parameters;
`getParameter: "*"` or `{allParameters: true}` all of them, sorted by name
(the server's parameter map is ordered); `{showDetails: true}` shows each as
`{value, settableAtRuntime, settableAtStartup}`; `setAt: "runtime" | "startup"`
keeps those settable then.  Nothing found: InvalidOptions "no option found to
get".

setParameter: `{setParameter: 1, <name>: <value>, ...}`: an unknown name or a
parameter not settable at runtime fails before anything is set (InvalidOptions,
IllegalOperation); then each is set in name order, the reply's `was` the first
one's old value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.router.handshake import LOGICAL_SESSION_TIMEOUT_MINUTES, ServerIdentity
from mongosim.shardsim import log_component_settings as log_components
from mongosim.shardsim.generic_args import GENERIC_ARGUMENTS
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.values import type_name

__all__ = ["get_parameter", "set_parameter", "mongod_parameter", "DEFAULT_PARAMETERS", "MONGOD_PARAMETERS"]

DEFAULT_PARAMETERS: dict[str, Any] = {
    "enableTestCommands": 1,
    "featureCompatibilityVersion": {"version": "8.0"},
    "authenticationMechanisms": ["SCRAM-SHA-1", "SCRAM-SHA-256"],
    "periodicNoopIntervalSecs": 10,
    "cursorTimeoutMillis": Int64(600000),
    "logicalSessionTimeoutMinutes": LOGICAL_SESSION_TIMEOUT_MINUTES,
    "transactionLifetimeLimitSeconds": 60,
    "maxTransactionLockRequestTimeoutMillis": 5,
    "requireApiVersion": False,
    "internalQueryExecYieldIterations": 1000,
    "changeStreamOptions": {"preAndPostImages": {"expireAfterSeconds": "off"}},
    "quiet": False,
    "notablescan": False,
}
# the parameters of a mongod only (a mongos does not know them): the config server's AutoMerger
# (sharding_config_server_parameters.idl; router/auto_merger_policy.py reads the config primary's)
MONGOD_PARAMETERS: dict[str, Any] = {
    "autoMergerIntervalSecs": 3600,
    "autoMergerThrottlingMS": 15000,
}
# the parameters settable only at startup (the others may change at runtime too; FCV changes
# through setFeatureCompatibilityVersion only)
_STARTUP_ONLY = frozenset({"enableTestCommands", "authenticationMechanisms", "periodicNoopIntervalSecs",
                           "logicalSessionTimeoutMinutes"})
_NOT_SETTABLE = frozenset({"featureCompatibilityVersion"})
_LOG_LEVELS = "_logLevels"  # (identity.parameters: component -> level)


@dataclass(frozen=True)
class _Computed:
    """A parameter whose value the process computes (the log verbosity)."""

    get: Callable[[dict], Any]
    set: Callable[[dict, Any], dict]


def _set_log_level(levels: dict, value: Any) -> dict:
    """LogLevelServerParameter::set: a number coercible to a non-negative int."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) < 2**31
    if not ok or int(value) < 0:
        raise MongoError("BadValue", f"Invalid value for logLevel: logLevel: {bson_str(value)}")
    return log_components.apply(levels, [("default", int(value))])


def _set_component_verbosity(levels: dict, value: Any) -> dict:
    if not isinstance(value, dict):
        raise MongoError("TypeMismatch", f"log component verbosity is not a BSON object: logComponentVerbosity: "
                                         f"{bson_str(value)}")
    return log_components.apply(levels, log_components.parse(value))


_COMPUTED: dict[str, _Computed] = {
    "logLevel": _Computed(lambda levels: levels.get("default", 0), _set_log_level),
    "logComponentVerbosity": _Computed(log_components.describe, _set_component_verbosity),
}


def _defaults(ident: ServerIdentity) -> dict[str, Any]:
    return DEFAULT_PARAMETERS if ident.is_mongos else {**DEFAULT_PARAMETERS, **MONGOD_PARAMETERS}


def _names(ident: ServerIdentity) -> list[str]:
    return sorted({*_defaults(ident), *_COMPUTED, *(k for k in ident.parameters if k != _LOG_LEVELS)})


def _value(ident: ServerIdentity, name: str) -> Any:
    if name in _COMPUTED:
        return _COMPUTED[name].get(ident.parameters.get(_LOG_LEVELS) or {})
    return ident.parameters[name] if name in ident.parameters else _defaults(ident)[name]


def mongod_parameter(parameters: dict, name: str) -> Any:
    """The value of a mongod's parameter `name`, from its identity's `parameters` (set at startup or
    by setParameter) or the default."""
    return parameters.get(name, MONGOD_PARAMETERS[name])


def _settable(name: str) -> tuple[bool, bool]:
    """(settableAtRuntime, settableAtStartup)."""
    if name in _NOT_SETTABLE:
        return False, False
    return name not in _STARTUP_ONLY, True


def _bool_option(options: dict, key: str) -> bool:
    v = options[key]
    if isinstance(v, bool) or (isinstance(v, (int, float)) and not isinstance(v, bool)):
        return bool(v)
    raise MongoError("TypeMismatch", f"BSON field 'getParameter.{key}' is the wrong type '{type_name(v)}', expected "
                                     "types '[bool, long, int, decimal, double]'")


def _options(arg: Any) -> dict:
    """GetParameterOptions: `"*"` is allParameters; a document is parsed; anything else names parameters."""
    if arg == "*":
        return {"allParameters": True}
    if not isinstance(arg, dict):
        return {}
    out: dict[str, Any] = {}
    for k in arg:
        if k in ("allParameters", "showDetails", "forIncrementalFeatureRollout"):
            out[k] = _bool_option(arg, k)
        elif k == "setAt":
            v = arg[k]
            if not isinstance(v, str):
                raise MongoError("TypeMismatch", f"BSON field 'getParameter.setAt' is the wrong type '{type_name(v)}', "
                                                 "expected type 'string'")
            if v not in ("startup", "runtime"):
                raise MongoError("BadValue", f"Enumeration value '{v}' for field 'getParameter.setAt' is not a valid "
                                             "value.")
            out[k] = v
        else:
            raise MongoError(40415, f"BSON field 'getParameter.{k}' is an unknown field.")
    return out


def get_parameter(ident: ServerIdentity, cmd: dict) -> dict:
    options = _options(cmd.get("getParameter"))
    everything = options.get("allParameters", False)
    set_at = options.get("setAt")
    out: dict[str, Any] = {}
    for name in _names(ident):
        if not everything and name not in cmd:
            continue
        runtime, startup = _settable(name)
        if (set_at == "runtime" and not runtime) or (set_at == "startup" and not startup):
            continue
        if options.get("forIncrementalFeatureRollout"):
            continue  # (mongosim has no incremental feature rollout flags)
        value = _value(ident, name)
        out[name] = ({"value": value, "settableAtRuntime": runtime, "settableAtStartup": startup}
                     if options.get("showDetails") else value)
    if not out:
        raise MongoError("InvalidOptions", "no option found to get")
    out["ok"] = 1.0
    return out


def set_parameter(ident: ServerIdentity, cmd: dict) -> dict:
    known = set(_names(ident))
    wanted: dict[str, Any] = {}
    for i, (name, value) in enumerate(cmd.items()):
        if i == 0 or name in GENERIC_ARGUMENTS:
            continue
        if name not in known:
            raise MongoError("InvalidOptions", f"attempted to set unrecognized parameter [{name}], use help:true to "
                                               "see options ")
        if not _settable(name)[0]:
            raise MongoError("IllegalOperation", f"not allowed to change [{name}] at runtime")
        wanted[name] = value
    if not wanted:
        raise MongoError("InvalidOptions", "no option found to set, use help:true to see options ")
    reply: dict[str, Any] = {}
    for name in sorted(wanted):
        if not reply:
            reply["was"] = _value(ident, name)
        value = wanted[name]
        if name in _COMPUTED:
            levels = ident.parameters.get(_LOG_LEVELS) or {}
            ident.parameters[_LOG_LEVELS] = _COMPUTED[name].set(levels, value)
        else:
            ident.parameters[name] = _coerce(name, value, _value(ident, name))
    reply["ok"] = 1.0
    return reply


def _coerce(name: str, value: Any, current: Any) -> Any:
    """A new value of the kind of the current one: a number for a number (kept a long when it is one),
    a boolean (or a number, as its truth) for a boolean."""
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(current, bool):
        if not (numeric or isinstance(value, bool)):
            raise MongoError("BadValue", f"Invalid value for parameter {name}: {bson_str(value)} is not a boolean")
        return bool(value)
    if isinstance(current, (int, float)):
        if not numeric:
            raise MongoError("BadValue", f"Invalid value for parameter {name}: {bson_str(value)} is not a number")
        return Int64(value) if isinstance(current, Int64) and value == int(value) else value
    return value
