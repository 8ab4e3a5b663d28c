"""The page at / in headless Chromium (Debian's, driven by playwright): type, choose, speak; the audio element
holds audio of the response's length, the waveform is drawn, the download is offered; a screenshot is kept
in tests/artifacts/page.png."""
import shutil
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import sync_playwright

from tests.engine.fake_model import FakeKokoro
from tilewave.engine import Session
from tilewave.engine.pipeline import join_chunks
from tilewave.server.app import create_app, kokoro_speed
from tilewave.server.local import serve

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
TEXT = "Hello from the page. It streams its audio while the engine makes it, then draws the waveform."


@pytest.fixture(scope="module")
def browser():
    assert shutil.which(CHROMIUM), "chromium is missing: `make browser` installs it"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-background-networking",
            "--autoplay-policy=no-user-gesture-required"])
        yield browser
        browser.close()


def test_the_page_speaks_streams_and_offers_the_download(browser):
    with Session(device="cpu", model=FakeKokoro()) as session, serve(create_app(session)) as url:
        page = browser.new_page(viewport={"width": 1000, "height": 760})
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url + "/")
        page.wait_for_function("document.querySelectorAll('#voice option').length > 10")
        page.fill("#text", TEXT)
        page.select_option("#voice", "bf_emma")
        page.fill("#speed", "1.5")
        page.select_option("#format", "flac")
        page.click("#speak")
        page.wait_for_function("document.getElementById('status').textContent.startsWith('done')", timeout=30_000)
        page.wait_for_function("!document.getElementById('download').hidden", timeout=30_000)
        page.wait_for_function("isFinite(document.getElementById('audio').duration)", timeout=10_000)
        duration = page.evaluate("document.getElementById('audio').duration")
        download = page.get_attribute("#download", "download")
        page.wait_for_function(f"document.querySelectorAll('#words li').length === {len(TEXT.split())}",
                               timeout=30_000)
        listed = page.evaluate("[...document.querySelectorAll('#words li')].map(li => li.firstChild.textContent)")
        painted = page.evaluate("""(() => { const c = document.getElementById('wave');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })()""")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "page.png"), full_page=True)
        # bf_emma reads the text as British English (the language of the stock voice a request names)
        expected = join_chunks([c.audio for c in session.stream(TEXT, speed=kokoro_speed(1.5), lang="en-gb")]).size \
            / 24_000
    assert not errors
    assert duration == pytest.approx(expected, abs=1e-3)
    assert download == "speech.flac"
    assert listed == TEXT.split()  # the word timings, from the captioned-speech endpoint
    assert painted > 1000  # the waveform is drawn
    assert np.isfinite(duration) and duration > 1
