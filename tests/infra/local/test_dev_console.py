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
from tests.infra.local.test_dev_server import Dev, _run, serve_dev

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTIFACTS = ROOT / ".artifacts"
REBOUND = "rebind.test"  # an attacker's name that the browser resolves to 127.0.0.1

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
                 "--disable-component-update", "--window-size=1400,1900", "--no-proxy-server",
                 f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1",  # a DNS-rebinding answer
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


# ---- a web page attacking agentfn dev (issue 22, point 1) ----------------------------

ATTACK_PAGE = """<!doctype html><title>cute cats</title><script>
const API = %(api)s, AWS = %(aws)s, RUN = %(run)s;
const results = {};
async function attempt(name, go) {
  try { results[name] = await go(); } catch (error) { results[name] = "blocked: " + error; }
}
(async () => {
  const decision = JSON.stringify({approved: true, reason: "ok",
    edited_inputs: {order_id: "ORD-1001", amount: 4242, reason: "damaged on arrival"}});
  const scan = JSON.stringify({TableName: "agentfn-local"});
  // no preflight: a Blob body sends no Content-Type, a string one text/plain
  await attempt("approve_blob", async () => (await fetch(`${API}/runs/${RUN}/approval`,
    {mode: "no-cors", method: "POST", body: new Blob([decision])})).type);
  await attempt("approve_text", async () => (await fetch(
    `${API}/agents/billing/runs/${RUN}/approval`, {mode: "no-cors", method: "POST", body: decision})).type);
  await attempt("read_runs", async () => (await fetch(`${API}/runs?limit=50`)).text());
  await attempt("read_run", async () => (await fetch(`${API}/runs/${RUN}`)).text());
  await attempt("scan_table", async () => (await fetch(`${AWS}/`, {method: "POST", body: scan,
    headers: {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.Scan",
      "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261126/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"}})).text());
  await attempt("scan_table_no_cors", async () => (await fetch(`${AWS}/`,
    {mode: "no-cors", method: "POST", body: scan})).type);
  window.results = results;
})();
</script>"""


class _AttackerSite:
    """A page served from another loopback origin (127.0.0.2), as any site could be."""

    def __init__(self, page: str):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        raw = page.encode()

        class Page(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.2", 0), Page)
        self.url = f"http://127.0.0.2:{self.server.server_port}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _waiting_refund(dev: Dev) -> str:
    import httpx

    from tests.helpers import wait_for

    body = {"input": "Refund ORD-1001, it arrived broken", "wait_seconds": 0}
    started = httpx.post(f"{dev.api}/agents/billing/runs", json=body, timeout=20)
    assert started.status_code == 202, started.text
    run_id: str = started.json()["run_id"]
    wait_for(lambda: _run(dev, run_id)["status"] == "awaiting_approval", what="the approval")
    return run_id


def _still_waiting(dev: Dev, run_id: str) -> None:
    import httpx

    run = _run(dev, run_id)
    assert run["status"] == "awaiting_approval" and run["pending_approval"], run
    assert run["pending_approval"][0]["inputs"]["amount"] == 189.0
    events = httpx.get(f"{dev.api}/runs/{run_id}/events?limit=500", timeout=10).json()["events"]
    assert "approval_decided" not in {e["type"] for e in events}


def test_a_page_on_another_origin_approves_nothing_and_reads_nothing(
    dev: Dev, browser: Any
) -> None:
    """What the issue's attacker page did — read the table, find the waiting refund, approve
    it with the amount edited — from a page on 127.0.0.2, in the browser."""
    from selenium.webdriver.support.ui import WebDriverWait

    run_id = _waiting_refund(dev)
    site = _AttackerSite(ATTACK_PAGE % {k: json.dumps(v) for k, v in
                                        {"api": dev.api, "aws": dev.aws, "run": run_id}.items()})  # fmt: skip
    try:
        browser.get(site.url)
        results = WebDriverWait(browser, 30).until(
            lambda b: b.execute_script("return window.results")
        )
    finally:
        site.close()
    for name in ("read_runs", "read_run", "scan_table"):
        assert str(results[name]).startswith("blocked:"), (name, results[name])
    assert not any(run_id in str(value) for value in results.values()), results
    _still_waiting(dev, run_id)
    # the requests did reach the servers, which refused them
    log = wait_for_log(dev, f"POST /agents/billing/runs/{run_id}/approval → 403")
    assert f"POST /runs/{run_id}/approval → 403" in log
    assert f"GET /runs/{run_id} → 403" in log and "GET /runs?limit=50 → 403" in log
    assert "AWS endpoint refused OPTIONS /" in log  # the preflight, denied
    assert "AWS endpoint refused POST /: no request from a web page" in log  # the no-cors one


def test_a_rebound_name_gets_neither_the_console_nor_the_runs(dev: Dev, browser: Any) -> None:
    """DNS rebinding: the attacker's name now resolves to 127.0.0.1, so for the browser the
    page and agentfn dev are one origin (no CORS at all): only the Host check stands."""
    run_id = _waiting_refund(dev)
    port, aws_port = dev.api.rsplit(":", 1)[1], dev.aws.rsplit(":", 1)[1]
    browser.get(f"http://{REBOUND}:{port}/")
    assert "FORBIDDEN_HOST" in browser.page_source  # no console for that name
    ask = """const [path, init, done] = arguments;
        fetch(path, init).then(async r => done([r.status, await r.text()]), e => done([0, String(e)]));"""
    decision = json.dumps({"approved": True, "edited_inputs": {"amount": 4242}})
    post = {"method": "POST", "headers": {"Content-Type": "application/json"}, "body": decision}
    for path, init in [("/runs?limit=50", {}), (f"/runs/{run_id}", {}),
                       (f"/runs/{run_id}/approval", post)]:  # fmt: skip
        status, text = browser.execute_async_script(ask, path, init)
        assert status == 403 and "FORBIDDEN_HOST" in text and run_id not in text, (path, text)
    browser.get(f"http://{REBOUND}:{aws_port}/")
    scan = {"method": "POST", "body": json.dumps({"TableName": "agentfn-local"}),
            "headers": {"Content-Type": "application/x-amz-json-1.0",
                        "X-Amz-Target": "DynamoDB_20120810.Scan",
                        "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261126/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"}}  # fmt: skip
    status, text = browser.execute_async_script(ask, "/", scan)
    assert status == 403 and "not a loopback name" in text and run_id not in text, text
    _still_waiting(dev, run_id)


def wait_for_log(dev: Dev, line: str) -> str:
    from tests.helpers import wait_for

    found: str = wait_for(
        lambda: line in (text := dev.stderr.read_text()) and text, what=f"{line!r} in the log"
    )
    return found
