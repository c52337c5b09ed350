"""Server-side JavaScript: the deployment's script engine (shardsim.javascript), on by default as in 8.0.

`shardsim.javascript.engine.ENABLED` is `security.javascriptEnabled`: with it
off (`mongosim serve --noscripting`) everything that would run JavaScript
fails where the server checks for it —
`$where` when the filter is parsed (6108304 "no globalScriptEngine in $where
parsing"), mapReduce at its first emitted document, `$function` and
`$accumulator` when they run (31246 "Cannot run server-side javascript
without the javascript engine enabled").

`$where` (a string or Code; CodeWScope is refused with 4649201) compiles on
first use and runs per document with `this` and the global `obj` set to the
document; a truthy result matches.  The server refuses `$where` under
`$elemMatch` (the matcher), in an aggregation `$match` (and so in
`$lookup`/`$facet` pipelines, on views and in pymongo's count_documents:
query.extensions_callback), in collection validators (document_validation)
and in partial filters (index_key_validate).
"""

from __future__ import annotations

from typing import Any

from bson import Code

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.javascript import engine
from mongosim.shardsim.javascript.engine import ScriptEngine
from mongosim.shardsim.javascript.values import to_boolean
from mongosim.shardsim.query.matcher import TOP_LEVEL_EXTENSIONS


def where_predicate(code: Any):
    """The `$where` operator's predicate `(doc, details) -> bool`."""
    if not engine.ENABLED:
        raise MongoError(6108304, "no globalScriptEngine in $where parsing")
    if isinstance(code, Code) and code.scope is not None:
        raise MongoError(4649201, "$where no longer supports deprecated BSON type CodeWScope")
    if not isinstance(code, str):
        raise MongoError("BadValue", "$where got bad type")
    if not code:
        raise MongoError("BadValue", "code for $where cannot be empty")
    source = str(code)
    state: list = []  # [engine, function], made at the first document (a compile error surfaces there)

    def pred(doc, details) -> bool:
        if not state:
            eng = ScriptEngine()
            state.extend((eng, eng.function(source)))
        eng, fn = state
        this = eng.to_js(doc)
        eng.set_global("obj", this)
        return to_boolean(eng.call_js(fn, [], this))

    return pred


TOP_LEVEL_EXTENSIONS["$where"] = where_predicate
