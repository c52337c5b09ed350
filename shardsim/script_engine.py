"""Server-side JavaScript: mongosim is a deployment without a script engine.

A mongod started with `security.javascriptEnabled: false` (`--noscripting`)
has no global script engine, and everything that would run JavaScript fails
where the server checks for it:

* `$where` when the filter is parsed: 6108304 "no globalScriptEngine in $where
  parsing" (JsFunction);
* mapReduce's map function when the first document is emitted
  (`$_internalJsEmit`): 31246 "Cannot run server-side javascript without the
  javascript engine enabled" — so a mapReduce over no documents still succeeds.

No JavaScript interpreter is used: the pure-Python ones on PyPI (js2py and its
forks) are unmaintained and have had sandbox escapes, and a native engine is
out of bounds for this project.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.matcher import TOP_LEVEL_EXTENSIONS

ENABLED = False  # security.javascriptEnabled


def where_refused(_code: Any):
    raise MongoError(6108304, "no globalScriptEngine in $where parsing")


def emit_refused() -> MongoError:
    return MongoError(31246, "Cannot run server-side javascript without the javascript engine enabled")


TOP_LEVEL_EXTENSIONS["$where"] = where_refused
