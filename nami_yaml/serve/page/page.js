// The approvals page of `nami approvals serve`: lists the pending approvals (polled every 2 s) and posts
// answers, each request with the page token as a bearer token. Every value from the queue is set as text,
// never as HTML.
"use strict";

// The token of the URL nami printed: kept in this tab's sessionStorage (this origin's, so this port's alone,
// unlike a cookie, which a browser sends to every port of the host) and dropped from the address bar.
const pageToken = (() => {
  const given = new URLSearchParams(location.search).get("token");
  if (given) {
    sessionStorage.setItem("nami-page-token", given);
    history.replaceState(null, "", "/");
  }
  return sessionStorage.getItem("nami-page-token") || "";
})();
const authorization = {"Authorization": `Bearer ${pageToken}`};
const remote = document.querySelector('meta[name="nami-mode"]').content === "remote";
const cards = new Map();  // approval id -> its card, kept while it is pending (a reason being typed stays)

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (name === "className") node.className = value; else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function age(created) {
  if (typeof created !== "number") return "?";
  const seconds = Math.max(0, Math.floor(Date.now() / 1000 - created));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  return `${Math.floor(seconds / 3600)}h${String(Math.floor(seconds % 3600 / 60)).padStart(2, "0")}m`;
}

function approvedBy(entry) {
  const given = (entry.approvals || []).filter((a) => a.answer === "approve").map((a) => `${a.who} (${a.how})`);
  const need = entry.required || 1;
  return (given.join(", ") || "nobody yet") + (need > 1 ? ` (${given.length} of ${need})` : "");
}

function planText(plan) {
  if (plan === null || plan === undefined) return null;
  if (typeof plan === "string") return plan;
  for (const key of ["shown", "output", "text"]) if (typeof plan[key] === "string") return plan[key];
  return JSON.stringify(plan, null, 2);
}

function row(list, name, value, className) {
  if (value === null || value === undefined || value === "") return;
  list.append(el("dt", {}, name), el("dd", className ? {className} : {}, value));
}

function details(entry) {
  const list = el("dl");
  row(list, "agent", entry.agent || "nami");
  if (Array.isArray(entry.argv)) row(list, "argv", el("code", {"data-field": "argv"}, JSON.stringify(entry.argv)));
  else row(list, "arguments", el("pre", {"data-field": "arguments"}, JSON.stringify(entry.arguments, null, 2)));
  row(list, "in", entry.cwd);
  row(list, "asked by", (entry.rule || "it needs a yes") + (entry.reason ? `: ${entry.reason}` : ""));
  const more = entry.plan_details || {};
  if (more.env_set && Object.keys(more.env_set).length) {
    row(list, "env", Object.entries(more.env_set).map(([k, v]) => `${k}=${v}`).join(" "));
  }
  if (more.stdin) row(list, "stdin", `${more.stdin.bytes} bytes, sha256 ${more.stdin.sha256}`);
  if (more.sandbox) row(list, "sandbox", el("code", {}, JSON.stringify(more.sandbox)));
  const run = entry.run || {};
  row(list, "run", `${run.user}@${run.host} pid ${run.pid}, session ${run.session}`);
  row(list, "digest", el("code", {}, (entry.binding || {}).digest));
  return list;
}

function card(entry) {
  const id = entry.id;
  const head = el("h2", {},
    el("span", {className: "id"}, id), " · ",
    el("span", {"data-field": "age"}, age(entry.created_unix)), " ago · ",
    `${entry.risk} tool `, el("strong", {}, entry.tool),
    entry.target !== null && entry.target !== undefined ? el("span", {className: "target"}, ` on target ${entry.target}`) : null);
  const plan = planText(entry.plan);
  const by = el("p", {"data-field": "approved-by"}, "approved by ", approvedBy(entry));
  const reason = el("input", {className: "reason", name: "reason", placeholder: "reason (needed to deny; the model is told)"});
  const approve = el("button", {type: "submit", className: "approve", value: "approve"}, "Approve");
  const deny = el("button", {type: "submit", className: "deny", value: "deny"}, "Deny");
  const message = el("p", {className: "message", role: "status"});
  const form = el("form", {}, reason, approve, deny);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const verb = event.submitter ? event.submitter.value : "approve";
    answer(id, verb, reason.value, message, [approve, deny]);
  });
  const node = el("article", {className: "approval", id: `approval-${id}`, "data-id": id},
    head, details(entry), plan !== null ? el("h3", {}, "plan") : null,
    plan !== null ? el("pre", {className: "plan", "data-field": "plan"}, plan) : null, by, form, message);
  node.entry = entry;
  return node;
}

async function answer(id, verb, reason, message, buttons) {
  message.className = "message";
  if (verb === "deny" && !reason.trim()) {
    message.className = "message error";
    message.textContent = "A deny needs a reason: the model is told.";
    return;
  }
  const token = document.getElementById("approver-token").value;
  if (remote && !token) {
    message.className = "message error";
    message.textContent = "Sign in first: type your approver token above.";
    return;
  }
  buttons.forEach((b) => { b.disabled = true; });
  message.textContent = "Sending… (the run takes the answer)";
  try {
    const response = await fetch(`/api/approvals/${encodeURIComponent(id)}/${verb}`, {
      method: "POST", credentials: "omit",
      headers: {"Content-Type": "application/json", ...authorization},
      body: JSON.stringify({reason: reason || null, ...(token ? {approver_token: token} : {})}),
    });
    const body = await response.json().catch(() => ({}));
    message.className = response.ok ? "message" : "message error";
    message.textContent = response.ok ? `${verb === "approve" ? "Approved" : "Denied"}: ${body.message}` : body.error || `HTTP ${response.status}`;
    if (response.ok) document.getElementById("answered").append(el("li", {"data-id": id}, `${id}: ${message.textContent}`));
  } catch (error) {
    message.className = "message error";
    message.textContent = `Not sent: ${error}`;
  } finally {
    buttons.forEach((b) => { b.disabled = false; });
  }
  refresh();
}

async function refresh() {
  const status = document.getElementById("status");
  let body;
  try {
    const response = await fetch("/api/approvals", {credentials: "omit", cache: "no-store", headers: authorization});
    if (!response.ok) throw new Error(`HTTP ${response.status}: reload the URL nami approvals serve printed`);
    body = await response.json();
  } catch (error) {
    status.textContent = `Cannot read the queue: ${error.message || error}`;
    return;
  }
  status.textContent = "";
  document.getElementById("who").textContent = body.remote
    ? `Queue ${body.queue}. Each answer needs your approver token.`
    : `Queue ${body.queue}. Answers count as OS user ${body.user}` + (body.approvers ? " (an approval also needs your approver token)." : ".");
  document.getElementById("signin").hidden = !(body.remote || body.approvers);
  const main = document.getElementById("approvals");
  const current = new Set();
  for (const entry of body.approvals) {
    current.add(entry.id);
    let node = cards.get(entry.id);
    if (!node) {
      node = card(entry);
      cards.set(entry.id, node);
      main.append(node);
    } else {
      node.querySelector('[data-field="age"]').textContent = age(entry.created_unix);
      node.querySelector('[data-field="approved-by"]').textContent = `approved by ${approvedBy(entry)}`;
    }
  }
  for (const [id, node] of cards) {
    if (!current.has(id)) { node.remove(); cards.delete(id); }
  }
  document.getElementById("empty").hidden = cards.size > 0;
}

refresh();
setInterval(refresh, 2000);
