"""The `$text` query operator (the server's TextMatchExpression and ExtensionsCallback::parseText).

`{$text: {$search: <string>, $language: <string>, $caseSensitive: <bool>,
$diacriticSensitive: <bool>}}` (parsed by the query layer: `query.extensions_callback`) is
resolved against the collection's one text index
(IndexNotFound 27 without one, or with two), whose `default_language` serves when
`$language` is absent; the search string is then parsed (`fts_query.parse`).

In a filter `$text` matches every document: the text plan (`text_stages`) finds and
checks them.  It may stand at the top of a filter or in a top-level `$and` - once.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.fts import fts_query
from mongosim.shardsim.fts.fts_query import FTSQuery
from mongosim.shardsim.fts.fts_spec import FTSSpec
from mongosim.shardsim.query.extensions_callback import TextParams, parse_text


def text_index(coll, ns: str) -> dict:
    """The collection's text index spec (TextMatchExpression's lookup, with its errors)."""
    if coll is None:
        raise MongoError("IndexNotFound", f"text index required for $text query (no such collection '{ns}')")
    found = [s for s in coll.indexes if "_fts" in s.get("key", {}) and s["key"]["_fts"] == "text"]
    if not found:
        raise MongoError("IndexNotFound", "text index required for $text query")
    if len(found) > 1:
        raise MongoError("IndexNotFound", "more than one text index found for $text query")
    return found[0]


def resolve(params: TextParams, spec: dict) -> tuple[FTSSpec, FTSQuery]:
    """The index's FTSSpec and the parsed search."""
    fts = FTSSpec(spec)
    language = params.language or fts.default_language.name
    return fts, fts_query.parse(params.query, language, params.case_sensitive, params.diacritic_sensitive,
                                fts.version)


def find_text(flt: dict) -> tuple[TextParams | None, int, bool]:
    """The filter's `$text` (top level or in a top-level `$and`), how many `$text` it holds, and whether one
    is under `$nor`/`$or` or another place a text plan cannot serve."""
    found: list = []
    nested = [False]

    def walk(f: Any, top: bool, under: str | None) -> None:
        if type(f) is not dict:
            return
        for k, v in f.items():
            if k == "$text":
                found.append(v)
                if not top:
                    nested[0] = under or "nested"
            elif k == "$and" and type(v) is list:
                for sub in v:
                    walk(sub, top, under)
            elif k in ("$or", "$nor") and type(v) is list:
                for sub in v:
                    walk(sub, False, k)
            elif k == "$elemMatch" or (type(v) is dict and not k.startswith("$")):
                walk(v, False, under)

    walk(flt, True, None)
    if not found:
        return None, 0, False
    return (parse_text(found[0]) if len(found) == 1 and not nested[0] else None), len(found), nested[0]


def check_text(flt: dict) -> TextParams | None:
    """CanonicalQuery's rules for `$text`: one, never under `$nor`, and (here) not under `$or`."""
    params, count, nested = find_text(flt)
    if count > 1:
        raise MongoError("BadValue", "Too many text expressions")
    if nested == "$nor":
        raise MongoError("BadValue", "text expression not allowed in nor")
    if nested:
        raise MongoError("NoQueryExecutionPlans", "error processing query: planner returned error :: caused by :: "
                                                  "Failed to produce a solution for TEXT under OR - other non-TEXT "
                                                  "clauses under OR have to be indexed as well.")
    return params
