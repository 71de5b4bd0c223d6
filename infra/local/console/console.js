// agentfn dev console: the public API only (REST + the SSE stream), no build step, no CDN.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { runId: null, controller: null, answers: {}, totals: { in: 0, out: 0, cost: 0 } };
const WAITING = new Set(["awaiting_approval", "awaiting_input"]);
const ENDS = new Set(["run_completed", "run_failed"]);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
  return node;
}

async function api(method, path, body) {
  const options = { method, headers: { Accept: "application/json" } };
  if (method !== "GET") {  // agentfn dev takes a state-changing request only as JSON
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body ?? {});
  }
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(`${response.status} ${data.error_code || ""}: ${data.error_message || response.statusText}`);
  return data;
}

// ---- server-sent events over fetch (a POST can stream too; EventSource only GETs) --------

async function readStream(response, onMessage, signal) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let message = { event: "message", data: [], id: null };
  while (!signal.aborted) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, cut).replace(/\r$/, "");
      buffer = buffer.slice(cut + 1);
      if (line === "") {
        if (message.data.length) onMessage(message.event, JSON.parse(message.data.join("\n")));
        message = { event: "message", data: [], id: null };
      } else if (line.startsWith("data:")) message.data.push(line.slice(5).trimStart());
      else if (line.startsWith("event:")) message.event = line.slice(6).trim();
      else if (line.startsWith("id:")) message.id = line.slice(3).trim();
    }
  }
}

function watch(runId, request) {
  if (state.controller) state.controller.abort();
  const controller = new AbortController();
  state.controller = controller;
  state.runId = runId;
  state.answers = {};
  state.totals = { in: 0, out: 0, cost: 0 };
  $("empty").hidden = true;
  $("run").hidden = false;
  $("timeline").replaceChildren();
  $("result").replaceChildren();
  $("waiting").replaceChildren();
  const go = request || fetch(`/runs/${encodeURIComponent(runId)}/stream`, {
    headers: { Accept: "text/event-stream" }, signal: controller.signal,
  });
  return go.then(async (response) => {
    if (!response.ok) throw new Error(`stream: HTTP ${response.status}`);
    await readStream(response, (kind, data) => {
      if (kind === "chunk") onChunk(data);
      else onEvent(data);
    }, controller.signal);
  }).catch((error) => {
    if (!controller.signal.aborted) $("timeline").append(el("li", { class: "end failed" }, `stream ended: ${error.message}`));
  });
}

// ---- rendering ----------------------------------------------------------------------------

function answerBox(turn) {
  if (!state.answers[turn]) {
    const box = el("div", { class: "answer streaming", "data-turn": turn });
    const item = el("li", { class: "step" }, el("div", { class: "meta" }, `step ${turn} · writing…`), box);
    $("timeline").append(item);
    state.answers[turn] = { item, box, key: null };
  }
  return state.answers[turn];
}

function onChunk(chunk) {
  if (state.runId && chunk.run_id !== state.runId) return;
  const answer = answerBox(chunk.turn);
  const key = `${chunk.model}/${chunk.attempt}`;
  if (answer.key && answer.key !== key) answer.box.textContent = ""; // a retry starts the answer over
  answer.key = key;
  answer.box.textContent += chunk.text;
}

function json(value) {
  if (typeof value === "string") {
    try { return JSON.stringify(JSON.parse(value), null, 2); } catch { return value; }
  }
  return JSON.stringify(value, null, 2);
}

function onEvent(event) {
  if (!state.runId) state.runId = event.run_id;
  const d = event.data || {};
  const add = (cls, ...children) => $("timeline").append(el("li", { class: cls, "data-type": event.type }, ...children));
  switch (event.type) {
    case "run_started":
      $("run-title").textContent = `${d.agent} · ${event.run_id.slice(0, 12)}`;
      add("", el("div", { class: "meta" }, "input"), el("div", { class: "answer" }, d.input || ""));
      setStatus("running");
      break;
    case "model_response": {
      const usage = d.usage || {};
      state.totals.in += usage.input_tokens || 0;
      state.totals.out += usage.output_tokens || 0;
      state.totals.cost += d.cost_usd || 0;
      const meta = `step ${d.turn} · ${d.model} · ${usage.input_tokens || 0}→${usage.output_tokens || 0} tokens · ${d.duration_ms} ms`;
      const answer = state.answers[d.turn];
      if (answer) {
        answer.item.querySelector(".meta").textContent = meta;
        answer.box.classList.remove("streaming");
        if (!answer.box.textContent && d.text) answer.box.textContent = d.text;
        if (!answer.box.textContent) answer.box.remove();
      } else {
        const children = [el("div", { class: "meta" }, meta)];
        if (d.text) children.push(el("div", { class: "answer" }, d.text));
        add("step", ...children);
      }
      if ((d.tool_calls || []).length) add("step", el("div", { class: "meta" }, `asks for: ${d.tool_calls.join(", ")}`));
      totals();
      break;
    }
    case "tool_call":
      add("tool", el("div", {}, `→ ${d.tool_name}`), el("details", {}, el("summary", {}, "inputs"), el("pre", {}, json(d.inputs))));
      break;
    case "tool_result":
      add(`tool ${d.success ? "" : "failed"}`, el("div", {}, `${d.success ? "✓" : "✗"} ${d.tool_name} · ${d.duration_ms} ms`),
        el("details", {}, el("summary", {}, "output"), el("pre", {}, json(d.output))));
      break;
    case "approval_requested":
    case "clarification_requested":
      add("person", `${event.type === "approval_requested" ? "waiting for approval: " + d.calls.map((c) => c.tool_name).join(", ") : "? " + d.question + (d.reason ? " · why: " + d.reason : "")}`);
      refresh();
      break;
    case "approval_decided":
      add("person", `${d.timed_out ? "timed out" : d.approved ? "approved" : "rejected"}${d.reason ? " · " + d.reason : ""}${d.by ? " · by " + d.by : ""}`);
      $("waiting").replaceChildren();
      setStatus("running");
      break;
    case "clarification_answered":
      add("person", "↳ answered");
      $("waiting").replaceChildren();
      setStatus("running");
      break;
    case "handoff":
      add("step", `⇢ ${d.to} takes the conversation over`);
      break;
    case "child_run_started":
      add("step", `↳ asking ${d.agent}`);
      break;
    case "child_run_finished":
      add(`tool ${d.status === "succeeded" ? "" : "failed"}`, `${d.status === "succeeded" ? "✓" : "✗"} ask_${d.agent} · ${d.status}`);
      break;
    case "escalation":
      add("step", `⇠ ${d.from} asks ${d.to} for help${d.reason ? " · " + d.reason : ""}`);
      break;
    case "intent_matched":
      add("step", `intent ${d.intent} → ${d.then}`);
      break;
    case "context_compacted":
      add("step", `context compacted · ${d.before} → ${d.after} tokens`);
      break;
    case "hook_decision":
      if (d.decision !== "allow" || d.error) add("person", `hook ${d.event}: ${d.decision}${d.reason ? " · " + d.reason : ""}`);
      break;
    case "run_completed":
    case "run_failed":
      add(`end ${event.type === "run_failed" ? "failed" : ""}`, event.type === "run_failed" ? `✗ ${d.error_code}: ${d.error_message}` : `✓ succeeded in ${d.turns_used} turns`);
      refresh();
      break;
    default:
      break;
  }
  if (ENDS.has(event.type)) loadRuns();
}

function totals() {
  const cost = state.totals.cost ? ` · $${state.totals.cost.toFixed(4)}` : "";
  $("run-totals").textContent = `${state.totals.in} in / ${state.totals.out} out tokens${cost}`;
}

function setStatus(status) {
  const badge = $("run-status");
  badge.textContent = status;
  badge.className = `status ${status}`;
  $("cancel").hidden = !(status === "running" || WAITING.has(status));
}

async function refresh() {
  const runId = state.runId;
  const run = await api("GET", `/runs/${encodeURIComponent(runId)}`);
  if (runId !== state.runId) return;
  setStatus(run.status);
  const waiting = $("waiting");
  waiting.replaceChildren();
  // a team run: what an asked agent waits for is decided on the parent (the API passes it on)
  const waiters = [run, ...(run.children || []).filter((c) => (c.pending_approval || []).length || c.clarification)];
  for (const waiter of waiters) {
    for (const pending of waiter.pending_approval || []) waiting.append(approvalCard(run, pending, waiter));
    if (waiter.clarification) waiting.append(replyCard(run, waiter));
  }
  if (run.status === "succeeded") {
    const value = typeof run.result === "string" ? run.result : JSON.stringify(run.result, null, 2);
    $("result").replaceChildren(el("h2", {}, "Result"), el("div", { class: "answer", id: "final-answer" }, value));
  }
}

function approvalCard(run, pending, waiter = run) {
  const inputs = el("textarea", { rows: 5, class: "edit", hidden: "" }, JSON.stringify(pending.inputs, null, 2));
  const reason = el("input", { type: "text", placeholder: "reason (optional)" });
  const decide = async (approved, edited) => {
    const body = { approved, tool_call_id: pending.tool_call_id };
    if (reason.value) body.reason = reason.value;
    try {
      if (edited) body.edited_inputs = JSON.parse(inputs.value);
      await api("POST", `/runs/${encodeURIComponent(run.run_id)}/approval`, body);
    } catch (error) { alert(error instanceof SyntaxError ? `the edited inputs are not JSON: ${error.message}` : error.message); }
  };
  const can = new Set(pending.decisions || ["approve", "reject"]);
  const buttons = [el("button", { type: "button", class: "approve", onclick: () => decide(true, !inputs.hidden) }, "Approve")];
  if (can.has("reject")) buttons.push(el("button", { type: "button", class: "danger reject", onclick: () => decide(false) }, "Reject"));
  if (can.has("edit")) buttons.push(el("button", { type: "button", class: "secondary", onclick: () => { inputs.hidden = !inputs.hidden; } }, "Edit inputs"));
  return el("div", { class: "card", "data-tool-call": pending.tool_call_id },
    el("h3", {}, `Approve ${pending.tool_name}?${waiter === run ? "" : ` (asked of ${waiter.agent})`}`),
    el("pre", {}, JSON.stringify(pending.inputs, null, 2)),
    inputs, reason, el("div", { class: "actions" }, ...buttons));
}

function replyCard(run, waiter = run) {
  const answer = el("input", { type: "text", placeholder: "your answer" });
  const send = async () => {
    try { await api("POST", `/runs/${encodeURIComponent(run.run_id)}/reply`, { input: answer.value }); }
    catch (error) { alert(error.message); }
  };
  const why = waiter.clarification.reason;  // why the agent asks (agent_clarify's reason)
  return el("div", { class: "card" }, el("h3", {}, waiter.clarification.question),
    ...(why ? [el("p", { class: "reason" }, `Why: ${why}`)] : []), answer,
    el("div", { class: "actions" }, el("button", { type: "button", class: "reply", onclick: send }, "Answer")));
}

// ---- lists and the start form -------------------------------------------------------------

async function loadAgents() {
  const { agents } = await api("GET", "/agents");
  $("agents").replaceChildren(...agents.map((a) => el("li", {}, a.name, el("small", {}, a.description || ""))));
  $("agent").replaceChildren(...agents.map((a) => el("option", { value: a.name }, a.name)));
}

async function loadRuns() {
  const { runs } = await api("GET", "/runs?limit=30");
  $("runs").replaceChildren(...runs.map((r) => el("li", {
    class: r.run_id === state.runId ? "current" : "", "data-run": r.run_id,
    onclick: () => { watch(r.run_id); loadRuns(); },
  }, `${r.agent} · ${r.run_id.slice(0, 8)}`, el("span", { class: `status ${r.status}` }, r.status))));
}

$("start").addEventListener("submit", (submit) => {
  submit.preventDefault();
  const agent = $("agent").value;
  const controller = new AbortController();
  const request = fetch(`/agents/${encodeURIComponent(agent)}/runs`, {
    method: "POST",
    headers: { Accept: "text/event-stream", "Content-Type": "application/json" },
    body: JSON.stringify({ input: $("input").value }),
    signal: controller.signal,
  });
  state.runId = null;
  watch(null, request).finally(loadRuns);
  state.controller = controller;
  setTimeout(loadRuns, 300);
});

$("cancel").addEventListener("click", async () => {
  try { await api("POST", `/runs/${encodeURIComponent(state.runId)}/cancel`); } catch (error) { alert(error.message); }
});

// agentfn dev reloads the spec on each edit; an invalid edit keeps the last good one.
let generation = null;
async function loadStatus() {
  const status = await api("GET", "/dev/status");
  const box = $("spec-status");
  box.hidden = !status.errors.length;
  box.replaceChildren(...(status.errors.length ? [
    el("strong", {}, `${status.spec}: the last edit is not valid; still serving spec ${status.spec_hash}`),
    el("ul", {}, ...status.errors.map((line) => el("li", {}, line))),
  ] : []));
  if (generation !== null && status.generation !== generation) loadAgents();
  generation = status.generation;
}

$("where").textContent = `${location.host} · the same API curl uses`;
loadAgents().then(loadRuns);
loadStatus();
setInterval(loadRuns, 3000);
setInterval(loadStatus, 2000);
