"""Why a document failed its collection's validator: the server's doc_validation_error.

DocumentValidationFailure (121) carries `errInfo: {failingDocumentId, details}`;
`details` explains the failure in terms of the validator the user wrote.  It is
produced by walking the validator's annotated tree (`shardsim.match_expression`,
`shardsim.json_schema`) with a pre-, in- and post-visitor, as the server does:

* every node pushes a *frame* holding the (sub)document it is judged against,
  whether the context is inverted (under `$not`/`$nor`: an error then says
  what matched) and its *runtime state*: ERROR (it contributes), NO_ERROR,
  NEED_CHILDREN (an AND/OR that must ask each child whether it failed — in a
  normal context an AND's failing children are the reasons, in an inverted one
  an OR's matching ones are) or IGNORE_CHILDREN;
* a leaf writes `operatorName`, `specifiedAs`, a `reason` (normal or inverted
  wording) and the `consideredValue(s)` it looked at (at most 10, then
  `consideredValuesTruncated`), with `consideredType(s)` / `expectedType(s)`
  when the type was wrong;
* a logical node collects its children's errors: `clausesNotSatisfied`
  (`$and`, `$or`), `clausesSatisfied` (`$nor`, inverted ones),
  `schemaRulesNotSatisfied` ($jsonSchema), `propertiesNotSatisfied`,
  `schemasNotSatisfied`, `missingProperties`, ... — with `index` for the
  operators whose clauses are ordered;
* the error of the last finished node is passed up (`latest`); nodes in mode
  DESCEND pass their children's error through untouched.

Documents are plain dicts; errors are dicts in the server's field order.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim import json_schema as js
from mongosim.shardsim.match_expression import (
    GENERATE,
    IGNORE,
    NO_TRAVERSAL,
    OMIT_ARRAY,
    TRAVERSE,
    Node,
    value_at,
    values_at,
)
from mongosim.shardsim.query.expressions import compile_expression
from mongosim.shardsim.query.values import MISSING, TYPE_ALIASES, type_number

ERROR, NO_ERROR, NEED_CHILDREN, IGNORE_CHILDREN = "error", "noError", "needChildren", "ignoreChildren"
MAX_CONSIDERED_VALUES = 10  # internalQueryMaxDocValidationErrorConsideredValues

_NUMBER = frozenset({19, 1, 16, 18})
_STRINGISH = frozenset({2, 14, 11})
_BITS = frozenset({16, 18, 1, 19, 5})
_ARRAY = frozenset({4})
_ORDERED = frozenset({"$and", "$or", "$nor", "allOf", "anyOf", "oneOf"})
_AND_DETAILS = {
    "$and": ("clausesNotSatisfied", "clausesSatisfied"), "allOf": ("schemasNotSatisfied", ""),
    "properties": ("propertiesNotSatisfied", ""), "$jsonSchema": ("schemaRulesNotSatisfied", ""),
    "_subschema": ("", ""), "_propertiesExistList": ("", ""), "items": ("details", ""),
    "dependencies": ("failingDependencies", ""), "required": ("missingProperties", ""),
    "_property": ("details", ""), "": ("details", ""),
}
_OR_DETAILS = {"$or": ("clausesNotSatisfied", "clausesSatisfied"), "anyOf": ("schemasNotSatisfied", "")}
_NAMES = {v: k for k, v in TYPE_ALIASES.items()}


def _type_name(v: Any) -> str:
    return _NAMES.get(type_number(v), "unknown")


class _Frame:
    __slots__ = ("state", "doc", "inverted", "obj", "arr", "child_index", "truncated")

    def __init__(self, state: str, doc: Any, inverted: bool) -> None:
        self.state, self.doc, self.inverted = state, doc, inverted
        self.obj: dict = {}
        self.arr: list = []
        self.child_index = 0
        self.truncated = False


class _Generator:
    """ValidationErrorContext plus the three visitors."""

    def __init__(self, root_doc: dict) -> None:
        self.root = root_doc
        self.frames: list[_Frame] = []
        self.latest: Any = None
        self.child_input: tuple[Any, bool] | None = None

    # -- frames ----------------------------------------------------------------------
    @property
    def top(self) -> _Frame:
        return self.frames[-1]

    def push(self, node: Node) -> None:
        self.latest = None
        if not self.frames:
            self.frames.append(_Frame(ERROR, self.root, False))
            return
        parent = self.top
        doc, inverted = parent.doc, parent.inverted
        if self.child_input is not None:
            (doc, inverted), self.child_input = self.child_input, None
        if parent.state in (NO_ERROR, IGNORE_CHILDREN) or node.mode == IGNORE:
            self.frames.append(_Frame(NO_ERROR, doc, inverted))
            return
        if parent.state == NEED_CHILDREN:
            try:
                generate = node.matches(doc) == inverted
            except MongoError:
                generate = True
            self.frames.append(_Frame(ERROR if generate else NO_ERROR, doc, inverted))
            return
        self.frames.append(_Frame(ERROR, doc, inverted))

    def set_state(self, state: str) -> None:
        if self.top.state != NO_ERROR:
            self.top.state = state

    def should_generate(self, node: Node) -> bool:
        return node.mode == GENERATE and self.top.state != NO_ERROR

    def produces_array(self, node: Node) -> bool:
        return node.tag in ("_subschema", "_propertiesExistList")

    def finish(self, node: Node) -> None:
        if self.should_generate(node):
            self.latest = self.top.arr if self.produces_array(node) else self.top.obj
        self.frames.pop()

    def append_latest(self, target: dict | list) -> None:
        if isinstance(target, dict):
            target["details"] = self.latest
        elif isinstance(self.latest, list) and not isinstance(self.latest, str):
            target.extend(self.latest)
        else:
            target.append(self.latest)

    def have_latest(self) -> bool:
        return self.latest is not None

    # -- the walk ----------------------------------------------------------------------
    def walk(self, node: Node) -> None:
        pre = _PRE.get(node.kind)
        if pre is None:  # nodes that take no part in error generation (enum members)
            return
        pre(self, node)
        for i, child in enumerate(node.children):
            if i:
                _IN.get(node.kind, _nothing)(self, node)
            self.walk(child)
        _POST.get(node.kind, _Generator.finish)(self, node)

    # -- building blocks -----------------------------------------------------------------
    def operator_name(self, node: Node) -> None:
        if node.tag:
            self.top.obj["operatorName"] = node.tag

    def error_details(self, node: Node) -> None:
        self.operator_name(node)
        self.top.obj["specifiedAs"] = node.spec

    def reason(self, normal: str, inverted: str) -> None:
        obj = self.top.obj
        if "reason" not in obj:
            obj["reason"] = inverted if self.top.inverted else normal

    def values(self, path: str, leaf: str) -> list | None:
        """createValuesArray: the values considered, None when the path is missing."""
        if not path:
            return [self.root]
        out = []
        it = values_at(self.top.doc, path, leaf)
        for v in it:
            if v is MISSING:
                break
            if len(out) == MAX_CONSIDERED_VALUES:
                if v is not MISSING:
                    self.top.truncated = True
                break
            out.append(v)
        if not out and not self.path_exists(path):
            return None
        return out

    def path_exists(self, path: str) -> bool:
        for v in values_at(self.top.doc, path, TRAVERSE):
            return v is not MISSING
        return False

    def missing(self, arr: list | None) -> None:
        if arr is None:
            self.top.obj["reason"] = "field was missing"

    def considered_values(self, arr: list | None) -> None:
        if arr is None:
            return
        obj = self.top.obj
        if len(arr) == 1:
            obj["consideredValue"] = arr[0]
        else:
            obj["consideredValues"] = arr
        if self.top.truncated:
            obj["consideredValuesTruncated"] = True

    def considered_types(self, arr: list | None) -> None:
        if not arr:
            return
        types = sorted({_type_name(v) for v in arr})
        if len(types) == 1:
            self.top.obj["consideredType"] = types[0]
        else:
            self.top.obj["consideredTypes"] = types

    def type_mismatch(self, arr: list | None, expected: frozenset | None) -> None:
        obj = self.top.obj
        if arr is None or "reason" in obj or not expected:
            return
        if any(type_number(v) in expected for v in arr):
            return
        obj["reason"] = "type did not match"
        self.considered_types(arr)
        names = sorted(_NAMES[t] for t in expected)
        if len(names) == 1:
            obj["expectedType"] = names[0]
        else:
            obj["expectedTypes"] = names

    def keyword_value(self, node: Node, expected: frozenset) -> tuple[bool, Any]:
        """getValueForKeywordExpressionIfShouldGenerateError."""
        if not self.should_generate(node) or self.top.inverted:
            return False, None
        v = value_at(self.top.doc, node.path)
        if v is MISSING or type_number(v) not in expected:
            return False, None
        return True, v

    def path_error(self, node: Node, normal: str, inverted: str, expected: frozenset | None = None,
                   leaf: str = OMIT_ARRAY, schema_keyword: bool = False) -> None:
        self.push(node)
        if not self.should_generate(node):
            return
        if schema_keyword and not self.keyword_value(node, expected)[0]:
            self.set_state(NO_ERROR)
            return
        self.error_details(node)
        arr = self.values(node.path, leaf)
        self.missing(arr)
        self.type_mismatch(arr, expected)
        self.reason(normal, inverted)
        self.considered_values(arr)

    def type_error(self, node: Node, leaf: str, schema_keyword: bool = False) -> None:
        self.push(node)
        if not self.should_generate(node):
            return
        arr = self.values(node.path, leaf)
        if schema_keyword and arr is None:
            self.set_state(NO_ERROR)
            return
        self.error_details(node)
        self.missing(arr)
        self.reason("type did not match", "type did match")
        self.considered_values(arr)
        self.considered_types(arr)

    def logical_leaf_error(self, node: Node, normal: str, inverted: str, schema_keyword: bool = False) -> None:
        self.push(node)
        if not self.should_generate(node):
            return
        self.error_details(node)
        arr = self.values(node.children[0].path if node.children else node.path, NO_TRAVERSAL)
        if schema_keyword and arr is None:
            self.set_state(NO_ERROR)
            return
        self.missing(arr)
        self.reason(normal, inverted)
        self.considered_values(arr)

    def tree_operator(self, node: Node) -> None:
        """preVisitTreeOperator."""
        self.push(node)
        if self.should_generate(node):
            if not node.tag.startswith("_"):
                self.operator_name(node)
            if node.tag == "required":
                self.top.obj["specifiedAs"] = node.spec
            else:
                self.top.obj.update(node.spec)

    def finish_child(self, node: Node) -> None:
        """finishLogicalOperatorChildError."""
        top = self.top
        if self.should_generate(node) and top.state != IGNORE_CHILDREN and self.have_latest():
            if node.tag in _ORDERED:
                child = node.children[top.child_index]
                entry = {"index": top.child_index, **child.schema_ann}
                self.append_latest(entry)
                top.arr.append(entry)
            else:
                self.append_latest(top.arr)
        top.child_index += 1

    def post_tree_operator(self, node: Node, details: str) -> None:
        self.top.obj.update(node.schema_ann)
        self.finish_child(node)
        if self.should_generate(node) and node.tag in ("properties", "_property") and not self.top.arr:
            self.set_state(NO_ERROR)
        if self.should_generate(node) and not self.produces_array(node):
            self.top.obj[details] = self.top.arr
        self.finish(node)


def _nothing(gen: _Generator, node: Node) -> None:
    pass


# -- pre-visit --------------------------------------------------------------------------------
def _pre_always(gen: _Generator, node: Node) -> None:
    gen.push(node)
    if gen.should_generate(node):
        gen.error_details(node)
        gen.reason("expression always evaluates to false", "expression always evaluates to true")


def _pre_and(gen: _Generator, node: Node) -> None:
    if node.tag == "$all":
        gen.logical_leaf_error(node, "array did not contain all specified values", "array did contain all specified values")
        return
    if node.tag == "items":
        gen.push(node)
        if not node.children:
            return
        if gen.keyword_value(node.children[0], _ARRAY)[0]:
            gen.operator_name(node)
            gen.set_state(NEED_CHILDREN)
        else:
            gen.set_state(NO_ERROR)
        return
    gen.tree_operator(node)
    if not gen.top.inverted:
        gen.set_state(NEED_CHILDREN)
    if node.tag == "$jsonSchema" and gen.top.inverted:
        gen.set_state(IGNORE_CHILDREN)
        gen.reason("", "schema matched")


def _pre_or(gen: _Generator, node: Node) -> None:
    if node.tag == "enum":
        gen.logical_leaf_error(node, "value was not found in enum", "value was found in enum", schema_keyword=True)
        return
    gen.tree_operator(node)
    if gen.top.inverted:
        gen.set_state(NEED_CHILDREN)


def _pre_nor(gen: _Generator, node: Node) -> None:
    gen.tree_operator(node)
    if not gen.top.inverted:
        gen.set_state(NEED_CHILDREN)
    gen.top.inverted = not gen.top.inverted


def _pre_not(gen: _Generator, node: Node) -> None:
    gen.tree_operator(node)
    gen.top.inverted = not gen.top.inverted
    if gen.should_generate(node) and node.tag == "not":
        gen.reason("", "child expression matched")
        gen.set_state(IGNORE_CHILDREN)


def _pre_xor(gen: _Generator, node: Node) -> None:
    gen.tree_operator(node)
    gen.set_state(NEED_CHILDREN)
    if gen.should_generate(node):
        doc = gen.top.doc
        matching = [i for i, c in enumerate(node.children) if c.matches(doc)]
        if matching:
            gen.top.inverted = not gen.top.inverted
            gen.set_state(IGNORE_CHILDREN)
            gen.reason("", "more than one subschema matched")
            gen.top.obj["matchingSchemaIndexes"] = matching


def _pre_exists(gen: _Generator, node: Node) -> None:
    gen.push(node)
    if gen.should_generate(node) and node.tag != "_propertyExists":
        gen.error_details(node)
        gen.reason("path does not exist", "path does exist")


def _pre_expr(gen: _Generator, node: Node) -> None:
    gen.push(node)
    if not gen.should_generate(node):
        return
    gen.error_details(node)
    key = next(iter(node.spec))
    if key != "$expr":  # (other top-level operators report as always-false expressions)
        gen.reason("expression did not match", "expression did match")
        gen.top.obj["expressionResult"] = node.matches(gen.top.doc)
        return
    try:
        result = compile_expression(node.spec["$expr"])(gen.top.doc)
        gen.reason("expression did not match", "expression did match")
        if result is not MISSING:
            gen.top.obj["expressionResult"] = result
    except MongoError as err:
        gen.top.obj["reason"] = "failed to evaluate aggregation expression"
        gen.top.obj["details"] = {"code": err.code, "codeName": err.code_name, "errmsg": err.errmsg}


def _pre_cmp(gen: _Generator, node: Node) -> None:
    if node.tag in ("minimum", "maximum"):
        gen.path_error(node, "comparison failed", "comparison succeeded", _NUMBER, NO_TRAVERSAL, True)
    else:
        gen.path_error(node, "comparison failed", "comparison succeeded")


def _pre_all_elem_from(gen: _Generator, node: Node) -> None:
    gen.push(node)
    if node.tag == "additionalItems" and node.children[0].kind in ("true", "false"):
        ok, v = gen.keyword_value(node, _ARRAY)
        if ok:
            gen.error_details(node)
            gen.reason("found additional items", "")
            gen.top.obj["additionalItems"] = v[node.arg:]
        else:
            gen.set_state(NO_ERROR)
        return
    ok, v = gen.keyword_value(node, _ARRAY)
    if not ok:
        gen.set_state(NO_ERROR)
        return
    gen.operator_name(node)
    gen.top.obj.update(node.children[0].schema_ann)
    gen.reason("At least one item did not match the sub-schema" if node.tag == "items"
               else "At least one additional item did not match the sub-schema", "")
    index = js.first_mismatch(node, v)
    gen.top.obj["itemIndex"] = index
    gen.child_input = ({js.PLACEHOLDER: v[index]}, gen.top.inverted)


def _allowed_child_input(gen: _Generator, value: Any) -> None:
    gen.set_state(ERROR)
    gen.child_input = ({js.PLACEHOLDER: value}, gen.top.inverted)


def _pre_allowed(gen: _Generator, node: Node) -> None:
    gen.push(node)
    gen.set_state(IGNORE_CHILDREN)
    if not gen.should_generate(node):
        return
    doc = gen.top.doc
    extra = js.additional_properties(node, doc)
    spec_value = node.spec.get("additionalProperties", MISSING)
    if isinstance(spec_value, bool):
        if extra and not spec_value:
            obj = gen.top.obj
            obj["operatorName"] = "additionalProperties"
            obj["specifiedAs"] = {"additionalProperties": False}
            obj["additionalProperties"] = extra
    elif isinstance(spec_value, dict):
        failing = _first_failing_additional(node, extra, doc)
        if failing is not None:
            _allowed_child_input(gen, doc[failing])


def _first_failing_additional(node: Node, extra: list[str], doc: dict) -> str | None:
    for name in extra:
        if not node.children[0].matches({js.PLACEHOLDER: doc[name]}):
            return name
    return None


def _failing_pattern_property(gen: _Generator, node: Node, i: int) -> str | None:
    sub = node.children[1 + i]
    rx = node.arg[1][i][1]
    for field, value in gen.top.doc.items():
        if rx.search(field) and not sub.matches({js.PLACEHOLDER: value}):
            return field
    return None


def _allowed_schema_error(gen: _Generator, node: Node) -> None:
    """generateAllowedPropertiesSchemaError, after the child at the current index."""
    i = gen.top.child_index
    if not gen.have_latest():
        return
    if i == 0:
        if isinstance(node.spec.get("additionalProperties"), dict):
            doc = gen.top.doc
            failing = _first_failing_additional(node, js.additional_properties(node, doc), doc)
            obj = gen.top.obj
            obj["operatorName"] = "additionalProperties"
            obj.update(node.children[0].schema_ann)
            obj["reason"] = "at least one additional property did not match the subschema"
            obj["failingProperty"] = failing
            gen.append_latest(obj)
        return
    field = _failing_pattern_property(gen, node, i - 1)
    if gen.should_generate(node) and field is not None:
        entry = {"propertyName": field, **node.children[i].schema_ann, "regexMatched": node.arg[1][i - 1][0]}
        gen.append_latest(entry)
        gen.top.arr.append(entry)


def _in_allowed(gen: _Generator, node: Node) -> None:
    if gen.should_generate(node):
        _allowed_schema_error(gen, node)
        gen.set_state(IGNORE_CHILDREN)
        field = _failing_pattern_property(gen, node, gen.top.child_index)
        if field is not None:
            _allowed_child_input(gen, gen.top.doc[field])
    gen.top.child_index += 1


def _post_allowed(gen: _Generator, node: Node) -> None:
    if gen.should_generate(node):
        _allowed_schema_error(gen, node)
        additional = gen.top.obj
        pattern = {"operatorName": "patternProperties", "details": gen.top.arr} if gen.top.arr else {}
        if not additional:
            gen.latest = pattern or None
        elif not pattern:
            gen.latest = additional
        else:
            gen.latest = [additional, pattern]
    gen.frames.pop()


def _pre_cond(gen: _Generator, node: Node) -> None:
    gen.push(node)
    if gen.should_generate(node) and not node.children[0].matches(gen.top.doc):
        gen.set_state(NO_ERROR)


def _in_cond(gen: _Generator, node: Node) -> None:
    if gen.should_generate(node) and gen.have_latest() and gen.top.child_index == 1:
        obj = gen.top.obj
        obj["conditionalProperty"] = next(iter(node.spec))
        if node.tag == "_schemaDependency":
            gen.append_latest(obj)
        elif node.tag == "_propertyDependency":
            obj["missingProperties"] = gen.latest
    gen.top.child_index += 1


def _pre_match_array_index(gen: _Generator, node: Node) -> None:
    gen.push(node)
    if gen.should_generate(node):
        v = value_at(gen.top.doc, node.path)
        gen.top.obj["itemIndex"] = node.arg
        gen.child_input = ({js.PLACEHOLDER: v[node.arg]}, gen.top.inverted)


def _array_keyword_error(gen: _Generator, node: Node, reason: str, extra: str, value_of) -> None:
    """minItems/maxItems/uniqueItems: the whole array considered, and what is wrong with it."""
    gen.push(node)
    ok, v = gen.keyword_value(node, _ARRAY)
    if not ok:
        gen.set_state(NO_ERROR)
        return
    gen.error_details(node)
    gen.reason(reason, "")
    gen.top.obj["consideredValue"] = v
    gen.top.obj[extra] = value_of(v)


def _pre_num_items(gen: _Generator, node: Node) -> None:
    _array_keyword_error(gen, node, "array did not match specified length", "numberOfItems", len)


def _pre_unique_items(gen: _Generator, node: Node) -> None:
    _array_keyword_error(gen, node, "found a duplicate item", "duplicatedValue", js.first_duplicate)


def _pre_num_props(gen: _Generator, node: Node) -> None:
    gen.push(node)
    if gen.should_generate(node):
        gen.error_details(node)
        gen.reason("specified number of properties was not satisfied", "")
        gen.top.obj["numberOfProperties"] = len(gen.top.doc)


def _pre_object_match(gen: _Generator, node: Node) -> None:
    gen.push(node)
    if gen.top.state == NO_ERROR:
        return
    found = list(values_at(gen.top.doc, node.path, NO_TRAVERSAL))
    if len(found) == 1 and type(found[0]) is dict:
        gen.child_input = (found[0], gen.top.inverted)
    else:
        gen.set_state(NO_ERROR)


def _pre_bindata(gen: _Generator, node: Node) -> None:
    gen.push(node)
    if gen.should_generate(node):
        gen.operator_name(node)
        gen.reason("value was not encrypted", "value was encrypted")


_PRE = {
    "true": _pre_always, "false": _pre_always, "and": _pre_and, "or": _pre_or, "nor": _pre_nor, "not": _pre_not,
    "xor": _pre_xor, "exists": _pre_exists, "expr": _pre_expr, "eq": _pre_cmp, "cmp": _pre_cmp,
    "in": lambda g, n: g.path_error(n, "no matching value found in array", "matching value found in array"),
    "type": lambda g, n: g.type_error(n, OMIT_ARRAY),
    "schema_type": lambda g, n: g.type_error(n, NO_TRAVERSAL, True),
    "mod": lambda g, n: g.path_error(n, "$mod did not evaluate to expected remainder",
                                     "$mod did evaluate to expected remainder", _NUMBER),
    "regex": lambda g, n: g.path_error(n, "regular expression did not match", "regular expression did match",
                                       _STRINGISH, OMIT_ARRAY, n.tag == "pattern"),
    "bits": lambda g, n: g.path_error(n, "bitwise operator failed to match", "bitwise operator matched successfully",
                                      _BITS),
    "size": lambda g, n: g.path_error(n, "array length was not equal to given size",
                                      "array length was equal to given size", _ARRAY, NO_TRAVERSAL),
    "elemMatch": lambda g, n: g.path_error(n, "array did not satisfy the child predicate",
                                           "array did satisfy the child predicate", _ARRAY, NO_TRAVERSAL),
    "all": lambda g, n: g.logical_leaf_error(n, "array did not contain all specified values",
                                             "array did contain all specified values"),
    "str_len": lambda g, n: g.path_error(n, "specified string length was not satisfied",
                                         "specified string length was satisfied", frozenset({2}), NO_TRAVERSAL, True),
    "fmod": lambda g, n: g.path_error(n, "considered value is not a multiple of the specified value",
                                      "considered value is a multiple of the specified value", _NUMBER,
                                      NO_TRAVERSAL, True),
    "num_items": _pre_num_items, "unique_items": _pre_unique_items, "num_props": _pre_num_props,
    "all_elem_from": _pre_all_elem_from, "match_array_index": _pre_match_array_index,
    "object_match": _pre_object_match, "allowed_props": _pre_allowed, "cond": _pre_cond,
    "bindata_subtype": _pre_bindata,
}


# -- in-visit (between children) ------------------------------------------------------------
def _in_xor(gen: _Generator, node: Node) -> None:
    if not gen.top.inverted:
        gen.finish_child(node)


_IN = {
    "and": _Generator.finish_child, "or": _Generator.finish_child, "nor": _Generator.finish_child,
    "xor": _in_xor, "allowed_props": _in_allowed, "cond": _in_cond,
}


# -- post-visit -------------------------------------------------------------------------------
def _post_and(gen: _Generator, node: Node) -> None:
    inverted = gen.top.inverted
    if node.tag == "$all" or (node.tag == "$jsonSchema" and inverted):
        gen.finish(node)
        return
    normal, inv = _AND_DETAILS.get(node.tag, ("details", ""))
    gen.post_tree_operator(node, inv if inverted else normal)


def _post_or(gen: _Generator, node: Node) -> None:
    if node.tag == "enum" or not gen.should_generate(node):
        gen.finish(node)
        return
    normal, inv = _OR_DETAILS.get(node.tag, ("details", ""))
    gen.post_tree_operator(node, inv if gen.top.inverted else normal)


def _post_nor(gen: _Generator, node: Node) -> None:
    gen.post_tree_operator(node, "clausesSatisfied" if gen.top.inverted else "clausesNotSatisfied")


def _post_not(gen: _Generator, node: Node) -> None:
    if gen.should_generate(node) and node.tag != "not":
        gen.append_latest(gen.top.obj)
    gen.finish(node)


def _post_xor(gen: _Generator, node: Node) -> None:
    if not gen.top.inverted:
        gen.post_tree_operator(node, "schemasNotSatisfied")
    else:
        gen.finish(node)


def _post_exists(gen: _Generator, node: Node) -> None:
    if gen.should_generate(node) and node.tag == "_propertyExists":
        gen.latest = node.path
        gen.frames.pop()
    else:
        gen.finish(node)


def _post_with_details(gen: _Generator, node: Node) -> None:
    if gen.should_generate(node) and not (node.kind == "all_elem_from" and node.children[0].kind in ("true", "false")):
        gen.append_latest(gen.top.obj)
    gen.finish(node)


_POST = {
    "and": _post_and, "or": _post_or, "nor": _post_nor, "not": _post_not, "xor": _post_xor,
    "exists": _post_exists, "allowed_props": _post_allowed, "all_elem_from": _post_with_details,
    "match_array_index": _post_with_details,
}


def generate_error(validator: Node, doc: dict) -> dict:
    """The `errInfo` of DocumentValidationFailure for `doc` failing `validator`."""
    gen = _Generator(doc)
    try:
        gen.walk(validator)
        details = gen.latest
    except MongoError as err:
        return {"failingDocumentId": doc.get("_id"), "note": "failed to generate document validation error",
                "details": {"code": err.code, "codeName": err.code_name, "errmsg": err.errmsg}}
    return {"failingDocumentId": doc.get("_id"), "details": details}
