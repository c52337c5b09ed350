"""Collation: the server's ICU collations, on a pure-Python Unicode Collation Algorithm.

* `collator_factory.make_collator(doc)` — parse and validate a collation document
  (CollatorFactoryICU), None for the simple collation;
* `collator_interface.CollatorInterface` — one collation: `comparison_key(str) -> bytes`;
* `root_collation` — DUCET 8.0.0 (pyuca) regrouped as ICU 57's root;
* `tailoring_rules` — ICU's tailoring rule syntax, parsed;
* `tailorings` — CLDR's rules of each locale, as data;
* `tailored_collation` — a locale's table: the rules applied on the root;
* `script_reordering` — `[reorder ...]`: scripts moved first;
* `locales` — the locales accepted and their default attributes;
* `comparison_keys` — BSON order, equality and hashing under a collator; index keys;
* `expression_context` — the collator in force while a filter or pipeline compiles.
"""

from mongosim.shardsim.query.collation.collator_factory import ICU_VERSION, make_collator
from mongosim.shardsim.query.collation.collator_interface import CollatorInterface
from mongosim.shardsim.query.collation.comparison_keys import (
    collatable,
    compare_for,
    hashable_for,
    sort_key_for,
)
from mongosim.shardsim.query.collation.expression_context import compiling, current

__all__ = ["make_collator", "ICU_VERSION", "CollatorInterface", "sort_key_for", "hashable_for", "compare_for",
           "collatable", "compiling", "current"]
