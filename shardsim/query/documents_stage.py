"""$documents: the documents an expression gives, as the source of a collectionless aggregate.

`{aggregate: 1, pipeline: [{$documents: <expression>}, ...]}` — the server
desugars the stage (document_source_documents.cpp) into a queue of one empty
document, a `$project` of the expression, an `$unwind` of the result (strict:
it must be an array) and a `$replaceWith` of each element (each must be an
object).  The expression is evaluated once, with the command's variables and
no document, so `{$documents: "$$docs"}` with `let: {docs: [...]}` works and a
string such as "$x" inside the array is a (missing) field path, not a value.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expressions import compile_expression
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.values import MISSING, type_name
from mongosim.shardsim.query.variables import check_references


def documents_source(spec: Any, variables: dict | None = None) -> list[dict]:
    """The documents `{$documents: spec}` produces."""
    if variables is not None:
        check_references(spec, variables)
    value = compile_expression(spec)({}, variables)
    if value is MISSING or value is None:  # $unwind drops a missing or null array
        return []
    if type(value) is not list:
        raise MongoError(5858203, "an array is expected")
    for v in value:
        if type(v) is not dict:
            raise MongoError(40228, "'newRoot' expression must evaluate to an object, but resulting value was: "
                                    f"{'MISSING' if v is MISSING else bson_str(v)}. Type of resulting value: "
                                    f"'{type_name(v)}'.")
    return value
