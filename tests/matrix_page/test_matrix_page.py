"""matrix.html in a real headless Chromium (Debian's `chromium`, driven over its DevTools pipe: cdp.py), offline:
the DOM holds the table, nothing is logged as an error, nothing but the file itself is requested, a click on a
cell opens its checks with their evidence, the filters hide columns, and a phone-wide window scrolls the table,
not the page. The screenshots are kept beside the page (the path is printed)."""

from __future__ import annotations

import json

import pytest

from cdp import Browser, chromium_binary
from matrix_site import FAMILIES, RANGES

pytestmark = pytest.mark.network  # the releases of RANGES, fetched once into the user cache


@pytest.fixture(scope="module")
def browser():
    import parts  # tests/parts.py: skip with the command that installs it (fail under CI=true)

    parts.require("chromium", None if chromium_binary() else "no chromium on PATH")
    with Browser() as b:
        yield b


@pytest.fixture(scope="module")
def document(site):
    return json.loads((site / "matrix.json").read_text())


def test_the_table_renders_with_no_error_and_no_request(browser, site, document):
    page = site / "matrix.html"
    browser.open(page)
    rows = browser.evaluate("document.querySelectorAll('#matrix tbody tr[data-engine]').length")
    assert rows == sum(len(e["versions"]) for e in document["engines"].values())
    cells = browser.evaluate("document.querySelectorAll('#matrix td.c').length")
    assert cells == len(document["rows"])
    heads = browser.evaluate("[...document.querySelectorAll('#matrix thead th.col')].map(t => t.textContent)")
    assert heads[0] == "your pair" and sum(h.startswith(FAMILIES[0]) for h in heads) == 4 + 3  # + DFlash x 2, n-gram
    texts = browser.evaluate("[...document.querySelectorAll('#matrix td.c')].map(t => t.textContent)")
    assert "works" in texts and all(texts)  # every cell says its verdict in words
    assert browser.errors() == []
    assert browser.requests() == [page.resolve().as_uri()]  # the page itself, nothing else
    shot = browser.screenshot(site / "matrix.png")
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000


def test_a_click_opens_the_cells_checks_with_evidence(browser, site, document):
    browser.open(site / "matrix.html")
    assert browser.evaluate("document.getElementById('details').hidden") is True
    selector = "#matrix tr[data-engine='sglang'] td.c.user"
    browser.click(selector)
    assert browser.evaluate("document.getElementById('details').hidden") is False
    title = browser.evaluate("document.querySelector('#details h2').textContent")
    version = document["engines"]["sglang"]["versions"][0]
    assert title == f"sglang {version} \u00b7 your pair"
    row = next(r for r in document["rows"] if r["engine"] == "sglang" and r["version"] == version and r["column"] == "your pair")
    shown = browser.evaluate("[...document.querySelectorAll('#details .check')].map(c => c.dataset.check)")
    assert sorted(shown) == sorted(c["check"] for c in row["checks"])
    links = browser.evaluate("[...document.querySelectorAll('#details .check a')].map(a => a.href)")
    assert links and all(a.startswith("https://github.com/sgl-project/sglang/blob/v" + version + "/python/sglang/") or
                         a.startswith("https://github.com/") for a in links)
    assert any("/python/sglang/" in a for a in links)
    verdict = browser.evaluate("document.querySelector('#details .chip').textContent")
    assert verdict == row["verdict"]
    # issue 33: the panel says each thing once (no list of the failing checks above their boxes, no fix twice)
    codes = browser.evaluate("[...document.querySelectorAll('#details code')].map(c => c.textContent)")
    assert len(codes) == len(set(codes)), codes
    lists = browser.evaluate("[...document.querySelectorAll('#details h3')].map(h => h.textContent)")
    assert "failing checks" not in lists and not {"fixes", "fix, in this order"} <= set(lists)
    assert browser.errors() == [] and len(browser.requests()) == 1  # a click loads nothing (links open on demand)
    print(f"screenshot: {browser.screenshot(site / 'matrix-details.png')}")
    browser.evaluate("document.getElementById('close').click()")
    assert browser.evaluate("document.getElementById('details').hidden") is True


def test_filters_hide_other_families_and_kinds(browser, site):
    browser.open(site / "matrix.html")
    visible = "[...document.querySelectorAll('#matrix thead th.col')].filter(t => t.offsetParent !== null).map(t => t.textContent)"
    assert len(browser.evaluate(visible)) == 1 + 4 * len(FAMILIES) + 5  # the method columns of these families
    browser.evaluate("const f = document.getElementById('family'); f.value = 'gpt-oss'; f.dispatchEvent(new Event('change'))")
    shown = browser.evaluate(visible)
    assert shown[0] == "your pair" and len(shown) == 6 and all(h.startswith("gpt-oss") for h in shown[1:])
    browser.evaluate("const k = document.getElementById('kind'); k.value = 'specforge'; k.dispatchEvent(new Event('change'))")
    assert browser.evaluate(visible) == ["your pair", "gpt-ossspecforge"]
    cells = browser.evaluate("[...document.querySelector('#matrix tr[data-engine]').querySelectorAll('td')]"
                             ".filter(t => t.offsetParent !== null).length")
    assert cells == 2


def test_the_method_selector_shows_one_methods_columns(browser, site):
    browser.open(site / "matrix.html")
    visible = "[...document.querySelectorAll('#matrix thead th.col')].filter(t => t.offsetParent !== null).map(t => t.textContent)"
    options = browser.evaluate("[...document.getElementById('method').options].map(o => o.textContent)")
    assert options == ["all", "EAGLE-3", "DFlash", "MTP heads", "n-gram"]
    browser.evaluate("const m = document.getElementById('method'); m.value = 'dflash'; m.dispatchEvent(new Event('change'))")
    assert browser.evaluate(visible) == ["your pair", "llamaspecforge-dflash", "gpt-ossspecforge-dflash", "llamaspeculators-dflash"]


def test_readable_at_phone_width_with_a_sticky_header(browser, site):
    browser.open(site / "matrix.html", width=390, height=844, mobile=True)
    assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")  # the table scrolls, not the page
    assert browser.evaluate("getComputedStyle(document.querySelector('#matrix thead th')).position") == "sticky"
    browser.evaluate("document.querySelector('.wrap').scrollTop = 400")  # scrolled down, the column heads stay on top
    assert browser.evaluate("document.querySelector('#matrix thead th').getBoundingClientRect().top") == pytest.approx(
        browser.evaluate("document.querySelector('.wrap').getBoundingClientRect().top"), abs=1)
    size = browser.evaluate("parseFloat(getComputedStyle(document.querySelector('#matrix td.c')).fontSize)")
    assert size >= 11
    browser.click("#matrix td.c")
    width = browser.evaluate("document.getElementById('details').getBoundingClientRect().width")
    assert 380 <= width <= 391  # the checks take the phone's width
    assert browser.errors() == []
    print(f"screenshot: {browser.screenshot(site / 'matrix-phone.png')}")
