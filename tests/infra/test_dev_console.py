"""The dev console as a person uses it, in a real headless Chromium (Debian's, driven by
Selenium through ChromeDriver) against `agentfn dev`: start a run that needs approval from
the form, watch it appear live, approve it from the page, see the answer stream and the
result. A screenshot is kept in .artifacts/ (the README's picture is one of these)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT
from tests.infra.test_dev_server import Dev, _run, serve_dev

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTIFACTS = ROOT / ".artifacts"

pytestmark = pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
    reason="needs Chromium and ChromeDriver (scripts/dev.py test installs them with apt-get as root)",
)


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    yield from serve_dev(tmp_path_factory)


@pytest.fixture()
def browser(tmp_path: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-sync",
                 "--disable-component-update", "--window-size=1400,1900",
                 f"--user-data-dir={tmp_path / 'profile'}"):  # fmt: skip
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def test_start_watch_approve_and_read_the_answer_in_the_console(dev: Dev, browser: Any) -> None:
    """The demo team: support looks the order up, asks the researcher, hands the refund to
    billing, which waits for a person; approved from the page, support writes the answer."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 30)
    browser.get(f"{dev.api}/")
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#agent option")) > 3)
    agents = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#agent option")]
    assert "support" in agents and "billing" in agents
    _start_from_the_form(browser, "support", "My order ORD-1001 arrived damaged.")

    # the run appears live, stops for a person, and the page offers the decision
    approve = wait.until(
        seen.element_to_be_clickable((By.CSS_SELECTOR, "#waiting .card button.approve"))
    )
    card = browser.find_element(By.CSS_SELECTOR, "#waiting .card")
    assert "issue_refund" in card.text and "ORD-1001" in card.text
    assert browser.find_element(By.ID, "run-status").text == "awaiting_approval"
    timeline = browser.find_element(By.ID, "timeline").text
    assert (
        "waiting for approval: issue_refund" in timeline
        and "billing takes the conversation over" in timeline
    )
    assert (
        "asking researcher" in timeline
        and "support" in browser.find_element(By.ID, "run-title").text
    )
    run_id = browser.find_element(By.CSS_SELECTOR, "#runs li.current").get_attribute("data-run")
    assert _run(dev, run_id)["status"] == "awaiting_approval"  # what the page says is the API's
    browser.find_element(By.CSS_SELECTOR, "#waiting .card input").send_keys("photos checked")
    approve.click()

    # the answer streams into the step it belongs to, then the result shows
    final = wait.until(seen.visibility_of_element_located((By.ID, "final-answer")))
    result = _run(dev, run_id)
    assert result["status"] == "succeeded" and json.loads(final.text) == result["result"]
    streamed = [b.text for b in browser.find_elements(By.CSS_SELECTOR, ".answer[data-turn]")]
    assert any(_json(text) == result["result"] for text in streamed)  # written by its chunks
    assert browser.find_element(By.ID, "run-status").text == "succeeded"
    assert "approved · photos checked" in browser.find_element(By.ID, "timeline").text
    assert "billing asks support for help" in browser.find_element(By.ID, "timeline").text
    refund = next(c for c in result["tool_calls"] if c["tool_name"] == "issue_refund")
    assert refund["decided_by"]  # the approval went through the public API
    wait.until(
        lambda b: (
            "succeeded" in b.find_element(By.CSS_SELECTOR, f'#runs li[data-run="{run_id}"]').text
        )
    )

    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "console.png"))
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _start_from_the_form(browser: Any, agent: str, text: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 30).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#agent option")) > 3)  # fmt: skip
    Select(browser.find_element(By.ID, "agent")).select_by_value(agent)
    field = browser.find_element(By.ID, "input")
    field.clear()
    field.send_keys(text)
    browser.find_element(By.ID, "start-button").click()


def test_edit_a_pending_call_and_answer_a_clarification_from_the_page(
    dev: Dev, browser: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 30)
    browser.get(f"{dev.api}/")
    _start_from_the_form(browser, "billing", "Refund ORD-1001, it arrived broken")
    wait.until(seen.element_to_be_clickable((By.CSS_SELECTOR, "#waiting .card button.approve")))
    browser.find_element(By.XPATH, "//div[@id='waiting']//button[text()='Edit inputs']").click()
    editor = browser.find_element(By.CSS_SELECTOR, "#waiting .card textarea.edit")
    edited = json.loads(editor.get_attribute("value"))
    edited["amount"] = 50.0
    editor.clear()
    editor.send_keys(json.dumps(edited))
    browser.find_element(By.CSS_SELECTOR, "#waiting .card button.approve").click()
    wait.until(seen.visibility_of_element_located((By.ID, "final-answer")))
    run_id = browser.find_element(By.CSS_SELECTOR, "#runs li.current").get_attribute("data-run")
    refund = _run(dev, run_id)["tool_calls"][0]
    assert refund["tool_name"] == "issue_refund" and refund["inputs"]["amount"] == 50.0

    _start_from_the_form(browser, "triage", "My order has a problem")
    question = wait.until(
        seen.visibility_of_element_located((By.CSS_SELECTOR, "#waiting .card h3"))
    )
    assert "Which order is this about?" in question.text
    why = browser.find_element(By.CSS_SELECTOR, "#waiting .card p.reason")  # issue 25
    assert why.text == "Why: The customer has two open orders."
    assert "why: The customer has two open orders." in browser.find_element(By.ID, "timeline").text
    assert browser.find_element(By.ID, "run-status").text == "awaiting_input"
    browser.find_element(By.CSS_SELECTOR, "#waiting .card input").send_keys("ORD-1002")
    browser.find_element(By.CSS_SELECTOR, "#waiting .card button.reply").click()
    final = wait.until(seen.visibility_of_element_located((By.ID, "final-answer")))
    assert "ORD-1002" in final.text
    assert "answered" in browser.find_element(By.ID, "timeline").text
