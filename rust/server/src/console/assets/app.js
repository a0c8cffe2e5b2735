// pulsar_rs web console: a small single-page app over the broker's admin REST API.
// No libraries, no build step. Data: /console/api/overview and /console/api/history (this
// console's own endpoints) and Pulsar's /admin/v2/... paths for topic details and actions.
"use strict";

const TOKEN_KEY = "pulsar_rs.token";
const REFRESH_MS = 2000;
let generation = 0; // bumped on every navigation: stale refresh loops stop themselves

// ---------------------------------------------------------------- HTTP

class AuthError extends Error {}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function reasonOf(r) {
  const text = await r.text();
  try {
    const j = JSON.parse(text);
    return j.reason || text;
  } catch (e) {
    return text || r.status + " " + r.statusText;
  }
}

async function api(path, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  const t = token();
  if (t) headers["Authorization"] = "Bearer " + t;
  const r = await fetch(path, Object.assign({}, opts, { headers }));
  if (r.status === 401) {
    showLogin(await reasonOf(r));
    throw new AuthError("authentication required");
  }
  if (!r.ok) throw new Error(await reasonOf(r));
  if (r.status === 204) return null;
  const type = r.headers.get("content-type") || "";
  return type.includes("json") ? r.json() : r.text();
}

// ---------------------------------------------------------------- DOM helpers

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "className") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function num(n) {
  return Number(n || 0).toLocaleString("en-US", { maximumFractionDigits: 0 });
}
function rate(n) {
  return Number(n || 0).toLocaleString("en-US", { maximumFractionDigits: 1, minimumFractionDigits: 1 });
}
function bytes(n) {
  n = Number(n || 0);
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return (i === 0 ? n.toFixed(0) : n.toFixed(1)) + " " + units[i];
}

function setStatus(text, cls) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = cls || "muted";
}

// ---------------------------------------------------------------- login

function showLogin(reason) {
  document.getElementById("login").hidden = false;
  document.getElementById("view").hidden = true;
  document.getElementById("login-error").textContent = token() ? reason : "";
}

function setupLogin() {
  document.getElementById("login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const t = document.getElementById("token").value.trim();
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    document.getElementById("login").hidden = true;
    document.getElementById("view").hidden = false;
    document.getElementById("logout").hidden = !token();
    route();
  });
  const out = document.getElementById("logout");
  out.hidden = !token();
  out.addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    out.hidden = true;
    showLogin("");
  });
}

// ---------------------------------------------------------------- charts (SVG)

const COLORS = ["#1f6feb", "#e36209", "#2e7d32", "#8e24aa"];

// series: [{name, values: [[t, v], ...]}]; fmt formats axis values.
function chart(title, series, fmt) {
  const W = 300, H = 140, L = 56, R = 8, T = 8, B = 20;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  const all = series.flatMap((s) => s.values);
  const now = Date.now();
  const t0 = all.length ? Math.min(...all.map((p) => p[0])) : now - 60000;
  const t1 = all.length ? Math.max(...all.map((p) => p[0])) : now;
  const vmax = Math.max(1e-9, ...all.map((p) => p[1]));
  const x = (t) => L + ((t - t0) / Math.max(1, t1 - t0)) * (W - L - R);
  const y = (v) => T + (1 - v / vmax) * (H - T - B);
  const line = (x1, y1, x2, y2, color) => {
    const l = document.createElementNS(ns, "line");
    Object.entries({ x1, y1, x2, y2, stroke: color, "stroke-width": 1 }).forEach(([k, v]) => l.setAttribute(k, v));
    svg.append(l);
  };
  const text = (tx, ty, s, anchor) => {
    const e = document.createElementNS(ns, "text");
    Object.entries({ x: tx, y: ty, "font-size": 10, fill: "#6b7384", "text-anchor": anchor }).forEach(([k, v]) => e.setAttribute(k, v));
    e.textContent = s;
    svg.append(e);
  };
  for (const f of [0, 0.5, 1]) {
    line(L, y(vmax * f), W - R, y(vmax * f), "#eceff3");
    text(L - 4, y(vmax * f) + 3, fmt(vmax * f), "end");
  }
  const span = Math.round((t1 - t0) / 1000);
  text(L, H - 5, all.length ? "-" + span + " s" : "no samples yet", "start");
  text(W - R, H - 5, "now", "end");
  series.forEach((s, i) => {
    if (!s.values.length) return;
    const p = document.createElementNS(ns, "polyline");
    p.setAttribute("fill", "none");
    p.setAttribute("stroke", COLORS[i % COLORS.length]);
    p.setAttribute("stroke-width", 1.6);
    p.setAttribute("points", s.values.map(([t, v]) => x(t).toFixed(1) + "," + y(v).toFixed(1)).join(" "));
    p.setAttribute("data-series", s.name);
    svg.append(p);
  });
  const legend = h("div", { className: "legend" },
    series.map((s, i) => h("span", {}, h("i", { style: "background:" + COLORS[i % COLORS.length] }),
      s.name + ": " + fmt(s.values.length ? s.values[s.values.length - 1][1] : 0))));
  return h("div", { className: "chart" }, h("div", { className: "title" }, title), svg, legend);
}

function historyCharts(points) {
  const pick = (k) => points.map((p) => [p.t, p[k]]);
  return h("div", { className: "charts", id: "charts", "data-points": points.length },
    chart("Messages / s", [{ name: "in", values: pick("rateIn") }, { name: "out", values: pick("rateOut") }], rate),
    chart("Throughput", [{ name: "in", values: pick("throughputIn") }, { name: "out", values: pick("throughputOut") }], (v) => bytes(v) + "/s"),
    chart("Backlog (messages)", [{ name: "backlog", values: pick("backlog") }], num),
    chart("Storage", [{ name: "storage", values: pick("storage") }], bytes));
}

// ---------------------------------------------------------------- names and paths

function parseTopic(name) {
  const m = /^(persistent|non-persistent):\/\/([^/]+)\/([^/]+)\/(.+)$/.exec(name);
  if (!m) throw new Error("not a topic name: " + name);
  return { domain: m[1], tenant: m[2], ns: m[3], local: m[4] };
}

function restBase(name) {
  const t = parseTopic(name);
  return "/admin/v2/" + t.domain + "/" + encodeURIComponent(t.tenant) + "/" + encodeURIComponent(t.ns) + "/" + encodeURIComponent(t.local);
}

function topicLink(name, label) {
  return h("a", { href: "#/topic/" + encodeURIComponent(name) }, label || name);
}

// ---------------------------------------------------------------- pages

function loop(fn) {
  const gen = generation;
  const tick = async () => {
    if (gen !== generation) return;
    try {
      await fn();
      setStatus("updated " + new Date().toLocaleTimeString());
    } catch (e) {
      if (!(e instanceof AuthError)) setStatus("error: " + e.message, "error");
      if (e instanceof AuthError) return;
    }
    if (gen === generation) setTimeout(tick, REFRESH_MS);
  };
  tick();
}

function topicCells(r) {
  return [
    h("td", { className: "rate-in" }, rate(r.msgRateIn)),
    h("td", { className: "rate-out" }, rate(r.msgRateOut)),
    h("td", { className: "tput-in" }, bytes(r.msgThroughputIn) + "/s"),
    h("td", { className: "tput-out" }, bytes(r.msgThroughputOut) + "/s"),
    h("td", { className: "storage" }, bytes(r.storageSize)),
    h("td", { className: "backlog" }, num(r.msgBacklog)),
    h("td", { className: "backlog-size" }, bytes(r.backlogSize)),
    h("td", { className: "producers" }, num(r.producers)),
    h("td", { className: "subscriptions" }, num(r.subscriptions)),
    h("td", { className: "consumers" }, num(r.consumers)),
  ];
}

const TOPIC_HEAD = ["In msg/s", "Out msg/s", "In", "Out", "Storage", "Backlog", "Backlog size", "Producers", "Subscriptions", "Consumers"];

function sumRows(name, rows) {
  const s = { name, msgRateIn: 0, msgRateOut: 0, msgThroughputIn: 0, msgThroughputOut: 0, storageSize: 0, msgBacklog: 0, backlogSize: 0, producers: 0, subscriptions: 0, consumers: 0 };
  for (const r of rows) for (const k of Object.keys(s)) if (k !== "name") s[k] += r[k];
  return s;
}

function topicsTable(overview) {
  const body = h("tbody");
  const parents = new Map(overview.partitioned.map((p) => [p.name, p.partitions]));
  const byParent = new Map();
  for (const r of overview.topics) {
    if (r.partitionedTopic && parents.has(r.partitionedTopic)) {
      if (!byParent.has(r.partitionedTopic)) byParent.set(r.partitionedTopic, []);
      byParent.get(r.partitionedTopic).push(r);
    }
  }
  const rows = [];
  for (const [name, n] of parents) rows.push({ sort: name, kind: "partitioned", name, n });
  for (const r of overview.topics) {
    if (!(r.partitionedTopic && parents.has(r.partitionedTopic))) rows.push({ sort: r.name, kind: "topic", r });
  }
  rows.sort((a, b) => a.sort.localeCompare(b.sort));
  for (const row of rows) {
    if (row.kind === "partitioned") {
      const parts = byParent.get(row.name) || [];
      body.append(h("tr", { className: "partitioned", "data-topic": row.name },
        h("td", {}, topicLink(row.name)), h("td", {}, row.n), topicCells(sumRows(row.name, parts))));
      for (const r of parts) {
        body.append(h("tr", { className: "partition", "data-topic": r.name },
          h("td", {}, topicLink(r.name, "partition " + r.name.split("-partition-").pop())), h("td", {}, ""), topicCells(r)));
      }
    } else {
      const r = row.r;
      body.append(h("tr", { className: "topic", "data-topic": r.name },
        h("td", {}, topicLink(r.name), r.loaded ? "" : h("span", { className: "muted" }, " (not loaded)")),
        h("td", {}, ""), topicCells(r)));
    }
  }
  if (!rows.length) body.append(h("tr", {}, h("td", { colspan: 12, className: "muted" }, "no topics yet")));
  return h("table", { id: "topics" },
    h("thead", {}, h("tr", {}, h("th", {}, "Topic"), h("th", {}, "Partitions"), TOPIC_HEAD.map((c) => h("th", {}, c)))), body);
}

function overviewPage(view) {
  loop(async () => {
    const [ov, hist] = await Promise.all([api("/console/api/overview"), api("/console/api/history")]);
    document.getElementById("cluster").textContent = "cluster " + ov.cluster;
    view.replaceChildren(
      h("h2", {}, "Broker"),
      historyCharts(hist.points),
      h("h2", {}, "Topics"),
      topicsTable(ov));
  });
}

// "Why is this subscription not delivering?": the diagnosis of each partition, one line per blocker.
async function diagnose(name, sub) {
  const out = document.getElementById("diagnosis");
  try {
    const found = await api(sub + "/diagnosis");
    const lines = [];
    for (const [topic, d] of Object.entries(found)) {
      const oldest = d.oldestUnackedMessage ? ", oldest unacked " + d.oldestUnackedMessage.messageId +
        " (" + Math.round((d.oldestUnackedMessage.ageMs || 0) / 1000) + " s old)" : "";
      lines.push(topic + ": backlog " + num(d.msgBacklog) + oldest);
      for (const b of d.blockers) {
        const fields = Object.entries(b).filter(([k]) => k !== "reason").map(([k, v]) => k + "=" + v).join(", ");
        lines.push("  " + b.reason + (fields ? " (" + fields + ")" : ""));
      }
      if (!d.blockers.length) lines.push(d.waitingForDelivery ? "  nothing holds it back: messages are on their way" : "  everything was delivered");
    }
    out.className = "card";
    out.replaceChildren(h("h3", {}, "Why " + name + " is not delivering"), h("pre", {}, lines.join("\n")));
  } catch (e) {
    out.className = "error";
    out.textContent = "diagnosis: " + e.message;
  }
}

// One action: runs the admin call, reports and refreshes.
async function act(label, method, path, body) {
  const msg = document.getElementById("action-result");
  try {
    await api(path, { method, body, headers: body ? { "Content-Type": "application/json" } : {} });
    msg.className = "ok";
    msg.textContent = label + ": done";
  } catch (e) {
    msg.className = "error";
    msg.textContent = label + ": " + e.message;
  }
}

function subscriptionsTable(base, stats) {
  const body = h("tbody");
  const subs = Object.entries(stats.subscriptions || {}).sort((a, b) => a[0].localeCompare(b[0]));
  for (const [name, s] of subs) {
    const sub = base + "/subscription/" + encodeURIComponent(name);
    const n = h("input", { type: "number", min: 1, value: 1, className: "skip-n", "data-key": "skip:" + name });
    const mins = h("input", { type: "number", min: 0, value: 10, className: "reset-minutes", "data-key": "reset:" + name });
    body.append(h("tr", { "data-subscription": name },
      h("td", {}, name), h("td", { className: "text" }, s.type),
      h("td", { className: "backlog" }, num(s.msgBacklog)), h("td", {}, bytes(s.backlogSize)),
      h("td", {}, rate(s.msgRateOut)), h("td", {}, num(s.unackedMessages)),
      h("td", {}, num(s.msgDelayed)), h("td", {}, (s.consumers || []).length),
      h("td", { className: "actions text" },
        n, h("button", { onclick: () => act("skip " + n.value, "POST", sub + "/skip/" + Number(n.value)) }, "Skip"), " ",
        h("button", { className: "clear-backlog", onclick: () => confirm("Clear the whole backlog of " + name + "?") && act("clear backlog", "POST", sub + "/skip_all") }, "Clear backlog"), " ",
        mins, h("span", { className: "muted" }, " min ago "),
        h("button", { onclick: () => act("reset cursor", "POST", sub + "/resetcursor/" + (Date.now() - Number(mins.value) * 60000)) }, "Reset cursor"), " ",
        h("button", { className: "diagnose", onclick: () => diagnose(name, sub) }, "Why not delivering?"))));
  }
  if (!subs.length) body.append(h("tr", {}, h("td", { colspan: 9, className: "muted" }, "no subscriptions")));
  return h("table", { id: "subscriptions" }, h("thead", {}, h("tr", {},
    ["Subscription", "Type", "Backlog", "Backlog size", "Out msg/s", "Unacked", "Delayed", "Consumers", "Actions"].map((c) => h("th", {}, c)))), body);
}

function consumersTable(stats) {
  const body = h("tbody");
  for (const [sub, s] of Object.entries(stats.subscriptions || {})) {
    for (const c of s.consumers || []) {
      const blocked = c.blockedConsumerOnUnackedMsgs || s.blockedSubscriptionOnUnackedMsgs;
      body.append(h("tr", {},
        h("td", {}, c.consumerName), h("td", { className: "text" }, sub),
        h("td", { className: "permits" }, num(c.availablePermits)), h("td", {}, num(c.unackedMessages)),
        h("td", { className: blocked ? "blocked" : "" }, blocked ? "blocked" : "no"),
        h("td", {}, rate(c.msgRateOut)), h("td", { className: "text" }, c.address || "")));
    }
  }
  if (!body.children.length) body.append(h("tr", {}, h("td", { colspan: 7, className: "muted" }, "no consumers")));
  return h("table", { id: "consumers" }, h("thead", {}, h("tr", {},
    ["Consumer", "Subscription", "Permits", "Unacked", "Blocked", "Out msg/s", "Address"].map((c) => h("th", {}, c)))), body);
}

function producersTable(stats) {
  const rows = (stats.publishers || []).map((p) => h("tr", {}, h("td", {}, p.producerName), h("td", { className: "text" }, p.address || "")));
  if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 2, className: "muted" }, "no producers")));
  return h("table", { id: "producers" }, h("thead", {}, h("tr", {}, h("th", {}, "Producer"), h("th", { className: "text" }, "Address"))), h("tbody", {}, rows));
}

function ledgersTable(internal) {
  const rows = (internal.ledgers || []).map((l) => h("tr", { "data-ledger": l.ledgerId }, h("td", {}, l.ledgerId), h("td", {}, num(l.entries)), h("td", {}, bytes(l.size)),
    h("td", { className: "offloaded text" }, l.offloaded ? "offloaded" : "")));
  if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 4, className: "muted" }, "no ledgers")));
  const cursors = Object.entries(internal.cursors || {}).map(([n, c]) =>
    h("tr", {}, h("td", {}, n), h("td", {}, c.markDeletePosition), h("td", {}, c.readPosition), h("td", { className: "text" }, c.individuallyDeletedMessages)));
  return [
    h("p", { className: "muted" }, "entries " + num(internal.numberOfEntries) + ", size " + bytes(internal.totalSize) + ", last confirmed " + internal.lastConfirmedEntry),
    h("table", { id: "ledgers" }, h("thead", {}, h("tr", {}, ["Ledger", "Entries", "Size", "Tiered storage"].map((c) => h("th", {}, c)))), h("tbody", {}, rows)),
    h("table", { id: "cursors" }, h("thead", {}, h("tr", {}, ["Cursor", "Mark-delete", "Read position", "Acked holes"].map((c) => h("th", {}, c)))), h("tbody", {}, cursors)),
  ];
}

const POLICY_TEMPLATES = {
  publishRate: { publishThrottlingRateInMsg: 1000, publishThrottlingRateInByte: -1 },
  dispatchRate: { dispatchThrottlingRateInMsg: 1000, dispatchThrottlingRateInByte: -1, ratePeriodInSecond: 1, relativeToPublishRate: false },
  subscriptionDispatchRate: { dispatchThrottlingRateInMsg: 1000, dispatchThrottlingRateInByte: -1, ratePeriodInSecond: 1, relativeToPublishRate: false },
  backlogQuota: { limitSize: 1073741824, limitTime: -1, policy: "producer_request_hold" },
  retention: { retentionTimeInMinutes: 60, retentionSizeInMB: 1024 },
};

const POLICY_NAMES = ["publishRate", "dispatchRate", "subscriptionDispatchRate", "backlogQuotaMap", "retention"];

// The topic's current policies, (re)read from the admin API into #policies.
async function showPolicies(base) {
  const values = await Promise.all(POLICY_NAMES.map((n) => api(base + "/" + n).catch((e) => ({ error: e.message }))));
  const table = document.getElementById("policies");
  if (table) table.replaceChildren(h("tbody", {}, POLICY_NAMES.map((n, i) =>
    h("tr", {}, h("td", {}, n), h("td", { className: "text" }, JSON.stringify(values[i]))))));
}

async function policiesPanel(base) {
  const current = h("table", { id: "policies" });
  const select = h("select", { id: "policy-kind" }, Object.keys(POLICY_TEMPLATES).map((k) => h("option", { value: k }, k)));
  const text = h("textarea", { id: "policy-body", rows: 3, cols: 80 });
  const fill = () => { text.value = JSON.stringify(POLICY_TEMPLATES[select.value]); };
  select.addEventListener("change", fill);
  fill();
  const form = h("div", { className: "card" },
    h("div", {}, "Set a topic policy: ", select), text, h("br"),
    h("button", { id: "policy-set", onclick: () => act("set " + select.value, "POST", base + "/" + select.value, text.value).then(() => showPolicies(base)) }, "Set"), " ",
    h("button", { id: "policy-remove", onclick: () => act("remove " + select.value, "DELETE", base + "/" + select.value).then(() => showPolicies(base)) }, "Remove"));
  return [current, form];
}

// Tiered storage: the last offload of the topic (Pulsar's GET .../offload) into #offload-status;
// answers its status.
async function showOffloadStatus(base) {
  const s = await api(base + "/offload");
  const out = document.getElementById("offload-status");
  if (!out) return s.status;
  const first = s.firstUnoffloadedMessage || {};
  const kept = s.status === "SUCCESS" ? ", first ledger kept on the broker " + first.ledgerId + ":" + first.entryId : "";
  out.className = s.status === "ERROR" ? "error" : s.status === "SUCCESS" ? "ok" : "muted";
  out.dataset.status = s.status;
  out.textContent = s.status + kept + (s.lastError ? ": " + s.lastError : "");
  return s.status;
}

// Re-reads the status every second while the offload runs (until the page changes).
async function watchOffload(base) {
  const gen = generation;
  while (gen === generation && (await showOffloadStatus(base)) === "RUNNING") {
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

// "Offload now": every closed ledger, up to the current one (its id from internalStats, entry 0).
async function offloadNow(base) {
  const out = document.getElementById("offload-status");
  try {
    const ledgers = (await api(base + "/internalStats")).ledgers || [];
    if (!ledgers.length) throw new Error("the topic has no ledger yet");
    const current = ledgers[ledgers.length - 1].ledgerId;
    await api(base + "/offload", { method: "PUT", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ledgerId: current, entryId: 0, partitionIndex: -1 }) });
    await watchOffload(base);
  } catch (e) {
    if (e instanceof AuthError || !out) return;
    out.className = "error";
    out.textContent = "offload: " + e.message;
  }
}

function offloadPanel(base) {
  return h("div", { className: "card" },
    h("button", { id: "offload-now", onclick: () => offloadNow(base) }, "Offload now"), " ",
    h("span", { className: "muted" }, "closed ledgers to tiered storage; last offload: "),
    h("span", { id: "offload-status", className: "muted" }, "…"));
}

async function topicPage(view, name) {
  const base = restBase(name);
  view.replaceChildren(h("h2", {}, "Topic ", h("span", { id: "topic-name" }, name)), h("p", {}, h("a", { href: "#/" }, "← all topics")),
    h("div", { id: "action-result" }), h("div", { id: "diagnosis" }), h("div", { id: "live" }), h("h2", {}, "Policies"), h("div", { id: "policy-panel" }));
  const { partitions } = await api(base + "/partitions").catch(() => ({ partitions: 0 }));
  if (partitions === 0 && parseTopic(name).domain === "persistent") {
    document.getElementById("live").after(h("h2", {}, "Tiered storage"), offloadPanel(base));
    showOffloadStatus(base).catch((e) => {
      const out = document.getElementById("offload-status");
      if (out && !(e instanceof AuthError)) out.textContent = e.message;
    });
  }
  policiesPanel(base).then((p) => {
    document.getElementById("policy-panel").replaceChildren(...p);
    return showPolicies(base);
  }).catch((e) => {
    if (!(e instanceof AuthError)) document.getElementById("policy-panel").textContent = e.message;
  });
  loop(async () => {
    const live = document.getElementById("live");
    if (!live) return;
    const hist = await api("/console/api/history?topic=" + encodeURIComponent(name));
    if (partitions > 0) {
      const ov = await api("/console/api/overview");
      const parts = ov.topics.filter((r) => r.partitionedTopic === name);
      live.replaceChildren(historyCharts(hist.points), h("h2", {}, partitions + " partitions"),
        topicsTable({ topics: parts, partitioned: [] }));
      return;
    }
    const [stats, internal] = await Promise.all([api(base + "/stats"), api(base + "/internalStats")]);
    // Keep what the operator typed in the action inputs across refreshes.
    const typed = new Map([...live.querySelectorAll("input[data-key]")].map((i) => [i.dataset.key, i.value]));
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : undefined;
    live.replaceChildren(
      h("div", { className: "card", id: "summary" },
        "in " + rate(stats.msgRateIn) + " msg/s (" + bytes(stats.msgThroughputIn) + "/s), out " + rate(stats.msgRateOut) +
        " msg/s (" + bytes(stats.msgThroughputOut) + "/s), storage " + bytes(stats.storageSize) + ", offloaded ", h("span", { id: "offloaded-size" }, bytes(stats.offloadedStorageSize)), ", backlog " + bytes(stats.backlogSize) +
        ", published " + num(stats.msgInCounter) + " messages"),
      historyCharts(hist.points),
      h("h2", {}, "Subscriptions"), subscriptionsTable(base, stats),
      h("h3", {}, "Consumers"), consumersTable(stats),
      h("h3", {}, "Producers"), producersTable(stats),
      h("h2", {}, "Ledgers"), ...ledgersTable(internal));
    for (const i of live.querySelectorAll("input[data-key]")) {
      if (typed.has(i.dataset.key)) i.value = typed.get(i.dataset.key);
      if (i.dataset.key === focused) i.focus();
    }
  });
}

// The cluster: its brokers (which one leads, which one answers), and the bundles each owns.
function clusterPage(view) {
  loop(async () => {
    const c = await api("/console/api/cluster");
    document.getElementById("cluster").textContent = "cluster " + c.cluster;
    const rows = c.brokers.map((b) =>
      h("tr", { className: "broker" },
        h("td", { className: "broker-id text" }, b.brokerId,
          b.self ? h("span", { className: "muted" }, " (this broker)") : null),
        h("td", { className: "text" }, b.leader ? "leader" : ""),
        h("td", { className: "text" }, b.serviceUrl),
        h("td", { className: "bundle-count" }, b.bundles.length),
        h("td", { className: "bundles text" }, b.bundles.join(" "))));
    if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 5, className: "muted" }, "no broker registered")));
    view.replaceChildren(
      h("h2", {}, "Cluster ", c.cluster),
      h("p", {}, h("a", { href: "#/" }, "← all topics")),
      h("table", { id: "brokers" },
        h("thead", {}, h("tr", {}, ["Broker", "Role", "Service URL", "Bundles", "Owned bundles"].map((t) => h("th", {}, t)))),
        h("tbody", {}, rows)));
  });
}

// Geo-replication: the clusters this one replicates to, and each topic's backlog towards each.
function replicationPage(view) {
  loop(async () => {
    const r = await api("/console/api/replication");
    document.getElementById("cluster").textContent = "cluster " + r.cluster;
    const peers = r.peers.map((p) =>
      h("tr", { className: "peer", "data-cluster": p.name },
        h("td", { className: "peer-name text" }, p.name,
          p.known ? null : h("span", { className: "muted" }, " (no cluster record)")),
        h("td", { className: "text" }, p.serviceUrl || ""),
        h("td", { className: "text" }, p.brokerServiceUrl || ""),
        h("td", { className: "peer-topics" }, num(p.topics)),
        h("td", { className: "peer-connected" }, num(p.connected) + " of " + num(p.topics)),
        h("td", { className: "peer-backlog" }, num(p.replicationBacklog))));
    if (!peers.length) peers.push(h("tr", {}, h("td", { colspan: 6, className: "muted" }, "no other cluster")));
    const topics = r.topics.map((t) =>
      h("tr", { className: "replicated-topic", "data-topic": t.topic, "data-cluster": t.remote },
        h("td", {}, topicLink(t.topic)),
        h("td", { className: "text" }, t.remote),
        h("td", { className: "repl-backlog" }, num(t.replicationBacklog)),
        h("td", { className: "repl-connected text" }, t.connected ? "connected" : "not connected"),
        h("td", { className: "rate-out" }, rate(t.msgRateOut)),
        h("td", { className: "out-count" }, num(t.msgOutCount)),
        h("td", { className: "rate-in" }, rate(t.msgRateIn))));
    if (!topics.length) topics.push(h("tr", {}, h("td", { colspan: 7, className: "muted" }, "no topic loaded here replicates")));
    view.replaceChildren(
      h("h2", {}, "Replication from ", r.cluster),
      h("p", {}, h("a", { href: "#/" }, "← all topics")),
      h("h3", {}, "Peers"),
      h("table", { id: "replication-peers" },
        h("thead", {}, h("tr", {}, ["Cluster", "Service URL", "Broker service URL", "Topics", "Connected", "Backlog"].map((c) => h("th", {}, c)))),
        h("tbody", {}, peers)),
      h("h3", {}, "Topics"),
      h("table", { id: "replication-topics" },
        h("thead", {}, h("tr", {}, ["Topic", "To cluster", "Backlog", "Replicator", "Out msg/s", "Sent", "In msg/s"].map((c) => h("th", {}, c)))),
        h("tbody", {}, topics)));
  });
}

function route() {
  generation++;
  const view = document.getElementById("view");
  if (!document.getElementById("login").hidden) return;
  view.hidden = false;
  const hash = location.hash || "#/";
  const m = /^#\/topic\/(.+)$/.exec(hash);
  const pages = { "#/cluster": clusterPage, "#/replication": replicationPage };
  const page = m ? topicPage(view, decodeURIComponent(m[1])) : (pages[hash] || overviewPage)(view);
  Promise.resolve(page).catch((e) => {
    if (!(e instanceof AuthError)) setStatus("error: " + e.message, "error");
  });
}

window.addEventListener("hashchange", route);
setupLogin();
route();
