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

# Persian's and Pashto's order of the short vowels, and alef with madda first
_FA_PS_VOWELS = "[normalization on][reorder Arab]&\u064E<<\u0650<<\u064F<<\u064B<<\u064D<<\u064C&[before 1]ا<آ"

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
    "af": {"standard": "&N<<<ŉ"},
    "ar": {
        # the rules up to the diacritics; the equalities of the presentation forms and ligatures that
        # follow them in CLDR (`&ب=ﺏ=ﺐ=ﺑ=ﺒ`, ...) are not transcribed (see the README's limits)
        "standard": ("[reorder Arab]&[before 2]ت<<ة&[before 2]ي<<ی<<ى&ء<<أ<<ؤ<<إ<<ئ<<ىٕ<<ا&ءا<<آ"
                     "&[last secondary ignorable]<<<\u064B<<<\u08F0<<<\u08E7<<<\u064C<<<\u08F1"
                     "<<<\u08E8<<<\u064D<<<\u08F2<<<\u08E9<<<\u064E<<<\u08E4<<<\u08F4<<<\u08F5"
                     "<<<\u064F<<<\u08E5<<<\u08FE<<<\u0650<<<\u08E6<<<\u08F6<<<\u0651<<<\u0652"
                     "<<<\u0653<<<\u06DF<<<\u06E1<<<\u065F<<<\u0656<<<\u0657<<<\u0658<<<\u08FF"
                     "<<<\u0659<<<\u065A<<<\u065B<<<\u065C<<<\u065D<<<\u065E<<<\u08F7<<<\u08F8"
                     "<<<\u08FD<<<\u08FB<<<\u08FC<<<\u08F9<<<\u08FA<<<\u0670"),
        "compat": "[reorder Arab]&ت<<ة<<<ﺔ<<<ﺓ&ي<<ى<<<ﯨ<<<ﯩ<<<ﻰ<<<ﻯ<<<ﲐ<<<ﱝ",
    },
    "az": {
        "standard": ("[reorder Latn Cyrl]&C<ç<<<Ç&G<ğ<<<Ğ&[before 1]i<ı<<<I&i<<<İ&O<ö<<<Ö&S<ş<<<Ş&U<ü<<<Ü"
                     "&K<q<<<Q&E<ə<<<Ə&H<x<<<X&Z<w<<<W"),
        "search": "[import und-u-co-search][import az-u-co-standard][reorder others]",
    },
    "be": {"standard": "[reorder Cyrl]&Е<ё<<<Ё&у<ў<<<Ў"},
    "bg": {"standard": "[reorder Cyrl]"},
    "bs": {"standard": "[import hr]", "search": "[import hr-u-co-search]"},
    "bs_Cyrl": {"standard": "[import sr]"},
    "ca": {"search": "[import und-u-co-search]&L<ŀ=l·<<<Ŀ=L·"},
    "de_AT": {"phonebook": "&a<ä<<<Ä&o<ö<<<Ö&u<ü<<<Ü&ss<ß<<<ẞ"},
    "et": {"standard": "&[before 1]T<š<<<Š<z<<<Z<ž<<<Ž&[before 1]X<õ<<<Õ<ä<<<Ä<ö<<<Ö<ü<<<Ü"},
    "fil": {"standard": "&N<ñ<<<Ñ<ng<<<Ng<<<NG"},
    "fo": {
        "standard": (_NORDIC_COMMON +
                     "&[before 1]ǀ<æ<<<Æ<<ä<<<Ä<<ę<<<Ę<ø<<<Ø<<ö<<<Ö<<ő<<<Ő<<œ<<<Œ<å<<<Å<<<aa<<<Aa<<<AA"),
    },
    "fr_CA": {"standard": "[backwards 2]"},
    "gl": {"standard": "[import es]", "search": "[import es-u-co-search]"},
    "ha": {"standard": "&B<ɓ<<<Ɓ&D<ɗ<<<Ɗ&K<ƙ<<<Ƙ&S<sh<<<Sh<<<SH&T<ts<<<Ts<<<TS&Y<ƴ<<<ʼy<<<''y<<<Ƴ<<<ʼY<<<''Y"},
    "haw": {"standard": "&a<e<<<E<i<<<I<o<<<O<u<<<U&w<ʻ"},
    "he": {
        "standard": "[normalization on][reorder Hebr]&[before 2]''<<׳&[before 2]'\u0022'<<״",
        "search": "[import und-u-co-search]&׳<<''&״<<'\u0022'",
    },
    "hi": {"standard": "[normalization on][reorder Deva Beng Guru Gujr Orya Taml Telu Knda Mlym Sinh]&\u0950<\u0902<<\u0901<\u0903"},
    "hr": {
        "standard": ("[reorder Latn Cyrl]&C<č<<<Č<ć<<<Ć&D<dž<<<ǆ<<<Dž<<<ǅ<<<DŽ<<<Ǆ<đ<<<Đ"
                     "&L<lj<<<ǉ<<<Lj<<<ǈ<<<LJ<<<Ǉ&N<nj<<<ǌ<<<Nj<<<ǋ<<<NJ<<<Ǌ&S<š<<<Š&Z<ž<<<Ž"),
        "search": "[import und-u-co-search][import hr-u-co-standard][reorder others]",
    },
    "hsb": {"standard": "&C<č<<<Č<ć<<<Ć&E<ě<<<Ě&H<ch<<<cH<<<Ch<<<CH&[before 1] L<ł<<<Ł&R<ř<<<Ř&S<š<<<Š&Z<ž<<<Ž<ź<<<Ź"},
    "hu": {
        "standard": ("&C<cs<<<Cs<<<CS&D<dz<<<Dz<<<DZ&DZ<dzs<<<Dzs<<<DZS&G<gy<<<Gy<<<GY&L<ly<<<Ly<<<LY"
                     "&N<ny<<<Ny<<<NY&S<sz<<<Sz<<<SZ&T<ty<<<Ty<<<TY&Z<zs<<<Zs<<<ZS&O<ö<<<Ö<<ő<<<Ő&U<ü<<<Ü<<ű<<<Ű"
                     "&cs<<<ccs/cs&Cs<<<Ccs/cs&CS<<<CCS/CS&dz<<<ddz/dz&Dz<<<Ddz/dz&DZ<<<DDZ/DZ"
                     "&dzs<<<ddzs/dzs&Dzs<<<Ddzs/dzs&DZS<<<DDZS/DZS&gy<<<ggy/gy&Gy<<<Ggy/gy&GY<<<GGY/GY"
                     "&ly<<<lly/ly&Ly<<<Lly/ly&LY<<<LLY/LY&ny<<<nny/ny&Ny<<<Nny/ny&NY<<<NNY/NY"
                     "&sz<<<ssz/sz&Sz<<<Ssz/sz&SZ<<<SSZ/SZ&ty<<<tty/ty&Ty<<<Tty/ty&TY<<<TTY/TY"
                     "&zs<<<zzs/zs&Zs<<<Zzs/zs&ZS<<<ZZS/ZS"),
    },
    "hy": {"standard": "[reorder Armn]&ք<և<<<Եւ"},
    "ig": {"standard": ("[normalization on]&B<ch<<<Ch<<<CH&G<gb<<<Gb<<<GB<gh<<<Gh<<<GH<gw<<<Gw<<<GW&I<ị<<<Ị"
                         "&K<kp<<<Kp<<<KP<kw<<<Kw<<<KW&N<ṅ<<<Ṅ<nw<<<Nw<<<NW<ny<<<Ny<<<NY&O<ọ<<<Ọ&S<sh<<<Sh<<<SH&U<ụ<<<Ụ")},
    "is": {
        "standard": ("&[before 1]b<á<<<Á&d<<đ<<<Đ<ð<<<Ð&[before 1]f<é<<<É&[before 1]j<í<<<Í&[before 1]p<ó<<<Ó"
                     "&[before 1]v<ú<<<Ú&[before 1]z<ý<<<Ý&[before 1]ǀ<æ<<<Æ<<ä<<<Ä<ö<<<Ö<<ø<<<Ø<å<<<Å"),
    },
    "ka": {"standard": "[reorder Geor]"},
    "kk": {"standard": "[reorder Cyrl]&Е<ё<<<Ё&Ұ<ү<<<Ү&[before 1]ь<і<<<І"},
    "kl": {
        "standard": ("&D<<đ<<<Đ<<ð<<<Ð&Q<<ĸ<<<K''&t<<<þ/h&T<<<Þ/H&Y<<ü<<<Ü<<ű<<<Ű"
                     "&[before 1]ǀ<æ<<<Æ<<ä<<<Ä<<ę<<<Ę<ø<<<Ø<<ö<<<Ö<<ő<<<Ő<<œ<<<Œ<å<<<Å"),
    },
    "ky": {"standard": "[reorder Cyrl]&е<ё<<<Ё"},
    "lkt": {"standard": "&C<č<<<Č&G<ǧ<<<Ǧ&H<ȟ<<<Ȟ&S<š<<<Š&Z<ž<<<Ž"},
    "ln": {
        "standard": "&E<ɛ<<<Ɛ&O<<ɔ<<<Ɔ",
        "phonetic": ("&E<ɛ<<<Ɛ&O<<ɔ<<<Ɔ&G<gb<<<gB<<<Gb<<<GB&K<kp<<<kP<<<Kp<<<KP"
                     "&M<mb<<<mB<<<Mb<<<MB<mf<<<mF<<<Mf<<<MF<mp<<<mP<<<Mp<<<MP<mv<<<mV<<<Mv<<<MV"
                     "&N<nd<<<nD<<<Nd<<<ND<ng<<<nG<<<Ng<<<NG<ngb<<<ngB<<<nGb<<<nGB<<<Ngb<<<NgB<<<NGB<nk"
                     "<<<nK<<<Nk<<<NK<ns<<<nS<<<Ns<<<NS<nt<<<nT<<<Nt<<<NT<ny<<<nY<<<Ny<<<NY<nz<<<nZ<<<Nz"
                     "<<<NZ&S<sh<<<sH<<<Sh<<<SH&T<ts<<<tS<<<Ts<<<TS"),
    },
    "lt": {
        "standard": ("&\u0300=\u0307\u0300&\u0301=\u0307\u0301&\u0303=\u0307\u0303&A<<ą<<<Ą&C<č<<<Č"
                     "&E<<ę<<<Ę<<ė<<<Ė&I<<į<<<Į<<y<<<Y&S<š<<<Š&U<<ų<<<Ų<<ū<<<Ū&Z<ž<<<Ž"),
    },
    "lv": {
        "standard": ("&[before 1]D<č<<<Č&[before 1]H<ģ<<<Ģ&I<<y<<<Y&[before 1]L<ķ<<<Ķ&[before 1]M<ļ<<<Ļ"
                     "&[before 1]O<ņ<<<Ņ&[before 1]S<ŗ<<<Ŗ&[before 1]T<š<<<Š&[before 1]Ʒ<ž<<<Ž"),
    },
    "cs": {
        "standard": "&C<č<<<Č&H<ch<<<cH<<<Ch<<<CH&R<ř<<<Ř&S<š<<<Š&Z<ž<<<Ž",
        "search": ("[import und-u-co-search]"
                   "&A<á<<<Á&C<č<<<Č&D<ď<<<Ď&E<é<<<É<ě<<<Ě&I<í<<<Í&N<ň<<<Ň&O<ó<<<Ó&R<ř<<<Ř&S<š<<<Š"
                   "&T<ť<<<Ť&U<ú<<<Ú<ů<<<Ů&Y<ý<<<Ý&Z<ž<<<Ž"),
    },
    "cy": {"standard": "&C<ch<<<Ch<<<CH&D<dd<<<Dd<<<DD&F<ff<<<Ff<<<FF&G<ng<<<Ng<<<NG&L<ll<<<Ll<<<LL&P<ph<<<Ph<<<PH"
                         "&R<rh<<<Rh<<<RH&T<th<<<Th<<<TH"},
    "da": {
        "standard": ("[caseFirst upper]" + _NORDIC_COMMON +
                     "&[before 1]ǀ<æ<<<Æ<<ä<<<Ä<ø<<<Ø<<ö<<<Ö<<ő<<<Ő<<œ<<<Œ<å<<<Å<<<aa<<<Aa<<<AA"),
        "search": "[import und-u-co-search][import da-u-co-standard][caseFirst off]",
    },
    "de": {
        "phonebook": "&AE<<ä<<<Ä&OE<<ö<<<Ö&UE<<ü<<<Ü",
        "search": "[import und-u-co-search][import de-u-co-phonebk]",
    },
    "dsb": {"standard": "&C<č<<<Č<ć<<<Ć&E<ě<<<Ě&H<ch<<<cH<<<Ch<<<CH&[before 1] L<ł<<<Ł&N<ń<<<Ń&R<ŕ<<<Ŕ&S<š<<<Š<ś<<<Ś"
                          "&Z<ž<<<Ž<ź<<<Ź"},
    "ee": {"standard": ("&\u030C<<\u0302&D<dz<<<Dz<<<DZ<ɖ<<<Ɖ&E<ɛ<<<Ɛ&F<ƒ<<<Ƒ&G<gb<<<Gb<<<GB<ɣ<<<Ɣ&H<x<<<X"
                         "&K<kp<<<Kp<<<KP&N<ny<<<Ny<<<NY<ŋ<<<Ŋ&O<ɔ<<<Ɔ&T<ts<<<Ts<<<TS&V<ʋ<<<Ʋ")},
    "el": {"standard": "[normalization on][reorder Grek]"},
    "en_US_POSIX": {
        "standard": "&A<*'\u0020'-'/'<*0-'@'<*ABCDEFGHIJKLMNOPQRSTUVWXYZ<*'['-'`'<*abcdefghijklmnopqrstuvwxyz"
                    "<*'{'-'\u007F'",
    },
    "eo": {"standard": "&C<ĉ<<<Ĉ&G<ĝ<<<Ĝ&H<ĥ<<<Ĥ&J<ĵ<<<Ĵ&S<ŝ<<<Ŝ&U<ŭ<<<Ŭ"},
    "es": {
        "standard": "&N<ñ<<<Ñ",
        "search": "[import und-u-co-search]&N<ñ<<<Ñ",
        "traditional": "&N<ñ<<<Ñ&C<ch<<<Ch<<<CH&l<ll<<<Ll<<<LL",
    },
    "fa": {"standard": (_FA_PS_VOWELS +
                         "&ا<<ٱ<ء<<أ<<ٲ<<إ<<ٳ<<ؤ<<ی\u0654<<<ى\u0654<<<ئ&ک<<*ڪګكڬڭڮ&ۏ<ه<<ە<<ہ<<ة<<ۃ<<ۀ<<ھ"
                         "&ی<<*ىےيېۑۍێ")},
    "fa_AF": {"standard": "[import ps]"},
    "fi": {
        "standard": ("&D\u0335<<đ<<<Đ&G\u0335<<ǥ<<<Ǥ&N\u0335<<ŋ<<<Ŋ&T\u0335<<ŧ<<<Ŧ&Y<<ü<<<Ü&Z\u0335<<ʒ<<<Ʒ"
                     "&[before 1]ǀ<å<<<Å<ä<<<Ä<<æ<<<Æ<ö<<<Ö<<ø<<<Ø"),
        "search": "[import und-u-co-search][import fi-u-co-trad]",
        "traditional": ("&D<<ð<<<Ð<<đ<<<Đ&N<<ŋ<<<Ŋ&T<<þ/h<<<Þ/h&V<<w<<<W&Y<<ü<<<Ü<<ű<<<Ű"
                        "&[before 1]ǀ<å<<<Å<ä<<<Ä<<æ<<<Æ<ö<<<Ö<<ø<<<Ø<<ő<<<Ő<<õ<<<Õ<<œ<<<Œ"),
    },
    "mk": {"standard": "[reorder Cyrl][suppressContractions [Ии]]&ԃ<ѓ<<<Ѓ&ћ<ќ<<<Ќ"},
    "mn": {"standard": "[reorder Cyrl Mong]"},
    "mt": {"standard": ("[caseFirst upper]&[before 1]c<ċ<<<Ċ&[before 1]g<ġ<<<Ġ&[before 1]h<għ<<<gĦ<<<Għ<<<GĦ"
                         "&[before 1]i<ħ<<<Ħ&[before 1]z<ż<<<Ż")},
    "nb": {
        "standard": (_NORDIC_COMMON +
                     "&[before 1]ǀ<æ<<<Æ<<ä<<<Ä<<ę<<<Ę<ø<<<Ø<<ö<<<Ö<<ő<<<Ő<<œ<<<Œ<å<<<Å<<aa<<<Aa<<<AA"),
    },
    "nn": {"standard": "[import nb-u-co-standard]", "search": "[import nb-u-co-search]"},
    "om": {"standard": "&Z<ch<<<Ch<<<CH<dh<<<Dh<<<DH<kh<<<Kh<<<KH<ny<<<Ny<<<NY<ph<<<Ph<<<PH<sh<<<Sh"},
    "pl": {"standard": "&A<ą<<<Ą&C<ć<<<Ć&E<ę<<<Ę&L<ł<<<Ł&N<ń<<<Ń&O<ó<<<Ó&S<ś<<<Ś&Z<ź<<<Ź<ż<<<Ż"},
    "ps": {"standard": (_FA_PS_VOWELS +
                         "&ا<<أ<<ٲ<<ٱ<<إ<<ٳ<ء&ت<ټ<<ٹ&ج<ځ<<ح\u0654&چ<څ&د<ډ<<ڈ&ر<ړ<<ڑ&ژ<ږ&ک<<*ڪك&ګ<<گ&ڼ<<ڻ"
                         "&و<<ؤ<<ۇ<<ۉ&ه<<<ۀ<<<ه\u0654<<*ەہھةۃ&ی<<*ىےيېۍ<<ی\u0654<<<ى\u0654<<<ئ"
                         "&\u00A0<<\u200C<<\u200D")},
    "ro": {"standard": "&A<ă<<<Ă<â<<<Â&I<î<<<Î&S<ş=ș<<<Ş=Ș&T<ţ=ț<<<Ţ=Ț"},
    "ru": {"standard": "[reorder Cyrl]"},
    "se": {
        "standard": ("&[before 1]b<á<<<Á&[before 1]d<č<<<Č<ʒ<<<Ʒ<ǯ<<<Ǯ&[before 1]e<đ<<<Đ<<ð<<<Ð"
                     "&[before 1]h<ǧ<<<Ǧ<ǥ<<<Ǥ&[before 1]l<ǩ<<<Ǩ&[before 1]o<ŋ<<<Ŋ<<ń<<<Ń<<ñ<<<Ñ&[before 1]t<š<<<Š"
                     "&[before 1]u<ŧ<<<Ŧ<<þ<<<Þ&y<<ü<<<Ü<<ű<<<Ű&[before 1]ǀ<ž<<<Ž<ø<<<Ø<<œ<<<Œ<æ<<<Æ<å<<<Å<<ȧ<<<Ȧ"
                     "<ä<<<Ä<<ã<<<Ã<ö<<<Ö<<ő<<<Ő<<õ<<<Õ<<ô<<<Ô<<ǫ<<<Ǫ"),
    },
    "sk": {
        "standard": "&A<ä<<<Ä&C<č<<<Č&H<ch<<<cH<<<Ch<<<CH&O<ô<<<Ô&R<ř<<<Ř&S<š<<<Š&Z<ž<<<Ž",
        "search": ("[import und-u-co-search]&A<á<<<Á<ä<<<Ä&C<č<<<Č&D<ď<<<Ď&E<é<<<É<ě<<<Ě&I<í<<<Í&L<ĺ<<<Ĺ<ľ<<<Ľ"
                   "&N<ň<<<Ň&O<ó<<<Ó<ô<<<Ô&R<ŕ<<<Ŕ<ř<<<Ř&S<š<<<Š&T<ť<<<Ť&U<ú<<<Ú<ů<<<Ů&Y<ý<<<Ý&Z<ž<<<Ž"),
    },
    "sl": {"standard": "&C<č<<<Č<ć<<<Ć&D<đ<<<Đ&S<š<<<Š&Z<ž<<<Ž"},
    "smn": {
        "standard": "&A<â<<<Â<<à<<<À&C<č<<<Č&D<đ<<<Đ&Ŋ<<ñ<<<Ñ<<ń<<<Ń&S<š<<<Š&Z<ž<<<Ž<æ<<<Æ<ø<<<Ø<å<<<Å<ã<<<Ã"
                    "<ä<<<Ä<á<<<Á<ö<<<Ö",
    },
    "sq": {"standard": ("&[before 1]D<ç<<<Ç&[before 1]E<dh<<<Dh<<<DH&[before 1]F<ë<<<Ë&[before 1]H<gj<<<Gj<<<GJ"
                         "&[before 1]M<ll<<<Ll<<<LL&[before 1]O<nj<<<Nj<<<NJ&[before 1]S<rr<<<Rr<<<RR"
                         "&[before 1]T<sh<<<Sh<<<SH&[before 1]U<th<<<Th<<<TH&[before 1]Y<xh<<<Xh<<<XH"
                         "&[before 1]Ʒ<zh<<<Zh<<<ZH")},
    "sr": {"standard": "[reorder Cyrl][suppressContractions [Ии]]"},
    "sr_Latn": {"standard": "[import hr]", "search": "[import hr-u-co-search]"},
    "sv": {
        "default": "reformed",
        "reformed": (_NORDIC_COMMON +
                     "&[before 1]ǀ<å<<<Å<ä<<<Ä<<æ<<<Æ<<ę<<<Ę<ö<<<Ö<<ø<<<Ø<<ő<<<Ő<<œ<<<Œ<<ô<<<Ô"),
        "standard": ("&D<<đ<<<Đ<<ð<<<Ð&t<<<þ/h&T<<<Þ/H&v<<<V<<w<<<W&Y<<ü<<<Ü<<ű<<<Ű"
                     "&[before 1]ǀ<å<<<Å<ä<<<Ä<<æ<<<Æ<<ę<<<Ę<ö<<<Ö<<ø<<<Ø<<ő<<<Ő<<œ<<<Œ<<ô<<<Ô"),
    },
    "th": {"standard": ("[normalization on][alternate shifted][reorder Thai]&[before 1]\u0E5A<\u0E2F&\u0E5B<\u0E46"
                         "&\u0E4E<<\u0E4C&[before 1]\u0E30<\u0E4D&\u0E32<<<\u0E45&\u0E32\u0E4D<<<\u0E4D\u0E32<<<\u0E33"
                         "&\u0E45\u0E4D<<<\u0E4D\u0E45&\u0E44<\u0E3A")},
    "to": {"standard": "&n<ng<<<Ng<<<NG<<<ŋ<<<Ŋ&z<ʻ<<<ʽ&a<<á<<<Á<<ā<<<Ā&e<<é<<<É<<ē<<<Ē&i<<í<<<Í<<ī<<<Ī&o<<ó<<<Ó<<ō<<<Ō"
                         "&u<<ú<<<Ú<<ū<<<Ū"},
    "tr": {
        "standard": "&C<ç<<<Ç&G<ğ<<<Ğ&[before 1]i<ı<<<I&i<<<İ&O<ö<<<Ö&S<ş<<<Ş&U<ü<<<Ü",
    },
    "ug": {"standard": "[reorder Arab]&ا<ە<ب&ك<گ<ڭ<ل&ھ<و<ۇ<ۆ<ۈ<ۋ<ې<ى<ي"},
    "uk": {"standard": "[reorder Cyrl]&Г<ґ<<<Ґ&ꙇ<ї<<<\uA676<<<Ї"},
    "ur": {"standard": ("[reorder Arab]&ا<<أ<آ<ب<بھ<پ<پھ<ت<تھ<ٹ<ٹھ<ث<ج<جھ<چ<چھ<ح<خ<د<دھ<ڈ<ڈھ<ذ<ر<رھ<ڑ<ڑھ<ز<ژ<س<ش<ص<ض<ط<ظ"
                         "<ع<غ<ف<ق<ک<کھ<گ<گھ<ل<لھ<م<مھ<ن<نھ<ں<ںھ<و<<ؤ<وھ<ہ<<ۂ<ھ<ۃ<ء<ی<<ئ<یھ<ے<<ۓ"
                         "&\u0652<<\u064E<<\u0650<<\u064F<<\u0670<<\u0656<<\u0657<<\u064B<<\u064D<<\u064C<<\u0654"
                         "<<\u0651<<\u0658<<\u0653&[last tertiary ignorable]<<<\u0610<<<\u0611<<<\u0613<<<\u0612<<<\u0614")},
    "vi": {
        "standard": ("[normalization on]&\u0300<<\u0309<<\u0303<<\u0301<<\u0323&a<ă<<<Ă<â<<<Â&d<đ<<<Đ&e<ê<<<Ê"
                     "&o<ô<<<Ô<ơ<<<Ơ&u<ư<<<Ư"),
        "traditional": ("[normalization on]&\u0300<<\u0309<<\u0303<<\u0301<<\u0323&a<ă<<<Ă<â<<<Â&C<ch<<<Ch<<<CH"
                        "&d<đ<<<Đ&e<ê<<<Ê&G<gh<<<Gh<<<GH<gi<<<Gi<<<GI&K<kh<<<Kh<<<KH"
                        "&N<nh<<<Nh<<<NH<ng<<<Ng<<<NG<ngh<<<Ngh<<<NGh<<<NGH&o<ô<<<Ô<ơ<<<Ơ&P<ph<<<Ph<<<PH"
                        "&Q<qu<<<Qu<<<QU&T<th<<<Th<<<TH<tr<<<Tr<<<TR&u<ư<<<Ư"),
    },
    "yi": {
        "standard": ("[normalization on][reorder Hebr]&[before 2]''<<׳&[before 2]'\u0022'<<״&\u05D1<\u05D1\u05BF"
                     "&\u05D5<<\u05D5\u05BC<<\u05D5\u05D5<<\u05D5\u05D9&\u05D9<<\u05D9\u05B4<<\u05D9\u05D9<<\u05F2\u05B7"
                     "&[before 1]\u05DB<\u05DB\u05BC&[before 1]\u05E4<\u05E4\u05BC&\u05E4\u05BF<<<\u05E3"
                     "&\u05E9<\u05E9\u05C2&[before 1]\u05EA<\u05EA\u05BC"),
        "search": "[import und-u-co-search]&׳<<''&״<<'\u0022'",
    },
    "yo": {"standard": "[normalization on]&E<ẹ<<<Ẹ&G<gb<<<Gb<<<GB&O<ọ<<<Ọ&S<ṣ<<<Ṣ"},
}

# locales whose search collation is the root's search rules followed by their standard rules
for _locale in ("fo", "is", "kl", "nb", "se", "smn", "sv", "tr"):
    _DATA[_locale]["search"] = f"[import und-u-co-search][import {_locale}-u-co-standard]"

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
