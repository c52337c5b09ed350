"""The locales the server's collator factory accepts, and the attributes each defaults to.

The list is the MongoDB manual's "Collation Locales and Default Parameters" (the locales
ICU 57's collation data names, which `CollatorFactoryICU` accepts verbatim: a locale ICU
would canonicalise or fall back from — `fr_FR`, `en_GB` — is refused with the locale it
would have used as the hint).  Each locale takes ICU's defaults (caseFirst off,
non-ignorable, no normalization, forward secondaries) except where its CLDR tailoring
says otherwise: the overrides below, as the manual lists them.

The language-specific orders of CLDR's tailorings (Spanish ñ, Swedish å ä ö, ...) are the
rules of `tailorings.py`; the attributes below are the ones those rules set
(`[caseFirst upper]`, `[backwards 2]`, ...), so the collation echoed back is the server's.
"""

from __future__ import annotations

__all__ = ["LOCALES", "locale_defaults", "fallback_of"]

LOCALES = frozenset("""
af sq am ar ar@collation=compat hy as az az@collation=search be bn bn@collation=traditional bs bs@collation=search
bs_Cyrl bg my ca ca@collation=search chr zh zh@collation=big5han zh@collation=gb2312han zh@collation=unihan
zh@collation=zhuyin zh_Hant hr hr@collation=search cs cs@collation=search da da@collation=search nl dz en en_US
en_US_POSIX eo et ee fo fil fi fi@collation=search fr fr_CA gl gl@collation=search ka de de_AT
de@collation=phonebook de_AT@collation=phonebook de@collation=search el gu ha haw he he@collation=search hi hu is
is@collation=search ig smn smn@collation=search id ga it ja ja@collation=unihan kl kl@collation=search kn
kn@collation=traditional kk km kok ko ko@collation=search ko@collation=searchjl ko@collation=unihan ky lkt lo lv ln
ln@collation=phonetic lt dsb lb mk ms ml mt mr mn ne se se@collation=search nb nb@collation=search nn
nn@collation=search or om ps fa fa_AF pl pt pa ro ru sr sr_Latn sr_Latn@collation=search si
si@collation=dictionary sk sk@collation=search sl es es@collation=search es@collation=traditional sw sv
sv@collation=search ta te th bo to tr tr@collation=search uk hsb ur ug vi vi@collation=traditional wae cy yi
yi@collation=search yo zu
""".split())

_CASE_FIRST_UPPER = frozenset({"da", "mt"})  # (da@collation=search turns it off again: `[caseFirst off]`)
_BACKWARDS = frozenset({"fr_CA"})
_SHIFTED = frozenset({"th"})
_NORMALIZATION = frozenset({"as", "bn", "bn@collation=traditional", "my", "vi", "vi@collation=traditional"})


def locale_defaults(locale: str) -> dict:
    """ICU's default attributes of an accepted locale, in the order the server echoes them."""
    return {
        "caseLevel": False,
        "caseFirst": "upper" if locale in _CASE_FIRST_UPPER else "off",
        "strength": 3,
        "numericOrdering": False,
        "alternate": "shifted" if locale in _SHIFTED else "non-ignorable",
        "maxVariable": "punct",
        "normalization": locale in _NORMALIZATION or locale.endswith("@collation=search"),
        "backwards": locale in _BACKWARDS,
    }


def fallback_of(locale: str) -> str:
    """The accepted locale ICU would fall back to for an unknown one ("" for the root)."""
    base, _, keyword = locale.partition("@")
    parts = base.replace("-", "_").split("_")
    while parts:
        name = "_".join(parts)
        if keyword and f"{name}@{keyword}" in LOCALES:
            return f"{name}@{keyword}"
        if name in LOCALES:
            return name
        parts.pop()
    return ""
