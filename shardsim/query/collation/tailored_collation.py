"""A locale's collation: CLDR's tailoring rules applied on top of the root collation.

ICU builds a locale's collator by parsing its tailoring (`tailoring_rules.parse`) and
inserting what the rules say into the root collation (CollationBuilder).  This does the
same over the root table of `root_collation`:

* every reset `&X` finds the collation elements of X (in the table as tailored so far)
  and sets the position to the last of them (`&[before N]X`: just before X at level N);
* every relation inserts a new weight right after the position at its level — after the
  position and everything weaker than that level already there, so `&a<x` then `&a<y`
  gives a < y < x, as ICU's — and maps its string to the position's elements with the last
  one replaced by the new one, followed by the elements of its expansion (`/`); an `=`
  relation maps its string to the position's elements.  The next relation starts from there;
* the weights are placed between root weights: root weights are spaced out (primaries by
  16 bits, secondaries and tertiaries by 8, see `root_collation`), and the new weights
  after (or before) a root weight number up from (or down to) it, in the order of the
  rules, so the tailored order holds at every level and every other string keeps its root
  order;
* each tailored string gets ICU's case bits (CollationBuilder::setCaseBits): the case of
  its characters in the root collation — upper, lower, or mixed;
* strings are NFD (the collator compares NFD text), so "ñ" is the contraction "n" + U+0303,
  and an accent between them (ñ with a dot below) is skipped as UCA's discontiguous
  matching does;
* settings: `[suppressContractions]` removes the root's contractions starting with those
  characters, `[import]` applies another tailoring's rules first, the attributes
  (`[caseFirst upper]`, `[backwards 2]`, `[alternate shifted]`, `[normalization on]`) are
  kept in `settings` (the collator factory takes each locale's defaults from `locales`);
  `[reorder]` moves whole scripts first (`script_reordering`); `[optimize]` is dropped.

The table maps strings in a copy-on-write overlay of pyuca's trie: the root's nodes are
shared, the tailored strings' paths are copies.  Hand-written: no pure-Python library
builds ICU tailorings (PyICU needs the native ICU library).
"""

from __future__ import annotations

import copy
import functools
import unicodedata
from typing import Iterable

from pyuca.trie import Node, Trie

from mongosim.shardsim.query.collation.root_collation import (
    LOWER,
    LOWER_SHIFT,
    MIXED,
    PRIMARY_SHIFT,
    UPPER,
    UPPER_TO_LOWER,
    CollationTable,
    root,
)
from mongosim.shardsim.query.collation.script_reordering import reordering
from mongosim.shardsim.query.collation.tailoring_rules import IDENTICAL, Relation, Reset, Setting, parse
from mongosim.shardsim.query.collation.tailorings import rules_of

__all__ = ["TailoredCollation", "table_for"]

_COMMON_SECONDARY = 0x20
_COMMON_TERTIARY = 0x02
_MAX_LOWER = (1 << LOWER_SHIFT) - 1


class _Node:
    """A weight a tailoring inserts; its value is known once every rule is in (`_Slot.weights`)."""

    __slots__ = ("slot",)

    def __init__(self, slot: "_Slot") -> None:
        self.slot = slot


class _Slot(list):
    """The weights inserted right after (or, with [before], right before) one root weight, in order."""

    def __init__(self, anchor: int, level: int, before: bool) -> None:
        super().__init__()
        self.anchor, self.level, self.before = anchor, level, before

    def weights(self, reorder: dict[int, int]) -> Iterable[tuple[_Node, int]]:
        if self.level == 1:
            base, room = reorder.get(self.anchor, self.anchor) << PRIMARY_SHIFT, 1 << (PRIMARY_SHIFT - 1)
        else:
            base, room = self.anchor << LOWER_SHIFT, _MAX_LOWER
        n = len(self)
        if n >= room:
            raise ValueError("too many weights tailored next to one root weight")
        for i, node in enumerate(self):
            yield node, (base - (n - i) if self.before else base + i + 1)


def _nfd(s: str) -> str:
    return unicodedata.normalize("NFD", s)


class TailoredCollation(CollationTable):
    """The root collation with a locale's rules applied (`rules`: an ICU rule string)."""

    def __init__(self, rules: str) -> None:
        base = root()
        self._root = base
        self.settings: dict[str, object] = {}
        self._slots: dict[tuple, _Slot] = {}
        self._mapped: dict[str, Node] = {}  # tailored NFD string -> its trie node
        self._owned: set[int] = set()
        trie = Trie()
        trie.root.children = dict(base.uca.table.root.children)
        self._owned.add(id(trie.root))
        uca = copy.copy(base.uca)
        uca.table = trie
        self._uca = uca
        self._apply(rules)
        reorder = reordering(_root_singles(), _root_primaries(), base.elements("a")[0][0] >> PRIMARY_SHIFT,
                             self.settings.get("reorder", ()))
        self._finish(reorder)
        super().__init__(uca, {**base._remap, **reorder}, base.space_top, base.punct_top)

    # -- the trie --------------------------------------------------------------------------------

    def _node_for(self, key: str) -> Node:
        """The trie node of `key`, this table's own (copied from the root's along the path)."""
        cur = self._uca.table.root
        for ch in key:
            cp = ord(ch)
            if cur.children is None:
                cur.children = {}
            child = cur.children.get(cp)
            if child is None:
                child = Node()
            elif id(child) not in self._owned:
                twin = Node()
                twin.value = child.value
                twin.children = dict(child.children) if child.children else None
                child = twin
            else:
                cur = child
                continue
            self._owned.add(id(child))
            cur.children[cp] = child
            cur = child
        return cur

    def _build_elements(self, nfd: str) -> list[tuple]:
        """The elements of `nfd` while the rules are applied: weights are root ints or `_Node`s."""
        remap = self._root._remap
        out = []
        for ce in self._uca.collation_elements(nfd):
            if type(ce) is tuple:
                out.append(ce)
            else:
                p, s, t = ce
                out.append((remap.get(p, p), s, t, UPPER if t in UPPER_TO_LOWER else LOWER))
        return out

    # -- inserting weights ------------------------------------------------------------------------

    def _slot(self, key: tuple, anchor: int, level: int, before: bool) -> _Slot:
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot(anchor, level, before)
        return slot

    def _insert(self, ce: tuple, level: int, before: bool) -> tuple:
        """A new element differing from `ce` at `level` (1-3), right after it or, `before`, right before."""
        p, s, t, _ = ce
        anchor = (p, s, t)[level - 1]
        if isinstance(anchor, _Node):
            slot = anchor.slot
            node = _Node(slot)
            i = slot.index(anchor)
            slot.insert(i if before else i + 1, node)
        else:
            slot = self._slot((level, before, p, s, t)[:2 + level], anchor, level, before)
            node = _Node(slot)
            if before:
                slot.append(node)
            else:
                slot.insert(0, node)
        if level == 1:
            return (node, _COMMON_SECONDARY, _COMMON_TERTIARY, LOWER)
        if level == 2:
            return (p, node, _COMMON_TERTIARY, LOWER)
        return (p, s, node, LOWER)

    def _special(self, name: str) -> list[tuple]:
        """The element of a special reset position."""
        if name in ("first tertiary ignorable", "last tertiary ignorable"):
            return [(0, 0, 0, LOWER)]
        if name == "last primary ignorable":  # the greatest secondary of an element without a primary
            top = max(ce[0][1] for ce in _single_elements(self._root) if ce[0][0] == 0 and ce[0][1])
            return [(0, top, _COMMON_TERTIARY, LOWER)]
        if name == "last secondary ignorable":  # the greatest tertiary of an element with only a tertiary
            top = max((ce[0][2] for ce in _single_elements(self._root) if ce[0][0] == ce[0][1] == 0 and ce[0][2]),
                      default=_COMMON_TERTIARY)
            return [(0, 0, top, UPPER)]
        raise ValueError(f"reset position [{name}] is not supported")

    # -- the rules --------------------------------------------------------------------------------

    def _apply(self, rules: str) -> None:
        position: list[tuple] = []
        before = 0
        for instr in parse(rules):
            if isinstance(instr, Setting):
                self._setting(instr)
            elif isinstance(instr, Reset):
                position = self._special(instr.special) if instr.special else self._build_elements(_nfd(instr.text))
                before = instr.before
            else:
                position = self._relate(instr, position, before)
                before = 0

    def _setting(self, setting: Setting) -> None:
        if setting.name == "import":
            self._apply(rules_of(*_import_target(setting.value)))
        elif setting.name == "suppressContractions":
            for ch in setting.value:
                node = self._uca.table.root.children.get(ord(_nfd(ch)[0]))
                if node is not None and node.children and ch == _nfd(ch):
                    self._node_for(ch).children = None
        else:
            self.settings[setting.name] = setting.value

    def _relate(self, rel: Relation, position: list[tuple], before: int) -> list[tuple]:
        last = position[-1]
        if rel.strength >= 4:  # `=` (and quaternary, which ICU 57's locales here do not use): same weights
            new = last
        elif before:
            new = self._insert(last, before, True)
            if rel.strength > before:  # `&[before 2]x <<< y`: y just before x at level 2, then after it at 3
                new = self._insert(new, rel.strength, False)
        else:
            new = self._insert(last, rel.strength, False)
        ces = position[:-1] + [new]
        if rel.prefix:
            return ces  # context-sensitive mappings (a prefix) are not supported: the position still moves
        text = _nfd(rel.text)
        mapped = ces + (self._build_elements(_nfd(rel.extension)) if rel.extension else [])
        node = self._node_for(text)
        node.value = tuple(self._with_case(text, mapped))
        self._mapped[text] = node
        return ces

    def _with_case(self, nfd: str, ces: list[tuple]) -> list[tuple]:
        """ICU's setCaseBits: the n-th tailored primary takes the case of the n-th root primary of the
        string, the last one the case of all the rest (mixed where they differ)."""
        tailored_primaries = sum(1 for ce in ces if ce[0])
        cases: list[int] = []
        if tailored_primaries:
            root_cases = [ce[3] for ce in self._root.elements(nfd) if ce[0]]
            cases = root_cases[:tailored_primaries - 1]
            rest = root_cases[tailored_primaries - 1:]
            if rest:
                cases.append(rest[0] if all(c == rest[0] for c in rest) else MIXED)
        out = []
        i = 0
        for p, s, t, _ in ces:
            if p:
                case = cases[i] if i < len(cases) else LOWER
                i += 1
            else:
                case = UPPER if (t and not s) else LOWER
            out.append((p, s, t, case))
        return out

    def _finish(self, reorder: dict[int, int]) -> None:
        """Every inserted weight gets its value; every tailored mapping its final elements."""
        value: dict[int, int] = {}
        for slot in self._slots.values():
            for node, w in slot.weights(reorder):
                value[id(node)] = w

        def final(w, shift: int) -> int:
            if isinstance(w, _Node):
                return value[id(w)]
            return (reorder.get(w, w) if shift == PRIMARY_SHIFT else w) << shift

        for node in self._mapped.values():
            node.value = tuple((final(p, PRIMARY_SHIFT), final(s, LOWER_SHIFT), final(t, LOWER_SHIFT), case)
                               for p, s, t, case in node.value)


def _single_elements(base: CollationTable):
    return (node.value for node in base.uca.table.root.children.values() if node.value)


@functools.lru_cache(maxsize=1)
def _root_singles() -> tuple[tuple[str, int], ...]:
    """(character, its first primary) for the root's single characters with a primary."""
    remap = root()._remap
    return tuple((chr(cp), remap.get(node.value[0][0], node.value[0][0]))
                 for cp, node in root().uca.table.root.children.items() if node.value and node.value[0][0])


@functools.lru_cache(maxsize=1)
def _root_primaries() -> frozenset[int]:
    """Every primary of the root table (contractions and expansions included)."""
    out: set[int] = set()
    stack = [root().uca.table.root]
    while stack:
        node = stack.pop()
        if node.value:
            out.update(ce[0] for ce in node.value)
        if node.children:
            stack.extend(node.children.values())
    return frozenset(out)


def _import_target(spec: str) -> tuple[str, str | None]:
    """`de-u-co-phonebk` -> ("de", "phonebook"); `und-u-co-search` -> ("root", "search"); `es` -> ("es", None)."""
    locale, _, collation = spec.partition("-u-co-")
    locale = locale.replace("-", "_")
    return ("root" if locale == "und" else locale), (_ALIASES.get(collation, collation) if collation else None)


_ALIASES = {"phonebk": "phonebook", "trad": "traditional", "dict": "dictionary", "gb2312": "gb2312han",
            "big5": "big5han"}


@functools.lru_cache(maxsize=None)
def _tailored(rules: str) -> CollationTable:
    return TailoredCollation(rules)


def table_for(locale: str) -> CollationTable:
    """The collation table of an accepted locale (the root's when CLDR tailors it in no way)."""
    base, _, keyword = locale.partition("@collation=")
    rules = rules_of(base, keyword or None)
    return _tailored(rules) if rules else root()
