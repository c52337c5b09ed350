"""Server-side JavaScript: a small interpreter, hand-written in pure Python.

Why hand-written: the pure-Python JavaScript engines on PyPI (js2py,
pyjsparser, esprima-python) are unmaintained, and js2py has had sandbox
escapes (its translated code runs as Python with access to Python objects);
a native engine (SpiderMonkey, V8, QuickJS bindings) is out of bounds for a
pure-Python project.  This interpreter has no host access at all: no I/O, no
imports, no attribute access to Python objects — a script sees only JS values
(`values`) and the builtins (`builtins`), so it is sandboxed by construction,
and a step budget bounds its running time (`interpreter`).

The supported subset is what server-side scripts ($where, mapReduce,
$function, $accumulator) use: function declarations and expressions,
arrows, classes (extends, super, fields, statics), var/let/const (with
destructuring patterns, in parameters, for...of and assignments too),
if/else, for(;;), for...in, for...of, while, do-while, break/continue
(labelled too), switch, try/catch/finally, throw, the operators (arithmetic
with JS's number semantics, string concatenation, == and ===, typeof, ??,
?., bitwise), object and array literals with spread, template literals,
regular expressions (`regexp`), `this`, `new` on script functions and
Date/Array/Object/Error/RegExp; the Array, String, Number, Math, Object,
JSON and Date methods listed in `builtins`, Map and Set (`mapset`).  Not
supported: generators, async, getters/setters, tagged templates, Symbol,
iterators (Map and Set answer arrays from keys/values/entries).

Modules, top down: `engine` (compile/call with BSON values, the server's
errors) → `interpreter` (the evaluator) → `parser` (AST) → `lexer` (tokens);
`builtins` (with `regexp` and `mapset`) and `values` (JS values, conversions, the BSON
bridge) below them.
"""
