"""The device map at /ui/, in a real headless Chromium (Debian's chromium + chromium-driver, driven by selenium)
against `dramock serve` with the quickstart and partitionable-mig examples applied.

DRAMOCK_UI_SCREENSHOT=docs/device-map.png python -m pytest tests/test_ui.py  also saves the screenshot that the
README shows.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Server, kubectl, node_cluster, results, wait_for

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,1200"]

webdriver = pytest.importorskip("selenium.webdriver")
pytestmark = pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
                                reason="chromium and chromium-driver are not installed (.ci/run installs them)")


@pytest.fixture(scope="module")
def cluster(starts_processes) -> Iterator[Server]:
    with node_cluster("dramock-ex-", "--feature-gates", "DRADeviceCompatibilityGroups=true", grace=3) as s:
        kubectl(s, "apply", "-f", "examples/quickstart/", "-f", "examples/partitionable-mig/",
                "-f", "examples/partitionable-mig/vgpu/")
        for ns, pod in (("quickstart", "gpu-pod"), ("partitionable-mig", "pod-mig-a"),
                        ("partitionable-mig", "pod-mig-b")):
            wait_for(lambda ns=ns, pod=pod: s.request("GET", f"/api/v1/namespaces/{ns}/pods/{pod}")[2]["spec"].get(
                "nodeName"), 60, what=f"{ns}/{pod} scheduled")
        yield s


@pytest.fixture
def browser(starts_processes) -> Iterator:
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="dramock-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _texts(browser, css: str) -> list[str]:
    """The attribute named in `css` ("[data-x]") of every element it selects, read in the page in one step: the
    page re-renders on every watch event, so elements found first and read one by one can be gone by then."""
    attribute = css.split("[")[1].split("]")[0]
    return browser.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), e => e.getAttribute(arguments[1]));",
        css, attribute)


def test_device_map_shows_nodes_devices_holders_and_updates_live(cluster, browser):
    from selenium.webdriver.common.by import By

    slices = json.loads(kubectl(cluster, "get", "resourceslices", "-o", "json").stdout)["items"]
    devices = {f"{s['spec']['driver']}/{s['spec']['pool']['name']}/{d['name']}"
               for s in slices for d in s["spec"].get("devices") or []}
    claims = json.loads(kubectl(cluster, "get", "resourceclaims", "-A", "-o", "json").stdout)["items"]
    held = {f"{r['driver']}/{r['pool']}/{r['device']}": f"{c['metadata']['namespace']}/{c['metadata']['name']}"
            for c in claims for r in results(c)}
    assert len(devices) == 21 and len(held) == 3  # 2 x 8 GPUs + 5 partitions; single-gpu, mig-a, mig-b

    browser.get(cluster.url + "/ui/")
    wait_for(lambda: set(_texts(browser, "[data-device]")) == devices, 30, what="every device on the page")
    assert _texts(browser, "[data-node]") == ["node-1", "node-2"]
    # Each held device's tile names the claim that holds it, and the pod using it.
    for device, claim in held.items():
        tile = browser.find_element(By.CSS_SELECTOR, f'[data-device="{device}"]')
        holder = tile.find_element(By.CSS_SELECTOR, "[data-claim]")
        assert holder.get_attribute("data-claim") == claim
    mig = browser.find_element(By.CSS_SELECTOR, '[data-counterset="gpu-0-counters"]')
    assert "multiprocessors" in mig.text and "40 / 100" in mig.text  # two 20-SM partitions in use
    wait_for(lambda: "live" == browser.find_element(By.ID, "live").text, 10, what="all watch streams open")
    # The pod that cannot get a vGPU next to the MIG partitions: pending, with its explanation.
    pending = '[data-pending-pod="partitionable-mig/pod-vgpu"]'
    wait_for(lambda: "CompatibilityGroupConflict" in browser.find_element(By.CSS_SELECTOR, pending).text, 30,
             what="the pending pod's explanation")
    assert "0/2 nodes are available: 2 cannot allocate all claims." in browser.find_element(
        By.CSS_SELECTOR, pending).text
    browser.execute_script("window.__sameDocument = true")

    # A new claim and its pod: the page follows through its watches, without a reload.
    cluster.kubectl("apply", "-f", "-", input=_new_claim_and_pod())
    wait_for(lambda: "quickstart/second-gpu" in _texts(browser, "[data-claim]"), 30,
             what="the new claim on the page")
    assert browser.execute_script("return window.__sameDocument === true")
    shot = os.environ.get("DRAMOCK_UI_SCREENSHOT")
    if shot:
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1400, min(int(height) + 140, 2400))
        Path(ROOT / shot).parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ROOT / shot))


def _new_claim_and_pod() -> str:
    return """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: second-gpu, namespace: quickstart}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
---
apiVersion: v1
kind: Pod
metadata: {name: second-pod, namespace: quickstart}
spec:
  containers: [{name: ctr, image: ubuntu:24.04, command: [sleep, infinity], resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimName: second-gpu}]
"""
