"""The built-in calibration table: per-language stop words, rule thresholds and language-ID
thresholds. Written by `python -m pipeline.clean.calibrate --reference DIR --module` (see its
docstring for the method, recorded under "method"); do not edit by hand."""
TABLE = {
 "confusable": [
  [
   "bs",
   "hr",
   "sr",
   "sh"
  ],
  [
   "nb",
   "no",
   "nn"
  ],
  [
   "ms",
   "id"
  ],
  [
   "zh",
   "yue",
   "wuu"
  ],
  [
   "en",
   "so"
  ],
  [
   "fi",
   "so"
  ]
 ],
 "languages": {
  "af": {
   "docs": 300,
   "identified_as": {
    "af": 292,
    "nl": 8
   },
   "min_lang_score": 0.47,
   "rules": {
    "gopher_too_many_words": 99424
   },
   "stopwords": [
    "die",
    "en",
    "van",
    "in",
    "nie",
    "het",
    "is",
    "n",
    "te",
    "dit",
    "ek",
    "om",
    "wat",
    "met",
    "ons",
    "dat",
    "as",
    "op",
    "vir",
    "word",
    "ook",
    "hy",
    "jy",
    "kan",
    "hulle",
    "maar",
    "se",
    "jou",
    "my",
    "aan"
   ],
   "words_per_char": 0.1741,
   "words_per_sentence": 17.25
  },
  "ar": {
   "docs": 300,
   "identified_as": {
    "ar": 300
   },
   "rules": {
    "fineweb_few_punct_lines": 0.0,
    "gopher_too_few_words": 44,
    "gopher_too_many_words": 87298
   },
   "stopwords": [
    "في",
    "من",
    "على",
    "أن",
    "إلى",
    "و",
    "التي",
    "عن"
   ],
   "words_per_char": 0.1684,
   "words_per_sentence": 15.15
  },
  "az": {
   "docs": 300,
   "identified_as": {
    "az": 300
   },
   "rules": {
    "gopher_too_few_words": 43,
    "gopher_too_many_words": 85316
   },
   "stopwords": [
    "və",
    "bu",
    "ilə",
    "bir",
    "ildə",
    "olan",
    "isə"
   ],
   "words_per_char": 0.1327,
   "words_per_sentence": 14.8
  },
  "be": {
   "docs": 300,
   "identified_as": {
    "be": 300
   },
   "rules": {
    "gopher_too_few_words": 44,
    "gopher_too_many_words": 88566
   },
   "stopwords": [
    "і",
    "ў",
    "на",
    "з",
    "у",
    "што",
    "не",
    "па",
    "а",
    "да",
    "за",
    "як",
    "але",
    "гэта"
   ],
   "words_per_char": 0.1427,
   "words_per_sentence": 15.37
  },
  "bg": {
   "docs": 300,
   "identified_as": {
    "bg": 300
   },
   "rules": {
    "gopher_too_few_words": 41,
    "gopher_too_many_words": 81305
   },
   "stopwords": [
    "на",
    "от",
    "в",
    "и",
    "да",
    "за",
    "се",
    "е",
    "с",
    "ще",
    "не",
    "това",
    "са",
    "като",
    "си",
    "по"
   ],
   "words_per_char": 0.1581,
   "words_per_sentence": 14.11
  },
  "bn": {
   "docs": 300,
   "identified_as": {
    "bn": 300
   },
   "rules": {
    "gopher_too_few_words": 40,
    "gopher_too_many_words": 80175
   },
   "stopwords": [
    "ও",
    "করে",
    "এবং",
    "জন্য",
    "থেকে",
    "করতে",
    "করা",
    "যে",
    "এ",
    "না",
    "বিভিন্ন",
    "তাদের",
    "হবে",
    "কোন",
    "আপনার"
   ],
   "words_per_char": 0.1586,
   "words_per_sentence": 13.91
  },
  "bs": {
   "docs": 300,
   "identified_as": {
    "hr": 189,
    "sh": 105,
    "sr": 6
   },
   "rules": {
    "gopher_too_few_words": 46,
    "gopher_too_many_words": 92393
   },
   "stopwords": [
    "je",
    "i",
    "u",
    "se",
    "od",
    "na",
    "su",
    "da",
    "za",
    "sa",
    "kao",
    "koji",
    "a"
   ],
   "words_per_char": 0.1526,
   "words_per_sentence": 16.03
  },
  "ca": {
   "docs": 300,
   "identified_as": {
    "ca": 300
   },
   "rules": {
    "gopher_ellipsis_lines": 0.3333,
    "gopher_too_few_words": 49,
    "gopher_too_many_words": 98317
   },
   "stopwords": [
    "de",
    "la",
    "i",
    "el",
    "a",
    "que",
    "en",
    "els",
    "per",
    "les",
    "del",
    "amb",
    "es",
    "un",
    "no",
    "és",
    "o"
   ],
   "words_per_char": 0.16,
   "words_per_sentence": 17.06
  },
  "cs": {
   "docs": 300,
   "identified_as": {
    "cs": 300
   },
   "rules": {
    "gopher_too_few_words": 39,
    "gopher_too_many_words": 77363
   },
   "stopwords": [
    "a",
    "na",
    "v",
    "se",
    "je",
    "o",
    "z",
    "s",
    "do",
    "pro",
    "to"
   ],
   "words_per_char": 0.1484,
   "words_per_sentence": 13.42
  },
  "cy": {
   "docs": 300,
   "identified_as": {
    "cy": 300
   },
   "rules": {
    "gopher_too_few_words": 47,
    "gopher_too_many_words": 94283
   },
   "stopwords": [
    "yn",
    "y",
    "o",
    "i",
    "a",
    "ar",
    "ei",
    "yr",
    "mae",
    "ac",
    "gan",
    "fel",
    "oedd",
    "enw",
    "mewn",
    "roedd",
    "mae'r",
    "o'r",
    "i'r",
    "eu"
   ],
   "words_per_char": 0.1671,
   "words_per_sentence": 16.36
  },
  "da": {
   "docs": 300,
   "identified_as": {
    "da": 300
   },
   "rules": {
    "gopher_too_few_words": 54,
    "gopher_too_many_words": 107769
   },
   "stopwords": [
    "og",
    "at",
    "i",
    "er",
    "til",
    "en",
    "det",
    "af",
    "på",
    "med",
    "for",
    "har",
    "der",
    "de",
    "den",
    "jeg",
    "som",
    "vi",
    "du",
    "et",
    "ikke",
    "kan",
    "så",
    "om",
    "men"
   ],
   "words_per_char": 0.164,
   "words_per_sentence": 18.7
  },
  "de": {
   "docs": 300,
   "identified_as": {
    "de": 300
   },
   "rules": {
    "gopher_too_few_words": 46,
    "gopher_too_many_words": 92900
   },
   "stopwords": [
    "der",
    "die",
    "und",
    "in",
    "von",
    "den",
    "auf",
    "das",
    "ein",
    "zu",
    "mit",
    "für",
    "sie",
    "dem",
    "sich",
    "ist",
    "es",
    "an",
    "im",
    "des",
    "auch",
    "nicht",
    "werden",
    "eine",
    "am",
    "einer"
   ],
   "words_per_char": 0.1404,
   "words_per_sentence": 16.12
  },
  "el": {
   "docs": 300,
   "identified_as": {
    "el": 300
   },
   "rules": {
    "gopher_too_few_words": 57,
    "gopher_too_many_words": 113416
   },
   "stopwords": [
    "και",
    "το",
    "να",
    "του",
    "για",
    "με",
    "την",
    "η",
    "της",
    "που",
    "ο",
    "τα",
    "είναι",
    "από",
    "θα",
    "σε",
    "οι",
    "στο",
    "των",
    "δεν",
    "τους",
    "τη",
    "στην",
    "τον"
   ],
   "words_per_char": 0.1537,
   "words_per_sentence": 19.68
  },
  "en": {
   "docs": 300,
   "identified_as": {
    "en": 300
   },
   "stopwords": [
    "and",
    "be",
    "have",
    "of",
    "that",
    "the",
    "to",
    "with"
   ],
   "words_per_char": 0.1612,
   "words_per_sentence": 17.35
  },
  "eo": {
   "docs": 300,
   "identified_as": {
    "eo": 300
   },
   "rules": {
    "gopher_too_few_words": 45,
    "gopher_too_many_words": 90987
   },
   "stopwords": [
    "la",
    "de",
    "kaj",
    "en",
    "estas",
    "al",
    "estis",
    "ne",
    "mi",
    "el",
    "pli",
    "por",
    "pri",
    "sed",
    "kiu",
    "ke",
    "kun",
    "ili"
   ],
   "words_per_char": 0.1599,
   "words_per_sentence": 15.79
  },
  "es": {
   "docs": 300,
   "identified_as": {
    "es": 300
   },
   "rules": {
    "gopher_too_few_words": 63,
    "gopher_too_many_words": 126602
   },
   "stopwords": [
    "de",
    "la",
    "y",
    "que",
    "el",
    "en",
    "a",
    "los",
    "se",
    "las",
    "con",
    "es",
    "un",
    "para",
    "del",
    "no",
    "ms",
    "por",
    "una",
    "su"
   ],
   "words_per_char": 0.1675,
   "words_per_sentence": 21.97
  },
  "et": {
   "docs": 300,
   "identified_as": {
    "et": 300
   },
   "rules": {
    "gopher_too_few_words": 40,
    "gopher_too_many_words": 80152
   },
   "stopwords": [
    "ja",
    "on",
    "et",
    "ei",
    "kui",
    "ka",
    "või",
    "oma",
    "see",
    "aga"
   ],
   "words_per_char": 0.1387,
   "words_per_sentence": 13.91
  },
  "eu": {
   "docs": 300,
   "identified_as": {
    "eu": 300
   },
   "rules": {
    "gopher_too_few_words": 38,
    "gopher_too_many_words": 75957
   },
   "stopwords": [
    "eta",
    "da",
    "zen",
    "izan",
    "ziren",
    "bat",
    "zuen",
    "ere",
    "bere",
    "ez",
    "dira"
   ],
   "words_per_char": 0.1253,
   "words_per_sentence": 13.18
  },
  "fa": {
   "docs": 300,
   "identified_as": {
    "fa": 300
   },
   "rules": {
    "gopher_too_few_words": 60,
    "gopher_too_many_words": 120032
   },
   "stopwords": [
    "در",
    "و",
    "از",
    "به",
    "که",
    "است",
    "این",
    "را",
    "با",
    "آن",
    "یک",
    "سال",
    "برای"
   ],
   "words_per_char": 0.1913,
   "words_per_sentence": 20.83
  },
  "fi": {
   "docs": 300,
   "identified_as": {
    "fi": 300
   },
   "rules": {
    "gopher_too_few_words": 33,
    "gopher_too_many_words": 66160
   },
   "stopwords": [
    "ja",
    "on",
    "ei",
    "että",
    "ovat",
    "myös",
    "sekä"
   ],
   "words_per_char": 0.1103,
   "words_per_sentence": 11.48
  },
  "fr": {
   "docs": 300,
   "identified_as": {
    "fr": 300
   },
   "rules": {
    "fineweb_few_punct_lines": 0.0,
    "gopher_too_many_words": 99506
   },
   "stopwords": [
    "de",
    "la",
    "et",
    "le",
    "les",
    "à",
    "des",
    "du",
    "en",
    "est",
    "une",
    "pour",
    "par",
    "a",
    "dans",
    "un",
    "il",
    "sur",
    "au",
    "que",
    "pas",
    "sont"
   ],
   "words_per_char": 0.1549,
   "words_per_sentence": 17.27
  },
  "ga": {
   "docs": 300,
   "identified_as": {
    "ga": 300
   },
   "min_lang_score": 0.51,
   "rules": {
    "gopher_too_few_words": 55,
    "gopher_too_many_words": 110858
   },
   "stopwords": [
    "an",
    "a",
    "na",
    "is",
    "agus",
    "i",
    "ar",
    "é",
    "le",
    "go",
    "sa",
    "ag",
    "mar",
    "sé",
    "sin",
    "de",
    "ó",
    "bhí",
    "seo",
    "tá",
    "leis",
    "in"
   ],
   "words_per_char": 0.1661,
   "words_per_sentence": 19.24
  },
  "gu": {
   "docs": 300,
   "identified_as": {
    "gu": 300
   },
   "rules": {
    "gopher_dup_5gram": 0.2071,
    "gopher_dup_6gram": 0.1589,
    "gopher_dup_7gram": 0.1589,
    "gopher_dup_9gram": 0.1162,
    "gopher_too_few_words": 47,
    "gopher_too_many_words": 94306
   },
   "stopwords": [
    "છે",
    "અને",
    "આ",
    "એક",
    "કે",
    "માટે",
    "પણ",
    "આવેલા",
    "ભારત",
    "ભાગમાં",
    "દેશના"
   ],
   "words_per_char": 0.1593,
   "words_per_sentence": 16.36
  },
  "he": {
   "docs": 300,
   "identified_as": {
    "he": 300
   },
   "rules": {
    "gopher_too_few_words": 45,
    "gopher_too_many_words": 89050
   },
   "stopwords": [
    "של",
    "את",
    "על",
    "הוא",
    "עם",
    "לא",
    "גם"
   ],
   "words_per_char": 0.1705,
   "words_per_sentence": 15.45
  },
  "hi": {
   "docs": 300,
   "identified_as": {
    "hi": 300
   },
   "rules": {
    "gopher_too_few_words": 48,
    "gopher_too_many_words": 95874
   },
   "stopwords": [
    "के",
    "में",
    "की",
    "से",
    "है",
    "पर",
    "को",
    "का",
    "भी",
    "और",
    "है।",
    "कि",
    "ने",
    "तो",
    "हैं",
    "इस",
    "एक",
    "नहीं",
    "हो",
    "ही"
   ],
   "words_per_char": 0.2008,
   "words_per_sentence": 16.64
  },
  "hr": {
   "docs": 300,
   "identified_as": {
    "hr": 300
   },
   "rules": {
    "gopher_too_few_words": 54,
    "gopher_too_many_words": 108230
   },
   "stopwords": [
    "i",
    "je",
    "u",
    "na",
    "se",
    "za",
    "od",
    "su",
    "da",
    "koji",
    "a",
    "te"
   ],
   "words_per_char": 0.1492,
   "words_per_sentence": 18.78
  },
  "hu": {
   "docs": 300,
   "identified_as": {
    "hu": 300
   },
   "rules": {
    "gopher_too_few_words": 46,
    "gopher_too_many_words": 92992
   },
   "stopwords": [
    "a",
    "az",
    "és",
    "hogy",
    "is",
    "nem",
    "egy",
    "meg"
   ],
   "words_per_char": 0.1344,
   "words_per_sentence": 16.14
  },
  "hy": {
   "docs": 300,
   "identified_as": {
    "hy": 300
   },
   "rules": {
    "gopher_too_few_words": 47,
    "gopher_too_many_words": 93453
   },
   "stopwords": [
    "է",
    "են",
    "որ",
    "և",
    "ու",
    "համար"
   ],
   "words_per_char": 0.129,
   "words_per_sentence": 16.22
  },
  "id": {
   "docs": 300,
   "identified_as": {
    "id": 300
   },
   "rules": {
    "gopher_too_few_words": 43,
    "gopher_too_many_words": 85800
   },
   "stopwords": [
    "yang",
    "dan",
    "dengan",
    "itu",
    "di",
    "tidak",
    "untuk",
    "akan",
    "ini",
    "ia",
    "dari",
    "tetapi",
    "ki",
    "oleh",
    "dalam",
    "orang",
    "maka",
    "menjadi",
    "dapat",
    "mereka"
   ],
   "words_per_char": 0.1378,
   "words_per_sentence": 14.89
  },
  "is": {
   "docs": 300,
   "identified_as": {
    "is": 300
   },
   "rules": {
    "gopher_too_few_words": 51,
    "gopher_too_many_words": 102490
   },
   "stopwords": [
    "að",
    "og",
    "í",
    "á",
    "er",
    "sem",
    "til",
    "um",
    "ekki",
    "en",
    "það",
    "við",
    "fyrir",
    "af",
    "því",
    "með",
    "hann",
    "eru",
    "ég",
    "var",
    "verið"
   ],
   "words_per_char": 0.1599,
   "words_per_sentence": 17.78
  },
  "it": {
   "docs": 300,
   "identified_as": {
    "it": 300
   },
   "rules": {
    "gopher_too_few_words": 56,
    "gopher_too_many_words": 111964
   },
   "stopwords": [
    "di",
    "e",
    "il",
    "la",
    "in",
    "a",
    "che",
    "per",
    "del",
    "è",
    "della",
    "un",
    "i",
    "marino",
    "non",
    "si",
    "da",
    "san",
    "le",
    "con",
    "una",
    "al",
    "ha",
    "alla",
    "dei"
   ],
   "words_per_char": 0.1542,
   "words_per_sentence": 19.43
  },
  "ja": {
   "docs": 300,
   "identified_as": {
    "ja": 300
   },
   "rules": {
    "gopher_dup_10gram": 0.1744,
    "gopher_dup_5gram": 0.1744,
    "gopher_dup_6gram": 0.1744,
    "gopher_dup_7gram": 0.1744,
    "gopher_dup_8gram": 0.1744,
    "gopher_dup_9gram": 0.1744,
    "gopher_short_words": 1.6097,
    "gopher_too_few_words": 72,
    "gopher_too_many_words": 143202
   },
   "stopwords": [
    "の",
    "が",
    "を",
    "に",
    "は",
    "で",
    "て",
    "し",
    "と",
    "ます",
    "な",
    "も",
    "れ",
    "した",
    "って",
    "た",
    "こと",
    "する",
    "ない",
    "です",
    "ま",
    "い",
    "から",
    "か",
    "せん"
   ],
   "words_per_char": 0.5421,
   "words_per_sentence": 24.85
  },
  "ka": {
   "docs": 300,
   "identified_as": {
    "ka": 300
   },
   "rules": {
    "gopher_too_few_words": 34,
    "gopher_too_many_words": 68926
   },
   "stopwords": [
    "და",
    "წლის",
    "წელს",
    "იყო",
    "მისი",
    "შემდეგ"
   ],
   "words_per_char": 0.1205,
   "words_per_sentence": 11.96
  },
  "kk": {
   "docs": 300,
   "identified_as": {
    "kk": 300
   },
   "rules": {
    "gopher_dup_10gram": 0.2328,
    "gopher_dup_5gram": 0.2328,
    "gopher_dup_6gram": 0.2328,
    "gopher_dup_7gram": 0.2328,
    "gopher_dup_8gram": 0.2328,
    "gopher_dup_9gram": 0.2328,
    "gopher_few_stopwords": 0.0,
    "gopher_too_few_words": 36,
    "gopher_too_many_words": 72430
   },
   "stopwords": [
    "және",
    "мен",
    "бұл",
    "де",
    "бар"
   ],
   "words_per_char": 0.1272,
   "words_per_sentence": 12.57
  },
  "ko": {
   "docs": 300,
   "identified_as": {
    "ko": 300
   },
   "rules": {
    "fineweb_few_punct_lines": 0.0,
    "gopher_few_stopwords": 0.0,
    "gopher_short_words": 2.9674,
    "gopher_too_few_words": 41,
    "gopher_too_many_words": 82619
   },
   "stopwords": [
    "있다",
    "이",
    "등",
    "수",
    "한"
   ],
   "words_per_char": 0.2239,
   "words_per_sentence": 14.34
  },
  "la": {
   "docs": 300,
   "identified_as": {
    "la": 300
   },
   "min_lang_score": 0.38,
   "rules": {
    "gopher_too_few_words": 33,
    "gopher_too_many_words": 65445
   },
   "stopwords": [
    "in",
    "est",
    "et",
    "ad",
    "cum",
    "de",
    "aut",
    "a",
    "sunt",
    "dies",
    "per",
    "circa",
    "qua"
   ],
   "words_per_char": 0.1345,
   "words_per_sentence": 11.36
  },
  "lg": {
   "docs": 300,
   "identified_as": {
    "en": 113,
    "eo": 33,
    "fi": 54,
    "war": 63
   },
   "rules": {
    "gopher_too_few_words": 49,
    "gopher_too_many_words": 97787
   },
   "stopwords": [
    "mu",
    "ku",
    "nga",
    "ne",
    "nti",
    "e",
    "abaana",
    "bwe",
    "ba",
    "abalala",
    "ya"
   ],
   "words_per_char": 0.1331,
   "words_per_sentence": 16.97
  },
  "lt": {
   "docs": 300,
   "identified_as": {
    "lt": 300
   },
   "rules": {
    "gopher_dup_7gram": 0.1326,
    "gopher_too_few_words": 40,
    "gopher_too_many_words": 80705
   },
   "stopwords": [
    "ir",
    "kad",
    "yra",
    "į",
    "su",
    "iš"
   ],
   "words_per_char": 0.1323,
   "words_per_sentence": 14.0
  },
  "lv": {
   "docs": 300,
   "identified_as": {
    "lv": 300
   },
   "rules": {
    "gopher_too_few_words": 44,
    "gopher_too_many_words": 87852
   },
   "stopwords": [
    "un",
    "ir",
    "ar",
    "no",
    "arī",
    "ka",
    "par",
    "vai",
    "kā",
    "uz",
    "kas",
    "ja",
    "tas",
    "bet",
    "es"
   ],
   "words_per_char": 0.1388,
   "words_per_sentence": 15.24
  },
  "mi": {
   "docs": 300,
   "identified_as": {
    "en": 66,
    "lv": 211,
    "tl": 20,
    "war": 2
   },
   "rules": {
    "gopher_too_few_words": 64,
    "gopher_too_many_words": 127985
   },
   "stopwords": [
    "te",
    "i",
    "ki",
    "ngā",
    "o",
    "e",
    "he",
    "a",
    "ko",
    "ka",
    "kei",
    "me",
    "ana",
    "atu",
    "mahi",
    "hei",
    "mai",
    "hoki",
    "nei",
    "rā",
    "kua",
    "māori",
    "ētahi",
    "ia",
    "wā",
    "rātou",
    "kia",
    "tau",
    "ai"
   ],
   "words_per_char": 0.2103,
   "words_per_sentence": 22.21
  },
  "mk": {
   "docs": 300,
   "identified_as": {
    "mk": 300
   },
   "rules": {
    "gopher_too_few_words": 52,
    "gopher_too_many_words": 103711
   },
   "stopwords": [
    "на",
    "во",
    "и",
    "се",
    "од",
    "да",
    "за",
    "со",
    "е",
    "година",
    "како",
    "што",
    "ја",
    "го",
    "ги",
    "не"
   ],
   "words_per_char": 0.1544,
   "words_per_sentence": 18.0
  },
  "mn": {
   "docs": 300,
   "identified_as": {
    "mn": 300
   },
   "rules": {
    "gopher_too_few_words": 46,
    "gopher_too_many_words": 92600
   },
   "stopwords": [
    "нь",
    "юм",
    "байна",
    "гэж",
    "л",
    "ч",
    "энэ",
    "монгол"
   ],
   "words_per_char": 0.1476,
   "words_per_sentence": 16.07
  },
  "mr": {
   "docs": 300,
   "identified_as": {
    "mr": 300
   },
   "rules": {
    "gopher_too_few_words": 36,
    "gopher_too_many_words": 71093
   },
   "stopwords": [
    "आहे",
    "या",
    "व",
    "आणि",
    "ते",
    "होते"
   ],
   "words_per_char": 0.1445,
   "words_per_sentence": 12.34
  },
  "ms": {
   "docs": 300,
   "identified_as": {
    "id": 298,
    "ms": 2
   },
   "rules": {
    "gopher_too_few_words": 48,
    "gopher_too_many_words": 96519
   },
   "stopwords": [
    "dan",
    "yang",
    "di",
    "ini",
    "untuk",
    "pada",
    "download",
    "lagu",
    "dengan",
    "dari",
    "dalam",
    "oleh",
    "mp3",
    "ada",
    "itu"
   ],
   "words_per_char": 0.1421,
   "words_per_sentence": 16.75
  },
  "nb": {
   "docs": 300,
   "identified_as": {
    "no": 300
   },
   "rules": {
    "fineweb_few_punct_lines": 0.0,
    "gopher_too_few_words": 45,
    "gopher_too_many_words": 89121
   },
   "stopwords": [
    "og",
    "i",
    "er",
    "for",
    "det",
    "til",
    "av",
    "som",
    "å",
    "med",
    "på",
    "at",
    "en",
    "har",
    "om",
    "den",
    "et",
    "ikke",
    "fra",
    "eller",
    "vi",
    "de",
    "kan"
   ],
   "words_per_char": 0.156,
   "words_per_sentence": 15.46
  },
  "nl": {
   "docs": 300,
   "identified_as": {
    "nl": 300
   },
   "rules": {
    "gopher_dup_10gram": 0.1452,
    "gopher_dup_6gram": 0.1452,
    "gopher_dup_7gram": 0.1452,
    "gopher_dup_8gram": 0.1452,
    "gopher_dup_9gram": 0.1452,
    "gopher_too_many_words": 99470
   },
   "stopwords": [
    "de",
    "van",
    "het",
    "in",
    "en",
    "een",
    "is",
    "op",
    "zijn",
    "met",
    "voor",
    "te",
    "hij",
    "door",
    "uit",
    "dat",
    "werd",
    "die",
    "als",
    "was"
   ],
   "words_per_char": 0.1558,
   "words_per_sentence": 17.26
  },
  "nn": {
   "docs": 300,
   "identified_as": {
    "nn": 292,
    "no": 8
   },
   "rules": {
    "gopher_too_few_words": 46,
    "gopher_too_many_words": 91010
   },
   "stopwords": [
    "i",
    "og",
    "som",
    "er",
    "av",
    "til",
    "på",
    "ein",
    "den",
    "dei",
    "det",
    "for",
    "var",
    "eit",
    "med",
    "frå",
    "å",
    "vart",
    "har",
    "han",
    "ikkje",
    "ei",
    "at"
   ],
   "words_per_char": 0.1593,
   "words_per_sentence": 15.79
  },
  "pa": {
   "docs": 300,
   "identified_as": {
    "pa": 300
   },
   "rules": {
    "gopher_too_few_words": 60,
    "gopher_too_many_words": 119041
   },
   "stopwords": [
    "ਦੇ",
    "ਨੂੰ",
    "ਦੀ",
    "ਦਾ",
    "ਤੇ",
    "ਅਤੇ",
    "ਨੇ",
    "ਕਿ",
    "ਇਸ",
    "ਹੈ।",
    "ਨਾਲ",
    "ਵਿੱਚ",
    "ਹੈ",
    "ਤੋਂ",
    "ਲਈ",
    "ਹੀ",
    "ਸਿੰਘ",
    "ਵੀ",
    "ਵਿਚ",
    "ਹਨ।",
    "ਨਹੀਂ",
    "ਕੇ",
    "ਕਰ",
    "ਇਹ",
    "ਸੀ"
   ],
   "words_per_char": 0.1961,
   "words_per_sentence": 20.66
  },
  "pl": {
   "docs": 300,
   "identified_as": {
    "pl": 300
   },
   "rules": {
    "gopher_too_few_words": 42,
    "gopher_too_many_words": 84728
   },
   "stopwords": [
    "w",
    "na",
    "i",
    "z",
    "się",
    "nie",
    "to",
    "do",
    "że",
    "jest",
    "o",
    "po"
   ],
   "words_per_char": 0.141,
   "words_per_sentence": 14.7
  },
  "pt": {
   "docs": 300,
   "identified_as": {
    "pt": 300
   },
   "rules": {
    "gopher_too_few_words": 61,
    "gopher_too_many_words": 121438
   },
   "stopwords": [
    "de",
    "a",
    "que",
    "e",
    "o",
    "da",
    "do",
    "com",
    "para",
    "os",
    "em",
    "um",
    "no",
    "na",
    "é",
    "não",
    "por",
    "mais",
    "se",
    "as",
    "ao"
   ],
   "words_per_char": 0.1647,
   "words_per_sentence": 21.07
  },
  "ro": {
   "docs": 300,
   "identified_as": {
    "ro": 300
   },
   "rules": {
    "gopher_too_few_words": 51,
    "gopher_too_many_words": 102259
   },
   "stopwords": [
    "de",
    "a",
    "în",
    "la",
    "este",
    "pentru",
    "şi",
    "si",
    "cu",
    "care",
    "in",
    "pe",
    "din",
    "o",
    "mai",
    "nu",
    "sunt",
    "ca",
    "sau",
    "un",
    "se",
    "sa"
   ],
   "words_per_char": 0.1523,
   "words_per_sentence": 17.74
  },
  "ru": {
   "docs": 300,
   "identified_as": {
    "ru": 300
   },
   "rules": {
    "gopher_too_few_words": 30,
    "gopher_too_many_words": 60811
   },
   "stopwords": [
    "и",
    "в",
    "не",
    "на",
    "что",
    "а",
    "я",
    "к",
    "с",
    "он",
    "но",
    "как",
    "из",
    "по",
    "его",
    "за"
   ],
   "words_per_char": 0.1513,
   "words_per_sentence": 10.55
  },
  "sk": {
   "docs": 300,
   "identified_as": {
    "sk": 300
   },
   "rules": {
    "gopher_too_few_words": 45,
    "gopher_too_many_words": 89742
   },
   "stopwords": [
    "a",
    "na",
    "sa",
    "v",
    "je",
    "s",
    "aj",
    "z",
    "ako",
    "o",
    "do",
    "že",
    "to",
    "si"
   ],
   "words_per_char": 0.1504,
   "words_per_sentence": 15.57
  },
  "sl": {
   "docs": 300,
   "identified_as": {
    "sl": 300
   },
   "min_lang_score": 0.51,
   "rules": {
    "gopher_too_few_words": 52,
    "gopher_too_many_words": 104472
   },
   "stopwords": [
    "in",
    "je",
    "v",
    "na",
    "se",
    "za",
    "da",
    "ki",
    "pa",
    "so",
    "tudi",
    "ne",
    "z",
    "s",
    "še"
   ],
   "words_per_char": 0.1574,
   "words_per_sentence": 18.13
  },
  "sn": {
   "docs": 300,
   "identified_as": {
    "en": 238,
    "fi": 20,
    "id": 21,
    "pl": 15
   },
   "rules": {
    "gopher_too_few_words": 44,
    "gopher_too_many_words": 87045
   },
   "stopwords": [
    "kuti",
    "kana",
    "asi",
    "uye",
    "iri",
    "iyi",
    "uyu",
    "akati",
    "makore",
    "ini",
    "ari"
   ],
   "words_per_char": 0.1263,
   "words_per_sentence": 15.1
  },
  "so": {
   "docs": 300,
   "identified_as": {
    "cy": 3,
    "en": 167,
    "fi": 79,
    "so": 49
   },
   "min_lang_score": 0.09,
   "rules": {
    "gopher_too_few_words": 54,
    "gopher_too_many_words": 107722
   },
   "stopwords": [
    "oo",
    "iyo",
    "ka",
    "ku",
    "ah",
    "ee",
    "waa",
    "la",
    "u",
    "waxaa",
    "ay",
    "waxay",
    "uu",
    "ayaa",
    "soo",
    "ugu",
    "badan",
    "in",
    "kale",
    "loo",
    "lagu",
    "mid",
    "wuxuu"
   ],
   "words_per_char": 0.153,
   "words_per_sentence": 18.69
  },
  "sq": {
   "docs": 300,
   "identified_as": {
    "sq": 300
   },
   "rules": {
    "gopher_too_few_words": 58,
    "gopher_too_many_words": 115722
   },
   "stopwords": [
    "të",
    "e",
    "në",
    "dhe",
    "i",
    "me",
    "një",
    "nga",
    "për",
    "që",
    "më",
    "është",
    "edhe",
    "u",
    "ka",
    "duke",
    "se",
    "nuk"
   ],
   "words_per_char": 0.167,
   "words_per_sentence": 20.08
  },
  "sr": {
   "docs": 300,
   "identified_as": {
    "sr": 300
   },
   "rules": {
    "gopher_too_few_words": 46,
    "gopher_too_many_words": 91540
   },
   "stopwords": [
    "је",
    "и",
    "у",
    "се",
    "су",
    "на",
    "да",
    "од",
    "а",
    "за",
    "са"
   ],
   "words_per_char": 0.1527,
   "words_per_sentence": 15.88
  },
  "st": {
   "docs": 300,
   "identified_as": {
    "en": 5,
    "it": 96,
    "sw": 11,
    "tl": 182
   },
   "rules": {
    "gopher_too_few_words": 60,
    "gopher_too_many_words": 120101
   },
   "stopwords": [
    "ho",
    "le",
    "e",
    "ka",
    "ya",
    "ba",
    "a",
    "o",
    "ha",
    "ke",
    "tse",
    "tsa",
    "sa",
    "la",
    "se",
    "re",
    "di",
    "tla",
    "wa",
    "hore",
    "mme"
   ],
   "words_per_char": 0.1843,
   "words_per_sentence": 20.84
  },
  "sv": {
   "docs": 300,
   "identified_as": {
    "sv": 300
   },
   "rules": {
    "fineweb_few_punct_lines": 0.0,
    "gopher_too_few_words": 39,
    "gopher_too_many_words": 78907
   },
   "stopwords": [
    "och",
    "i",
    "att",
    "en",
    "är",
    "för",
    "som",
    "på",
    "av",
    "med",
    "till",
    "det",
    "har",
    "om",
    "ett",
    "den",
    "kan",
    "de",
    "från",
    "vi"
   ],
   "words_per_char": 0.1512,
   "words_per_sentence": 13.69
  },
  "sw": {
   "docs": 300,
   "identified_as": {
    "sw": 300
   },
   "min_lang_score": 0.37,
   "rules": {
    "gopher_dup_10gram": 0.1156,
    "gopher_dup_9gram": 0.1156,
    "gopher_too_few_words": 48,
    "gopher_too_many_words": 95989
   },
   "stopwords": [
    "ya",
    "na",
    "wa",
    "kwa",
    "katika",
    "mwaka",
    "za",
    "ni",
    "kuwa",
    "la",
    "kama",
    "cha",
    "hii",
    "yake"
   ],
   "words_per_char": 0.1558,
   "words_per_sentence": 16.66
  },
  "ta": {
   "docs": 300,
   "identified_as": {
    "ta": 300
   },
   "rules": {
    "gopher_few_stopwords": 0.0,
    "gopher_too_few_words": 34,
    "gopher_too_many_words": 67497
   },
   "stopwords": [
    "மற்றும்",
    "ஒரு",
    "இது",
    "என்று",
    "ஆகும்"
   ],
   "words_per_char": 0.1087,
   "words_per_sentence": 11.71
  },
  "te": {
   "docs": 300,
   "identified_as": {
    "te": 300
   },
   "rules": {
    "gopher_few_stopwords": 0.0,
    "gopher_too_few_words": 34,
    "gopher_too_many_words": 67128
   },
   "stopwords": [
    "మరియు",
    "ఈ",
    "ఒక",
    "యొక్క",
    "కూడా"
   ],
   "words_per_char": 0.1253,
   "words_per_sentence": 11.65
  },
  "th": {
   "docs": 300,
   "identified_as": {
    "th": 300
   },
   "rules": {
    "gopher_dup_10gram": 0.1624,
    "gopher_dup_5gram": 0.2039,
    "gopher_dup_6gram": 0.1889,
    "gopher_dup_7gram": 0.1669,
    "gopher_dup_8gram": 0.1624,
    "gopher_dup_9gram": 0.1624,
    "gopher_too_few_words": 69,
    "gopher_too_many_words": 138591
   },
   "stopwords": [
    "ที่",
    "การ",
    "วัน",
    "และ",
    "ผู้",
    "ใน",
    "ปี",
    "ของ",
    "มี",
    "จัด",
    "คณะ",
    "ความ",
    "เป็น",
    "ศึกษา"
   ],
   "words_per_char": 0.2148,
   "words_per_sentence": 24.05
  },
  "tl": {
   "docs": 300,
   "identified_as": {
    "tl": 300
   },
   "rules": {
    "gopher_too_few_words": 55,
    "gopher_too_many_words": 109866
   },
   "stopwords": [
    "sa",
    "ng",
    "ang",
    "na",
    "mga",
    "ay",
    "at",
    "isang",
    "ito",
    "si",
    "ni",
    "noong",
    "o"
   ],
   "words_per_char": 0.1584,
   "words_per_sentence": 19.06
  },
  "tn": {
   "docs": 300,
   "identified_as": {
    "en": 19,
    "eo": 40,
    "sw": 74,
    "tl": 123
   },
   "rules": {
    "gopher_too_few_words": 63,
    "gopher_too_many_words": 126418
   },
   "stopwords": [
    "a",
    "go",
    "le",
    "ba",
    "ka",
    "e",
    "o",
    "ya",
    "ke",
    "re",
    "fa",
    "mo",
    "gore",
    "se",
    "ga",
    "ne",
    "di",
    "wa",
    "mme",
    "tsa",
    "sa",
    "tse",
    "bone",
    "bo",
    "kwa",
    "la"
   ],
   "words_per_char": 0.1932,
   "words_per_sentence": 21.94
  },
  "tr": {
   "docs": 300,
   "identified_as": {
    "tr": 300
   },
   "rules": {
    "gopher_too_few_words": 42,
    "gopher_too_many_words": 84832
   },
   "stopwords": [
    "ve",
    "bir",
    "bu",
    "ile",
    "da",
    "olarak",
    "daha",
    "için"
   ],
   "words_per_char": 0.1247,
   "words_per_sentence": 14.72
  },
  "ts": {
   "docs": 300,
   "identified_as": {
    "eo": 73,
    "es": 25,
    "tl": 151,
    "war": 19
   },
   "rules": {
    "gopher_dup_5gram": 0.1507,
    "gopher_dup_6gram": 0.1507,
    "gopher_too_few_words": 61,
    "gopher_too_many_words": 122775
   },
   "stopwords": [
    "ku",
    "hi",
    "ya",
    "na",
    "va",
    "wa",
    "eka",
    "a",
    "ta",
    "nga",
    "ka",
    "swi",
    "yi",
    "ra",
    "ri",
    "xa",
    "swa",
    "le",
    "i",
    "loko",
    "yo",
    "bya",
    "leswi",
    "ndzi",
    "u",
    "leswaku",
    "leyi"
   ],
   "words_per_char": 0.1733,
   "words_per_sentence": 21.3
  },
  "uk": {
   "docs": 300,
   "identified_as": {
    "uk": 300
   },
   "rules": {
    "gopher_too_few_words": 43,
    "gopher_too_many_words": 85961
   },
   "stopwords": [
    "на",
    "і",
    "з",
    "у",
    "в",
    "не",
    "що",
    "до",
    "та",
    "а",
    "це"
   ],
   "words_per_char": 0.1397,
   "words_per_sentence": 14.92
  },
  "ur": {
   "docs": 300,
   "identified_as": {
    "ur": 300
   },
   "rules": {
    "gopher_dup_10gram": 0.2708,
    "gopher_dup_5gram": 0.3189,
    "gopher_dup_6gram": 0.2787,
    "gopher_dup_7gram": 0.2785,
    "gopher_dup_8gram": 0.2785,
    "gopher_dup_9gram": 0.2785,
    "gopher_too_few_words": 69,
    "gopher_too_many_words": 137713
   },
   "stopwords": [
    "کے",
    "کی",
    "میں",
    "سے",
    "ہے",
    "کا",
    "اور",
    "نے",
    "کو",
    "اس",
    "کہ",
    "یہ",
    "ہے۔",
    "پر",
    "ایک",
    "بھی"
   ],
   "words_per_char": 0.207,
   "words_per_sentence": 23.9
  },
  "vi": {
   "docs": 300,
   "identified_as": {
    "vi": 300
   },
   "rules": {
    "gopher_too_few_words": 74,
    "gopher_too_many_words": 147142
   },
   "stopwords": [
    "có",
    "và",
    "là",
    "các",
    "của",
    "cho",
    "những",
    "trong",
    "được",
    "không",
    "bạn",
    "để",
    "người",
    "với"
   ],
   "words_per_char": 0.2185,
   "words_per_sentence": 25.53
  },
  "xh": {
   "docs": 300,
   "identified_as": {
    "en": 272,
    "eo": 17,
    "pl": 6,
    "tl": 3
   },
   "rules": {
    "gopher_few_stopwords": 1.0,
    "gopher_too_few_words": 42,
    "gopher_too_many_words": 83310
   },
   "stopwords": [
    "ukuba",
    "le",
    "kunye",
    "emva",
    "ke"
   ],
   "words_per_char": 0.1124,
   "words_per_sentence": 14.46
  },
  "yo": {
   "docs": 300,
   "identified_as": {
    "es": 14,
    "ga": 190,
    "kw": 7,
    "rm": 57
   },
   "min_lang_score": 0.07,
   "rules": {
    "gopher_too_few_words": 44,
    "gopher_too_many_words": 87437
   },
   "stopwords": [
    "ni",
    "je",
    "ti",
    "ó",
    "ní",
    "tí",
    "tele",
    "a",
    "to",
    "o",
    "awon",
    "ati",
    "ile",
    "àti",
    "bi",
    "si",
    "sí",
    "aare",
    "ń",
    "yìí",
    "ara",
    "àwọn"
   ],
   "words_per_char": 0.1868,
   "words_per_sentence": 15.17
  },
  "zh": {
   "docs": 300,
   "identified_as": {
    "zh": 300
   },
   "rules": {
    "gopher_short_words": 1.4453,
    "gopher_too_few_words": 78,
    "gopher_too_many_words": 155800
   },
   "stopwords": [
    "的",
    "了",
    "在",
    "是",
    "人",
    "这",
    "我",
    "和"
   ],
   "words_per_char": 0.5767,
   "words_per_sentence": 27.03
  },
  "zu": {
   "docs": 300,
   "identified_as": {
    "en": 260,
    "eo": 2,
    "tl": 29,
    "tr": 4
   },
   "rules": {
    "gopher_too_few_words": 37,
    "gopher_too_many_words": 74043
   },
   "stopwords": [
    "ukuthi",
    "futhi",
    "kodwa",
    "uma",
    "noma",
    "kakhulu",
    "ngoba",
    "kusho",
    "kanye"
   ],
   "words_per_char": 0.1122,
   "words_per_sentence": 12.85
  }
 },
 "method": {
  "docs_per_language": 300,
  "layouts": [
   "paragraph",
   "lines",
   "paragraphs"
  ],
  "lid_score": "2% quantile of the language's reference scores, recorded only where below clean.min_lang_score",
  "lines": "even",
  "made": "2026-12-01",
  "pass_share": 0.99,
  "reference": "sentences",
  "sentences_per_doc": 10,
  "stopwords": "words of at least 0.5% frequency, 5 to 30 (en: Gopher's eight)",
  "what": "FineWeb-2-style relax-only calibration: each rule keeps its published value unless fewer than pass_share of the language's reference documents pass it, then it moves to the value they pass at"
 }
}
