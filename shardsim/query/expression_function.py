"""`$function`: an aggregation expression computed by a JavaScript function (shardsim.javascript).

`{$function: {body, args, lang: "js"}}`: `body` a constant string or Code,
`args` an expression evaluating to an array (its elements are the function's
arguments), `lang` "js".  Parse errors as ExpressionFunction::parse: 31260
not an object, 31261 no body, 31432 a body that is not a constant, 31262 a
constant that is not a string or code, 31263 no args, 31418 no lang, 31419 a
lang other than "js"; when evaluated, 31266 args not an array.  The function
compiles at its first evaluation (a syntax error is then 139), in an engine
the compiled expression keeps; its result comes back as BSON (numbers as
doubles, undefined as null).
"""

from __future__ import annotations

from bson import Code

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.javascript.engine import ScriptEngine
from mongosim.shardsim.query.expression_core import compile_node, register
from mongosim.shardsim.query.values import type_name


@register("$function")
def _function(arg):
    if not isinstance(arg, dict):
        raise MongoError(31260, f"$function requires an object as an argument, found: {type_name(arg)}")
    if "body" not in arg:
        raise MongoError(31261, "The body function must be specified.")
    body = arg["body"]
    if isinstance(body, dict) and body and next(iter(body)).startswith("$") and next(iter(body)) != "$literal" \
            or isinstance(body, str) and body.startswith("$") and not isinstance(body, Code):
        raise MongoError(31432, "The body function must be a constant expression")
    if isinstance(body, dict) and len(body) == 1 and "$literal" in body:
        body = body["$literal"]
    if not isinstance(body, (str, Code)):
        raise MongoError(31262, "The body function must evaluate to type string or code")
    if "args" not in arg:
        raise MongoError(31263, "The args field must be specified.")
    args = compile_node(arg["args"])
    if "lang" not in arg:
        raise MongoError(31418, "The lang field must be specified.")
    if arg["lang"] != "js":
        raise MongoError(31419, "Currently the only supported language specifier is 'js'.")
    source = str(body)
    state: list = []  # [engine, function], made at the first evaluation

    def run(vs):
        values = args(vs)
        if not state:
            eng = ScriptEngine()
            state.extend((eng, eng.function(source)))
        if not isinstance(values, list):
            raise MongoError(31266, "The args field must be of type array")
        eng, fn = state
        return eng.call(fn, values)

    return run

