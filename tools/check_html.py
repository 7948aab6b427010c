"""Open every page of the built book in headless Chromium and check what a reader sees.

    python tools/check_html.py [_build/html] [--shots _build/screenshots]

For each page (served from 127.0.0.1 by a throwaway HTTP server; the browser
resolves every other host to nothing, so the check proves the pages need no
network) it waits for MathJax to finish typesetting and fails if

- any math element is left untypeset, MathJax reports an error or an
  undefined macro, or TeX
  (``$...$``, ``\\(``, ``\\frac``...) shows as plain text outside code, or a
  glued number shows as a numpy repr (``np.float64(...)``);
- an image is broken (not loaded or zero size);
- an internal link points to a missing file or to a missing anchor
  (external links are listed, not followed: there is no network);
- the browser console logs an error, or the page asks the server for a file
  that does not exist.

It saves three screenshots of each page under --shots: the first screen
(NAME.png, 1280 px wide), the whole page at half scale (NAME-full.png), and the
whole page as a 640-pixel-wide screen shows it, at full scale (NAME-narrow.png),
to check that multi-panel figures and display equations stay legible there.
Needs Chromium and its driver (Debian: `apt-get install chromium
chromium-driver`; `make check-html` installs them) and the Python package
selenium. Exits 1 and lists every problem when a page fails.
"""

import argparse
import base64
import functools
import http.server
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service

ROOT = Path(__file__).resolve().parents[1]
MATHJAX_TIMEOUT_S = 60
FULL_PAGE_MAX_PX = 30000  # CSS pixels; taller pages are cut in the full screenshot
NARROW_PX = 640  # width of the narrow-screen screenshot

# Runs in the page: resolves when MathJax (if the page loads it) has typeset everything.
WAIT_FOR_MATHJAX = """
const done = arguments[arguments.length - 1];
const start = Date.now();
function poll() {
  const mj = window.MathJax;
  const wantsMath = document.querySelector('script[src*="mathjax"]') !== null;
  if (!wantsMath) { done('no-mathjax'); return; }
  if (mj && mj.startup && mj.startup.promise) {
    mj.startup.promise.then(() => done('typeset')).catch(e => done('error: ' + e));
    return;
  }
  if (Date.now() - start > 1000 * arguments[0]) { done('timeout: MathJax never started'); return; }
  setTimeout(poll, 100);
}
poll();
"""

WAIT_FOR_IMAGES = """
const done = arguments[arguments.length - 1];
const imgs = Array.from(document.images);
imgs.forEach(img => { img.loading = 'eager'; });
Promise.all(imgs.map(img => img.decode().catch(() => null))).then(() => done(null));
"""

# Runs in the page after typesetting: everything the checks need, as plain data.
INSPECT = r"""
const skip = 'pre, code, script, style, textarea, mjx-container, .highlight, .MathJax';
const math = Array.from(document.querySelectorAll('.math'));
const untypeset = math.filter(el => !el.querySelector('mjx-container'))
                      .map(el => el.textContent.trim().slice(0, 80));
// MathJax shows an undefined macro as red text (its noundefined extension).
const mjErrors = Array.from(document.querySelectorAll(
    'mjx-merror, [data-mjx-error], mjx-container mjx-mtext[style*="color: red"]'))
  .map(el => {
    const box = el.closest('mjx-container');
    const mml = box && box.querySelector('mjx-assistive-mml');
    return (el.getAttribute('data-mjx-error') || (mml ? mml.textContent : '')).slice(0, 80);
  });
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const texts = [];
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  const parent = node.parentElement;
  // Hidden text (collapsed solutions, hidden inputs) counts too: a reader can open it.
  if (!parent || !/[$\\(]/.test(node.textContent) || parent.closest(skip)) continue;
  texts.push(node.textContent);
}
const images = Array.from(document.images).map(img => ({
  src: img.currentSrc || img.src, ok: img.complete && img.naturalWidth > 0,
}));
const links = Array.from(document.querySelectorAll('a[href]')).map(a => a.href);
const ids = Array.from(document.querySelectorAll('[id], a[name]'))
                 .map(el => el.id || el.getAttribute('name'));
return {untypeset, mjErrors, texts, images, links, ids,
        height: document.documentElement.scrollHeight};
"""

RAW_TEX = re.compile(
    r"\$\$|(?<![\w$])\$[^$\s][^$\n]{0,200}?[^$\s\\]\$(?![\w$])|\\[()\[\]]"
    r"|\\(?:frac|mathrm|mathbb|alpha|kappa|lambda|Delta|sqrt|begin|end|left|right|hat|operatorname)\b"
)


NUMPY_REPR = re.compile(r"\bnp\.(?:float|int|bool_)\w*\(")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, directory: Path):
        self.missing: list[str] = []
        handler = functools.partial(_Handler, directory=str(directory))
        super().__init__(("127.0.0.1", 0), handler)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def send_error(self, code, message=None, explain=None):
        path = urlparse(self.path).path
        if code == 404 and path != "/favicon.ico":  # browsers ask for it on their own
            self.server.missing.append(path)
        super().send_error(code, message, explain)


BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _first_on_path(names) -> str | None:
    return next((path for path in map(shutil.which, names) if path), None)


def _driver(chromium: str | None, chromedriver: str | None) -> webdriver.Chrome:
    """Headless Chromium; without a chromedriver on PATH selenium finds a matching one."""
    options = webdriver.ChromeOptions()
    if chromium:
        options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1280,1400",
        "--force-device-scale-factor=1",
        # No network: every host but the local server resolves to nothing.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=chromedriver) if chromedriver else Service()
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(120)
    driver.set_script_timeout(MATHJAX_TIMEOUT_S + 30)
    return driver


def _capture(driver: webdriver.Chrome, path: Path, width: int, height: int, scale: float):
    """The page from its top, ``width`` x ``min(height, FULL_PAGE_MAX_PX)`` CSS pixels,
    beyond the viewport, at ``scale``, as a PNG file."""
    clip = {"x": 0, "y": 0, "width": width, "height": min(height, FULL_PAGE_MAX_PX)}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True, "clip": {**clip, "scale": scale}},
    )
    path.write_bytes(base64.b64decode(shot["data"]))


def _screenshots(driver: webdriver.Chrome, height: int, stem: Path) -> None:
    driver.save_screenshot(str(stem.with_suffix(".png")))
    _capture(driver, stem.with_name(stem.name + "-full.png"), 1280, height, 0.5)
    _narrow_screenshot(driver, stem)


def _narrow_screenshot(driver: webdriver.Chrome, stem: Path) -> None:
    """The page as a 640-pixel-wide screen shows it (a small laptop window, a tablet),
    at full scale, to check that figures and equations stay legible: ``stem-narrow.png``."""
    metrics = {"width": NARROW_PX, "height": 1400, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        height = driver.execute_script("return document.documentElement.scrollHeight;")
        _capture(driver, stem.with_name(stem.name + "-narrow.png"), NARROW_PX, height, 1)
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _link_problems(links: list[str], base: str, html: Path, anchors: dict) -> list[str]:
    problems = []
    for link in links:
        url, fragment = urldefrag(link)
        if not url.startswith(base):
            continue  # external (not followed) or mailto
        rel = unquote(urlparse(url).path)[1:] or "index.html"
        target = html / rel
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            problems.append(f"broken link: {link}")
        elif fragment and target.suffix == ".html":
            if target not in anchors:
                anchors[target] = _ids_in(target)
            if unquote(fragment) not in anchors[target]:
                problems.append(f"missing anchor: {link}")
    return problems


def _ids_in(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8", errors="replace")
    return set(re.findall(r'\b(?:id|name)="([^"]+)"', text))


REDIRECT = re.compile(r'<meta http-equiv="refresh" content="\d+;\s*url=([^"]+)"', re.IGNORECASE)


def check_redirect(page: Path) -> list[str] | None:
    """A redirect stub (index.html -> book/intro.html): its target must exist."""
    match = REDIRECT.search(page.read_text(encoding="utf-8", errors="replace"))
    if match is None:
        return None
    target = page.parent / unquote(urldefrag(match.group(1))[0])
    return [] if target.is_file() else [f"redirect to a missing page: {match.group(1)}"]


def check_page(driver, base: str, html: Path, page: Path, shots: Path, anchors: dict):
    rel = page.relative_to(html).as_posix()
    redirect = check_redirect(page)
    if redirect is not None:
        return redirect
    driver.get(base + rel)
    state = driver.execute_async_script(WAIT_FOR_MATHJAX, MATHJAX_TIMEOUT_S)
    driver.execute_async_script(WAIT_FOR_IMAGES)
    info = driver.execute_script(INSPECT)
    problems = [] if state in ("typeset", "no-mathjax") else [f"MathJax: {state}"]
    problems += [f"untypeset math: {t!r}" for t in info["untypeset"]]
    problems += [f"MathJax error: {t!r}" for t in info["mjErrors"]]
    for text in info["texts"]:
        if NUMPY_REPR.search(text):
            problems.append(f"numpy repr in text (glue float(value)): {text.strip()[:100]!r}")
        found = sorted({m.group(0) for m in RAW_TEX.finditer(text)})
        if found:
            problems.append(f"raw TeX in text: {', '.join(found)} in {text.strip()[:100]!r}")
    problems += [f"broken image: {img['src']}" for img in info["images"] if not img["ok"]]
    anchors[page] = set(info["ids"])
    problems += _link_problems(info["links"], base, html, anchors)
    for entry in driver.get_log("browser"):
        if entry["level"] in ("SEVERE", "ERROR") and "/favicon.ico" not in entry["message"]:
            problems.append(f"console error: {entry['message'][:200]}")
    stem = shots / rel.removesuffix(".html").replace("/", "__")
    _screenshots(driver, info["height"], stem)
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", nargs="?", default=ROOT / "_build" / "html", type=Path)
    parser.add_argument("--shots", default=ROOT / "_build" / "screenshots", type=Path)
    parser.add_argument("--chromium", default=_first_on_path(BROWSERS))
    parser.add_argument("--chromedriver", default=shutil.which("chromedriver"))
    args = parser.parse_args(argv)
    html = args.html.resolve()
    pages = sorted(p for p in html.rglob("*.html") if "_static" not in p.parts)
    if not pages:
        print(f"check-html: no pages under {html}")
        return 1
    args.shots.mkdir(parents=True, exist_ok=True)
    server = _Server(html)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    driver = _driver(args.chromium, args.chromedriver)
    failed, anchors, start = {}, {}, time.perf_counter()
    try:
        for page in pages:
            server.missing.clear()
            page_start = time.perf_counter()
            try:
                problems = check_page(driver, base, html, page, args.shots, anchors)
            except WebDriverException as error:
                problems = [f"browser failed on the page: {error.msg}"]
            problems += [f"requested missing file: {p}" for p in server.missing]
            rel = page.relative_to(html).as_posix()
            seconds = time.perf_counter() - page_start
            print(f"{'FAIL' if problems else 'ok  '} {rel} ({seconds:.1f} s)", flush=True)
            if problems:
                failed[rel] = problems
    finally:
        driver.quit()
        server.shutdown()
    for rel, problems in failed.items():
        print(f"\n{rel}:")
        print("\n".join(f"  - {p}" for p in problems[:40]))
        if len(problems) > 40:
            print(f"  ... and {len(problems) - 40} more")
    elapsed = time.perf_counter() - start
    print(f"\n{len(pages)} pages in {elapsed:.0f} s; screenshots in {args.shots}")
    print(f"check-html: {len(pages) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
