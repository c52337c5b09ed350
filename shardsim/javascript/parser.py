"""The parser: tokens to an abstract syntax tree of tuples (`(tag, ...)`).

Recursive descent for statements, precedence climbing for binary operators.
Expressions: ("num", v) ("str", s) ("name", n) ("this",) ("array", [e|("spread", e)|None])
("object", [(key_expr, value_expr) | ("spread", e)]) ("func", Function) ("member", obj, prop, optional)
("call", callee, args, optional) ("new", callee, args) ("unary", op, e) ("update", op, prefix, target)
("bin", op, a, b) ("logic", op, a, b) ("cond", t, a, b) ("assign", op, target, value) ("seq", [e])
("template", [text], [e]) ("regex", source, flags) ("destructure", pattern, value)
("class", name, parent, constructor, methods, fields, source) ("super",).
Statements: ("var", kind, [(name, init)]) ("expr", e) ("return", e) ("if", t, a, b)
("for", init, test, update, body, let_names) ("forin", kind, name, obj, body) ("forof", ...)
("while", t, body) ("do", body, t) ("break", label) ("continue", label) ("throw", e)
("try", block, name, handler, finalizer) ("switch", e, [(test|None, [stmt])]) ("block", [stmt])
("labeled", label, stmt) ("empty",).
A declared name (in var/let/const, parameters, for-in/of) may be a destructuring
pattern instead: ("parr", [(target, default) | None], rest) or ("pobj", [(key, target, default)], rest).

A `Function` records its parameters and the names its body declares with
`var` and `function` (hoisted to the function's scope when it is called).
"""

from __future__ import annotations

from mongosim.shardsim.javascript.errors import JSSyntaxError
from mongosim.shardsim.javascript.lexer import Tok, tokenize

_BINARY = {
    "??": 1, "||": 2, "&&": 3, "|": 4, "^": 5, "&": 6,
    "==": 7, "!=": 7, "===": 7, "!==": 7,
    "<": 8, ">": 8, "<=": 8, ">=": 8, "instanceof": 8, "in": 8,
    "<<": 9, ">>": 9, ">>>": 9, "+": 10, "-": 10, "*": 11, "/": 11, "%": 11, "**": 12,
}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "**=", "<<=", ">>=", ">>>=", "&=", "|=", "^=", "&&=", "||=", "??="}
_RESERVED = {"var", "let", "const", "function", "return", "if", "else", "for", "while", "do", "break", "continue",
             "new", "delete", "typeof", "void", "in", "instanceof", "this", "null", "true", "false", "throw", "try",
             "catch", "finally", "switch", "case", "default", "class", "extends", "super", "import", "export", "with",
             "yield", "debugger", "enum"}
MAX_DEPTH = 200  # nesting of the source (a deeper one is refused, as an engine's stack would)


class Function:
    __slots__ = ("name", "params", "rest", "body", "arrow", "hoisted_vars", "hoisted_funcs", "source", "is_class")

    def __init__(self, name, params, rest, body, arrow, hoisted_vars, hoisted_funcs, source=""):
        self.name = name or ""
        self.params = params  # [(name, default_expr | None)]
        self.rest = rest
        self.body = body
        self.arrow = arrow
        self.hoisted_vars = hoisted_vars
        self.hoisted_funcs = hoisted_funcs  # [("funcdecl", Function)] in source order
        self.source = source
        self.is_class = False  # a class's constructor: `new` only


class Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.toks = tokenize(src)
        self.i = 0
        self.depth = 0
        self.scopes: list[tuple[set, list]] = []  # per function: (var names, function declarations)

    # --- token helpers ---------------------------------------------------------------
    @property
    def tok(self) -> Tok:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> Tok:
        t = self.toks[self.i]
        if t.kind != "eof":  # (the end stays the current token)
            self.i += 1
        return t

    def is_p(self, value: str) -> bool:
        t = self.toks[self.i]
        return t.kind == "punct" and t.value == value

    def is_kw(self, value: str) -> bool:
        t = self.toks[self.i]
        return t.kind == "name" and t.value == value

    def eat(self, value: str) -> bool:
        t = self.toks[self.i]
        if (t.kind == "punct" or t.kind == "name") and t.value == value:
            self.i += 1
            return True
        return False

    def expect(self, value: str) -> None:
        if not self.eat(value):
            self.fail(f"missing {value}")

    def fail(self, what: str):
        t = self.tok
        got = "end of input" if t.kind == "eof" else repr(t.value) if t.kind != "num" else "number"
        line = self.src.count("\n", 0, t.pos) + 1
        raise JSSyntaxError(f"{what} (found {got}) @:{line}:{t.pos - (self.src.rfind(chr(10), 0, t.pos) + 1)}")

    def ident(self) -> str:
        t = self.tok
        if t.kind != "name" or t.value in _RESERVED:
            self.fail("missing name")
        self.i += 1
        return t.value

    def semicolon(self) -> None:
        if self.eat(";"):
            return
        t = self.tok
        if t.nl or t.kind == "eof" or (t.kind == "punct" and t.value == "}"):
            return
        self.fail("missing ; before statement")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise JSSyntaxError("too much recursion while parsing (nesting too deep)")

    # --- programs and functions ----------------------------------------------------------
    def program(self) -> Function:
        self.scopes.append((set(), []))
        body = []
        while self.tok.kind != "eof":
            body.append(self.statement())
        vars_, funcs = self.scopes.pop()
        return Function("", [], None, body, False, vars_, funcs, self.src)

    def function_rest(self, name: str | None, start: int, arrow: bool = False, params=None, rest=None,
                      expr_body: bool = False) -> Function:
        if params is None:
            params, rest = self.params()
        self.scopes.append((set(), []))
        if expr_body:
            body = [("return", self.assignment())]
        else:
            self.expect("{")
            body = []
            while not self.is_p("}"):
                if self.tok.kind == "eof":
                    self.fail("missing } after function body")
                body.append(self.statement())
            self.next()
        vars_, funcs = self.scopes.pop()
        end = self.toks[self.i - 1].pos + 1 if not expr_body else self.tok.pos
        return Function(name, params, rest, body, arrow, vars_, funcs, self.src[start:end])

    def params(self):
        self.expect("(")
        params, rest = [], None
        while not self.is_p(")"):
            if self.eat("..."):
                rest = self.ident()
                break
            name = self.binding_target()
            default = self.assignment() if self.eat("=") else None
            params.append((name, default))
            if not self.is_p(")"):
                self.expect(",")
        self.expect(")")
        return params, rest

    # --- statements ----------------------------------------------------------------------
    def statement(self):
        self.enter()
        try:
            return self._statement()
        finally:
            self.depth -= 1

    def _statement(self):
        t = self.tok
        if t.kind == "punct":
            if t.value == "{":
                return self.block()
            if t.value == ";":
                self.next()
                return ("empty",)
        elif t.kind == "name":
            v = t.value
            if v in ("var", "const") or (v == "let" and self._let_declares()):
                s = self.var_decl()
                self.semicolon()
                return s
            if v == "function" and self.peek().kind == "name":  # (anonymous: an expression statement)
                start = self.next().pos
                name = self.ident()
                f = self.function_rest(name, start)
                self.scopes[-1][1].append(f)
                self.scopes[-1][0].add(name)
                return ("empty",)
            if v == "return":
                self.next()
                if self.is_p(";") or self.is_p("}") or self.tok.nl or self.tok.kind == "eof":
                    self.eat(";")
                    return ("return", None)
                e = self.expression()
                self.semicolon()
                return ("return", e)
            if v == "if":
                self.next()
                self.expect("(")
                test = self.expression()
                self.expect(")")
                then = self.statement()
                other = self.statement() if self.eat("else") else None
                return ("if", test, then, other)
            if v == "for":
                return self.for_statement()
            if v == "while":
                self.next()
                self.expect("(")
                test = self.expression()
                self.expect(")")
                return ("while", test, self.statement())
            if v == "do":
                self.next()
                body = self.statement()
                if not self.eat("while"):
                    self.fail("missing while after do-loop body")
                self.expect("(")
                test = self.expression()
                self.expect(")")
                self.eat(";")
                return ("do", body, test)
            if v in ("break", "continue"):
                self.next()
                label = None
                if self.tok.kind == "name" and not self.tok.nl and self.tok.value not in _RESERVED:
                    label = self.next().value
                self.semicolon()
                return (v, label)
            if v == "throw":
                self.next()
                if self.tok.nl:
                    self.fail("no line break is allowed between 'throw' and its expression")
                e = self.expression()
                self.semicolon()
                return ("throw", e)
            if v == "try":
                return self.try_statement()
            if v == "switch":
                return self.switch_statement()
            if v == "class":
                start = self.next().pos
                name = self.ident()
                return ("var", "let", [(name, self.class_rest(name, start))])
            if v in ("import", "export", "with", "yield", "enum"):
                self.fail(f"'{v}' is not supported")
            if self.peek().kind == "punct" and self.peek().value == ":" and v not in _RESERVED:
                self.next()
                self.next()
                return ("labeled", v, self.statement())
        e = self.expression()
        self.semicolon()
        return ("expr", e)

    def block(self):
        self.expect("{")
        body = []
        while not self.is_p("}"):
            if self.tok.kind == "eof":
                self.fail("missing } in compound statement")
            body.append(self.statement())
        self.next()
        return ("block", body)

    def _let_declares(self) -> bool:
        """`let` starts a declaration (not an identifier named let) when a name or a pattern follows."""
        nxt = self.peek()
        return nxt.kind == "name" or (nxt.kind == "punct" and nxt.value in ("[", "{"))

    def binding_target(self):
        """A name, or a destructuring pattern: ("parr", [(target, default) | None], rest)
        or ("pobj", [(key_node, target, default)], rest)."""
        self.enter()
        try:
            if self.eat("["):
                items, rest = [], None
                while not self.eat("]"):
                    if self.eat(","):
                        items.append(None)
                        continue
                    if self.eat("..."):
                        rest = self.binding_target()
                        self.expect("]")
                        break
                    target = self.binding_target()
                    items.append((target, self.assignment() if self.eat("=") else None))
                    if not self.is_p("]"):
                        self.expect(",")
                return ("parr", items, rest)
            if self.eat("{"):
                props, rest = [], None
                while not self.eat("}"):
                    if self.eat("..."):
                        rest = self.ident()
                        self.expect("}")
                        break
                    t, key = self.property_key("invalid destructuring target")
                    if self.eat(":"):
                        target = self.binding_target()
                    elif t.kind == "name" and t.value not in _RESERVED:
                        target = t.value
                    else:
                        self.fail("missing : after property id")
                    props.append((key, target, self.assignment() if self.eat("=") else None))
                    if not self.is_p("}"):
                        self.expect(",")
                return ("pobj", props, rest)
            return self.ident()
        finally:
            self.depth -= 1

    def var_decl(self, in_for: bool = False):
        kind = self.next().value
        decls = []
        while True:
            name = self.binding_target()
            init = None
            if self.eat("="):
                init = self.assignment(no_in=in_for)
            elif (kind == "const" or type(name) is tuple) and not (in_for and (self.is_kw("of") or self.is_kw("in"))):
                self.fail("missing = in const declaration" if kind == "const" else "missing = in destructuring declaration")
            decls.append((name, init))
            if kind == "var":
                self.scopes[-1][0].update(pattern_names(name))
            if not self.eat(","):
                break
        return ("var", kind, decls)

    def for_statement(self):
        self.next()
        self.expect("(")
        init = None
        if self.is_p(";"):
            pass
        elif self.is_kw("var") or self.is_kw("const") or (self.is_kw("let") and self._let_declares()):
            init = self.var_decl(in_for=True)
            if len(init[2]) == 1 and init[2][0][1] is None and (self.is_kw("of") or self.is_kw("in")):
                kind = "forof" if self.next().value == "of" else "forin"
                obj = self.assignment() if kind == "forof" else self.expression()
                self.expect(")")
                return (kind, init[1], init[2][0][0], obj, self.statement())
        else:
            if self.tok.kind == "name" and self.peek().kind == "name" and self.peek().value in ("of", "in"):
                name = self.ident()
                kind = "forof" if self.next().value == "of" else "forin"
                obj = self.assignment() if kind == "forof" else self.expression()
                self.expect(")")
                return (kind, None, name, obj, self.statement())
            init = ("expr", self.expression(no_in=True))
        self.expect(";")
        test = None if self.is_p(";") else self.expression()
        self.expect(";")
        update = None if self.is_p(")") else self.expression()
        self.expect(")")
        body = self.statement()
        let_names = [n for t, _ in init[2] for n in pattern_names(t)] if init and init[0] == "var" and init[1] != "var" else []
        return ("for", init, test, update, body, let_names)

    def try_statement(self):
        self.next()
        block = self.block()
        name = handler = finalizer = None
        if self.eat("catch"):
            if self.eat("("):
                name = self.ident()
                self.expect(")")
            handler = self.block()
        if self.eat("finally"):
            finalizer = self.block()
        if handler is None and finalizer is None:
            self.fail("missing catch or finally after try")
        return ("try", block, name, handler, finalizer)

    def switch_statement(self):
        self.next()
        self.expect("(")
        disc = self.expression()
        self.expect(")")
        self.expect("{")
        cases = []
        while not self.eat("}"):
            if self.eat("default"):
                test = None
            elif self.eat("case"):
                test = self.expression()
            else:
                self.fail("missing case or default in switch")
            self.expect(":")
            body = []
            while not (self.is_kw("case") or self.is_kw("default") or self.is_p("}")):
                if self.tok.kind == "eof":
                    self.fail("missing } after switch body")
                body.append(self.statement())
            cases.append((test, body))
        return ("switch", disc, cases)

    # --- expressions ---------------------------------------------------------------------
    def expression(self, no_in: bool = False):
        e = self.assignment(no_in)
        if self.is_p(","):
            items = [e]
            while self.eat(","):
                items.append(self.assignment(no_in))
            return ("seq", items)
        return e

    def _arrow_ahead(self) -> bool:
        """At `(`: is this an arrow function's parameter list?"""
        depth, k = 0, self.i
        while k < len(self.toks):
            t = self.toks[k]
            if t.kind == "punct" and t.value in "([{":
                depth += 1
            elif t.kind == "punct" and t.value in ")]}":
                depth -= 1
                if depth == 0:
                    nxt = self.toks[k + 1] if k + 1 < len(self.toks) else t
                    return nxt.kind == "punct" and nxt.value == "=>" and not nxt.nl
            elif t.kind == "eof":
                return False
            k += 1
        return False

    def assignment(self, no_in: bool = False):
        self.enter()
        try:
            t = self.tok
            if t.kind == "name" and t.value not in _RESERVED and self.peek().kind == "punct" \
                    and self.peek().value == "=>":
                self.next()
                self.next()
                return self.arrow_body(t.pos, [(t.value, None)], None)
            if t.kind == "punct" and t.value == "(" and self._arrow_ahead():
                params, rest = self.params()
                self.expect("=>")
                return self.arrow_body(t.pos, params, rest)
            left = self.conditional(no_in)
            t = self.tok
            if t.kind == "punct" and t.value in _ASSIGN:
                if t.value == "=" and left[0] in ("array", "object"):  # destructuring assignment
                    self.next()
                    return ("destructure", self.as_pattern(left), self.assignment(no_in))
                if left[0] not in ("name", "member"):
                    self.fail("invalid assignment left-hand side")
                self.next()
                return ("assign", t.value, left, self.assignment(no_in))
            return left
        finally:
            self.depth -= 1

    def as_pattern(self, e):
        """An array or object literal on the left of `=` as the pattern it spells (names and members)."""
        tag = e[0]
        if tag in ("name", "member"):
            return e[1] if tag == "name" else e
        if tag == "array":
            items, rest = [], None
            for k, item in enumerate(e[1]):
                if item is None:
                    items.append(None)
                elif item[0] == "spread":
                    if k != len(e[1]) - 1:
                        self.fail("rest element must be last")
                    rest = self.as_pattern(item[1])
                elif item[0] == "assign" and item[1] == "=":
                    items.append((self.as_pattern(item[2]), item[3]))
                else:
                    items.append((self.as_pattern(item), None))
            return ("parr", items, rest)
        if tag == "object":
            props, rest = [], None
            for p in e[1]:
                if p[0] == "spread":
                    rest = self.as_pattern(p[1])
                    continue
                key, value = p
                if value[0] == "assign" and value[1] == "=":
                    props.append((key, self.as_pattern(value[2]), value[3]))
                else:
                    props.append((key, self.as_pattern(value), None))
            return ("pobj", props, rest)
        self.fail("invalid destructuring assignment target")

    def class_rest(self, name: str | None, start: int):
        """After `class Name`: ("class", name, superclass | None, constructor | None, [(static, key, Function)],
        [(key, initializer | None)] instance fields)."""
        parent = self.postfix_call() if self.eat("extends") else None
        self.expect("{")
        ctor, methods, fields = None, [], []
        while not self.eat("}"):
            if self.eat(";"):
                continue
            is_static = self.is_kw("static") and not (self.peek().kind == "punct" and self.peek().value in ("(", "="))
            if is_static:
                self.next()
            t = self.next()
            if t.kind in ("name", "str"):
                key = ("str", t.value)
            elif t.kind == "num":
                key = ("numkey", t.value)
            elif t.kind == "punct" and t.value == "[":
                key = self.assignment()
                self.expect("]")
            else:
                self.i -= 1
                self.fail("missing method name in class body")
            if t.kind == "name" and t.value in ("get", "set", "async") and not self.is_p("(") and not self.is_p("="):
                self.fail(f"'{t.value}' methods are not supported")
            if self.is_p("("):
                f = self.function_rest(key[1] if key[0] == "str" else None, t.pos)
                if key == ("str", "constructor") and not is_static:
                    ctor = f
                else:
                    methods.append((is_static, key, f))
            else:
                init = self.assignment() if self.eat("=") else None
                self.semicolon()
                if is_static:
                    methods.append((True, key, init))
                else:
                    fields.append((key, init))
        if ctor is not None:
            ctor.name = name or ""
        return ("class", name, parent, ctor, methods, fields, self.src[start:self.toks[self.i - 1].pos + 1])

    def arrow_body(self, start, params, rest):
        if self.is_p("{"):
            return ("func", self.function_rest(None, start, True, params, rest))
        return ("func", self.function_rest(None, start, True, params, rest, expr_body=True))

    def conditional(self, no_in: bool = False):
        test = self.binary(0, no_in)
        if self.eat("?"):
            a = self.assignment()
            self.expect(":")
            b = self.assignment(no_in)
            return ("cond", test, a, b)
        return test

    def binary(self, min_prec: int, no_in: bool = False):
        left = self.unary()
        while True:
            t = self.tok
            op = t.value
            if t.kind not in ("punct", "name") or op not in _BINARY or (t.kind == "name" and op not in ("in", "instanceof")):
                return left
            if no_in and op == "in":
                return left
            prec = _BINARY[op]
            if prec <= min_prec and not (op == "**" and prec == min_prec):
                return left
            self.next()
            right = self.binary(prec - 1 if op == "**" else prec, no_in)
            tag = "logic" if op in ("&&", "||", "??") else "bin"
            left = (tag, op, left, right)

    def unary(self):
        t = self.tok
        if (t.kind == "punct" and t.value in ("!", "-", "+", "~")) or (
                t.kind == "name" and t.value in ("typeof", "void", "delete")):
            self.next()
            self.enter()
            try:
                return ("unary", t.value, self.unary())
            finally:
                self.depth -= 1
        if t.kind == "punct" and t.value in ("++", "--"):
            self.next()
            target = self.unary()
            if target[0] not in ("name", "member"):
                self.fail("invalid increment/decrement operand")
            return ("update", t.value, True, target)
        e = self.postfix_call()
        t = self.tok
        if t.kind == "punct" and t.value in ("++", "--") and not t.nl:
            if e[0] not in ("name", "member"):
                self.fail("invalid increment/decrement operand")
            self.next()
            return ("update", t.value, False, e)
        return e

    def arguments(self):
        self.expect("(")
        args = []
        while not self.is_p(")"):
            if self.eat("..."):
                args.append(("spread", self.assignment()))
            else:
                args.append(self.assignment())
            if not self.is_p(")"):
                self.expect(",")
        self.next()
        return args

    def postfix_call(self):
        if self.is_kw("new"):
            self.next()
            if self.is_p("."):
                self.fail("new.target is not supported")
            callee = self.member_only(self.primary())
            args = self.arguments() if self.is_p("(") else []
            e = ("new", callee, args)
        else:
            e = self.primary()
        while True:
            t = self.tok
            if t.kind != "punct":
                return e
            if t.value == ".":
                self.next()
                name = self.next()
                if name.kind != "name":
                    self.fail("missing name after . operator")
                e = ("member", e, ("str", name.value), False)
            elif t.value == "?.":
                self.next()
                if self.is_p("("):
                    e = ("call", e, self.arguments(), True)
                elif self.eat("["):
                    prop = self.expression()
                    self.expect("]")
                    e = ("member", e, prop, True)
                else:
                    name = self.next()
                    if name.kind != "name":
                        self.fail("missing name after ?. operator")
                    e = ("member", e, ("str", name.value), True)
            elif t.value == "[":
                self.next()
                prop = self.expression()
                self.expect("]")
                e = ("member", e, prop, False)
            elif t.value == "(":
                e = ("call", e, self.arguments(), False)
            else:
                return e

    def member_only(self, e):
        while True:
            if self.eat("."):
                name = self.next()
                if name.kind != "name":
                    self.fail("missing name after . operator")
                e = ("member", e, ("str", name.value), False)
            elif self.eat("["):
                prop = self.expression()
                self.expect("]")
                e = ("member", e, prop, False)
            else:
                return e

    def primary(self):
        t = self.next()
        if t.kind == "num":
            return ("num", t.value)
        if t.kind == "str":
            return ("str", t.value)
        if t.kind == "regex":
            return ("regex", t.value[0], t.value[1])
        if t.kind == "template":
            parts, sources = t.value
            exprs = []
            for source, _offset in sources:
                sub = Parser(source)
                sub.scopes, sub.depth = self.scopes, self.depth
                exprs.append(sub.expression())
                if sub.tok.kind != "eof":
                    sub.fail("missing } in template string")
            return ("template", parts, exprs)
        if t.kind == "name":
            v = t.value
            if v == "function":
                name = self.ident() if self.tok.kind == "name" else None
                return ("func", self.function_rest(name, t.pos))
            if v == "this":
                return ("this",)
            if v == "class":
                name = self.ident() if self.tok.kind == "name" and self.tok.value != "extends" else None
                return self.class_rest(name, t.pos)
            if v == "super":
                if not (self.is_p("(") or self.is_p(".") or self.is_p("[")):
                    self.fail("super must be called or have a property read")
                return ("super",)
            if v == "null":
                return ("null",)
            if v == "true":
                return ("bool", True)
            if v == "false":
                return ("bool", False)
            if v in _RESERVED:
                self.i -= 1
                self.fail("syntax error")
            return ("name", v)
        if t.kind == "punct":
            if t.value == "(":
                e = self.expression()
                self.expect(")")
                return e
            if t.value == "[":
                items = []
                while not self.is_p("]"):
                    if self.is_p(","):
                        self.next()
                        items.append(None)
                        continue
                    items.append(("spread", self.assignment()) if self.eat("...") else self.assignment())
                    if not self.is_p("]"):
                        self.expect(",")
                self.next()
                return ("array", items)
            if t.value == "{":
                return self.object_literal()
        self.i -= 1
        self.fail("syntax error")

    def property_key(self, error: str):
        """An object literal's or pattern's property key -> (its first token, the key's node): a name or
        string is ("str", ...), a number ("numkey", ...), `[expr]` a computed key (the expression)."""
        t = self.next()
        if t.kind == "name" or t.kind == "str":
            return t, ("str", t.value)
        if t.kind == "num":
            return t, ("numkey", t.value)
        if t.kind == "punct" and t.value == "[":
            key = self.assignment()
            self.expect("]")
            return t, key
        self.i -= 1
        self.fail(error)

    def object_literal(self):
        props = []
        while not self.is_p("}"):
            if self.eat("..."):
                props.append(("spread", self.assignment()))
            else:
                t, key = self.property_key("invalid property id")
                if self.eat(":"):
                    props.append((key, self.assignment()))
                elif self.is_p("("):
                    name = key[1] if key[0] == "str" else None
                    props.append((key, ("func", self.function_rest(name, t.pos))))
                elif t.kind == "name" and t.value not in _RESERVED:
                    props.append((key, ("name", t.value)))
                else:
                    self.fail("missing : after property id")
            if not self.is_p("}"):
                self.expect(",")
        self.next()
        return ("object", props)


def pattern_names(target) -> list[str]:
    """The names a binding target declares."""
    if type(target) is str:
        return [target]
    if target[0] == "member":
        return []
    out: list[str] = []
    if target[0] == "parr":
        for item in target[1]:
            if item is not None:
                out += pattern_names(item[0])
    else:
        for _key, sub, _default in target[1]:
            out += pattern_names(sub)
    if target[2] is not None:
        out += pattern_names(target[2])
    return out


def parse_program(src: str) -> Function:
    """A script: its statements as the body of a function of no parameters."""
    try:
        return Parser(src).program()
    except RecursionError:
        raise JSSyntaxError("too much recursion while parsing") from None
