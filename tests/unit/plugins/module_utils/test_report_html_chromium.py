"""report.html opened in headless Chromium: the plots render, the page logs no console errors.

Needs Debian's ``chromium`` package (scripts/setup installs it). The page under test
is the one module_utils.report.render writes for facts built from real outputs
(tests/fixtures/report/build_facts.py). A copy of it gets a small probe script
appended (test instrumentation only, not part of the report) that logs how many
images decoded; Chromium's console log (--enable-logging=stderr) is then searched
for anything else. A broken page is run through the same probe to show the check
can fail.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "report"))

import build_facts  # noqa: E402
from test_report_render import document  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import render as R  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs headless Chromium: apt-get install -y chromium")
image = pytest.importorskip("matplotlib.image")

PROBE = """<script>
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); });
  if (broken.length) { console.error("PROBE broken images: " + broken.map(function (i) { return i.alt; }).join(" | ")); }
  console.log("PROBE images decoded: " + (imgs.length - broken.length) + " of " + imgs.length);
});
</script>"""
CONSOLE = re.compile(r":CONSOLE(?:\(\d+\)|:\d+)\] \"(.*)\", source: ")


def open_in_chromium(tmp_path, page, name="page", height=3200):
    path = tmp_path / (name + ".html")
    path.write_text(page.replace("</body>", PROBE + "</body>"))
    shot = tmp_path / (name + ".png")
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
         "--user-data-dir=%s" % (tmp_path / "profile"), "--enable-logging=stderr", "--log-level=0",
         "--window-size=1280,%d" % height, "--screenshot=%s" % shot, path.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert shot.exists(), proc.stderr[-3000:]
    return CONSOLE.findall(proc.stderr), image.imread(str(shot))


def test_report_renders_plots_without_console_errors(tmp_path):
    page = R.render_files(document())["report.html"]
    n_images = page.count('src="data:image/svg+xml;base64,')
    assert n_images == 7
    console, pixels = open_in_chromium(tmp_path, page)
    assert console == ["PROBE images decoded: %d of %d" % (n_images, n_images)]
    rgb = pixels[:, :, :3]
    assert rgb.shape[:2] == (3200, 1280)
    not_white = (rgb < 0.94).any(axis=2).mean()
    assert not_white > 0.02, "the screenshot is (nearly) blank: %.4f of pixels are not white" % not_white
    # matplotlib's first line colour (#1f77b4) on screen: the plots were drawn, not just the tables.
    blue = (abs(rgb[:, :, 0] - 0x1f / 255.0) < 0.08) & (abs(rgb[:, :, 1] - 0x77 / 255.0) < 0.08) & \
        (abs(rgb[:, :, 2] - 0xb4 / 255.0) < 0.08)
    assert blue.sum() > 500, "only %d plot-coloured pixels on the screenshot" % blue.sum()


def test_probe_catches_a_broken_page(tmp_path):
    page = R.render_files(document(facts={"te2": {"nvmeof_initiator_result": build_facts.initiator_fact()}}),
                          plots=True)["report.html"]
    broken = page.replace('src="data:image/svg+xml;base64,', 'src="data:image/svg+xml;base64,AAAA', 1)
    broken = broken.replace("</body>", "<script>undefinedFunction();</script></body>")
    console, pixels = open_in_chromium(tmp_path, broken, name="broken", height=800)
    assert any(c.startswith("PROBE broken images: fio IOPS and bandwidth") for c in console), console
    assert any("undefinedFunction is not defined" in c for c in console), console
    assert "PROBE images decoded: 1 of 2" in console
