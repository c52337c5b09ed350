"""The tree-walking evaluator.

`Interpreter.call(fn, this, args)` runs a function; statements execute in
`exec_stmt` (a completion: None, or ("return"|"break"|"continue", value/label)),
expressions evaluate in `eval` through a table keyed by the node's tag.  Scopes
are chained dicts: a function call makes one (parameters, `var`s and function
declarations hoisted into it), a block or loop iteration one for its
`let`/`const` names.  An assignment to an undeclared name creates a global, as
non-strict JavaScript does.

Every statement, loop iteration and call spends one step of a budget; past
`max_steps`, or past the wall-clock `deadline` (checked every 1024 steps), the
run ends with JSBudgetExceeded — a `while (true) {}` cannot hold the server.
Calls nest at most MAX_CALL_DEPTH deep ("too much recursion", as SpiderMonkey).
"""

from __future__ import annotations

import math
import time

from mongosim.shardsim.javascript import builtins
from mongosim.shardsim.javascript.errors import JSBudgetExceeded, JSThrow
from mongosim.shardsim.javascript.parser import Function
from mongosim.shardsim.javascript.values import (
    UNDEFINED,
    JSArray,
    JSFunction,
    JSObject,
    JSRegExp,
    NativeFunction,
    check_array_length,
    check_string,
    is_callable,
    js_add,
    js_div,
    js_mod,
    js_pow,
    loose_equals,
    make_error,
    strict_equals,
    to_boolean,
    to_int32,
    to_number,
    to_primitive,
    to_property_key,
    to_string,
    type_of,
)

MAX_CALL_DEPTH = 400  # (Python's own stack may end a deep recursion first: the same error)


class Scope:
    __slots__ = ("vars", "parent", "consts")

    def __init__(self, parent: Scope | None = None) -> None:
        self.vars: dict = {}
        self.parent = parent
        self.consts: set | None = None


class Interpreter:
    def __init__(self, max_steps: int = 10_000_000, time_limit: float | None = None) -> None:
        self.globals = Scope()
        self.builtin_constructors = builtins.install(self.globals.vars)
        self.max_steps = max_steps
        self.time_limit = time_limit
        self.steps = 0
        self.next_check = 1024
        self.deadline = math.inf
        self.depth = 0
        self._eval = {
            "num": self._num, "str": self._num, "name": self._name, "this": self._this, "null": self._null,
            "bool": self._num, "array": self._array, "object": self._object, "func": self._func,
            "member": self._member, "call": self._call, "new": self._new, "unary": self._unary,
            "update": self._update, "bin": self._bin, "logic": self._logic, "cond": self._cond,
            "assign": self._assign, "seq": self._seq, "numkey": self._numkey, "template": self._template,
            "regex": self._regex, "destructure": self._destructure, "class": self._class, "super": self._super,
        }
        self.this_stack: list = [UNDEFINED]

    # --- budget ----------------------------------------------------------------------------
    def start(self, time_limit: float | None = None) -> None:
        """Begin a run from the host: the step count and the deadline start afresh."""
        self.steps = 0
        self.next_check = 1024
        limit = self.time_limit if time_limit is None else time_limit
        self.deadline = math.inf if limit is None else time.monotonic() + limit

    def tick(self) -> None:
        self.steps += 1
        if self.steps >= self.next_check:
            if self.steps >= self.max_steps or time.monotonic() > self.deadline:
                raise JSBudgetExceeded()
            self.next_check = self.steps + 1024

    # --- functions -------------------------------------------------------------------------
    def make_function(self, func: Function, scope: Scope) -> JSFunction:
        return JSFunction(func, scope, self.this_stack[-1] if func.arrow else None)

    def call(self, fn, this, args: list, constructing: bool = False):
        if type(fn) is NativeFunction:
            return fn.fn(self, this, args)
        if type(fn) is not JSFunction:
            raise make_error("TypeError", f"{to_string(fn) if not isinstance(fn, JSObject) else 'object'} is not a function")
        if fn.func.is_class and not constructing:
            raise make_error("TypeError", "class constructors must be invoked with 'new'")
        self.tick()
        if self.depth >= MAX_CALL_DEPTH:
            raise make_error("InternalError", "too much recursion")
        f = fn.func
        scope = Scope(fn.scope)
        vs = scope.vars
        for name in f.hoisted_vars:
            vs[name] = UNDEFINED
        params = f.params
        for i, (name, default) in enumerate(params):
            v = args[i] if i < len(args) else UNDEFINED
            if v is UNDEFINED and default is not None:
                v = self.eval(default, scope)
            if type(name) is str:
                vs[name] = v
            else:
                self.bind(name, v, scope, "let")
        if f.rest is not None:
            vs[f.rest] = JSArray(list(args[len(params):]))
        if not f.arrow and "arguments" in f.source:
            vs.setdefault("arguments", JSArray(list(args)))
        for decl in f.hoisted_funcs:
            vs[decl.name] = JSFunction(decl, scope)
        self.depth += 1
        self.this_stack.append(fn.this if f.arrow else this)
        try:
            for st in f.body:
                c = self.exec_stmt(st, scope)
                if c is not None:
                    if c[0] == "return":
                        return c[1]
                    break
            return UNDEFINED
        finally:
            self.depth -= 1
            self.this_stack.pop()

    def construct(self, fn, args: list):
        if type(fn) is NativeFunction:
            ctor = fn.props.get("__construct__")
            if ctor is None:
                raise make_error("TypeError", f"{fn.name} is not a constructor")
            return ctor.fn(self, UNDEFINED, args)
        if type(fn) is not JSFunction or fn.func.arrow:
            raise make_error("TypeError", "not a constructor")
        proto = builtins.get_member(self, fn, "prototype")
        obj = JSObject({}, proto if isinstance(proto, JSObject) else builtins.OBJECT_PROTO)
        return self.construct_into(fn, obj, args)

    def construct_into(self, fn, obj: JSObject, args: list):
        """Run constructor `fn` on `obj` (a class's fields first, then its constructor, `super(...)` included)."""
        if type(fn) is NativeFunction:  # (a class extending a builtin: the builtin's object, its properties copied)
            made = self.construct(fn, args)
            if isinstance(made, JSObject):
                obj.props.update(made.props)
                if made.cls == "Error":
                    obj.cls = "Error"
            return obj
        fields = fn.props.get("%fields")
        if fields:
            scope, entries = fields
            self.this_stack.append(obj)
            try:
                for key, init in entries:
                    k = key[1] if key[0] == "str" else to_property_key(self.eval(key, scope))
                    obj.props[k] = UNDEFINED if init is None else self.eval(init, scope)
            finally:
                self.this_stack.pop()
        r = self.call(fn, obj, args, constructing=True)
        return r if isinstance(r, JSObject) else obj

    def run_program(self, program: Function, this=UNDEFINED):
        """Run a script's statements in the global scope; the value of its last expression statement."""
        scope = self.globals
        for name in program.hoisted_vars:
            scope.vars.setdefault(name, UNDEFINED)
        for decl in program.hoisted_funcs:
            scope.vars[decl.name] = JSFunction(decl, scope)
        self.this_stack.append(this)
        last = UNDEFINED
        try:
            for st in program.body:
                if st[0] == "expr":
                    self.tick()
                    last = self.eval(st[1], scope)
                    continue
                c = self.exec_stmt(st, scope)
                if c is not None:
                    return c[1] if c[0] == "return" else last
            return last
        finally:
            self.this_stack.pop()

    # --- statements ------------------------------------------------------------------------
    def exec_block(self, body: list, scope: Scope):
        for st in body:
            c = self.exec_stmt(st, scope)
            if c is not None:
                return c
        return None

    def exec_stmt(self, st, scope: Scope):
        self.tick()
        tag = st[0]
        if tag == "expr":
            self.eval(st[1], scope)
            return None
        if tag == "var":
            kind = st[1]
            for name, init in st[2]:
                if type(name) is not str:
                    self.bind(name, self.eval(init, scope), scope, kind)
                elif kind == "var":
                    if init is not None:
                        self.assign_name(name, self.eval(init, scope), scope)
                else:
                    scope.vars[name] = UNDEFINED if init is None else self.eval(init, scope)
                    if kind == "const":
                        if scope.consts is None:
                            scope.consts = set()
                        scope.consts.add(name)
            return None
        if tag == "return":
            return ("return", UNDEFINED if st[1] is None else self.eval(st[1], scope))
        if tag == "if":
            if to_boolean(self.eval(st[1], scope)):
                return self.exec_stmt(st[2], scope)
            if st[3] is not None:
                return self.exec_stmt(st[3], scope)
            return None
        if tag == "block":
            return self.exec_block(st[1], Scope(scope))
        if tag == "for":
            return self._for(st, scope, None)
        if tag == "while" or tag == "do":
            return self._while(st, scope, None)
        if tag == "forin" or tag == "forof":
            return self._for_each(st, scope, None)
        if tag == "break" or tag == "continue":
            return (tag, st[1])
        if tag == "empty":
            return None
        if tag == "throw":
            raise JSThrow(self.eval(st[1], scope))
        if tag == "try":
            return self._try(st, scope)
        if tag == "switch":
            return self._switch(st, scope)
        if tag == "labeled":
            inner = st[2]
            if inner[0] == "for":
                c = self._for(inner, scope, st[1])
            elif inner[0] in ("while", "do"):
                c = self._while(inner, scope, st[1])
            elif inner[0] in ("forin", "forof"):
                c = self._for_each(inner, scope, st[1])
            else:
                c = self.exec_stmt(inner, scope)
            if c is not None and c[0] == "break" and c[1] == st[1]:
                return None
            return c
        raise make_error("SyntaxError", f"unsupported statement {tag}")

    @staticmethod
    def _loop_exit(c, label):
        """For a completion inside a loop body: (stop the loop?, the completion to pass up)."""
        if c[0] == "break":
            return True, (None if c[1] is None or c[1] == label else c)
        if c[0] == "continue":
            if c[1] is None or c[1] == label:
                return False, None
            return True, c
        return True, c

    def _for(self, st, scope: Scope, label):
        _, init, test, update, body, let_names = st
        loop = Scope(scope)
        if init is not None:
            self.exec_stmt(init, loop)
        while True:
            self.tick()
            if test is not None and not to_boolean(self.eval(test, loop)):
                return None
            c = self.exec_stmt(body, loop)
            if c is not None:
                stop, out = self._loop_exit(c, label)
                if stop:
                    return out
            if let_names:  # a fresh binding per iteration: closures of this one keep its values
                nxt = Scope(scope)
                nxt.vars.update(loop.vars)
                nxt.consts = loop.consts
                loop = nxt
            if update is not None:
                self.eval(update, loop)

    def _while(self, st, scope: Scope, label):
        if st[0] == "while":
            test, body = st[1], st[2]
            first = False
        else:
            body, test = st[1], st[2]
            first = True
        while True:
            self.tick()
            if not first and not to_boolean(self.eval(test, scope)):
                return None
            first = False
            c = self.exec_stmt(body, scope)
            if c is not None:
                stop, out = self._loop_exit(c, label)
                if stop:
                    return out

    def _for_each(self, st, scope: Scope, label):
        tag, kind, name, obj_expr, body = st
        obj = self.eval(obj_expr, scope)
        if tag == "forin":
            keys = builtins.enumerable_keys(obj)
        else:
            keys = builtins.iterate(self, obj)
        for k in keys:
            self.tick()
            if kind is None or kind == "var":
                it = scope
                if type(name) is str:
                    self.assign_name(name, k, scope)
                else:
                    self.bind(name, k, scope, "var")
            else:
                it = Scope(scope)
                if type(name) is str:
                    it.vars[name] = k
                else:
                    self.bind(name, k, it, kind)
            c = self.exec_stmt(body, it)
            if c is not None:
                stop, out = self._loop_exit(c, label)
                if stop:
                    return out
        return None

    def _try(self, st, scope: Scope):
        _, block, name, handler, finalizer = st
        try:
            try:
                return self.exec_stmt(block, scope)
            except JSThrow as e:
                if handler is None:
                    raise
                inner = Scope(scope)
                if name is not None:
                    inner.vars[name] = e.value
                return self.exec_stmt(handler, inner)
        finally:
            if finalizer is not None:
                c = self.exec_stmt(finalizer, scope)
                if c is not None:
                    return c  # noqa: B012  (a completion of the finally block wins, as in JS)

    def _switch(self, st, scope: Scope):
        disc = self.eval(st[1], scope)
        cases = st[2]
        inner = Scope(scope)
        start = None
        for i, (test, _) in enumerate(cases):
            if test is not None and strict_equals(disc, self.eval(test, inner)):
                start = i
                break
        if start is None:
            start = next((i for i, (test, _) in enumerate(cases) if test is None), None)
            if start is None:
                return None
        for _, body in cases[start:]:
            c = self.exec_block(body, inner)
            if c is not None:
                if c[0] == "break" and c[1] is None:
                    return None
                return c
        return None

    def bind(self, target, value, scope: Scope, kind: str) -> None:
        """Bind a name or destructuring pattern to `value` (kind: "var" assigns; "let"/"const" declare here)."""
        if type(target) is str:
            if kind == "var":
                self.assign_name(target, value, scope)
                return
            scope.vars[target] = value
            if kind == "const":
                if scope.consts is None:
                    scope.consts = set()
                scope.consts.add(target)
            return
        if target[0] == "member":  # (in a destructuring assignment: `[o.a, o.b] = ...`)
            obj, key = self._target(target, scope)
            builtins.set_member(obj, key, value)
            return
        if value is None or value is UNDEFINED:
            raise make_error("TypeError", f"{to_string(value)} has no properties")
        tag, items, rest = target
        if tag == "parr":
            seq = builtins.iterate(self, value)
            for i, item in enumerate(items):
                if item is None:
                    continue
                sub, default = item
                v = seq[i] if i < len(seq) else UNDEFINED
                if v is UNDEFINED and default is not None:
                    v = self.eval(default, scope)
                self.bind(sub, v, scope, kind)
            if rest is not None:
                self.bind(rest, JSArray(seq[len(items):]), scope, kind)
            return
        used = []
        for key, sub, default in items:
            k = key[1] if key[0] == "str" else to_property_key(self.eval(key, scope))
            used.append(k)
            v = builtins.get_member(self, value, k)
            if v is UNDEFINED and default is not None:
                v = self.eval(default, scope)
            self.bind(sub, v, scope, kind)
        if rest is not None:
            left = JSObject({}, builtins.OBJECT_PROTO)
            for k in builtins.enumerable_keys(value):
                if k not in used:
                    left.props[k] = builtins.get_member(self, value, k)
            self.bind(rest, left, scope, kind)

    # --- names -----------------------------------------------------------------------------
    def lookup(self, name: str, scope: Scope):
        s = scope
        while s is not None:
            v = s.vars.get(name, _ABSENT)
            if v is not _ABSENT:
                return v
            s = s.parent
        raise make_error("ReferenceError", f"{name} is not defined")

    def assign_name(self, name: str, value, scope: Scope) -> None:
        s = scope
        while s is not None:
            if name in s.vars:
                if s.consts is not None and name in s.consts:
                    raise make_error("TypeError", f"invalid assignment to const '{name}'")
                s.vars[name] = value
                return
            s = s.parent
        self.globals.vars[name] = value

    # --- expressions -----------------------------------------------------------------------
    def eval(self, node, scope: Scope):
        return self._eval[node[0]](node, scope)

    def _num(self, node, scope):
        return node[1]

    def _numkey(self, node, scope):
        return to_string(node[1])

    def _null(self, node, scope):
        return None

    def _name(self, node, scope):
        return self.lookup(node[1], scope)

    def _this(self, node, scope):
        return self.this_stack[-1]

    def _array(self, node, scope):
        items = []
        for e in node[1]:
            if e is None:
                items.append(UNDEFINED)
            elif e[0] == "spread":
                items.extend(builtins.iterate(self, self.eval(e[1], scope)))
                check_array_length(len(items))
            else:
                items.append(self.eval(e, scope))
        return JSArray(items)

    def _object(self, node, scope):
        obj = JSObject({}, builtins.OBJECT_PROTO)
        props = obj.props
        for p in node[1]:
            if p[0] == "spread":
                src = self.eval(p[1], scope)
                for k in builtins.enumerable_keys(src):
                    props[k] = builtins.get_member(self, src, k)
                continue
            key, value = p
            k = key[1] if key[0] == "str" else to_property_key(self.eval(key, scope))
            props[k] = self.eval(value, scope)
        return obj

    def _func(self, node, scope):
        f = node[1]
        fn = self.make_function(f, scope)
        if f.name and not f.arrow:  # a named function expression sees its own name
            inner = Scope(scope)
            inner.vars[f.name] = fn
            fn.scope = inner
        return fn

    def _member(self, node, scope):
        obj = self.eval(node[1], scope)
        if node[3] and (obj is None or obj is UNDEFINED):
            return UNDEFINED
        key = node[2]
        return builtins.get_member(self, obj, key[1] if key[0] == "str" else self.eval(key, scope))

    def _args(self, args, scope):
        out = []
        for a in args:
            if a[0] == "spread":
                out.extend(builtins.iterate(self, self.eval(a[1], scope)))
            else:
                out.append(self.eval(a, scope))
        return out

    def _call(self, node, scope):
        callee = node[1]
        if callee[0] == "super":  # super(...): the parent's constructor on this object
            parent = self.lookup("%super_ctor", scope)
            if not is_callable(parent):
                raise make_error("SyntaxError", "super() is only valid in a derived class's constructor")
            this = self.this_stack[-1]
            self.construct_into(parent, this, self._args(node[2], scope))
            return UNDEFINED
        if callee[0] == "member" and callee[1][0] == "super":  # super.m(...): the parent's method on this
            key = callee[2][1] if callee[2][0] == "str" else self.eval(callee[2], scope)
            fn = builtins.get_member(self, self.lookup("%super", scope), key)
            if not is_callable(fn):
                raise make_error("TypeError", f"super.{to_string(key)} is not a function")
            return self.call(fn, self.this_stack[-1], self._args(node[2], scope))
        if callee[0] == "member":
            this = self.eval(callee[1], scope)
            if callee[3] and (this is None or this is UNDEFINED):
                return UNDEFINED
            key = callee[2]
            key = key[1] if key[0] == "str" else self.eval(key, scope)
            fn = builtins.get_member(self, this, key)
            if not is_callable(fn):
                if node[3] and (fn is None or fn is UNDEFINED):
                    return UNDEFINED
                raise make_error("TypeError", f"{_describe(callee)} is not a function")
        else:
            this = UNDEFINED
            fn = self.eval(callee, scope)
            if not is_callable(fn):
                if node[3] and (fn is None or fn is UNDEFINED):
                    return UNDEFINED
                raise make_error("TypeError", f"{_describe(callee)} is not a function")
        return self.call(fn, this, self._args(node[2], scope))

    def _new(self, node, scope):
        fn = self.eval(node[1], scope)
        if not is_callable(fn):
            raise make_error("TypeError", f"{_describe(node[1])} is not a constructor")
        return self.construct(fn, self._args(node[2], scope))

    def _unary(self, node, scope):
        op = node[1]
        if op == "typeof":
            arg = node[2]
            if arg[0] == "name":
                try:
                    return type_of(self._name(arg, scope))
                except JSThrow:
                    return "undefined"
            return type_of(self.eval(arg, scope))
        if op == "delete":
            arg = node[2]
            if arg[0] != "member":
                return True
            obj = self.eval(arg[1], scope)
            key = arg[2][1] if arg[2][0] == "str" else self.eval(arg[2], scope)
            builtins.delete_member(obj, key)
            return True
        v = self.eval(node[2], scope)
        if op == "!":
            return not to_boolean(v)
        if op == "-":
            return -to_number(v)
        if op == "+":
            return to_number(v)
        if op == "~":
            return float(~to_int32(v))
        return UNDEFINED  # void

    def _target(self, node, scope):
        """(object, key) of a member target, evaluated once."""
        obj = self.eval(node[1], scope)
        key = node[2][1] if node[2][0] == "str" else self.eval(node[2], scope)
        return obj, key

    def _update(self, node, scope):
        _, op, prefix, target = node
        if target[0] == "name":
            old = to_number(self._name(target, scope))
            new = old + 1 if op == "++" else old - 1
            self.assign_name(target[1], new, scope)
        else:
            obj, key = self._target(target, scope)
            old = to_number(builtins.get_member(self, obj, key))
            new = old + 1 if op == "++" else old - 1
            builtins.set_member(obj, key, new)
        return new if prefix else old

    def _assign(self, node, scope):
        _, op, target, value_node = node
        if target[0] == "name":
            if op == "=":
                v = self.eval(value_node, scope)
            else:
                old = self._name(target, scope)
                v = self._compound(op, old, value_node, scope)
                if v is _ABSENT:
                    return old
            self.assign_name(target[1], v, scope)
            return v
        obj, key = self._target(target, scope)
        if op == "=":
            v = self.eval(value_node, scope)
        else:
            old = builtins.get_member(self, obj, key)
            v = self._compound(op, old, value_node, scope)
            if v is _ABSENT:
                return old
        builtins.set_member(obj, key, v)
        return v

    def _compound(self, op, old, value_node, scope):
        if op == "&&=":
            return self.eval(value_node, scope) if to_boolean(old) else _ABSENT
        if op == "||=":
            return _ABSENT if to_boolean(old) else self.eval(value_node, scope)
        if op == "??=":
            return self.eval(value_node, scope) if old is None or old is UNDEFINED else _ABSENT
        return binary(op[:-1], old, self.eval(value_node, scope), self)

    def _bin(self, node, scope):
        return binary(node[1], self.eval(node[2], scope), self.eval(node[3], scope), self)

    def _logic(self, node, scope):
        left = self.eval(node[2], scope)
        op = node[1]
        if op == "&&":
            return self.eval(node[3], scope) if to_boolean(left) else left
        if op == "||":
            return left if to_boolean(left) else self.eval(node[3], scope)
        return self.eval(node[3], scope) if left is None or left is UNDEFINED else left

    def _cond(self, node, scope):
        return self.eval(node[2] if to_boolean(self.eval(node[1], scope)) else node[3], scope)

    def _destructure(self, node, scope):
        value = self.eval(node[2], scope)
        self.bind(node[1], value, scope, "var")
        return value

    def _class(self, node, scope):
        """A class: its constructor function (a derived one without a constructor passes its arguments to super),
        `prototype` holding the methods over the parent's prototype, statics on the constructor."""
        _, name, parent_node, ctor, methods, fields, source = node
        parent = None
        if parent_node is not None:
            parent = self.eval(parent_node, scope)
            if not is_callable(parent) and parent is not None:
                raise make_error("TypeError", "class heritage is not a constructor or null")
        parent_proto = builtins.OBJECT_PROTO if parent is None else builtins.get_member(self, parent, "prototype")
        proto = JSObject({}, parent_proto if isinstance(parent_proto, JSObject) else None)
        inner = Scope(scope)  # (methods see the class's name, and `super` through these hidden names)
        inner.vars["%super"] = parent_proto if parent is not None else UNDEFINED
        inner.vars["%super_ctor"] = parent if parent is not None else UNDEFINED
        statics = Scope(scope)
        statics.vars["%super"] = parent if parent is not None else UNDEFINED
        if ctor is None:
            body = [("expr", ("call", ("super",), [("spread", ("name", "args"))], False))] if parent is not None else []
            ctor = Function(name or "", [], "args" if parent is not None else None, body, False, set(), [], source)
        ctor.is_class = True
        ctor.source = source
        cls = JSFunction(ctor, inner)
        cls.props["prototype"] = proto
        proto.props["constructor"] = cls
        if fields:
            cls.props["%fields"] = (inner, fields)
        if name:
            inner.vars[name] = cls
            statics.vars[name] = cls
        for is_static, key, f in methods:
            k = key[1] if key[0] == "str" else to_property_key(self.eval(key, scope))
            if isinstance(f, Function):
                value = JSFunction(f, statics if is_static else inner)
            else:  # a static field
                self.this_stack.append(cls)
                try:
                    value = UNDEFINED if f is None else self.eval(f, statics)
                finally:
                    self.this_stack.pop()
            (cls.props if is_static else proto.props)[k] = value
        return cls

    def _super(self, node, scope):
        return self.lookup("%super", scope)

    def _regex(self, node, scope):
        return JSRegExp(node[1], node[2])  # (a new object each time the literal is evaluated, as JS)

    def _template(self, node, scope):
        parts, exprs = node[1], node[2]
        out = [parts[0]]
        for e, text in zip(exprs, parts[1:]):
            out.append(to_string(self.eval(e, scope)))
            out.append(text)
        return check_string("".join(out))

    def _seq(self, node, scope):
        v = UNDEFINED
        for e in node[1]:
            v = self.eval(e, scope)
        return v


_ABSENT = object()


def _describe(node) -> str:
    if node[0] == "name":
        return node[1]
    if node[0] == "member" and node[2][0] == "str":
        return f"{_describe(node[1])}.{node[2][1]}"
    if node[0] == "this":
        return "this"
    return "expression"


def _compare(a, b, interp):
    """a < b: None when undefined (a NaN)."""
    a, b = to_primitive(a, "number"), to_primitive(b, "number")
    if type(a) is str and type(b) is str:
        return a < b
    x, y = to_number(a), to_number(b)
    if x != x or y != y:
        return None
    return x < y


def binary(op: str, a, b, interp):
    if op == "+":
        return js_add(a, b)
    if op == "-":
        return to_number(a) - to_number(b)
    if op == "*":
        return to_number(a) * to_number(b)
    if op == "/":
        return js_div(to_number(a), to_number(b))
    if op == "%":
        return js_mod(to_number(a), to_number(b))
    if op == "===":
        return strict_equals(a, b)
    if op == "!==":
        return not strict_equals(a, b)
    if op == "==":
        return loose_equals(a, b)
    if op == "!=":
        return not loose_equals(a, b)
    if op == "<":
        return _compare(a, b, interp) is True
    if op == ">":
        return _compare(b, a, interp) is True
    if op == "<=":
        r = _compare(b, a, interp)
        return r is False
    if op == ">=":
        r = _compare(a, b, interp)
        return r is False
    if op == "**":
        return js_pow(to_number(a), to_number(b))
    if op == "&":
        return float(to_int32(a) & to_int32(b))
    if op == "|":
        return float(to_int32(a) | to_int32(b))
    if op == "^":
        return float(to_int32(a) ^ to_int32(b))
    if op == "<<":
        r = (to_int32(a) << (to_int32(b) & 31)) & 0xFFFFFFFF
        return float(r - (1 << 32) if r >= 1 << 31 else r)
    if op == ">>":
        return float(to_int32(a) >> (to_int32(b) & 31))
    if op == ">>>":
        return float((to_int32(a) & 0xFFFFFFFF) >> (to_int32(b) & 31))
    if op == "instanceof":
        return builtins.instance_of(interp, a, b)
    if op == "in":
        if not isinstance(b, JSObject):
            raise make_error("TypeError", f"cannot use 'in' operator to search for '{to_string(a)}' in {to_string(b)}")
        return builtins.has_property(b, to_property_key(a))
    raise make_error("SyntaxError", f"unsupported operator {op}")


__all__ = ["Interpreter", "Scope", "binary"]
