"""The manifests of the batch tests: short items of a few words with seeds (the real model on the CPU), and bad
ones of every kind a batch must survive, each with a word its error must name."""
import json

GOOD = [
    {"id": "g01", "text": "Hello there.", "seed": 1},
    {"id": "g02", "text": "Good night.", "voice": "jm_kumo", "seed": 2},
    {"id": "g03", "text": "Yes, of course.", "speed": 1.3, "seed": 3},
    {"id": "g04", "text": "See you soon.", "seed": 4, "lang": "en-gb"},
    {"id": "g05", "text": "Thank you.", "seed": 5, "speed": 0.9},
    {"id": "g06", "text": "It is raining.", "voice": "jf_nezumi", "seed": 6},
    {"id": "g07", "text": "Come in.", "seed": 7},
    {"id": "g08", "text": "Not today.", "seed": 8, "voice": "jf_alpha:0.5,jm_kumo:0.5"},
    {"id": "g09", "text": "Why not?", "seed": 9},
    {"id": "g10", "text": "Well done.", "seed": 10},
]
BAD = {  # id -> (item, a word of its error)
    "b-voice": ({"id": "b-voice", "text": "Hi.", "voice": "nobody_here", "seed": 1}, "nobody_here"),
    "b-text": ({"id": "b-text", "text": "!!! ???", "seed": 1}, "nothing to say"),
    "b-speed": ({"id": "b-speed", "text": "Hi.", "speed": 9, "seed": 1}, "speed 9"),
    "b-lang": ({"id": "b-lang", "text": "Hi.", "lang": "xx-yy", "seed": 1}, "xx-yy"),
    "b-empty": ({"id": "b-empty", "text": "   ", "seed": 1}, "whitespace"),
}


def write(path, good=GOOD, bad=tuple(BAD)):
    rows = list(good) + [BAD[b][0] for b in bad]
    rows = rows[::2] + rows[1::2]  # the bad ones among the good
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
