"""English text -> the words a person reads aloud, before the G2P ("$3.99" -> "three dollars and ninety-nine cents").

A table of rules, tried in order; each is a pattern and a short function from its match to the spoken words.
A rule only sees text no earlier rule has rewritten, so "$3.99" is money and never also a decimal number,
and a URL's digits stay the URL's. Number words come from num2words. `normalize_spans` keeps each rewritten
piece beside the original text it came from, which is how word timestamps name "$3.99" rather than
"three dollars and ninety-nine cents".

Rules that end on an abbreviation's full stop ("etc.", "a.m.") give the stop back when it also ended the
sentence (followed by the end of the text or by a capital), so that sentence cutting and intonation stay.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from num2words import num2words


# A whole number of more digits than this is read digit by digit, as a person reads an account or card number (and
# num2words' words for 10^16 and up, "ten quadrillion", are words nobody says; past 4,300 digits int() refuses)
_MAX_DIGITS_AS_A_NUMBER = 15


def _digit_by_digit(number: str) -> str:
    return " ".join(num2words(int(d)) for d in number if d.isdigit())


def cardinal(number: str) -> str:
    """'1,234.5' -> 'one thousand two hundred and thirty-four point five' (num2words' commas dropped: they
    would be read as pauses)."""
    number = number.replace(",", "")
    if "." in number:
        whole, frac = number.split(".", 1)
        return f"{cardinal(whole or '0')} point {_digit_by_digit(frac)}"
    if len(number.lstrip("0")) > _MAX_DIGITS_AS_A_NUMBER:
        return _digit_by_digit(number)
    return num2words(int(number)).replace(",", "")


def ordinal(number: str) -> str:
    number = number.replace(",", "")
    if len(number.lstrip("0")) > _MAX_DIGITS_AS_A_NUMBER:
        return _digit_by_digit(number)
    return num2words(int(number), to="ordinal").replace(",", "")


def year(number: str) -> str:
    return num2words(int(number), to="year").replace(",", "")


def _plural(word: str) -> str:
    return word[:-1] + "ies" if word.endswith("y") else word + "s"


def _keep_stop(m: re.Match, words: str) -> str:
    """`words`, with a full stop when the abbreviation's stop also ended a sentence."""
    rest = m.string[m.end():]  # the rest of the whole text (normalize_spans searches it with bounds)
    ended = m.group(0).endswith(".") and (not rest.strip() or re.match(r"\s+[A-Z\"“]", rest) is not None)
    return words + "." if ended else words


# -- money ------------------------------------------------------------------------------------------------------
_CURRENCIES = {"$": ("dollar", "dollars", "cent", "cents"), "£": ("pound", "pounds", "penny", "pence"),
               "€": ("euro", "euros", "cent", "cents"),
               # ISO codes, before or after the amount ("USD 40", "35 EUR")
               "USD": ("US dollar", "US dollars", "cent", "cents"), "EUR": ("euro", "euros", "cent", "cents"),
               "GBP": ("pound", "pounds", "penny", "pence"), "CAD": ("Canadian dollar", "Canadian dollars", "cent",
                                                                      "cents"),
               "AUD": ("Australian dollar", "Australian dollars", "cent", "cents"),
               "CHF": ("Swiss franc", "Swiss francs", "centime", "centimes"), "JPY": ("yen", "yen", "sen", "sen"),
               "CNY": ("yuan", "yuan", "fen", "fen"), "INR": ("rupee", "rupees", "paisa", "paise")}
_CODE = "|".join(c for c in _CURRENCIES if c.isalpha())
_SCALES = {"k": "thousand", "m": "million", "mn": "million", "b": "billion", "bn": "billion", "t": "trillion"}


def _money(m: re.Match) -> str:
    one, many, cent, cents = _CURRENCIES[m["cur"] or m["code"]]
    amount, scale = m["amount"].replace(",", ""), m["scale"]
    if scale:
        scale = _SCALES.get(scale.lower(), scale.lower())
        return f"{cardinal(amount)} {scale} {many}"
    whole, _, frac = amount.partition(".")
    units = whole.lstrip("0") or "0"  # a string: an amount may have more digits than int() takes
    hundredths = int((frac + "00")[:2]) if frac else 0
    parts = []
    if units != "0" or not hundredths:
        parts.append(f"{cardinal(units)} {one if units == '1' else many}")
    if hundredths:
        parts.append(f"{cardinal(str(hundredths))} {cent if hundredths == 1 else cents}")
    return " and ".join(parts)


# -- times and dates ----------------------------------------------------------------------------------------------
def _meridiem(m: re.Match) -> str:
    return "" if not m["ampm"] else _keep_stop(m, f" {m['ampm'][0].lower()} m")


def _time(m: re.Match) -> str:
    hour, minute = int(m["h"]), int(m["min"])
    if minute == 0 and hour > 12 and not m["ampm"]:
        spoken = f"{cardinal(str(hour))} hundred"  # a 24-hour clock: "13:00" is thirteen hundred
    elif minute == 0:
        spoken = cardinal(str(hour)) if m["ampm"] else f"{cardinal(str(hour))} o'clock"
    elif minute < 10:
        spoken = f"{cardinal(str(hour))} oh {cardinal(str(minute))}"
    else:
        spoken = f"{cardinal(str(hour))} {cardinal(str(minute))}"
    return spoken + _meridiem(m)


def _hour(m: re.Match) -> str:
    return cardinal(m["h"]) + _meridiem(m)


_AMPM = r"[aApP]\.?[mM]\b\.?"
_TIME = re.compile(rf"\b(?P<h>[01]?\d|2[0-3]):(?P<min>[0-5]\d)\b(?:\s?(?P<ampm>{_AMPM}))?")
_HOUR = re.compile(rf"\b(?P<h>1[0-2]|0?[1-9])\s?(?P<ampm>{_AMPM})")
# "9am-5pm", "9-5 pm", "10:30-11:45": two times with "to" between them (espeak said the two times run together)
_TIME_RANGE = re.compile(rf"(?P<a>{_TIME.pattern}|\b(?:1[0-2]|0?[1-9])(?=\s?[-–]\s?(?:1[0-2]|0?[1-9])\s?{_AMPM})|"
                         rf"{_HOUR.pattern})\s?[-–]\s?(?P<b>{_TIME.pattern}|{_HOUR.pattern})".replace("(?P<h>", "(?:")
                         .replace("(?P<min>", "(?:").replace("(?P<ampm>", "(?:"))


_DAYS = {"Mon": "Monday", "Tue": "Tuesday", "Tues": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday",
         "Thur": "Thursday", "Thurs": "Thursday", "Fri": "Friday", "Sat": "Saturday", "Sun": "Sunday"}
# "Mon-Fri": days' abbreviations only in a range, where no verb ("sat") or name ("Sun") can be meant
_DAY = "|".join(sorted(_DAYS, key=len, reverse=True))
_DAY_RANGE = re.compile(rf"\b(?P<a>{_DAY})\.?\s?[-–]\s?(?P<b>{_DAY})\b\.?")


def _day_range(m: re.Match) -> str:
    return _keep_stop(m, f"{_DAYS[m['a']]} to {_DAYS[m['b']]}")


def _clock(text: str) -> str:
    """One side of a time range, said without a full stop of its own."""
    if m := _TIME.fullmatch(text):
        return _time(m).rstrip(".")
    m = _HOUR.fullmatch(text)
    return cardinal(text) if m is None else _hour(m).rstrip(".")


def _time_range(m: re.Match) -> str:
    return _keep_stop(m, f"{_clock(m['a'])} to {_clock(m['b'])}")


MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
MONTH_ABBREVIATIONS = r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec"  # a regex alternation (chunking's too)
_MONTH = r"(?P<month>January|February|March|April|May|June|July|August|September|October|November|December|" \
         rf"(?:{MONTH_ABBREVIATIONS})\b\.?)"


def _month(name: str) -> str:
    return next(full for full in MONTHS if full.lower().startswith(name.rstrip(".").lower()[:3]))


def _date_words(month: int | str, day: str, yr: str | None) -> str:
    name = MONTHS[month - 1] if isinstance(month, int) else _month(month)
    return f"{name} {ordinal(day)}" + (f" {year(yr)}" if yr else "")


def _month_day(m: re.Match) -> str:
    return _date_words(m["month"], m["day"], m["year"])


def _day_month(m: re.Match) -> str:
    the = "" if re.search(r"\bthe\s+$", m.string[:m.start()], re.I) else "the "
    return f"{the}{ordinal(m['day'])} of {_month(m['month'])}" + (f" {year(m['year'])}" if m["year"] else "")


def _iso_date(m: re.Match) -> str:
    return _date_words(int(m["month"]), m["day"], m["year"])


def _slash_date(m: re.Match, day_first: bool) -> str:
    """'12/25/2024' (American: month first) or '25/12/2024' (British: day first); a first number over 12 can
    only be a day, whichever the order."""
    first, second = int(m["a"]), int(m["b"])
    day, month = (first, second) if day_first or first > 12 else (second, first)
    if month > 12 or not 1 <= day <= 31:
        return m.group(0)
    yr = m["y"] if len(m["y"]) == 4 else "20" + m["y"]
    return _date_words(month, str(day), yr)


# -- years, decades, ordinals, percentages, units, plain numbers ------------------------------------------------
def _decades(m: re.Match) -> str:
    """'1980s' -> 'nineteen eighties', "'90s" / '90s' -> 'nineties', '1900s' -> 'nineteen hundreds',
    '100s' -> 'hundreds'."""
    n = m["short"] + "0" if m["short"] else m["n"]
    if len(n) == 4 and 1100 <= int(n) <= 2099 and not n.endswith("000"):
        words = year(n).split(" ")
    else:
        words = cardinal(n).split(" ")
        if words[0] == "one" and len(words) == 2:  # "the 1000s": thousands, not "one thousands"
            words = words[1:]
    return " ".join(words[:-1] + [_plural(words[-1])])


def _number_or_year(n: str) -> str:
    return year(n) if len(n) == 4 and 1100 <= int(n) <= 2099 else cardinal(n)


def _range(m: re.Match) -> str:
    return f"{_number_or_year(m['a'])} to {_number_or_year(m['b'])}"


_UNITS = {  # symbol: (singular, plural)
    "km": ("kilometer", "kilometers"), "m": ("meter", "meters"), "cm": ("centimeter", "centimeters"),
    "mm": ("millimeter", "millimeters"), "mi": ("mile", "miles"), "ft": ("foot", "feet"),
    "kg": ("kilogram", "kilograms"), "g": ("gram", "grams"), "mg": ("milligram", "milligrams"),
    "lb": ("pound", "pounds"), "lbs": ("pound", "pounds"), "oz": ("ounce", "ounces"),
    "l": ("liter", "liters"), "ml": ("milliliter", "milliliters"),
    "mph": ("mile per hour", "miles per hour"), "km/h": ("kilometer per hour", "kilometers per hour"),
    "kph": ("kilometer per hour", "kilometers per hour"),
    "°C": ("degree Celsius", "degrees Celsius"), "°F": ("degree Fahrenheit", "degrees Fahrenheit"),
    "°": ("degree", "degrees"),
    "Hz": ("hertz", "hertz"), "kHz": ("kilohertz", "kilohertz"), "MHz": ("megahertz", "megahertz"),
    "GHz": ("gigahertz", "gigahertz"), "kW": ("kilowatt", "kilowatts"), "kWh": ("kilowatt hour", "kilowatt hours"),
    "W": ("watt", "watts"), "V": ("volt", "volts"),
    "KB": ("kilobyte", "kilobytes"), "MB": ("megabyte", "megabytes"), "GB": ("gigabyte", "gigabytes"),
    "TB": ("terabyte", "terabytes"), "ms": ("millisecond", "milliseconds"),
}
_UNIT = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))


def _unit(m: re.Match) -> str:
    one, many = _UNITS[m["unit"].replace(" ", "")]
    start = f"{cardinal(m['a'])} to " if m["a"] else ""  # "15-20 km/h"
    return _keep_stop(m, f"{start}{cardinal(m['n'])} {one if m['n'] == '1' and not m['a'] else many}")


def _year(m: re.Match) -> str:
    return year(m["year"])


def _number(m: re.Match) -> str:
    return ("minus " if m["minus"] else "") + cardinal(m["n"])


def _digits(m: re.Match) -> str:
    groups = re.findall(r"\d+", m.group(0))
    return ", ".join(" ".join(num2words(int(d)) for d in g) for g in groups)


# "3/4" and "¾" as fractions, "1 1/2" as "one and a half": only over denominators that are read as fractions (so
# "24/7", "9/11" and "50/50" are not); a slash date has a year ("12/25/2024"), taken by an earlier rule
_FRACTION_DENOMINATORS = (2, 3, 4, 5, 6, 8, 10, 12, 16, 32, 64, 100)
_VULGAR = {"½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5), "⅖": (2, 5), "⅗": (3, 5),
           "⅘": (4, 5), "⅙": (1, 6), "⅚": (5, 6), "⅛": (1, 8), "⅜": (3, 8), "⅝": (5, 8), "⅞": (7, 8)}
_FRACTION = (r"(?<![\w/.])(?:(?P<whole>\d+)(?:\s+(?=\d)|\s?(?=[" + "".join(_VULGAR) + r"])))?"
             r"(?:(?P<num>\d{1,6})/(?P<den>" + "|".join(map(str, sorted(_FRACTION_DENOMINATORS, reverse=True)))
             + r")(?![\w/]|\.\d)|(?P<vulgar>[" + "".join(_VULGAR) + "]))")


def _fraction(m: re.Match) -> str:
    num, den = _VULGAR[m["vulgar"]] if m["vulgar"] else (int(m["num"]), int(m["den"]))
    one, many = {2: ("half", "halves"), 4: ("quarter", "quarters")}.get(den, (ordinal(str(den)), None))
    part = f"{cardinal(str(num))} {one if num == 1 else many or one + 's'}"
    if m["whole"] is None:
        return part
    return f"{cardinal(m['whole'])} and {'a ' + one if num == 1 else part}"


# -- Roman numerals -------------------------------------------------------------------------------------------------
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_value(numeral: str) -> int | None:
    """The value of a canonically written Roman numeral ('XIV' -> 14), or None ('IIII', 'VX' are not canonical)."""
    total = 0
    for a, b in zip(numeral, numeral[1:] + " "):
        v = _ROMAN_VALUES[a]
        total += -v if b != " " and _ROMAN_VALUES[b] > v else v
    return total if _to_roman(total) == numeral else None


def _to_roman(n: int) -> str:
    out = ""
    for v, s in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
                 (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        count, n = divmod(n, v)
        out += s * count
    return out


# After these words a numeral is a count: "Chapter IV" -> "Chapter four", "World War II" -> "World War two".
_COUNTED = r"Chapter|Part|Book|Volume|Act|Scene|Section|Article|Appendix|Phase|Stage|Level|Season|Episode|War|" \
           r"Super Bowl|Apollo|Rocky|Title|Psalm|Round|Class|Type|Grade"


def _counted_roman(m: re.Match) -> str:
    value = roman_value(m["roman"])
    return m.group(0) if value is None else f"{m['word']} {num2words(value)}"


def _regnal(m: re.Match) -> str:
    """'Henry VIII' -> 'Henry the eighth'. Only numerals of I, V and X, of two letters or more or a lone V
    ('Henry V'), so that "Washington DC", "Malcolm X" and the pronoun "I" are left alone."""
    value = roman_value(m["roman"])
    return m.group(0) if value is None else f"{m['name']} the {num2words(value, to='ordinal')}"


# -- abbreviations, URLs, e-mail ----------------------------------------------------------------------------------
_TITLES = {"Dr": "Doctor", "Mr": "Mister", "Mrs": "Missus", "Ms": "Miz", "Prof": "Professor", "Sen": "Senator",
           "Gov": "Governor", "Rev": "Reverend", "Gen": "General", "Capt": "Captain", "Lt": "Lieutenant",
           "Sgt": "Sergeant", "Col": "Colonel", "Rep": "Representative", "Mt": "Mount", "Ft": "Fort"}
_ABBREVIATIONS = {"etc.": "et cetera", "e.g.": "for example", "i.e.": "that is", "vs.": "versus", "vs": "versus",
                  "approx.": "approximately", "Jr.": "Junior", "Sr.": "Senior", "Inc.": "Incorporated",
                  "Ltd.": "Limited", "Co.": "Company", "Ave.": "Avenue", "Blvd.": "Boulevard", "Rd.": "Road",
                  "dept.": "department", "est.": "established", "ext.": "extension"}


def _title(m: re.Match) -> str:
    return _TITLES[m["title"]]


def _saint_or_street(m: re.Match) -> str:
    # "Baker St." is a street (a name comes before), "St. Louis" a saint.
    return _keep_stop(m, "Street") if re.search(r"[A-Z]\w*\s+$", m.string[:m.start()]) else "Saint"


def _initialism(m: re.Match) -> str:
    """'U.S.', 'Ph.D.', 'J.R.R.' -> 'US', 'PHD', 'JRR': capitals without the stops, which espeak spells letter by
    letter (a stop between letters reached the phonemes, which Kokoro says as a pause; spaced out, 'A I' was read
    as the article and the pronoun)."""
    return _keep_stop(m, "".join(c.upper() for c in m.group(0) if c.isalpha()))


def _abbreviation(m: re.Match) -> str:
    word = _ABBREVIATIONS[m.group(0)]
    return word if m.group(0) in ("e.g.", "i.e.", "vs.", "vs") else _keep_stop(m, word)


_SYMBOLS = {".": "dot", "/": "slash", "-": "dash", "_": "underscore", "@": "at", ":": "colon", "?": "question mark",
            "=": "equals", "&": "and", "#": "hash", "~": "tilde", "+": "plus"}


def _spell_address(address: str) -> str:
    """'docs.example.com/a_b' -> 'docs dot example dot com slash a underscore b': separators by name, digit
    runs as numbers, names as words (espeak spells what it cannot read as a word)."""
    words = []
    for part in re.findall(r"[A-Za-z]+|\d+|\S", address):
        if part.isdigit():
            words.append(cardinal(part) if len(part) < 5 else " ".join(num2words(int(d)) for d in part))
        elif part in _SYMBOLS:
            words.append(_SYMBOLS[part])
        elif part.isalpha():
            words.append(part.lower() if not part.isupper() or len(part) > 3 else " ".join(part))
    return " ".join(words)


def _url(m: re.Match) -> str:
    address = re.sub(r"^https?://", "", m.group(0), flags=re.I).rstrip("/")
    if address.lower().startswith("www."):
        address = address[4:]
        return "w w w dot " + _spell_address(address)
    return _spell_address(address)


def _email(m: re.Match) -> str:
    return _spell_address(m.group(0))


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern
    spoken: Callable[[re.Match], str]
    langs: tuple[str, ...] = ("en-us", "en-gb")


_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_TLD = r"com|org|net|edu|gov|io|dev|ai|co|uk|de|fr|info|app"
_SLASH_DATE = r"\b(?P<a>[0-3]?\d)/(?P<b>[0-3]?\d)/(?P<y>\d{4}|\d{2})\b"
_END = r"(?=[.,;:!?)\]\"'”’]*(?:\s|$))"  # an address ends before trailing punctuation and a space

RULES = [
    # Each pattern that may run over a long run of its characters starts only where such a run starts (a lookbehind,
    # not \b): tried at every position of the run, it would cost time quadratic in its length
    Rule("email", re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), _email),
    Rule("url", re.compile(rf"(?i)\b(?:https?://|www\.)\S+?{_END}|(?<![\w.-])(?:[a-z0-9-]+\.)+(?:{_TLD})\b(?:/\S*?)?"
                           rf"{_END}"),
         _url),
    Rule("money", re.compile(rf"(?:(?P<cur>[$£€])\s?|\b(?P<code>{_CODE})\s)(?P<amount>{_NUM})(?:\s?(?P<scale>"
                             r"thousand|million|billion|trillion|[kKmMbBtT]n?)\b)?"), _money),
    Rule("money after", re.compile(rf"(?<![\w.])(?P<amount>{_NUM})(?:\s?(?P<scale>thousand|million|billion|trillion)\b)?"
                                   rf"\s(?P<code>{_CODE})\b(?P<cur>)"), _money),
    Rule("time range", _TIME_RANGE, _time_range),
    Rule("day range", _DAY_RANGE, _day_range),
    Rule("time", _TIME, _time),
    Rule("hour", _HOUR, _hour),
    Rule("iso date", re.compile(r"\b(?P<year>\d{4})-(?P<month>0[1-9]|1[0-2])-(?P<day>0[1-9]|[12]\d|3[01])\b"),
         _iso_date),
    Rule("US date", re.compile(_SLASH_DATE), lambda m: _slash_date(m, day_first=False), ("en-us",)),
    Rule("British date", re.compile(_SLASH_DATE), lambda m: _slash_date(m, day_first=True), ("en-gb",)),
    Rule("fraction", re.compile(_FRACTION), _fraction),
    # what is left of number/number is said as two numbers ("24/7", "9/11"), not with the slash espeak reads out
    Rule("number pair", re.compile(r"(?<![\w/.])(?P<a>\d+)/(?P<b>\d+)(?![\w/]|\.\d)"),
         lambda m: f"{cardinal(m['a'])} {cardinal(m['b'])}"),
    Rule("month day", re.compile(rf"\b{_MONTH}\s+(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?\b"
                                 r"(?:,?\s+(?P<year>1\d{3}|20\d{2})\b)?"), _month_day),
    Rule("day month", re.compile(rf"\b(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}"
                                 r"(?:,?\s+(?P<year>1\d{3}|20\d{2})\b)?"), _day_month),
    # "Sept. 2024": a month's abbreviation said in full before a year (a full name is said as it stands)
    Rule("month year", re.compile(rf"\b{_MONTH}\s+(?P<year>1\d{{3}}|20\d{{2}})\b(?![.,]\d)"),
         lambda m: f"{_month(m['month'])} {year(m['year'])}"),
    Rule("decades", re.compile(r"(?:['’](?P<short>\d)|\b(?P<n>\d*[1-9]0+))0?s\b"), _decades),
    Rule("ordinal", re.compile(r"\b(?P<n>\d{1,3}(?:,\d{3})+|\d+)(?:st|nd|rd|th)\b"), lambda m: ordinal(m["n"])),
    Rule("percent", re.compile(rf"(?<![\d.,])(?:(?P<a>{_NUM})%?\s?[-–]\s?)?(?P<n>{_NUM})\s?%"),
         lambda m: (f"{cardinal(m['a'])} to " if m["a"] else "") + f"{cardinal(m['n'])} percent"),
    Rule("unit", re.compile(rf"\b(?:(?P<a>{_NUM})\s?[-–]\s?)?(?P<n>{_NUM})\s?(?P<unit>{_UNIT}|° ?[CF])"
                            r"(?:(?<=[a-z])\.(?!\w))?(?![\w/])"), _unit),
    # "1.2M units", "3bn people": a scale's letter after a number (not K: "5K" is as often a race as a thousand)
    Rule("scale", re.compile(rf"(?<![\w.$£€])(?P<n>{_NUM})(?P<scale>M|B|bn|mn)\b"),
         lambda m: f"{cardinal(m['n'])} {_SCALES[m['scale'].lower()]}"),
    Rule("times", re.compile(rf"(?<![\w.])(?P<n>{_NUM})x\b"), lambda m: f"{cardinal(m['n'])} times"),  # "2x", "1.5x"
    Rule("phone", re.compile(r"(?<![\w-])(?:\+?1[-.\s])?(?:\(\d{3}\)\s?|\d{3}[-.])?\d{3}[-.]\d{4}\b"), _digits),
    Rule("range", re.compile(r"(?<![\w.-])(?P<a>\d+)\s?[-–]\s?(?P<b>\d+)(?![\w.-]?\d)"), _range),
    Rule("number sign", re.compile(r"\bNo\.(?=\s?\d)|#(?=\d)"), lambda m: "number "),
    Rule("year", re.compile(r"\b(?P<year>1[1-9]\d\d|20\d\d)\b(?![.,]\d)"), _year),
    Rule("counted roman", re.compile(rf"\b(?P<word>{_COUNTED})\s+(?P<roman>[IVXLCDM]+)\b"), _counted_roman),
    Rule("regnal roman", re.compile(r"\b(?P<name>[A-Z][a-z]+)\s+(?P<roman>[IVX]{2,}|V)\b(?!\.\w)"),
         _regnal),
    Rule("title", re.compile(rf"\b(?P<title>{'|'.join(_TITLES)})\.(?=\s)"), _title),
    Rule("saint or street", re.compile(r"\bSt\.(?=\s|$)"), _saint_or_street),
    Rule("abbreviation", re.compile(r"(?<!\w)(?:" + "|".join(re.escape(a) for a in _ABBREVIATIONS) + r")(?=\s|$|,)"),
         _abbreviation),
    Rule("with", re.compile(r"(?<![\w/])[wW]/(?:(?P<o>o)(?!\w)|(?=\s))"), lambda m: "without" if m["o"] else "with"),
    Rule("initialism", re.compile(r"(?<![\w.])(?:[A-Za-z][a-z]?\.){2,}(?!\w)"), _initialism),
    Rule("feet and inches", re.compile(r"\b(?P<ft>[1-9])'\s?(?P<inch>1[01]|[0-9])(?:\"|'')"),
         lambda m: f"{cardinal(m['ft'])} foot {cardinal(m['inch'])}"),
    Rule("number", re.compile(rf"(?:(?P<minus>(?<![\w.])-)|(?<![\w.]))(?P<n>{_NUM})(?!\w|\.\d)"), _number),
]


def normalize_spans(text: str, lang: str = "en-us") -> list[tuple[str, str]]:
    """(original, spoken) pieces covering `text` in order; a piece no rule touched is its own spoken form."""
    # Pieces are (start, end, spoken or None while no rule has taken them). A rule searches the whole text
    # between a piece's bounds, so that what it looks at around a match is the text's, not a fragment's.
    pieces: list[tuple[int, int, str | None]] = [(0, len(text), None)] if text else []
    for rule in RULES:
        if lang not in rule.langs:  # only English has rules: other languages' G2P read their own numbers
            continue
        out = []
        for start, end, spoken in pieces:
            if spoken is not None:
                out.append((start, end, spoken))
                continue
            for m in rule.pattern.finditer(text, start, end):
                if m.start() > start:
                    out.append((start, m.start(), None))
                out.append((m.start(), m.end(), rule.spoken(m)))
                start = m.end()
            if start < end:
                out.append((start, end, None))
        pieces = out
    return [(text[a:b], text[a:b] if spoken is None else spoken) for a, b, spoken in pieces]


def normalize(text: str, lang: str = "en-us") -> str:
    """The words a person reads aloud for `text`: '$3.99 at 9:45 am' -> 'three dollars and ninety-nine cents at
    nine forty-five a m'."""
    return "".join(spoken for _, spoken in normalize_spans(text, lang))
