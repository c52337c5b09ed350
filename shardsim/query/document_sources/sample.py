"""$sample: `size` documents chosen at random (document_source_sample.cpp).

`{$sample: {size: N}}` outputs N distinct input documents in random order (all of
them, shuffled, when there are fewer).  The server either sorts by a random key or,
first in a pipeline over a large collection, reads a random cursor; both give each
document once.  Randomness comes from Python's `random` module (seed it for a
reproducible test).  Parse errors: the spec an object (28745), `size` a number
(28746) not negative (28747), no other field (28748), `size` required (28749).
"""

from __future__ import annotations

import random
from typing import Any, Callable, Iterable, Iterator

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.pipeline_context import PipelineContext
from mongosim.shardsim.query.stage_registry import register
from mongosim.shardsim.query.values import is_number

__all__ = ["parse_sample"]


@register("$sample")
def parse_sample(spec: Any, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    if not isinstance(spec, dict):
        raise MongoError(28745, "the $sample stage specification must be an object")
    size = None
    for k, v in spec.items():
        if k == "size":
            if not is_number(v) or isinstance(v, bool):
                raise MongoError(28746, "size argument to $sample must be a number")
            n = float(v.to_decimal()) if type(v).__name__ == "Decimal128" else float(v)
            if n < 0:
                raise MongoError(28747, "size argument to $sample must not be negative")
            size = int(n)
        else:
            raise MongoError(28748, f"unrecognized option to $sample: {k}")
    if size is None:
        raise MongoError(28749, "$sample stage must specify a size")

    def run(stream: Iterable[dict]) -> Iterator[dict]:
        docs = list(stream)
        return iter(random.sample(docs, min(size, len(docs))))

    return run
