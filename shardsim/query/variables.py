"""A command's variables: the user's `let`, and the system variables $$NOW and $$CLUSTER_TIME.

The server (src/mongo/db/pipeline/variables.cpp, variable_validation.cpp) gives
every command one set of variables, fixed before any document is read:

- `$$NOW` (a date) and `$$CLUSTER_TIME` (a timestamp): the runtime constants,
  taken once per command, so every document of the command sees the same values.
- `let: {name: <expression>, ...}` (aggregate, find, update, delete,
  findAndModify, bulkWrite): each expression is evaluated once, in order (a
  later one may use an earlier one), with no document: one that reads a field
  fails with 4890500.  Names follow the user-writable rule: a lowercase ASCII
  letter or a non-ASCII byte first (16867), then letters, digits, `_` or
  non-ASCII (16868); empty is 16866 — each reported as "Invalid 'let'
  parameter :: caused by :: ...".  The system names (NOW, CLUSTER_TIME, ...)
  may be set only by an internal client (mongos passing its constants on to
  the shards): 4738901 otherwise.
- mongos evaluates `let` itself and sends the shards the values as `$literal`s
  (`frozen_let`), so `{$rand: {}}` gives every shard the same number.

`check_references` is the parse-time check the server makes of every `$$name`
an expression uses: an undefined one is 17276 "Use of undefined variable".
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expressions import compile_expression
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.values import MISSING, type_name

__all__ = ["is_constant_expression", "constant_value", "runtime_constants", "seed_let", "frozen_let", "check_references", "for_command", "BUILTINS",
           "check_user_variable_name"]

# variables every expression may name (their availability is checked when they are read)
BUILTINS = frozenset({"ROOT", "CURRENT", "REMOVE", "NOW", "CLUSTER_TIME", "KEEP", "PRUNE", "DESCEND",
                      "SEARCH_META", "USER_ROLES", "JS_SCOPE", "IS_MR"})
# system variables an internal client may set through `let`, with their required BSON type
_SYSTEM_TYPES = {"NOW": "date", "CLUSTER_TIME": "timestamp", "JS_SCOPE": "object", "IS_MR": "bool",
                 "USER_ROLES": "array"}


def runtime_constants(now: Any, cluster_time: Any) -> dict:
    """The variables of a command without `let`: $$NOW and $$CLUSTER_TIME."""
    return {"NOW": now, "CLUSTER_TIME": cluster_time}


def for_command(node: Any, ctx: Any) -> dict:
    """The variables of the command `ctx` runs on `node` (computed once per command)."""
    variables = getattr(ctx, "variables", None)
    if variables is None:
        variables = runtime_constants(node.wall.wall(), node.clock.now())
        let = ctx.cmd.get("let")
        if let is not None:
            variables = seed_let(let, variables, internal=ctx.from_router, command=next(iter(ctx.cmd)))
        ctx.variables = variables
    return variables


def _name_error(name: str) -> MongoError | None:
    """The server's isValidNameForUserWrite: None if `name` may be a user variable."""
    if not name:
        return MongoError(16866, "empty variable names are not allowed")
    first = name[0]
    if not ("a" <= first <= "z" or ord(first) > 0x7F):
        return MongoError(16867, f"'{name}' starts with an invalid character for a user variable name")
    for c in name[1:]:
        if not ((c.isascii() and (c.isalnum() or c == "_")) or ord(c) > 0x7F):
            return MongoError(16868, f"'{name}' contains an invalid character for a variable name: '{c}'")
    return None


def check_user_variable_name(name: str) -> None:
    """variableValidation::validateNameForUserWrite: raise 16866/16867/16868 for a bad name."""
    err = _name_error(name)
    if err is not None:
        raise err


def _check_system_value(name: str, value: Any) -> None:
    expected = _SYSTEM_TYPES[name]
    if type_name(value) != expected:
        found = "missing" if value is MISSING else type_name(value)
        raise MongoError("TypeMismatch", f"$${name} must have a{'n' if expected[0] in 'aeiou' else ''} "
                                         f"{expected} value, found {found}")


def seed_let(let: Any, base: dict, *, internal: bool = False, command: str = "aggregate") -> dict:
    """`base` plus the variables `let` defines (each expression evaluated once, in order)."""
    if not isinstance(let, dict):
        raise wrong_type(f"{command}.let", let, "object")
    variables = dict(base)
    for name, spec in let.items():
        err = _name_error(name)
        system = err is not None and name in _SYSTEM_TYPES
        if err is not None and not system:
            raise MongoError(err.code, f"Invalid 'let' parameter :: caused by :: {err.errmsg}")
        if system and not internal:
            raise MongoError(4738901, f"Attempt to set internal constant: {name}")
        if _reads_document(spec):
            raise MongoError(4890500, "Command let Expression tried to access a field, but this is not allowed "
                                      "because Command let Expressions run before the query examines any documents.")
        check_references(spec, variables)
        value = compile_expression(spec)({}, variables)
        if system:
            _check_system_value(name, value)
        variables[name] = value
    return variables


def frozen_let(let: dict, variables: dict) -> dict:
    """The `let` mongos sends on to the shards: each variable's value (evaluated once, at the
    router) as a `$literal`, and its runtime constants, so every shard sees the same values."""
    out: dict[str, Any] = {}
    for name in let:
        value = variables.get(name, MISSING)
        out[name] = "$$REMOVE" if value is MISSING else {"$literal": value}
    for name in ("NOW", "CLUSTER_TIME"):
        if variables.get(name) is not None:
            out[name] = {"$literal": variables[name]}
    return out


# -- static checks of an expression ---------------------------------------------------
def _any_part(expr: Any, string: Callable[[str], bool], key: Callable[[str], bool] = lambda k: False) -> bool:
    """Does any string of `expr` (outside `$literal`) satisfy `string`, or any operator name `key`?"""
    if isinstance(expr, str):
        return string(expr)
    if isinstance(expr, list):
        return any(_any_part(e, string, key) for e in expr)
    if isinstance(expr, dict):
        if len(expr) == 1 and next(iter(expr)) == "$literal":
            return False
        return any(key(k) for k in expr) or any(_any_part(v, string, key) for v in expr.values())
    return False


def _reads_document(expr: Any) -> bool:
    """Does `expr` read the current document (a field path, $$ROOT or $$CURRENT)?"""
    return _any_part(expr, lambda s: s[2:].split(".", 1)[0] in ("ROOT", "CURRENT") if s.startswith("$$")
                     else s.startswith("$"))


def is_constant_expression(expr: Any) -> bool:
    """Would the server's optimizer fold `expr` to a constant: no field path, no variable, no `$rand`?"""
    return not _any_part(expr, lambda s: s.startswith("$"), lambda k: k == "$rand")


def constant_value(expr: Any) -> Any:
    """The value of an expression the server's optimizer folds to a constant; MISSING if it is not one
    (it reads the document or a variable)."""
    if not is_constant_expression(expr):
        return MISSING
    return compile_expression(expr)({})


def check_references(expr: Any, defined: Iterable[str]) -> None:
    """Raise 17276 if `expr` names a variable that is neither defined, built in, nor bound inside
    it ($let's vars, $map/$filter's `as`, $reduce's this/value), as the server's parser does."""
    _walk(expr, frozenset(defined) | BUILTINS)


def _walk(expr: Any, defined: frozenset) -> None:
    if isinstance(expr, str):
        if expr.startswith("$$"):
            name = expr[2:].split(".", 1)[0]
            if name and name not in defined:
                raise MongoError(17276, f"Use of undefined variable: {name}")
        return
    if isinstance(expr, list):
        for e in expr:
            _walk(e, defined)
        return
    if not isinstance(expr, dict):
        return
    if len(expr) == 1:
        op, arg = next(iter(expr.items()))
        if op == "$literal":
            return
        if isinstance(arg, dict):
            if op == "$let" and isinstance(arg.get("vars"), dict):
                for v in arg["vars"].values():
                    _walk(v, defined)
                _walk(arg.get("in"), defined | set(arg["vars"]))
                return
            if op in ("$map", "$filter"):
                bound = defined | {arg["as"] if isinstance(arg.get("as"), str) else "this"}
                for k, v in arg.items():
                    _walk(v, bound if k in ("in", "cond") else defined)
                return
            if op == "$reduce":
                for k, v in arg.items():
                    _walk(v, defined | {"this", "value"} if k == "in" else defined)
                return
    for v in expr.values():
        _walk(v, defined)
