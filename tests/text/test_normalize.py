"""Normalization: each case is phonemized as its spelled-out reading; plain text is left as it is; --no-normalize."""
import pytest

from tilewave.text import EspeakPhonemizer
from tilewave.text.frontend import text_chunks
from tilewave.text.normalize import RULES, normalize, normalize_spans, roman_value

CASES = {
    "money": [
        ("The ticket was $3.99 in the end.", "The ticket was three dollars and ninety-nine cents in the end."),
        ("She paid £12.50 for lunch.", "She paid twelve pounds and fifty pence for lunch."),
        ("A coffee costs €4 here.", "A coffee costs four euros here."),
        ("It is USD 3.99 or 35 EUR.", "It is three US dollars and ninety-nine cents or thirty-five euros."),
        ("It sold for $5.", "It sold for five dollars."),
        ("They raised $1.2 million last year.", "They raised one point two million dollars last year."),
        ("He found $0.25 on the floor.", "He found twenty-five cents on the floor."),
        ("Only $1 was left.", "Only one dollar was left."),
        ("The car is $2,500 now.", "The car is two thousand five hundred dollars now."),
    ],
    "dates": [
        ("We met on March 5, 2024.", "We met on March fifth twenty twenty-four."),
        ("It opened on 2019-07-14 downtown.", "It opened on July fourteenth twenty nineteen downtown."),
        ("Born on the 4th of July.", "Born on the fourth of July."),
        ("The deadline is Dec. 3rd for all.", "The deadline is December third for all."),
        ("It shipped in Sept. 2024 at last.", "It shipped in September twenty twenty-four at last."),
        ("They came on 1 May 1999.", "They came on the first of May nineteen ninety-nine."),
        ("Due 12/25/2024 or 31/1/24.", "Due December twenty-fifth twenty twenty-four or January thirty-first twenty "
                                       "twenty-four."),
    ],
    "fractions": [
        ("Add 1/2 cup of milk.", "Add one half cup of milk."),
        ("Three of 4 said 3/4 of them.", "Three of four said three quarters of them."),
        ("It took 2 3/4 hours, then 1 1/2 more.", "It took two and three quarters hours, then one and a half more."),
        ("Use 1½ cups and ⅔ of the flour.", "Use one and a half cups and two thirds of the flour."),
        ("Cut a 5/8 slice, then 3/2 of it.", "Cut a five eighths slice, then three halves of it."),
        ("Open 24/7 since 9/11.", "Open twenty-four seven since nine eleven."),
    ],
    "times": [
        ("The train leaves at 9:45 am.", "The train leaves at nine forty-five a m."),
        ("Dinner is at 7:05 pm tonight.", "Dinner is at seven oh five p m tonight."),
        ("Lunch at 12:00, the bus at 13:00.", "Lunch at twelve o'clock, the bus at thirteen hundred."),
        ("Open Mon-Fri 9am-5pm, or 9-5 pm Sat–Sun. He sat.", "Open Monday to Friday nine a m to five p m, or nine to "
                                                            "five p m Saturday to Sunday. He sat."),
        ("Talks run 10:30–11:45 and 7:05-7:10.", "Talks run ten thirty to eleven forty-five and seven oh five to "
                                                 "seven ten."),
        ("Open 9 a.m.-5 p.m. Then closed.", "Open nine a m to five p m. Then closed."),
        ("Wake me at 6:00 please.", "Wake me at six o'clock please."),
        ("The shop opens at 10 a.m. Then we go.", "The shop opens at ten a m. Then we go."),
        ("It ended at 23:30 sharp.", "It ended at twenty-three thirty sharp."),
    ],
    "years and decades": [
        ("The 1980s were loud.", "The nineteen eighties were loud."),
        ("Music from the '90s is back.", "Music from the nineties is back."),
        ("In 1984 it rained.", "In nineteen eighty-four it rained."),
        ("Since 2010 we have grown.", "Since twenty ten we have grown."),
        ("The 1900s began slowly.", "The nineteen hundreds began slowly."),
        ("In 2005 she left.", "In two thousand and five she left."),
        ("Songs of the 60s and the 1000s of fans.", "Songs of the sixties and the thousands of fans."),
        ("It ran from 1990-1995 and on pages 10–20.",
         "It ran from nineteen ninety to nineteen ninety-five and on pages ten to twenty."),
    ],
    "ordinals": [
        ("She finished 21st of forty.", "She finished twenty-first of forty."),
        ("Our 2nd try took 103rd place.", "Our second try took one hundred and third place."),
    ],
    "percentages": [
        ("Sales rose 12.5% this year.", "Sales rose twelve point five percent this year."),
        ("About 40 % agree.", "About forty percent agree."),
    ],
    "units": [
        ("The lake is 5 km away.", "The lake is five kilometers away."),
        ("It weighs 3 kg in total.", "It weighs three kilograms in total."),
        ("It was 20°C outside.", "It was twenty degrees Celsius outside."),
        ("The limit is 60 mph here.", "The limit is sixty miles per hour here."),
        ("Cut a 1 m rope.", "Cut a one meter rope."),
        ("He is 5'11\" and she is 6' 2'' tall.", "He is five foot eleven and she is six foot two tall."),
        ("Mt. Everest is 29,032 ft. tall, or 6 ft. Then more.", "Mount Everest is twenty-nine thousand and thirty-two "
                                                               "feet tall, or six feet. Then more."),
        ("Winds of 15-20 km/h cut sales 2-3% from 1.2M to 3bn.", "Winds of fifteen to twenty kilometers per hour cut "
                                                                "sales two to three percent from one point two "
                                                                "million to three billion."),
        ("It runs 2x, even 1.5x faster, on 2x4 boards.", "It runs two times, even one point five times faster, on "
                                                         "2x4 boards."),
    ],
    "roman numerals": [
        ("After World War II the town grew.", "After World War two the town grew."),
        ("Henry VIII had six wives.", "Henry the eighth had six wives."),
        ("Read Chapter IV tonight.", "Read Chapter four tonight."),
        ("Louis XIV built it.", "Louis the fourteenth built it."),
    ],
    "abbreviations": [
        ("Dr. Smith met Mr. Jones.", "Doctor Smith met Mister Jones."),
        ("We moved to St. Louis last year.", "We moved to Saint Louis last year."),
        ("The shop is on Baker St. Come by.", "The shop is on Baker Street. Come by."),
        ("Bring fruit, bread, etc. Then rest.", "Bring fruit, bread, et cetera. Then rest."),
        ("Cats vs. dogs, e.g. at home.", "Cats versus dogs, for example at home."),
        ("Call ext. 204 in Ft. Worth.", "Call extension two hundred and four in Fort Worth."),
        ("The U.S. team has a Ph.D. in A.I. now.", "The US team has a PHD in AI now."),
        ("Tea w/ milk, w/o sugar.", "Tea with milk, without sugar."),
    ],
    "urls and e-mail": [
        ("Read https://example.com/docs today.", "Read example dot com slash docs today."),
        ("Visit www.tilewave.dev now.", "Visit w w w dot tilewave dot dev now."),
        ("Write to anna.lee@example.org soon.", "Write to anna dot lee at example dot org soon."),
    ],
    "numbers": [
        ("We counted 1,234 birds.", "We counted one thousand two hundred and thirty-four birds."),
        ("Pi is about 3.14 here.", "Pi is about three point one four here."),
        ("It fell to -5 overnight.", "It fell to minus five overnight."),
        ("I have 42 cats.", "I have forty-two cats."),
        ("Card 4111111111111111 is 16 digits.", "Card four one one one one one one one one one one one one one one one "
                                               "is sixteen digits."),
        ("He wore No. 7 and I wore #23.", "He wore number seven and I wore number twenty-three."),
    ],
    "phone numbers": [
        ("Call 555-123-4567 today.", "Call five five five, one two three, four five six seven today."),
        ("Or try (555) 987-6543.", "Or try five five five, nine eight seven, six five four three."),
        ("Dial 867-5309 now.", "Dial eight six seven, five three zero nine now."),
    ],
}
UNCHANGED = ["I went home.", "Then I saw a cat.", "May I come in?", "Malcolm X spoke in Washington DC.",
             "It is a fine day, isn't it?", "The price is right; I agree.", "Version x3 works."]


@pytest.fixture(scope="module")
def us():
    return EspeakPhonemizer("en-us")


@pytest.mark.parametrize("written, spelled", [c for cases in CASES.values() for c in cases],
                         ids=[f"{k}-{i}" for k, cases in CASES.items() for i in range(len(cases))])
def test_a_case_sounds_like_its_spelled_out_reading(us, written, spelled):
    said, expected = us([normalize(written), spelled])
    assert said == expected, (normalize(written), spelled)


@pytest.mark.parametrize("written", ["It was $3.99.", "At 9:45 am.", "In the 1980s.", "After World War II.",
                                     "See https://example.com/docs now."])
def test_the_readings_espeak_gets_wrong_are_the_ones_fixed(us, written):
    assert us([written]) != us([normalize(written)])


@pytest.mark.parametrize("text", UNCHANGED)
def test_plain_text_and_the_pronoun_i_are_left_alone(text):
    assert normalize(text) == text


def test_urls_are_not_spelled_letter_by_letter(us):
    spoken = normalize("See https://example.com/docs and http://www.a-b.org/x_y?q=1.")
    assert "h t t p" not in spoken and "colon" not in spoken and "https" not in spoken
    assert spoken == "See example dot com slash docs and w w w dot a dash b dot org slash x underscore y question " \
                     "mark q equals one."


def test_a_time_leaves_no_colon_in_the_phonemes(us):
    (ps,) = us([normalize("At 9:45 am we left.")])
    assert ":" not in ps


def test_spans_keep_each_rewritten_piece_beside_its_original():
    text = "I paid $3.99 at 9:45 am, on 2019-07-14."
    spans = normalize_spans(text)
    assert "".join(o for o, _ in spans) == text
    rewritten = {o: s for o, s in spans if o != s}
    assert rewritten == {"$3.99": "three dollars and ninety-nine cents", "9:45 am": "nine forty-five a m",
                         "2019-07-14": "July fourteenth twenty nineteen"}


def test_roman_numerals_are_read_only_when_canonical():
    assert [roman_value(r) for r in ("IV", "XIV", "MCMLXXXIV", "IIII", "VX", "DC")] == [4, 14, 1984, None, None, 600]
    assert normalize("Chapter IIII opens.") == "Chapter IIII opens."


def test_every_rule_is_exercised_by_a_case():
    written = [w for cases in CASES.values() for w, _ in cases]
    unused = [r.name for r in RULES if not any(r.pattern.search(w) for w in written)
              and not (r.langs == ("en-gb",) and r.pattern.search("On 3/4/2020."))]
    assert not unused


def test_british_dates_are_day_first():
    assert normalize("On 3/4/2020.", lang="en-gb") == "On April third twenty twenty."
    assert normalize("On 3/4/2020.", lang="en-us") == "On March fourth twenty twenty."


def test_other_languages_are_not_rewritten():
    assert normalize("Il a payé 3,50 € à 9:45.", lang="fr-fr") == "Il a payé 3,50 € à 9:45."


def test_no_normalize_hands_espeak_the_text_as_written(us):
    text = "It costs $3.99 at 9:45 am."
    (raw,) = us([text])
    (off,) = text_chunks(text, us, normalize=False)
    (on,) = text_chunks(text, us)
    assert off.phonemes == raw and ":" in off.phonemes
    assert on.phonemes == us([normalize(text)])[0] != raw
    assert off.text == on.text == text


def test_say_and_phonemize_take_no_normalize(tmp_path, monkeypatch, capsys):
    from tests.engine.fake_model import FakeKokoro
    from tests.test_cli_say import say
    from tilewave.cli import main
    from tilewave.engine import session as engine_session
    from tilewave.text import vocab

    model = FakeKokoro()
    monkeypatch.setattr(engine_session, "load_model", lambda weights, device: model)
    text = "It costs $3.99."
    assert say(text, "-o", str(tmp_path / "a.wav"), "--device", "cpu") == 0
    assert say(text, "-o", str(tmp_path / "b.wav"), "--device", "cpu", "--no-normalize") == 0
    table = {i: s for s, i in vocab().items()}
    said = ["".join(table[int(i)] for i in call["ids"][0, 1:-1]) for call in model.calls]
    us = EspeakPhonemizer("en-us")
    assert said == [us([normalize(text)])[0], us([text])[0]]

    capsys.readouterr()
    assert main(["phonemize", text]) == 0 and main(["phonemize", "--no-normalize", text]) == 0
    assert capsys.readouterr().out.splitlines() == said


@pytest.mark.parametrize("text", ["9" * 5000, "$" + "9" * 5000, "9" * 5000 + "th", "9" * 5000 + "%",
                                  "9" * 5000 + " km", "USD " + "9" * 5000, "1." + "9" * 5000, "9" * 5000 + "/2"])
def test_a_number_of_thousands_of_digits_is_read_digit_by_digit(text):
    # past 4,300 digits int() refuses a string (ValueError, which reached the caller); past 15 a person reads digits
    words = normalize(text).split()
    assert sum(w == "nine" for w in words) == 5000, words[:8]
