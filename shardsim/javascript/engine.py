"""The server's face of the engine: compile once, call with BSON in and BSON out, errors as the server's.

A `ScriptEngine` is one command's JavaScript scope (mapReduce's `scope`
document becomes globals).  `function(source)` compiles as the server's
`createFunction` does: a function expression is that function; any other
code becomes a function whose result is the value of its last expression
statement (so a `$where` of `"this.a > 1"` works).  `call(fn, args, this)`
converts the BSON arguments to JS values, runs with a fresh budget and
converts the result back.

Errors: a syntax error, an uncaught throw, a runaway script (the step budget
MAX_STEPS or TIME_LIMIT seconds per call) or too deep a recursion is code 139
JSInterpreterFailure; past the command's own maxTimeMS (COMMAND_DEADLINE, set by
the node for each command) it is MaxTimeMSExpired.  The server's native
`sleep(ms)` lives here, beside that deadline, which it moves (`_sleep`).
"""

from __future__ import annotations

import math
import sys
import time
from contextvars import ContextVar

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.javascript.errors import JSBudgetExceeded, JSSyntaxError, JSThrow
from mongosim.shardsim.javascript.interpreter import Interpreter
from mongosim.shardsim.javascript.parser import Function, parse_program
from mongosim.shardsim.javascript.values import (
    RUNNING,
    UNDEFINED,
    JSFunction,
    JSObject,
    NativeFunction,
    make_error,
    to_bson,
    to_js,
    to_string,
)

ENABLED = True  # security.javascriptEnabled (`--noscripting` turns it off): shardsim.script_engine
MAX_STEPS = 100_000_000  # per call from the server (TIME_LIMIT usually ends a runaway first)
TIME_LIMIT = 2.0  # seconds per call from the server
PYTHON_STACK = 6000  # the recursion limit while a script runs

# time.monotonic() when the running command's maxTimeMS runs out (the node sets it per command)
COMMAND_DEADLINE: ContextVar[float] = ContextVar("mongosim_js_command_deadline", default=math.inf)

_COMPILED: dict[str, Function] = {}  # source -> parsed program (parsing is pure; the cache is bounded)
_CACHE_MAX = 512


def parse(source: str) -> Function:
    prog = _COMPILED.get(source)
    if prog is None:
        limit = sys.getrecursionlimit()
        if limit < PYTHON_STACK:  # (a nesting level of the source is about 12 Python frames)
            sys.setrecursionlimit(PYTHON_STACK)
        try:
            prog = parse_program(source)
        finally:
            if limit < PYTHON_STACK:
                sys.setrecursionlimit(limit)
        if len(_COMPILED) >= _CACHE_MAX:
            _COMPILED.clear()
        _COMPILED[source] = prog
    return prog


def require_enabled() -> None:
    if not ENABLED:
        raise MongoError(31246, "Cannot run server-side javascript without the javascript engine enabled")


def check_syntax(source: str) -> None:
    """Raise the server's 139 "SyntaxError: ..." for source that does not compile."""
    try:
        parse(str(source))
    except JSSyntaxError as e:
        raise MongoError("JSInterpreterFailure", f"SyntaxError: {e}") from None
    except RecursionError:
        raise MongoError("JSInterpreterFailure", "InternalError: too much recursion") from None
    except (IndexError, ValueError, TypeError) as e:  # (the parser's own slip: still the script's syntax error)
        raise MongoError("JSInterpreterFailure", f"SyntaxError: {type(e).__name__}: {e}") from None


def error_message(value) -> str:
    if isinstance(value, JSObject) and value.cls == "Error":
        return to_string(value)
    return f"uncaught exception: {to_string(value)}"


def _sleep(interp: Interpreter, this, args) -> object:
    """The server's native `sleep(ms)` (scripting/utils.cpp), without blocking: the emulator's scripts run
    on its event loop, so the time is counted, not waited.  It moves the command's deadline (its maxTimeMS)
    `ms` closer, as if that much time had passed: a script that sleeps past it is MaxTimeMSExpired, as on
    the server (whose interrupt check fires after the sleep); without a maxTimeMS it costs nothing."""
    if len(args) != 1 or type(args[0]) is not float:  # (JS numbers are floats here)
        raise make_error("Error", "sleep takes a single numeric argument -- sleep(milliseconds)")
    ms = args[0]
    if ms > 0:  # (the server's sleepmillis of a negative or NaN count returns at once)
        deadline = COMMAND_DEADLINE.get() - ms / 1000.0
        COMMAND_DEADLINE.set(deadline)  # (the node resets it when the command ends)
        if time.monotonic() >= deadline:
            raise JSBudgetExceeded()
        interp.deadline = min(interp.deadline, deadline)
    return UNDEFINED


class ScriptEngine:
    def __init__(self, scope: dict | None = None, deadline: float = math.inf) -> None:
        """`deadline`: time.monotonic() when the command's maxTimeMS runs out."""
        require_enabled()
        self.interp = Interpreter(MAX_STEPS)
        self.interp.globals.vars["sleep"] = NativeFunction(_sleep, "sleep")
        self.deadline = deadline
        self._functions: dict[str, JSFunction] = {}
        for k, v in (scope or {}).items():
            self.interp.globals.vars[k] = self.to_js(v)

    def function(self, source) -> JSFunction:
        source = str(source)
        fn = self._functions.get(source)
        if fn is not None:
            return fn
        check_syntax(source)
        prog = parse(source)
        body = prog.body
        if len(body) == 1 and body[0][0] == "expr" and body[0][1][0] == "func":
            fn = self._run(lambda: self.interp.eval(body[0][1], self.interp.globals))
        elif len(prog.hoisted_funcs) == 1 and prog.hoisted_vars == {prog.hoisted_funcs[0].name} \
                and all(st == ("empty",) for st in body):
            self._run(lambda: self.interp.run_program(prog))  # `function f() {...}`: f, defined globally
            fn = self.interp.globals.vars[prog.hoisted_funcs[0].name]
        else:
            fn = JSFunction(_as_function(prog), self.interp.globals)
        self._functions[source] = fn
        return fn

    def to_js(self, value):
        """A BSON value as this engine's JS value (a Code value becomes a function, as the server reads it:
        a mapReduce `scope` may pass functions)."""
        return to_js(value, self.function)

    def set_global(self, name: str, value) -> None:
        self.interp.globals.vars[name] = value

    def call(self, fn: JSFunction, args: list = (), this=None):
        """fn(...args) with `this` (BSON values in, BSON value out)."""
        js_this = UNDEFINED if this is None else self.to_js(this)
        js_args = [self.to_js(a) for a in args]
        return self._run(lambda: to_bson(self.interp.call(fn, js_this, js_args)))

    def call_js(self, fn: JSFunction, js_args: list, js_this=UNDEFINED):
        """fn with JS values in and out (for callers that keep state as JS values between calls)."""
        return self._run(lambda: self.interp.call(fn, js_this, js_args))

    def _run(self, thunk):
        deadline = min(self.deadline, COMMAND_DEADLINE.get())
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise MongoError("MaxTimeMSExpired", "operation exceeded time limit")
        self.interp.start(min(TIME_LIMIT, remaining))
        self.interp.max_steps = MAX_STEPS
        self.interp.depth = 0
        del self.interp.this_stack[1:]
        limit = sys.getrecursionlimit()
        if limit < PYTHON_STACK:  # (about 8 Python frames per JS call: MAX_CALL_DEPTH fits)
            sys.setrecursionlimit(PYTHON_STACK)
        running = RUNNING.set(self.interp)
        try:
            return thunk()
        except JSThrow as e:
            raise MongoError("JSInterpreterFailure", error_message(e.value)) from None
        except JSBudgetExceeded:
            if time.monotonic() >= min(self.deadline, COMMAND_DEADLINE.get()):  # (a sleep may have moved it)
                raise MongoError("MaxTimeMSExpired", "operation exceeded time limit") from None
            raise MongoError("JSInterpreterFailure", "JavaScript execution terminated") from None
        except RecursionError:
            raise MongoError("JSInterpreterFailure", "InternalError: too much recursion") from None
        except MongoError:
            raise
        except (ArithmeticError, ValueError, TypeError, IndexError, KeyError, MemoryError) as e:
            # (a value the builtins did not expect: the script fails, the server goes on)
            raise MongoError("JSInterpreterFailure", f"InternalError: {type(e).__name__}: {e}") from None
        finally:
            RUNNING.reset(running)
            if limit < PYTHON_STACK:
                sys.setrecursionlimit(limit)


def _as_function(prog: Function) -> Function:
    """Code that is not a function expression: a function returning its last expression statement's value."""
    body = list(prog.body)
    if body and body[-1][0] == "expr":
        body[-1] = ("return", body[-1][1])
    return Function("", [], None, body, False, prog.hoisted_vars, prog.hoisted_funcs, prog.source)
