"""Take the docs' screenshots of the Dagster UI (docs/images/) in a real, headless Chromium.

To retake them, run `bash run.sh demo`, then `bash run.sh dev` (the UI on http://127.0.0.1:3000),
then `python docs/screenshots.py` with Playwright for Python installed outside the project's .venv
(`pip install --target /tmp/pw playwright pillow` and `PYTHONPATH=/tmp/pw`, or a scratch
virtualenv) and Debian's Chromium at /usr/bin/chromium (`apt-get install chromium`); Playwright
never downloads a browser of its own here.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image
from playwright.sync_api import Locator, Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

UI = "http://127.0.0.1:3000"
IMAGES = Path(__file__).resolve().parent / "images"
VIEWPORT = {"width": 1400, "height": 850}
CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps calling Google's services, which a
# closed network refuses; QUIC and the GPU are not needed for a local page.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 60_000
MAX_BYTES = 400_000


def settle(page: Page, *visible: Locator) -> None:
    """Wait until the UI's queries are done and the elements that prove the page rendered are shown."""
    page.wait_for_load_state("networkidle", timeout=TIMEOUT_MS)
    for locator in visible:
        locator.wait_for(state="visible", timeout=TIMEOUT_MS)
    page.wait_for_load_state("networkidle", timeout=TIMEOUT_MS)


def skip_welcome(page: Page) -> None:
    """Dagster asks a new instance once to join its community; skip it where it shows."""
    skip = page.get_by_role("button", name="Skip")
    try:
        skip.wait_for(state="visible", timeout=3_000)
    except PlaywrightTimeoutError:
        return
    skip.click()
    skip.wait_for(state="hidden", timeout=TIMEOUT_MS)


def wait_until_still(page: Page, locator: Locator) -> None:
    """The graph zooms to fit with an animation: wait until its transform stops changing."""
    page.wait_for_function(
        """el => {
            const now = getComputedStyle(el).transform;
            const still = el.dataset.lastTransform === now;
            el.dataset.lastTransform = now;
            return still;
        }""",
        arg=locator.element_handle(),
        polling=250,
        timeout=TIMEOUT_MS,
    )


def asset_graph(page: Page, path: Path) -> None:
    """The global asset lineage, every group expanded, fitted to the window."""
    page.goto(f"{UI}/asset-groups")
    settle(page, page.get_by_text("Global asset lineage"))
    skip_welcome(page)
    page.keyboard.press("Alt+e")  # the graph's shortcut for "Expand all groups"
    # The tree of groups beside the graph: hidden, so the graph has the width.
    page.get_by_placeholder("Jump to").locator("xpath=ancestor::*[.//button][1]//button").first.click()
    settle(page, page.get_by_text("spine_values", exact=True), page.get_by_text("window_snapshot").first)
    viewport = page.locator('[data-svg-viewport="1"]')
    viewport.dispatch_event("dblclick")  # zoom to fit the whole graph
    wait_until_still(page, viewport.locator(":scope > div").first)
    # Nodes show their facets (checks passed, partitions filled) only from a zoom of 0.6 up.
    settle(page, page.get_by_text("Passed").first, page.get_by_text("100% filled").first)
    page.screenshot(path=path)


def check_page(page: Page, path: Path) -> None:
    """The Checks tab of views/window_changes, one blocking check's latest result selected."""
    page.goto(f"{UI}/assets/views/window_changes?view=checks&checkDetail=changes_conserve_frames")
    settle(page, page.get_by_text("Latest execution"), page.get_by_text("Passed").first,
           page.get_by_text("mismatches").first, page.locator("svg.recharts-surface, canvas").first)
    skip_welcome(page)
    page.screenshot(path=path)


def backfill(page: Page, path: Path) -> None:
    """The Backfills page: the demo's backfill of daily_pipeline, its partitions and status."""
    page.goto(f"{UI}/overview/backfills")
    settle(page, page.get_by_text("daily_pipeline_partition_set").first, page.get_by_text("Success").first)
    skip_welcome(page)
    page.screenshot(path=path)


def shrink(path: Path) -> None:
    """Quantise to a 256-colour palette where the PNG is larger than MAX_BYTES (UI colours are few)."""
    if path.stat().st_size > MAX_BYTES:
        Image.open(path).convert("RGB").quantize(colors=256).save(path, optimize=True)


def main() -> None:
    IMAGES.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=VIEWPORT)
        # The UI's own settings, as a user would pick them: the navigation folded away, and asset
        # nodes showing checks and partitions only, so the whole graph fits with them at 1400x850.
        context.add_init_script("""
            localStorage.setItem('dagster-nav-collapsed', 'true');
            localStorage.setItem('asset-node-facets', JSON.stringify(['checks', 'partitions', 'status']));
        """)
        for take, name in [(asset_graph, "ui-asset-graph.png"), (check_page, "ui-asset-checks.png"),
                           (backfill, "ui-backfill.png")]:
            page = context.new_page()  # a fresh page each: nothing of the last one's layout carries over
            take(page, IMAGES / name)
            page.close()
            shrink(IMAGES / name)
            print(f"{IMAGES / name}: {(IMAGES / name).stat().st_size // 1000} KB")
        browser.close()


if __name__ == "__main__":
    main()
