"""The JavaScript interpreter (shardsim.javascript) against known JavaScript results.

A table of expressions and programs with their values as a JavaScript engine
gives them (tricky semantics included: string concatenation, NaN, Infinity,
`==` coercion, closures, recursion), the errors as the server reports them,
and a property test: random integer arithmetic and comparisons, printed with
minimal parentheses, evaluate as Python evaluates them under JS semantics.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.javascript import engine as engine_mod
from mongosim.shardsim.javascript.engine import ScriptEngine

NAN = object()  # (NaN != NaN: compared specially)


def run(src: str, *args, this=None):
    eng = ScriptEngine()
    return eng.call(eng.function(src), list(args), this)


def expr(e: str):
    return run(f"function() {{ return ({e}); }}")


@pytest.mark.parametrize("source, expected", [
    ('"1" + 2', "12"),
    ("1 + 2 + '3'", "33"),
    ("'3' - 1", 2.0),
    ("'3' * '4'", 12.0),
    ("1 / 0", math.inf),
    ("-1 / 0", -math.inf),
    ("0 / 0", NAN),
    ("'a' * 1", NAN),
    ("7 % 3", 1.0),
    ("-7 % 3", -1.0),
    ("5.5 % 2", 1.5),
    ("2 ** 10", 1024.0),
    ("2 ** 3 ** 2", 512.0),
    ("0.1 + 0.2", 0.30000000000000004),
    ("[] + []", ""),
    ("[1, 2] + ''", "1,2"),
    ("({}) + ''", "[object Object]"),
    ("1 == '1'", True),
    ("1 === '1'", False),
    ("null == undefined", True),
    ("null === undefined", False),
    ("null == 0", False),
    ("'' == 0", True),
    ("true == 1", True),
    ("NaN == NaN", False),
    ("'b' > 'a'", True),
    ("'10' < '9'", True),
    ("10 < 9", False),
    ("'10' < 9", False),
    ("typeof null", "object"),
    ("typeof undefined", "undefined"),
    ("typeof notDeclared", "undefined"),
    ("typeof function() {}", "function"),
    ("typeof 1", "number"),
    ("!!''", False),
    ("!!'0'", True),
    ("null ?? 'd'", "d"),
    ("0 ?? 'd'", 0.0),
    ("0 || 'd'", "d"),
    ("1 && 'x'", "x"),
    ("1 ? 'a' : 'b'", "a"),
    ("String(1e21)", "1e+21"),
    ("String(123.0)", "123"),
    ("String(1/3)", "0.3333333333333333"),
    ("String(0.000001)", "0.000001"),
    ("String(1e-7)", "1e-7"),
    ("String(-0)", "0"),
    ("(255).toString(16)", "ff"),
    ("(3.14159).toFixed(2)", "3.14"),
    ("parseInt('42px')", 42.0),
    ("parseInt('0x1f')", 31.0),
    ("parseInt('z')", NAN),
    ("parseFloat('3.5e2abc')", 350.0),
    ("isNaN('abc')", True),
    ("Math.max(1, 7, 3)", 7.0),
    ("Math.min()", math.inf),
    ("Math.round(2.5)", 3.0),
    ("Math.round(-2.5)", -2.0),
    ("Math.floor(-1.5)", -2.0),
    ("Math.sqrt(16)", 4.0),
    ("Math.pow(2, 0.5)", math.sqrt(2)),
    ("Math.abs(-3)", 3.0),
    ("Math.ceil(1.1)", 2.0),
    ("[1, 2, 3].length", 3.0),
    ("[1, 2, 3].reduce((a, b) => a + b)", 6.0),
    ("[1, 2, 3].reduce((a, b) => a + b, '')", "123"),
    ("[1, 2, 3].map(x => x * 2)", [2.0, 4.0, 6.0]),
    ("[1, 2, 3, 4].filter(x => x % 2 == 0)", [2.0, 4.0]),
    ("[1, 2, 3].indexOf(2)", 1.0),
    ("[1, 2, 3].indexOf('2')", -1.0),
    ("[1, 2].concat([3], 4)", [1.0, 2.0, 3.0, 4.0]),
    ("[1, 2, 3, 4].slice(1, -1)", [2.0, 3.0]),
    ("[10, 9, 1].sort()", [1.0, 10.0, 9.0]),
    ("[10, 9, 1].sort((a, b) => a - b)", [1.0, 9.0, 10.0]),
    ("[1, 2].some(x => x > 1)", True),
    ("[1, 2].every(x => x > 1)", False),
    ("['a', 'b'].join('-')", "a-b"),
    ("[1, [2, 3]].join()", "1,2,3"),
    ("'hello'.length", 5.0),
    ("'hello'.indexOf('l')", 2.0),
    ("'Hello'.toUpperCase()", "HELLO"),
    ("'Hello'.toLowerCase()", "hello"),
    ("'hello'.substring(3, 1)", "el"),
    ("'hello'.slice(-3)", "llo"),
    ("'a,b,c'.split(',')", ["a", "b", "c"]),
    ("'hello'.startsWith('he')", True),
    ("'hello'.includes('ll')", True),
    ("'abc'[1]", "b"),
    ("Object.keys({a: 1, b: 2})", ["a", "b"]),
    ("Array.sum([1, 2, 3.5])", 6.5),
    ("Array.avg([1, 2, 3])", 2.0),
    ("Array.isArray([])", True),
    ("JSON.stringify({a: [1, 'x', null], b: true})", '{"a":[1,"x",null],"b":true}'),
    ("[...[1, 2], 3]", [1.0, 2.0, 3.0]),
    ("({...{a: 1}, b: 2})", {"a": 1.0, "b": 2.0}),
    ("({a: {b: 1}})?.a?.b", 1.0),
    ("({a: null}).a?.b", None),
    ("new Date(0).getTime()", 0.0),
    ("`a${1 + 1}b${'c'}`", "a2bc"),
    ("/^ab+c$/i.test('xABBC')", False),
    ("/ab+c$/i.test('xABBC')", True),
    ("/a$/.test('a\\n')", False),
    ("/a$/m.test('a\\nb')", True),
    ("'2024-01-02'.match(/(\\d+)-(\\d+)/).slice(1)", ["2024", "01"]),
    ("'a1b22c333'.match(/\\d+/g)", ["1", "22", "333"]),
    ("'abc'.match(/x/)", None),
    ("'a-b_c'.replace(/[-_]/g, ' ')", "a b c"),
    ("'john smith'.replace(/(\\w+) (\\w+)/, '$2, $1')", "smith, john"),
    ("'abc'.replace(/b/, m => m.toUpperCase() + '!')", "aB!c"),
    ("'a.b.c'.replace('.', '$&$&')", "a..b.c"),
    ("'a.b.c'.replaceAll('.', '-')", "a-b-c"),
    ("'a, b,c'.split(/\\s*,\\s*/)", ["a", "b", "c"]),
    ("'abc'.search(/c/)", 2.0),
    ("new RegExp('^a.c$', 'i').test('ABC')", True),
    ("/(?<y>\\d{4})/.exec('in 2024').groups.y", "2024"),
    ("String(/a\\/b/g)", "/a\\/b/g"),
    ("4 / 2 / 1", 2.0),
    ("Object.prototype.hasOwnProperty.call({a: 1}, 'a')", True),
    ("Object.prototype.toString.call([])", "[object Array]"),
    ("Object.prototype.toString.call(null)", "[object Null]"),
    ("Array.prototype.slice.call([1, 2, 3], 1)", [2.0, 3.0]),
    ("String.prototype.toUpperCase.call('ab')", "AB"),
    ("new TypeError('x').toString()", "TypeError: x"),
    ("[1, 2, 3].at(-1)", 3.0),
    ("[1, [2, 3]].flatMap(x => x)", [1.0, 2.0, 3.0]),
    ("[1, 2, 3, 4].findLast(x => x % 2)", 3.0),
    ("new Array(3).fill(0)", [0.0, 0.0, 0.0]),
    ("Array.from({length: 3}, (_, i) => i * i)", [0.0, 1.0, 4.0]),
    ("Array.from('ab')", ["a", "b"]),
    ("Object.fromEntries([['a', 1], ['b', 2]])", {"a": 1.0, "b": 2.0}),
    ("Object.fromEntries(new Map([['m', 1]]))", {"m": 1.0}),
    ("'  x '.trimStart() + '|'", "x |"),
    ("'abc'.at(-1)", "c"),
    ("['b', 'a'].sort((x, y) => x.localeCompare(y))", ["a", "b"]),
    ("Number.parseInt('12px') + Number.isSafeInteger(2 ** 53)", 12.0),
    ("Math.hypot(3, 4)", 5.0),
    ("hex_md5('abc')", "900150983cd24fb0d6963f7d28e17f72"),
    ("[Array.contains([1, 2], 2), Array.unique([1, 2, 1, '1']).length, Array.stdDev([2, 4])]", [True, 2.0, 1.0]),
    ("'' + {toString() { return 'T'; }}", "T"),
    ("({valueOf() { return 5; }, toString() { return 'T'; }}) * 2", 10.0),
    ("({valueOf() { return 5; }, toString() { return 'T'; }}) + ''", "5"),
    ("`${{valueOf() { return 5; }, toString() { return 'T'; }}}`", "T"),
    ("String({toString: () => 'S'})", "S"),
    ("({toString() { return '2'; }}) == 2", True),
    ("`${[1, 2]}|${{}}|${null}|${`in${'ner'}`}`", "1,2|[object Object]|null|inner"),
    ("`x\\n${ {a: 1}.a }`", "x\n1"),
    ("new Date('2024-01-02T03:04:05Z').getUTCFullYear()", 2024.0),
])
def test_expressions(source, expected):
    got = expr(source)
    if expected is NAN:
        assert isinstance(got, float) and math.isnan(got)
    else:
        assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("source, expected", [
    ("function() { var s = 0; for (var i = 0; i < 5; i++) { s += i; } return s; }", 10.0),
    ("function() { var n = 0; while (true) { if (++n >= 3) break; } return n; }", 3.0),
    ("function() { var n = 0; do { n++; } while (n < 0); return n; }", 1.0),
    ("function() { var out = []; for (var i = 0; i < 5; i++) { if (i % 2) continue; out.push(i); } return out; }",
     [0.0, 2.0, 4.0]),
    ("function() { var k = []; for (var p in {x: 1, y: 2}) k.push(p); return k; }", ["x", "y"]),
    ("function() { var s = 0; for (const v of [1, 2, 3]) s += v; return s; }", 6.0),
    ("function() { function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); } return fib(15); }", 610.0),
    ("function() { var mk = function(a) { return function(b) { return a + b; }; }; return mk(2)(3); }", 5.0),
    ("function() { var c = (function() { var n = 0; return () => ++n; })(); c(); c(); return c(); }", 3.0),
    ("function() { var fs = []; for (let i = 0; i < 3; i++) fs.push(() => i); return fs.map(f => f()); }",
     [0.0, 1.0, 2.0]),
    ("function() { var fs = []; for (var i = 0; i < 3; i++) fs.push(() => i); return fs.map(f => f()); }",
     [3.0, 3.0, 3.0]),
    ("function() { return hoisted(); function hoisted() { return 'h'; } }", "h"),
    ("function() { let x = 1; { let x = 2; } return x; }", 1.0),
    ("function() { var o = {n: 1, inc() { this.n++; return this; }}; return o.inc().inc().n; }", 3.0),
    ("function() { function P(x) { this.x = x; } var p = new P(4); return [p.x, p instanceof P]; }",
     [4.0, True]),
    ("function() { try { throw new TypeError('t'); } catch (e) { return e.name + ':' + e.message; } }", "TypeError:t"),
    ("function() { var r = []; try { r.push(1); } finally { r.push(2); } return r; }", [1.0, 2.0]),
    ("function() { switch (2) { case 1: return 'a'; case 2: case 3: return 'b'; default: return 'c'; } }", "b"),
    ("function() { var a = [1]; a[3] = 4; return [a.length, a[1]]; }", [4.0, None]),
    ("function() { var x = 5; x -= 2; x *= 3; x /= 9; return x; }", 1.0),
    ("function(a, b) { return a + b; }", 3.0),
    ("(a, b) => { return a * b; }", 2.0),
    ("(a, ...rest) => rest.length", 1.0),
    ("function() { return arguments.length; }", 2.0),
    ("function() { const {a, b: [c, d = 4], ...r} = {a: 1, b: [3], e: 5, f: 6}; return [a, c, d, r]; }",
     [1.0, 3.0, 4.0, {"e": 5.0, "f": 6.0}]),
    ("function() { let [x, , y, ...z] = [1, 2, 3, 4, 5]; return [x, y, z]; }", [1.0, 3.0, [4.0, 5.0]]),
    ("function() { var out = []; for (const [k, v] of Object.entries({p: 1, q: 2})) out.push(k + v); return out; }",
     ["p1", "q2"]),
    ("function() { return [[1, 'a'], [2, 'b']].map(([n, s]) => s + n).join(); }", "a1,b2"),
    ("function() { var f = function({x, y = 2}, [z]) { return x + y + z; }; return f({x: 1}, [3]); }", 6.0),
    ("function() { let {length} = 'abc'; return length; }", 3.0),
    ("function() { var a = 1, b = 2; [a, b] = [b, a]; return [a, b]; }", [2.0, 1.0]),
    ("function() { var o = {}, x, r; ({p: o.q, r: [x = 7, ...r]} = {p: 1, r: [undefined, 8, 9]}); return [o.q, x, r]; }",
     [1.0, 7.0, [8.0, 9.0]]),
    ("function() { var m = new Map([['a', 1]]); m.set('b', 2).set(NaN, 3); m.set('a', 4);"
     " return [m.size, m.get('a'), m.get(NaN), m.has('c'), [...m.keys()].slice(0, 2), m.delete('b'), m.size]; }",
     [3.0, 4.0, 3.0, False, ["a", "b"], True, 2.0]),
    ("function() { var s = new Set([1, '1', 1, NaN, NaN]); var out = []; for (const v of s) out.push(typeof v);"
     " return [s.size, out, s.has('1'), [...new Set('abca')].join('')]; }",
     [3.0, ["number", "string", "number"], True, "abc"]),
    ("function() { var m = new Map(); var k = {}; m.set(k, 'obj'); var t = [];"
     " m.forEach((v, key) => t.push(v + (key === k))); for (const [a, b] of m) t.push(b); return t; }",
     ["objtrue", "obj"]),
    ("function() { Object.prototype.polluted = 1; Array.prototype.x = 2; return [({}).polluted, [].x]; }",
     [None, None]),
    ("function() { class P { constructor(x) { this.x = x; } get2() { return this.x * 2; } static make() { return new P(5); } }"
     " var p = P.make(); return [p.get2(), p instanceof P, typeof P, P.name]; }", [10.0, True, "function", "P"]),
    ("function() { class A { n = 1; inc() { return ++this.n; } }"
     " class B extends A { constructor(m) { super(); this.m = m; } inc() { return super.inc() * 10 + this.m; } }"
     " var b = new B(3); return [b.inc(), b.n, b instanceof A, Object.keys(b)]; }", [23.0, 2.0, True, ["n", "m"]]),
    ("function() { class E extends Error { constructor(m) { super(m); this.name = 'E'; } }"
     " try { throw new E('bad'); } catch (e) { return [e.message, e instanceof E, String(e)]; } }",
     ["bad", True, "E: bad"]),
    ("function() { const C = class { static k = 7; }; class D extends C {} return [C.k, new D() instanceof C]; }",
     [7.0, True]),
    ("this.a > 1", True),
    ("var t = this.a; t * 2", 4.0),
    ("function() {\n  return\n  1;\n}", None),
    # every value's `constructor` is its class's global constructor (mongoengine's item_frequencies tests
    # `field.constructor == Array`), the one the script started with
    ("function() { return [[].constructor === Array, ({}).constructor === Object, 's'.constructor === String,"
     " (1).constructor === Number, true.constructor === Boolean, new Date().constructor === Date,"
     " /a/.constructor === RegExp, new Map().constructor === Map, new TypeError('t').constructor === TypeError,"
     " Array.prototype.constructor === Array, this.a.constructor === Number, Object.create(null).constructor]; }",
     [True] * 11 + [None]),
    ("function() { var A = Array; Array = function() {}; return [[].constructor === A, [].constructor === Array]; }",
     [True, False]),
    ("function() { var p = {hi() { return 'hi'; }}; var o = Object.create(p);"
     " return [o.hi(), Object.getPrototypeOf(o) === p, Object.getPrototypeOf([]) === Array.prototype]; }",
     ["hi", True, True]),
    ("function() { outer: for (var i = 0; i < 3; i++) { for (;;) { continue outer; } } return i; }", 3.0),
])
def test_programs(source, expected):
    assert run(source, 1.0, 2.0, this={"a": 2}) == expected


def test_bson_values_cross_unchanged():
    from bson import Int64, ObjectId

    oid = ObjectId()
    assert run("function(d) { return d; }", {"a": 1, "b": Int64(2), "o": oid, "l": [1, "x"]}) == \
        {"a": 1.0, "b": 2.0, "o": oid, "l": [1.0, "x"]}
    assert run("function(o) { return o.str; }", oid) == str(oid)
    assert run("function(a, b) { return [a == b, a.equals(b), a.str === b.str, a == a]; }", oid, ObjectId(str(oid))) == \
        [False, True, True, True]


@pytest.mark.parametrize("source, message", [
    ("function( {", "SyntaxError: "),
    ("function() { return 1 +; }", "SyntaxError: "),
    ("function() { var = 3; }", "SyntaxError: "),
    ("function() { return 'unterminated; }", "SyntaxError: "),
    ("function() { throw new Error('boom'); }", "Error: boom"),
    ("function() { throw 'str'; }", "uncaught exception: str"),
    ("function() { return nope; }", "ReferenceError: nope is not defined"),
    ("function() { return null.x; }", "TypeError: "),
    ("function() { return (1)(); }", "TypeError: "),
    ("function() { const {a} = null; }", "TypeError: "),
    ("function() { let [a] = 5; }", "TypeError: "),
    ("function() { var {a}; }", "SyntaxError: "),
    ("function() { return /(unclosed/; }", "SyntaxError: "),
    ("function() { return /a/q; }", "SyntaxError: "),
    ("function() { return Map(); }", "TypeError: "),
    ("function() { [1] = [2]; }", "SyntaxError: "),
    ("function() { class K {} K(); }", "TypeError: "),
    ("function() { class K { get x() { return 1; } } }", "SyntaxError: "),
    ("function() { const c = 1; c = 2; }", "TypeError: "),
    ("function f() { return f(); }", "InternalError: too much recursion"),
    ("function() { while (true) {} }", "JavaScript execution terminated"),
    ("function() { for (;;) { var a = [1]; } }", "JavaScript execution terminated"),
])
def test_errors_are_js_interpreter_failures(source, message):
    with pytest.raises(MongoError) as e:
        run(source)
    assert e.value.code == 139 and str(e.value.message if hasattr(e.value, "message") else e.value)
    assert message in str(e.value)


def test_runaway_script_stops_at_the_time_limit(monkeypatch):
    monkeypatch.setattr(engine_mod, "MAX_STEPS", 10**12)
    monkeypatch.setattr(engine_mod, "TIME_LIMIT", 0.2)
    with pytest.raises(MongoError) as e:
        run("function() { var i = 0; while (true) { i++; } }")
    assert e.value.code == 139


def test_deadline_gives_max_time_ms_expired():
    import time

    eng = ScriptEngine(deadline=time.monotonic() + 0.1)
    with pytest.raises(MongoError) as e:
        eng.call(eng.function("function() { while (true) {} }"), [])
    assert e.value.code == 50


def test_no_host_access():
    """Python attributes are not JS properties: a script cannot reach a Python object."""
    for probe in ("''.__class__", "[].__class__", "(function(){}).__globals__", "({}).__dict__",
                  "Math.__class__", "print.fn", "print.__call__"):
        assert expr(probe) is None, probe


def test_scope_variables_are_globals():
    from bson import Code

    eng = ScriptEngine({"factor": 3, "names": ["a"], "helper": Code("function(x) { return x + 100; }")})
    assert eng.call(eng.function("function(x) { return helper(x * factor + names.length); }"), [2]) == 107.0
    assert eng.call(eng.function("function(d) { return d.f(1); }"), [{"f": Code("function(y) { return -y; }")}]) == -1.0


# --- property: integer arithmetic and comparisons -----------------------------------------------

_PREC = {"+": 10, "-": 10, "*": 11, "/": 11, "%": 11}


def _js_ref(op, a, b):
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if b == 0:
            return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1, b)
        return a / b
    if b == 0 or math.isnan(a) or math.isnan(b) or math.isinf(a):
        return math.nan
    return a if math.isinf(b) else math.fmod(a, b)


def _trees(depth=3):
    leaf = st.integers(-50, 50).map(lambda n: ("n", float(n)))
    return st.recursive(leaf, lambda kids: st.one_of(
        st.tuples(st.sampled_from(list(_PREC)), kids, kids),
        st.tuples(st.just("neg"), kids)), max_leaves=8)


def _render(t, parent_prec=0, right=False) -> tuple[str, float]:
    """(JS source with only the parentheses precedence needs, its value under JS semantics)."""
    if t[0] == "n":
        src = str(int(t[1]))
        return (f"({src})" if t[1] < 0 else src), t[1]
    if t[0] == "neg":
        s, v = _render(t[1], 13)
        return f"-{s}" if not s.startswith("-") else f"-({s})", -v
    op, a, b = t
    prec = _PREC[op]
    sa, va = _render(a, prec)
    sb, vb = _render(b, prec, right=True)
    src = f"{sa} {op} {sb}"
    if prec < parent_prec or (right and prec == parent_prec):
        src = f"({src})"
    return src, _js_ref(op, va, vb)


def _same(x, y) -> bool:
    return (math.isnan(x) and math.isnan(y)) or x == y


@given(_trees(), _trees(), st.sampled_from(["<", "<=", ">", ">=", "===", "!==", "==", "!="]))
def test_arithmetic_and_comparisons_match_js_semantics(left, right, cmp):
    sl, vl = _render(left)
    sr, vr = _render(right)
    eng = ScriptEngine()
    got = eng.call(eng.function(f"function() {{ return [{sl}, {sr}, {sl} {cmp} {sr}]; }}"), [])
    assert _same(got[0], vl) and _same(got[1], vr), (sl, sr)
    nan = math.isnan(vl) or math.isnan(vr)
    expected = {"<": not nan and vl < vr, "<=": not nan and vl <= vr, ">": not nan and vl > vr,
                ">=": not nan and vl >= vr, "===": not nan and vl == vr, "!==": nan or vl != vr,
                "==": not nan and vl == vr, "!=": nan or vl != vr}[cmp]
    assert got[2] is expected, (sl, cmp, sr)


@pytest.mark.parametrize("source", [
    "function() { var s = 'ab'; for (var i = 0; i < 40; i++) s += s; return s.length; }",
    "function() { var a = [1]; for (var i = 0; i < 40; i++) a = a.concat(a); return a.length; }",
    "function() { return 'x'.padStart(1e15).length; }",
    "function() { return 'x'.repeat(1e12).length; }",
    "function() { return new Array(1e12).length; }",
    "function() { var a = []; a[1e12] = 1; return a.length; }",
])
def test_memory_stays_bounded(source):
    with pytest.raises(MongoError) as e:
        run(source)
    assert e.value.code == 139 and "RangeError" in str(e.value)


@pytest.mark.parametrize("source", ["''.repeat(Infinity)", "Array(Infinity)", "Array(NaN)", "[].length = Infinity"])
def test_infinite_lengths_are_range_errors(source):
    with pytest.raises(MongoError) as e:
        expr(source)
    assert e.value.code == 139 and "RangeError" in str(e.value)


def test_parse_errors_at_the_end_of_the_source():
    for source in ("y .", "a ?.", "x =", "function", "class A extends", "[1, 2"):
        with pytest.raises(MongoError) as e:
            run(source)
        assert e.value.code == 139 and "SyntaxError: " in str(e.value) and "IndexError" not in str(e.value)


def test_odd_numeric_arguments_are_no_python_errors():
    assert expr("'abc'.charAt(NaN)") == "a"
    assert expr("'abc'.substr(NaN, Infinity)") == "abc"
    assert expr("[1, 2, 3].splice(0, NaN)") == []
    assert expr("(5).toFixed(NaN)") == "5"
    assert expr("JSON.stringify([1], null, 1e300)") == "[\n          1\n]"
    assert expr("NumberLong(NaN)") == 0.0
    assert expr("[1][Infinity]") is None
    assert expr("''.repeat(NaN)") == ""


def test_deep_recursion_is_an_error_not_a_crash():
    assert run("function() { function f(n) { return n == 0 ? 0 : 1 + f(n - 1); } return f(300); }") == 300.0
    with pytest.raises(MongoError) as e:
        run("function() { function f(n) { return 1 + f(n + 1); } return f(0); }")
    assert e.value.code == 139 and "too much recursion" in str(e.value)


def test_deeply_nested_source():
    assert expr("(" * 150 + "1" + ")" * 150) == 1.0
    assert expr("[" * 150 + "]" * 150) is not None
    with pytest.raises(MongoError) as e:
        expr("(" * 400 + "1" + ")" * 400)
    assert e.value.code == 139 and "SyntaxError" in str(e.value)


def test_regexes_cross_as_regexes():
    import re

    from bson import Regex

    assert run("function(r) { return [r.test('xAbc'), r.source, r.flags]; }", Regex("^x?abc$", "i")) == \
        [True, "^x?abc$", "i"]
    assert run("function() { return /a+b/im; }") == Regex("a+b", "im")
    assert run("function(r) { return r.test('a'); }", re.compile("A", re.I)) is True


def test_regex_global_state():
    assert run("function() { var r = /o/g, s = 'foo', out = []; var m;"
               " while ((m = r.exec(s)) !== null) out.push(m.index + ':' + r.lastIndex); return out; }") == \
        ["1:2", "2:3"]


def test_dates_cross_as_dates():
    import datetime

    d = datetime.datetime(2024, 1, 2, 3, 4, 5, 678000)
    got = run("function(d) { return [d.getTime(), d.getUTCMonth(), d.toISOString(), new Date(d.getTime() + 1000), "
              "d instanceof Date]; }", d)
    assert got == [1704164645678.0, 0.0, "2024-01-02T03:04:05.678Z", d + datetime.timedelta(seconds=1), True]
