"""Regular-expression and replacement expressions: `$regexMatch`, `$regexFind`,
`$regexFindAll`, `$replaceOne`, `$replaceAll`.

The three regex operators share the server's RegexExecutionState
(src/mongo/db/pipeline/expression.cpp): named arguments `input`, `regex` (a string or
a BSON regex) and `options` (not both a regex's own flags and `options`).  A null or
missing input or regex yields no match: false, null and [] respectively.  A match is
`{match, idx, captures}` where `idx` counts code points and an unmatched group is
null; `$regexFindAll` resumes after each match (one code point further after an empty
match).  Patterns go through `query.regex` (PCRE's option letters to Python's `re`).
"""

from __future__ import annotations

import re

from bson import Regex
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.buf_builder import BUFFER_MAX_SIZE
from mongosim.shardsim.query.expression_core import compile_node, nullish, register
from mongosim.shardsim.query.regex import compile_regex
from mongosim.shardsim.query.values import regex_flags, type_name



def _no_match(name):
    return False if name == "$regexMatch" else [] if name == "$regexFindAll" else None


def _regex_args(name, arg):
    if not isinstance(arg, dict):
        raise MongoError(51103, f"{name} expects an object of named arguments but found: {type_name(arg)}")
    for k in arg:
        if k not in ("input", "regex", "options"):
            raise MongoError(31024, f"{name} found an unknown argument: {k}")
    if "input" not in arg:
        raise MongoError(31022, f"{name} requires 'input' parameter")
    if "regex" not in arg:
        raise MongoError(31023, f"{name} requires 'regex' parameter")
    return compile_node(arg["input"]), compile_node(arg["regex"]), compile_node(arg["options"]) if "options" in arg else None


def _pattern(name, rx, opts) -> re.Pattern | None:
    """The compiled pattern, or None when the regex is null (no match)."""
    if nullish(rx):
        return None
    flags = ""
    if isinstance(rx, (Regex, re.Pattern)):
        pattern = rx.pattern if isinstance(rx.pattern, str) else rx.pattern.decode()
        flags = regex_flags(rx)
    elif type(rx) is str:
        pattern = rx
    else:
        raise MongoError(51105, f"{name} needs 'regex' to be of type string or regex")
    if opts is not None and not nullish(opts):
        if type(opts) is not str:
            raise MongoError(51106, f"{name} needs 'options' to be of type string")
        if flags and opts:
            raise MongoError(51107, f"{name} found regex option(s) specified in both 'regex' and 'option' fields")
        flags = opts
    if "\0" in pattern:
        raise MongoError(51109, f"{name}: regular expression cannot contain an embedded null byte")
    try:
        return compile_regex(pattern, flags)
    except MongoError as e:
        if e.code == 51108:
            raise MongoError(51108, f"{name} invalid flag in regex options: {e.errmsg[-1:]}") from None
        raise MongoError(51111, f"Invalid Regex in {name}: {e.errmsg}") from None


def _match_doc(m: re.Match) -> dict:
    return {"match": m.group(0), "idx": m.start(), "captures": list(m.groups())}


def _regex_op(name):
    def build(arg):
        inp, rx, opts = _regex_args(name, arg)

        def f(vs):
            s = inp(vs)
            pattern = _pattern(name, rx(vs), opts(vs) if opts else None)
            if nullish(s):
                return _no_match(name)
            if type(s) is not str:
                raise MongoError(51104, f"{name} needs 'input' to be of type string")
            if pattern is None:
                return _no_match(name)
            if name == "$regexMatch":
                return pattern.search(s) is not None
            if name == "$regexFind":
                m = pattern.search(s)
                return None if m is None else _match_doc(m)
            out, pos = [], 0
            while pos <= len(s):
                m = pattern.search(s, pos)
                if m is None:
                    break
                out.append(_match_doc(m))
                pos = m.end() if m.end() > m.start() else m.end() + 1
            return out

        return f

    return build


for _name in ("$regexMatch", "$regexFind", "$regexFindAll"):
    register(_name)(_regex_op(_name))


def _check_size(s: str, find: str, repl: str, count: int) -> None:
    """The result goes through the server's StringBuilder (64 MiB, 13548).  Its size is known
    before building it: the input's bytes plus, per replacement, the replacement's minus the
    match's.  (The server's message names the append that first passed the ceiling; here it is
    the whole result's size, the same error for the same requests.)"""
    if len(repl) <= len(find) and len(s) <= BUFFER_MAX_SIZE // 4:
        return  # (it cannot grow past its input, which is far below the ceiling)
    n = s.count(find) if count < 0 else min(s.count(find), count)
    total = _utf8_len(s) + n * (_utf8_len(repl) - _utf8_len(find))
    if total > BUFFER_MAX_SIZE:
        raise MongoError(13548, f"BufBuilder attempted to grow() to {total} bytes, past the 64MB limit.")


def _utf8_len(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))


def _replace_op(name, count):
    def build(arg):
        if not isinstance(arg, dict):
            raise MongoError(51751, f"{name} requires an object as an argument, found: {type_name(arg)}")
        for k in arg:
            if k not in ("input", "find", "replacement"):
                raise MongoError(51750, f"{name} found an unknown argument: {k}")
        for k, code in (("input", 51749), ("find", 51748), ("replacement", 51747)):
            if k not in arg:
                raise MongoError(code, f"{name} requires '{k}' to be specified")
        parts = [(k, compile_node(arg[k]), code) for k, code in (("input", 51746), ("find", 51745), ("replacement", 51744))]

        def f(vs):
            vals = {}
            for k, g, code in parts:
                v = g(vs)
                if not nullish(v) and type(v) is not str:
                    raise MongoError(code, f"{name} requires that '{k}' be a string, found: {type_name(v)}")
                vals[k] = v
            if any(nullish(v) for v in vals.values()):
                return None
            s, find, repl = vals["input"], vals["find"], vals["replacement"]
            _check_size(s, find, repl, count)
            return s.replace(find, repl, count)

        return f

    return build


register("$replaceOne")(_replace_op("$replaceOne", 1))
register("$replaceAll")(_replace_op("$replaceAll", -1))
