"""CLDR's collation tailorings, as data: each locale's rules in ICU's syntax (`tailoring_rules`).

Transcribed from ICU's `icu4c/source/data/coll/*.txt` (CLDR's collation data as ICU 5x
ships it; MongoDB 8.0 builds ICU 57.1, CLDR 29), for the locales MongoDB accepts
(`locales.LOCALES`) whose CLDR data tailors the root order.  Each entry is
`{collation type: rules}`, with "default" naming the type a locale without
`@collation=` uses where it is not "standard".  Escapes are Python's (`\\u0335`), as
ICU's resource compiler reads them.

CLDR data: Copyright © 1991-2016 Unicode, Inc.  Distributed under the Unicode data
licence (Unicode, Inc. License Agreement - Data Files and Software,
https://www.unicode.org/copyright.html), which allows copying and redistribution with
this notice.

`rules_of(locale, collation)` resolves a locale as ICU does: the locale's own data, else
its parent's (`de_AT` -> `de`), else the root's ("" for the root order itself); the
`[import ...]` settings inside the rules are resolved by the builder
(`tailored_collation`).
"""

from __future__ import annotations

__all__ = ["rules_of", "TAILORED_LOCALES"]

_NORDIC_COMMON = ("&D<<đ<<<Đ<<ð<<<Ð"
                  "&t<<<þ/h"
                  "&T<<<Þ/H"
                  "&Y<<ü<<<Ü<<ű<<<Ű")

_DATA: dict[str, dict[str, str]] = {
    "root": {
        "standard": "",
        "search": (
            "[normalization on]"
            "[suppressContractions [เ-ไ ເ-ໄ ꪵ ꪶ ꪹ ꪻ ꪼ\u19B5-\u19B7\u19BA]]"
            "&'='<'≠'"
            "&ا<<<ﺎ<<<ﺍ<<آ<<<ﺂ<<<ﺁ<<أ<<<ﺄ<<<ﺃ<<إ<<<ﺈ<<<ﺇ"
            "&و<<<ۥ<<<ﻮ<<<ﻭ<<ؤ<<<ﺆ<<<ﺅ"
            "&ي<<<ۦ<<<ﻳ<<<ﻴ<<<ﻲ<<<ﻱ<<ئ<<<ﺋ<<<ﺌ<<<ﺊ<<<ﺉ<<ى<<<ﯨ<<<ﯩ<<<ﻰ<<<ﻯ"
            "&ه<<<ﻫ<<<ﻬ<<<ﻪ<<<ﻩ<<ة<<<ﺔ<<<ﺓ"
            "&[last primary ignorable]<<׳<<״<<ـ<<ฺ"
            "&ᄀ=ᆨ&ᄀᄀ=ᄁ=ᆩ&ᄀᄉ=ᆪ&ᄂ=ᆫ&ᄂᄌ=ᆬ&ᄂᄒ=ᆭ&ᄃ=ᆮ&ᄃᄃ=ᄄ&ᄅ=ᆯ&ᄅᄀ=ᆰ&ᄅᄆ=ᆱ&ᄅᄇ=ᆲ&ᄅᄉ=ᆳ"
            "&ᄅᄐ=ᆴ&ᄅᄑ=ᆵ&ᄅᄒ=ᆶ&ᄆ=ᆷ&ᄇ=ᆸ&ᄇᄇ=ᄈ&ᄇᄉ=ᆹ&ᄉ=ᆺ&ᄉᄉ=ᄊ=ᆻ&ᄋ=ᆼ&ᄌ=ᆽ&ᄌᄌ=ᄍ&ᄎ=ᆾ&ᄏ=ᆿ"
            "&ᄐ=ᇀ&ᄑ=ᇁ&ᄒ=ᇂ&ᅡᅵ=ᅢ&ᅣᅵ=ᅤ&ᅥᅵ=ᅦ&ᅧᅵ=ᅨ&ᅩᅡ=ᅪ&ᅩᅡᅵ=ᅫ&ᅩᅵ=ᅬ&ᅮᅴ=ᅯ&ᅮᅴᅵ=ᅰ&ᅮᅵ=ᅱ"
        ),
    },
    "cs": {
        "standard": "&C<č<<<Č&H<ch<<<cH<<<Ch<<<CH&R<ř<<<Ř&S<š<<<Š&Z<ž<<<Ž",
        "search": ("[import und-u-co-search]"
                   "&A<á<<<Á&C<č<<<Č&D<ď<<<Ď&E<é<<<É<ě<<<Ě&I<í<<<Í&N<ň<<<Ň&O<ó<<<Ó&R<ř<<<Ř&S<š<<<Š"
                   "&T<ť<<<Ť&U<ú<<<Ú<ů<<<Ů&Y<ý<<<Ý&Z<ž<<<Ž"),
    },
    "da": {
        "standard": ("[caseFirst upper]" + _NORDIC_COMMON +
                     "&[before 1]ǀ<æ<<<Æ<<ä<<<Ä<ø<<<Ø<<ö<<<Ö<<ő<<<Ő<<œ<<<Œ<å<<<Å<<<aa<<<Aa<<<AA"),
        "search": "[import und-u-co-search][import da-u-co-standard][caseFirst off]",
    },
    "de": {
        "phonebook": "&AE<<ä<<<Ä&OE<<ö<<<Ö&UE<<ü<<<Ü",
        "search": "[import und-u-co-search][import de-u-co-phonebk]",
    },
    "en_US_POSIX": {
        "standard": "&A<*'\u0020'-'/'<*0-'@'<*ABCDEFGHIJKLMNOPQRSTUVWXYZ<*'['-'`'<*abcdefghijklmnopqrstuvwxyz"
                    "<*'{'-'\u007F'",
    },
    "es": {
        "standard": "&N<ñ<<<Ñ",
        "search": "[import und-u-co-search]&N<ñ<<<Ñ",
        "traditional": "&N<ñ<<<Ñ&C<ch<<<Ch<<<CH&l<ll<<<Ll<<<LL",
    },
    "fi": {
        "standard": ("&D\u0335<<đ<<<Đ&G\u0335<<ǥ<<<Ǥ&N\u0335<<ŋ<<<Ŋ&T\u0335<<ŧ<<<Ŧ&Y<<ü<<<Ü&Z\u0335<<ʒ<<<Ʒ"
                     "&[before 1]ǀ<å<<<Å<ä<<<Ä<<æ<<<Æ<ö<<<Ö<<ø<<<Ø"),
        "search": "[import und-u-co-search][import fi-u-co-trad]",
        "traditional": ("&D<<ð<<<Ð<<đ<<<Đ&N<<ŋ<<<Ŋ&T<<þ/h<<<Þ/h&V<<w<<<W&Y<<ü<<<Ü<<ű<<<Ű"
                        "&[before 1]ǀ<å<<<Å<ä<<<Ä<<æ<<<Æ<ö<<<Ö<<ø<<<Ø<<ő<<<Ő<<õ<<<Õ<<œ<<<Œ"),
    },
    "nb": {
        "standard": (_NORDIC_COMMON +
                     "&[before 1]ǀ<æ<<<Æ<<ä<<<Ä<<ę<<<Ę<ø<<<Ø<<ö<<<Ö<<ő<<<Ő<<œ<<<Œ<å<<<Å<<aa<<<Aa<<<AA"),
        "search": "[import und-u-co-search][import nb-u-co-standard]",
    },
    "sv": {
        "default": "reformed",
        "reformed": (_NORDIC_COMMON +
                     "&[before 1]ǀ<å<<<Å<ä<<<Ä<<æ<<<Æ<<ę<<<Ę<ö<<<Ö<<ø<<<Ø<<ő<<<Ő<<œ<<<Œ<<ô<<<Ô"),
        "search": "[import und-u-co-search][import sv-u-co-standard]",
        "standard": ("&D<<đ<<<Đ<<ð<<<Ð&t<<<þ/h&T<<<Þ/H&v<<<V<<w<<<W&Y<<ü<<<Ü<<ű<<<Ű"
                     "&[before 1]ǀ<å<<<Å<ä<<<Ä<<æ<<<Æ<<ę<<<Ę<ö<<<Ö<<ø<<<Ø<<ő<<<Ő<<œ<<<Œ<<ô<<<Ô"),
    },
    "tr": {
        "standard": "&C<ç<<<Ç&G<ğ<<<Ğ&[before 1]i<ı<<<I&i<<<İ&O<ö<<<Ö&S<ş<<<Ş&U<ü<<<Ü",
        "search": "[import und-u-co-search][import tr-u-co-standard]",
    },
}

TAILORED_LOCALES = frozenset(_DATA) - {"root"}


def rules_of(locale: str, collation: str | None = None) -> str:
    """The rules of `locale`'s collation `collation` (None: the locale's default), found as ICU finds
    them: in the locale, else in its parents, else the root's."""
    parts = locale.split("_")
    while parts:
        data = _DATA.get("_".join(parts))
        if data is not None:
            kind = collation or data.get("default", "standard")
            if kind in data:
                return data[kind]
        parts.pop()
    root = _DATA["root"]
    return root.get(collation or "standard", "")
