// kubesched web UI: a client of the served API (list + watch with the bearer token), no libraries.
// Every text from the cluster goes into the page as a text node (el()), never as HTML.
"use strict";

const SIM = "kube-scheduler-simulator.sigs.k8s.io/";
const GROUP_ANNOTATION = "scheduling.k8s.io/group-name";
const PAGE = 100;
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className = v;
    else if (k === "style") e.style.cssText = v; // CSSOM: allowed by the page's CSP, unlike a style attribute
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// ---- the API -------------------------------------------------------------------------------
let token = sessionStorage.getItem("kubesched-token") || "";

async function api(method, path, body, contentType) {
  const headers = { Authorization: "Bearer " + token, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = contentType || "application/json";
  const res = await fetch(path, {
    method, headers, credentials: "omit",
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  if (res.status === 401) { signOut("the token was refused"); throw new Error("Unauthorized"); }
  const text = await res.text();
  let data = text;
  // JSON answers are decoded; YAML ones (a configuration) stay text, even when they are JSON.
  if ((res.headers.get("Content-Type") || "").includes("json")) {
    try { data = JSON.parse(text); } catch (e) { /* not JSON after all */ }
  }
  if (!res.ok) {
    const err = new Error(data && data.message ? data.message : res.status + " " + res.statusText);
    err.status = data;
    throw err;
  }
  return data;
}

// An informer: list, then watch from the list's resourceVersion; a watch that ends is resumed,
// one that is too old ("410 Gone") lists again.
class Informer {
  constructor(path, onChange) {
    this.path = path; this.onChange = onChange; this.items = new Map(); this.rv = ""; this.stopped = false;
    // Counts the changes to items, so that what is derived from them is kept until they change.
    this.changes = 0;
  }
  static key(o) { return (o.metadata.namespace ? o.metadata.namespace + "/" : "") + o.metadata.name; }
  async run() {
    while (!this.stopped) {
      try {
        if (!this.rv) await this.list();
        await this.watch();
      } catch (e) {
        if (this.stopped) return;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
  async list() {
    const data = await api("GET", this.path);
    this.items = new Map();
    for (const o of data.items || []) this.items.set(Informer.key(o), o);
    this.rv = data.metadata.resourceVersion;
    this.changes++;
    this.onChange();
  }
  async watch() {
    this.abort = new AbortController();
    const sep = this.path.includes("?") ? "&" : "?";
    const res = await fetch(this.path + sep + "watch=1&allowWatchBookmarks=true&resourceVersion=" + this.rv, {
      headers: { Authorization: "Bearer " + token }, signal: this.abort.signal, credentials: "omit",
    });
    if (res.status === 401) { signOut("the token was refused"); return; }
    if (!res.ok) { this.rv = ""; return; }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let nl;
      let changed = false;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
        if (!line.trim()) continue;
        const ev = JSON.parse(line);
        if (ev.type === "ERROR") { this.rv = ""; this.abort.abort(); return; }
        this.rv = ev.object.metadata.resourceVersion;
        if (ev.type === "BOOKMARK") continue;
        if (ev.type === "DELETED") this.items.delete(Informer.key(ev.object));
        else this.items.set(Informer.key(ev.object), ev.object);
        changed = true;
      }
      if (changed) { this.changes++; this.onChange(); }
    }
  }
  stop() { this.stopped = true; if (this.abort) this.abort.abort(); }
}

// ---- quantities and requests ---------------------------------------------------------------
const SUFFIX = { n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, Pi: 1024 ** 5, Ei: 1024 ** 6 };
function quantity(q) {
  if (q === undefined || q === null) return 0;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(q).trim());
  if (!m) return 0;
  return parseFloat(m[1]) * (SUFFIX[m[2]] ?? 1);
}
// A node's allocatable quantities, parsed once per version of the node object.
const parsedAllocatable = new WeakMap();
function allocatable(node) {
  let parsed = parsedAllocatable.get(node);
  if (!parsed) {
    parsed = {};
    for (const [r, q] of Object.entries(node.status.allocatable || {})) parsed[r] = quantity(q);
    parsedAllocatable.set(node, parsed);
  }
  return parsed;
}
// Numeric-aware name order (node-2 before node-10); a Collator is far cheaper than localeCompare
// with options, which builds one per comparison.
const byName = new Intl.Collator(undefined, { numeric: true }).compare;
function show(resource, v) {
  if (resource === "cpu") return (Math.round(v * 1000) / 1000).toString();
  if (resource === "memory" || resource.includes("storage")) {
    for (const [s, f] of [["Ti", 1024 ** 4], ["Gi", 1024 ** 3], ["Mi", 1024 ** 2], ["Ki", 1024]]) {
      if (v >= f) return (Math.round((v / f) * 10) / 10) + s;
    }
  }
  return (Math.round(v * 100) / 100).toString();
}
function podStatus(pod) {
  const st = pod.status || {};
  if (pod.metadata.deletionTimestamp) return "Terminating";
  if (st.phase && st.phase !== "Pending") return st.phase;
  if (pod.spec.nodeName) return "Pending";
  if ((pod.spec.schedulingGates || []).length) return "SchedulingGated";
  const cond = (st.conditions || []).find((c) => c.type === "PodScheduled");
  if (cond && cond.status === "False" && cond.reason) return cond.reason;
  return "Pending";
}
function podReason(pod) {
  if ((pod.spec.schedulingGates || []).length && !pod.spec.nodeName) {
    return "waiting for scheduling gates: [" + pod.spec.schedulingGates.map((g) => g.name).join(" ") + "]";
  }
  const cond = ((pod.status || {}).conditions || []).find((c) => c.type === "PodScheduled" && c.status === "False");
  return cond ? cond.message || cond.reason || "" : "";
}
const RANK = { Unschedulable: 0, SchedulerError: 0, SchedulingGated: 1, Pending: 2 };

// ---- state and rendering -------------------------------------------------------------------
const state = { view: "cluster", nodePage: 0, podPage: 0, selected: null, informers: {} };
let renderTimer = null;
let lastRenderMs = 0;
// Watch events are drawn at most every 250 ms, and less often when a drawing takes long (a large
// cluster), so that the page never spends more than a fifth of its time redrawing.
function scheduleRender() {
  if (renderTimer) return;
  renderTimer = setTimeout(() => { renderTimer = null; render(); }, Math.max(250, lastRenderMs * 4));
}
function items(kind) { const i = state.informers[kind]; return i ? [...i.items.values()] : []; }

function render() {
  const started = performance.now();
  if (state.view === "cluster") renderCluster();
  else if (state.view === "pods") renderPods();
  else if (state.view === "queues") renderQueues();
  const ms = Math.round(performance.now() - started);
  lastRenderMs = ms;
  const pods = podPage.data ? podPage.data.total : summary.data ? summary.data.pods : "…";
  $("status").textContent = `${items("nodes").length} nodes, ${pods} pods · rendered in ${ms} ms`;
  document.body.dataset.rendered = String(Date.now());
}

function pager(target, page, total, onPage) {
  const pages = Math.max(1, Math.ceil(total / PAGE));
  target.replaceChildren(
    el("button", { onclick: () => onPage(Math.max(0, page - 1)), disabled: page === 0 }, "‹ previous"),
    el("span", {}, `page ${page + 1} of ${pages} (${total})`),
    el("button", { onclick: () => onPage(Math.min(pages - 1, page + 1)), disabled: page >= pages - 1 }, "next ›"),
  );
}

// -- Cluster
// The Cluster view draws from the server's summary (/kubesched/v1/cluster: per node the requests
// of its pods, their count and first names; the pods waiting for a node), not from every pod: at
// 50,000 pods the list alone is some 70 MB to send and decode. The summary is polled while the
// view is shown; the server answers 304 while it has not changed and bounds its own cost.
const summary = { data: null, timer: null, inFlight: false };
const SUMMARY_POLL_MS = 1000;
async function pollSummary() {
  summary.timer = null;
  if (!token || state.view !== "cluster") return;
  if (!summary.inFlight) {
    summary.inFlight = true;
    try {
      const rv = summary.data ? "?resourceVersion=" + encodeURIComponent(summary.data.resourceVersion) : "";
      const res = await fetch("/kubesched/v1/cluster" + rv, {
        headers: { Authorization: "Bearer " + token, Accept: "application/json" }, credentials: "omit",
      });
      if (res.status === 401) { signOut("the token was refused"); return; }
      if (res.status === 200) { summary.data = await res.json(); scheduleRender(); }
    } catch (e) { /* the server is away: try again at the next tick */ }
    summary.inFlight = false;
  }
  if (!summary.timer && state.view === "cluster") summary.timer = setTimeout(pollSummary, SUMMARY_POLL_MS);
}
function nodeUsage() {
  const used = new Map();
  const podsOn = new Map();
  for (const [n, entry] of Object.entries((summary.data || {}).nodes || {})) {
    used.set(n, entry.requested);
    podsOn.set(n, { names: entry.names, count: entry.pods });
  }
  return { used, podsOn };
}

function nodeMatches(node, f) {
  if (!f) return true;
  const m = node.metadata;
  if (m.name.includes(f)) return true;
  for (const [k, v] of Object.entries(m.labels || {})) if ((k + "=" + v).includes(f)) return true;
  return (node.spec.taints || []).some((t) => t.key.includes(f));
}

// The nodes in name order, kept until the node informer changes.
const nameOrder = { changes: -1, nodes: [] };
function nodesByName() {
  const informer = state.informers.nodes;
  const changes = informer ? informer.changes : 0;
  if (nameOrder.changes !== changes) {
    nameOrder.nodes = items("nodes").sort((a, b) => byName(a.metadata.name, b.metadata.name));
    nameOrder.changes = changes;
  }
  return nameOrder.nodes;
}

// Node cards by node name, with what they were drawn from: a card whose node and pods have not
// changed is kept, not drawn again.
const cards = new Map();
function cachedCard(node, used, pods) {
  const name = node.metadata.name;
  const key = node.metadata.resourceVersion + "|" + JSON.stringify(used) + "|" + (pods ? pods.count + ":" + pods.names.join(",") : "");
  const known = cards.get(name);
  if (known && known.node === node) {
    if (known.key !== key) {
      refillCard(known.card, node, used, pods);
      known.key = key;
    }
    return known.card;
  }
  const card = nodeCard(node, used, pods);
  cards.set(name, { node, key, card });
  return card;
}

function renderCluster() {
  const { used, podsOn } = nodeUsage();
  const f = $("node-filter").value.trim();
  const sort = $("node-sort").value;
  let nodes = nodesByName().filter((n) => nodeMatches(n, f));
  const frac = (n, r) => {
    const a = allocatable(n)[r];
    return a ? ((used.get(n.metadata.name) || {})[r] || 0) / a : -1;
  };
  // Sorted by share requested, ties in name order (a stable sort of the name-ordered nodes).
  if (sort !== "name") nodes.sort((a, b) => frac(b, sort) - frac(a, sort));
  const total = nodes.length;
  const pages = Math.max(1, Math.ceil(total / PAGE));
  state.nodePage = Math.min(state.nodePage, pages - 1);
  const shown = nodes.slice(state.nodePage * PAGE, (state.nodePage + 1) * PAGE);
  const groupOf = grouping();
  const zones = new Map();
  for (const n of nodes) {
    const z = groupOf(n);
    if (!zones.has(z)) zones.set(z, { nodes: 0, alloc: {}, used: {}, cards: [] });
    const zone = zones.get(z);
    zone.nodes++;
    const alloc = allocatable(n);
    const u = used.get(n.metadata.name) || {};
    for (const r of ["cpu", "memory", "nvidia.com/gpu", "pods"]) {
      zone.alloc[r] = (zone.alloc[r] || 0) + (alloc[r] || 0);
      zone.used[r] = (zone.used[r] || 0) + (u[r] || 0);
    }
  }
  const drawn = new Set();
  for (const n of shown) {
    const z = groupOf(n);
    zones.get(z).cards.push(cachedCard(n, used.get(n.metadata.name) || {}, podsOn.get(n.metadata.name)));
    drawn.add(n.metadata.name);
  }
  for (const name of cards.keys()) if (!drawn.has(name)) cards.delete(name);
  const pending = summary.data ? summary.data.pending : "…";
  $("cluster-summary").textContent = `${total} node(s) shown, ${pending} pod(s) waiting for a node`;
  // Zones are updated in place: a drawing replaces only the headings and cards that changed, so
  // the browser lays out again only those, not the whole view.
  const shownZones = [...zones.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const container = $("zones");
  const kept = new Map([...container.children].map((e) => [e.dataset.zone, e]));
  const zoneElements = shownZones.map(([z, zone]) => {
    const heading = `${z}: ${zone.nodes} node(s) · ` + ["cpu", "memory", "nvidia.com/gpu", "pods"]
      .filter((r) => zone.alloc[r])
      .map((r) => `${r} ${show(r, zone.used[r])}/${show(r, zone.alloc[r])}  `).join("");
    let e = kept.get(z);
    if (!e) e = el("div", { class: "zone", "data-zone": z }, el("h2", {}), el("div", { class: "nodes" }));
    const [h2, list] = e.children;
    if (h2.textContent !== heading) h2.textContent = heading;
    const same = list.children.length === zone.cards.length && zone.cards.every((c, i) => list.children[i] === c);
    if (!same) list.replaceChildren(...zone.cards);
    return e;
  });
  const sameZones = container.children.length === zoneElements.length &&
    zoneElements.every((e, i) => container.children[i] === e);
  if (!sameZones) container.replaceChildren(...zoneElements);
  pager($("node-pager"), state.nodePage, total, (p) => { state.nodePage = p; render(); });
}

// Nodes grouped by zone, or by the lowest-tier Volcano HyperNode whose members select them (by
// exact name, name pattern or labels, as HyperNode members do).
function grouping() {
  if ($("node-group").value !== "hypernode") {
    return (n) => (n.metadata.labels || {})["topology.kubernetes.io/zone"] || "(no zone)";
  }
  const leaves = items("hypernodes").filter((h) => (h.spec.members || []).some((m) => m.type === "Node"))
    .sort((a, b) => (a.spec.tier ?? 0) - (b.spec.tier ?? 0) || a.metadata.name.localeCompare(b.metadata.name));
  const selects = (m, node) => {
    const sel = m.selector || {};
    if (sel.exactMatch) return sel.exactMatch.name === node.metadata.name;
    if (sel.regexMatch) { try { return new RegExp(sel.regexMatch.pattern).test(node.metadata.name); } catch (e) { return false; } }
    if (sel.labelMatch) {
      const labels = node.metadata.labels || {};
      return Object.entries(sel.labelMatch.matchLabels || {}).every(([k, v]) => labels[k] === v);
    }
    return false;
  };
  return (n) => {
    const h = leaves.find((h) => h.spec.members.some((m) => m.type === "Node" && selects(m, n)));
    return h ? `HyperNode ${h.metadata.name} (tier ${h.spec.tier}${h.spec.tierName ? " " + h.spec.tierName : ""})` : "(no HyperNode)";
  };
}

// What a card shows of its node's requests: per resource the bar's width and words, and the line
// of pods on it.
function cardFigures(node, used, pods) {
  const alloc = allocatable(node);
  const resources = ["cpu", "memory", "pods", ...Object.keys(alloc).filter((r) => r.includes("/")).sort()];
  const bars = resources.filter((r) => r in alloc).map((r) => {
    const a = alloc[r];
    const u = used[r] || 0;
    const pct = a ? Math.min(100, (u / a) * 100) : 0;
    return {
      resource: r, title: `${r}: ${show(r, u)} requested of ${show(r, a)} allocatable`,
      fill: pct > 85 ? "fill high" : "fill", width: `${pct.toFixed(1)}%`, text: `${show(r, u)} / ${show(r, a)}`,
    };
  });
  const line = pods.count ? `${pods.count} pod(s): ` + pods.names.slice(0, 8).join(", ") +
    (pods.count > 8 ? `, … ${pods.count - 8} more` : "") : "no pods";
  return { bars, pods: line };
}

function nodeCard(node, used, pods = { names: [], count: 0 }, actions = true) {
  const ready = ((node.status.conditions || []).find((c) => c.type === "Ready") || {}).status === "True";
  const cordoned = !!node.spec.unschedulable;
  const figures = cardFigures(node, used, pods);
  const bars = figures.bars.map((b) => el("div", { class: "bar", title: b.title },
    el("span", {}, b.resource),
    el("div", { class: "track" }, el("div", { class: b.fill, style: `width:${b.width}` })),
    el("span", {}, b.text)));
  const name = node.metadata.name;
  return el("div", { class: "node" + (cordoned ? " cordoned" : "") + (ready ? "" : " notready"), "data-node": name },
    el("h3", {}, name, !ready && el("span", { class: "badge warn" }, "NotReady"),
      cordoned && el("span", { class: "badge warn" }, "cordoned"),
      (node.metadata.labels || {})["kubesched.io/gpu-model"] &&
        el("span", { class: "badge" }, node.metadata.labels["kubesched.io/gpu-model"]),
      actions && el("button", { onclick: () => cordon(name, !cordoned) }, cordoned ? "uncordon" : "cordon")),
    bars,
    el("div", {}, (node.spec.taints || []).map((t) => el("span", { class: "badge taint" },
      `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`))),
    el("div", { class: "pods-on" }, figures.pods));
}

// A card of the same node drawn again for new requests: only its bars and pods line are set, and
// only where they differ, so the browser lays out just what moved.
function refillCard(card, node, used, pods = { names: [], count: 0 }) {
  const figures = cardFigures(node, used, pods);
  const bars = card.querySelectorAll(":scope > .bar");
  figures.bars.forEach((b, i) => {
    const bar = bars[i];
    const fill = bar.children[1].firstChild;
    const text = bar.children[2];
    if (bar.title !== b.title) bar.title = b.title;
    if (fill.className !== b.fill) fill.className = b.fill;
    if (fill.style.width !== b.width) fill.style.width = b.width;
    if (text.textContent !== b.text) text.textContent = b.text;
  });
  const line = card.querySelector(":scope > .pods-on");
  if (line.textContent !== figures.pods) line.textContent = figures.pods;
}

async function cordon(name, on) {
  try {
    await api("PATCH", `/api/v1/nodes/${encodeURIComponent(name)}`, { spec: { unschedulable: on ? true : null } },
      "application/merge-patch+json");
  } catch (e) { alert(e.message); }
}

// -- Pods
// The Pods view draws one page of rows made by the server (/kubesched/v1/pods: the pods waiting for
// a node first with their reason, then the rest, filtered and sorted there), not every pod: at
// 50,000 pods their list is some 70 MB to send and decode, and a watch on every pod would send the
// page each change of each pod. The page shown is polled while the view is open (the server answers
// 304 while it has not changed and bounds its own cost); the selected pod alone is watched, for its
// details.
const podPage = { data: null, query: "", timer: null, inFlight: false, again: false };
const POD_POLL_MS = 1000;
function podQuery() {
  return new URLSearchParams({ offset: String(state.podPage * PAGE), limit: String(PAGE),
    sort: $("pod-sort").value, filter: $("pod-filter").value.trim() }).toString();
}
async function pollPods() {
  if (podPage.timer) { clearTimeout(podPage.timer); podPage.timer = null; }
  if (!token || state.view !== "pods") return;
  // A query asked for while one is answered (a key typed in the filter) is sent when it returns.
  if (podPage.inFlight) { podPage.again = true; return; }
  podPage.inFlight = true;
  try {
    const query = podQuery();
    const rv = podPage.data && podPage.query === query ? "&resourceVersion=" + encodeURIComponent(podPage.data.resourceVersion) : "";
    const res = await fetch("/kubesched/v1/pods?" + query + rv, {
      headers: { Authorization: "Bearer " + token, Accept: "application/json" }, credentials: "omit",
    });
    if (res.status === 401) { podPage.inFlight = false; signOut("the token was refused"); return; }
    if (res.status === 200) { podPage.data = await res.json(); podPage.query = query; scheduleRender(); }
  } catch (e) { /* the server is away: try again at the next tick */ }
  podPage.inFlight = false;
  if (podPage.again) { podPage.again = false; pollPods(); return; }
  if (!podPage.timer && state.view === "pods") podPage.timer = setTimeout(pollPods, POD_POLL_MS);
}
function turnPodPage(p) { state.podPage = p; pollPods(); }

function selectPod(key) {
  state.selected = key;
  if (state.informers.selected) state.informers.selected.stop();
  const slash = key.indexOf("/");
  const ns = key.slice(0, slash);
  const name = key.slice(slash + 1);
  startInformer("selected", `/api/v1/namespaces/${encodeURIComponent(ns)}/pods?fieldSelector=` +
    encodeURIComponent("metadata.name=" + name));
  render();
}

function renderPods() {
  const data = podPage.data;
  if (!data) { $("pod-summary").textContent = "loading…"; return; }
  const filtered = data.matched !== data.total ? ` of ${data.total}` : "";
  $("pod-summary").textContent = `${data.matched} pod(s)${filtered}, ${data.waiting} not placed`;
  const pages = Math.max(1, Math.ceil(data.matched / PAGE));
  // The filter or the pods changed under the page shown: go to the last page there is.
  if (state.podPage > pages - 1 && podPage.query === podQuery()) turnPodPage(pages - 1);
  const rows = data.items.map((x) => {
    const key = x.namespace + "/" + x.name;
    return el("tr", { class: "clickable" + (state.selected === key ? " selected" : ""), "data-pod": key,
      onclick: () => selectPod(key) },
    el("td", {}, key), el("td", { class: "status-" + x.status }, x.status),
    el("td", {}, x.node || "-"), el("td", {}, x.reason));
  });
  $("pod-table").replaceChildren(el("tr", {}, el("th", {}, "POD"), el("th", {}, "STATUS"), el("th", {}, "NODE"),
    el("th", {}, "REASON")), ...rows);
  pager($("pod-pager"), state.podPage, data.matched, turnPodPage);
  const pod = state.selected && state.informers.selected && state.informers.selected.items.get(state.selected);
  $("pod-detail").replaceChildren(...(pod ? podDetail(pod).filter(Boolean) : []));
}

function parsed(pod, key) {
  const v = (pod.metadata.annotations || {})[key];
  if (v === undefined) return null;
  try { return JSON.parse(v); } catch (e) { return null; }
}

function podDetail(pod) {
  const key = Informer.key(pod);
  const status = podStatus(pod);
  const out = [
    el("h2", {}, key, " ", el("span", { class: "status-" + status }, status)),
    el("p", {}, pod.spec.nodeName ? `on ${pod.spec.nodeName}` : "not on a node", " · scheduler ",
      pod.spec.schedulerName || "default-scheduler", " ",
      el("button", { onclick: () => removeObject(`/api/v1/namespaces/${encodeURIComponent(pod.metadata.namespace)}/pods/${encodeURIComponent(pod.metadata.name)}`) }, "delete")),
  ];
  const reason = podReason(pod);
  if (reason) out.push(el("p", { class: "error", id: "pod-reason" }, reason));
  const group = (pod.metadata.annotations || {})[GROUP_ANNOTATION];
  if (group) out.push(...batchDecision(pod.metadata.namespace, group));
  out.push(...attempt(pod));
  return out;
}

function batchDecision(namespace, group) {
  const pg = state.informers.podgroups && state.informers.podgroups.items.get(namespace + "/" + group);
  if (!pg) return [el("p", {}, `PodGroup ${group}: not found`)];
  const st = pg.status || {};
  const queueName = pg.spec.queue || "default";
  const q = state.informers.queues && state.informers.queues.items.get(queueName);
  const conds = (st.conditions || []).map((c) => el("li", {}, `${c.type}=${c.status}${c.reason ? " (" + c.reason + ")" : ""}: ${c.message || ""}`));
  return [
    el("h3", {}, "Batch session"),
    el("p", {}, `gang ${group}: phase ${st.phase || "-"}, minMember ${pg.spec.minMember ?? 1}, running ${st.running || 0}, ` +
      `succeeded ${st.succeeded || 0}, failed ${st.failed || 0}`),
    el("ul", {}, conds),
    el("p", {}, `queue ${queueName}: ` + (q ? resourceText("allocated", (q.status || {}).allocated) + " · " +
      resourceText("deserved", q.spec.deserved || (q.status || {}).deserved) + " · " +
      resourceText("capability", q.spec.capability) : "not found")),
  ];
}
function resourceText(label, list) {
  if (!list || !Object.keys(list).length) return `${label} -`;
  return `${label} ` + Object.entries(list).map(([r, v]) => `${r}=${v}`).join(",");
}

// The latest attempt, from the result annotations the scheduler writes on the pod.
function attempt(pod) {
  const filter = parsed(pod, SIM + "filter-result");
  const preStatus = parsed(pod, SIM + "prefilter-result-status") || {};
  const selected = (pod.metadata.annotations || {})[SIM + "selected-node"] || "";
  if (!filter && !Object.keys(preStatus).length) {
    return [el("p", {}, "No attempt recorded on this pod: per-plugin results are written when serve runs with --scheduling-results (not for batch pods).")];
  }
  const out = [el("h3", {}, "Latest attempt"), selected ? el("p", { id: "selected-node" }, "chosen node: ", el("strong", {}, selected)) : null];
  for (const [plugin, reason] of Object.entries(preStatus)) {
    out.push(el("p", { class: "error" }, `PreFilter ${plugin}: ${reason}`));
  }
  const post = parsed(pod, SIM + "postfilter-result") || {};
  for (const [node, plugins] of Object.entries(post)) {
    for (const [plugin, msg] of Object.entries(plugins)) out.push(el("p", {}, `PostFilter ${plugin}: ${node}: ${msg}`));
  }
  if (filter && Object.keys(filter).length) {
    const nodes = Object.keys(filter).sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
    const plugins = [];
    for (const n of nodes) for (const p of Object.keys(filter[n])) if (!plugins.includes(p)) plugins.push(p);
    const rejected = {};
    for (const n of nodes) {
      for (const [p, v] of Object.entries(filter[n])) if (v !== "passed") rejected[p] = (rejected[p] || 0) + 1;
    }
    out.push(el("p", { id: "filter-summary" }, `Filter: ${nodes.length} node(s) evaluated; ` +
      (Object.keys(rejected).length ? Object.entries(rejected).map(([p, c]) => `${p} rejected ${c}`).join(", ") : "none rejected")));
    out.push(el("table", { id: "filter-table" },
      el("tr", {}, el("th", {}, "NODE"), plugins.map((p) => el("th", {}, p))),
      nodes.slice(0, 300).map((n) => el("tr", { class: n === selected ? "chosen" : "" }, el("td", {}, n),
        plugins.map((p) => {
          const v = filter[n][p];
          return el("td", { class: v === undefined ? "" : v === "passed" ? "passed" : "rejected" }, v === undefined ? "" : v);
        })))));
    if (nodes.length > 300) out.push(el("p", {}, `… ${nodes.length - 300} more node(s)`));
  }
  const raw = parsed(pod, SIM + "score-result") || {};
  const final = parsed(pod, SIM + "finalscore-result") || {};
  const norm = parsed(pod, "kubesched.io/normalizedscore-result") || {};
  const scored = Object.keys(final);
  if (scored.length) {
    const plugins = [...new Set(scored.flatMap((n) => Object.keys(final[n])))].sort();
    const total = (n) => Object.values(final[n]).reduce((s, v) => s + Number(v), 0);
    scored.sort((a, b) => total(b) - total(a) || a.localeCompare(b));
    out.push(el("p", {}, "Score: raw / normalized / weighted per plugin"));
    out.push(el("table", { id: "score-table" },
      el("tr", {}, el("th", {}, "NODE"), el("th", {}, "TOTAL"), plugins.map((p) => el("th", {}, p))),
      scored.slice(0, 100).map((n) => el("tr", { class: n === selected ? "chosen" : "" }, el("td", {}, n),
        el("td", { class: "num" }, total(n)),
        plugins.map((p) => el("td", { class: "num" },
          `${(raw[n] || {})[p] ?? "-"} / ${(norm[n] || {})[p] ?? "-"} / ${final[n][p] ?? "-"}`))))));
  }
  return out;
}

async function removeObject(path) {
  if (!confirm("Delete " + path + "?")) return;
  try { await api("DELETE", path); } catch (e) { alert(e.message); }
}

// -- Queues and PodGroups
function renderQueues() {
  const queues = items("queues").sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  $("queue-table").replaceChildren(
    el("tr", {}, ["QUEUE", "STATE", "WEIGHT", "CAPABILITY", "DESERVED", "GUARANTEE", "ALLOCATED", "PENDING", "INQUEUE", "RUNNING"].map((h) => el("th", {}, h))),
    ...queues.map((q) => {
      const s = q.status || {}; const sp = q.spec || {};
      const list = (l) => l && Object.keys(l).length ? Object.entries(l).map(([r, v]) => `${r}=${v}`).join(", ") : "-";
      return el("tr", { "data-queue": q.metadata.name }, el("td", {}, q.metadata.name), el("td", {}, s.state || "-"),
        el("td", { class: "num" }, sp.weight ?? "-"), el("td", {}, list(sp.capability)),
        el("td", {}, list(sp.deserved || s.deserved)), el("td", {}, list((sp.guarantee || {}).resource)),
        el("td", {}, list(s.allocated)), el("td", { class: "num" }, s.pending || 0),
        el("td", { class: "num" }, s.inqueue || 0), el("td", { class: "num" }, s.running || 0));
    }));
  const groups = items("podgroups").sort((a, b) => Informer.key(a).localeCompare(Informer.key(b)));
  $("podgroup-table").replaceChildren(
    el("tr", {}, ["PODGROUP", "QUEUE", "MINMEMBER", "PHASE", "RUNNING", "SUCCEEDED", "FAILED", "CONDITION"].map((h) => el("th", {}, h))),
    ...groups.map((g) => {
      const s = g.status || {};
      const last = (s.conditions || []).slice(-1)[0];
      return el("tr", { "data-podgroup": Informer.key(g) }, el("td", {}, Informer.key(g)), el("td", {}, g.spec.queue || "default"),
        el("td", { class: "num" }, g.spec.minMember ?? 1), el("td", {}, s.phase || "-"),
        el("td", { class: "num" }, s.running || 0), el("td", { class: "num" }, s.succeeded || 0),
        el("td", { class: "num" }, s.failed || 0),
        el("td", {}, last ? `${last.type}: ${last.reason || ""} ${last.message || ""}` : "-"));
    }));
}

// -- Edit: apply and delete through the API, with the API's refusals located in the text
let resources = null;
async function discover() {
  if (resources) return resources;
  const found = new Map();
  const add = (gv, list) => {
    for (const r of list.resources || []) {
      if (r.name.includes("/")) continue;
      found.set(gv + "|" + r.kind, { gv, plural: r.name, namespaced: r.namespaced });
    }
  };
  add("v1", await api("GET", "/api/v1"));
  const groups = await api("GET", "/apis");
  await Promise.all(groups.groups.flatMap((g) => g.versions.map(async (v) => add(v.groupVersion, await api("GET", "/apis/" + v.groupVersion)))));
  resources = found;
  return found;
}

function objectPath(res, obj) {
  const prefix = res.gv === "v1" ? "/api/v1" : "/apis/" + res.gv;
  const ns = res.namespaced ? `/namespaces/${encodeURIComponent(obj.metadata.namespace || "default")}` : "";
  return `${prefix}${ns}/${res.plural}/${encodeURIComponent(obj.metadata.name)}`;
}

async function editObjects(action) {
  const list = $("apply-result");
  list.replaceChildren();
  let docs;
  try {
    docs = (await api("POST", "/kubesched/v1/decode", $("editor").value, "application/yaml")).items;
  } catch (e) {
    list.append(el("li", { class: "error" }, e.message));
    return;
  }
  const known = await discover();
  for (const { line, object } of docs) {
    const where = `line ${line}: ${object.kind || "?"} ${(object.metadata || {}).name || "?"}`;
    if (!object || typeof object !== "object" || !object.kind || !object.apiVersion || !object.metadata) {
      list.append(el("li", { class: "error" }, `line ${line}: Object 'Kind' is missing or the object has no apiVersion or metadata`));
      continue;
    }
    const res = known.get(object.apiVersion + "|" + object.kind);
    if (!res) {
      list.append(el("li", { class: "error" }, `${where}: no matches for kind "${object.kind}" in version "${object.apiVersion}"`));
      continue;
    }
    try {
      if (action === "apply") {
        await api("PATCH", objectPath(res, object) + "?fieldManager=kubesched-ui&fieldValidation=Strict&force=true",
          object, "application/apply-patch+yaml");
        list.append(el("li", { class: "ok" }, `${where}: applied`));
      } else {
        await api("DELETE", objectPath(res, object));
        list.append(el("li", { class: "ok" }, `${where}: deleted`));
      }
    } catch (e) {
      const causes = ((e.status || {}).details || {}).causes || [];
      list.append(el("li", { class: "error" }, `${where}: ${e.message}`,
        causes.length ? el("ul", {}, causes.map((c) => el("li", {}, `${c.field || ""}: ${c.message}`))) : null));
    }
  }
}

// -- Config
async function loadConfig(which) {
  $("config-" + which + "-result").textContent = "";
  try { $("config-" + which).value = await api("GET", "/kubesched/v1/config/" + which); }
  catch (e) { $("config-" + which + "-result").textContent = e.message; }
}
async function replaceConfig(which) {
  const out = $("config-" + which + "-result");
  out.className = ""; out.textContent = "replacing…";
  try {
    await api("PUT", "/kubesched/v1/config/" + which, $("config-" + which).value, "application/yaml");
    out.className = "ok"; out.textContent = "replaced: the schedulers run with it now";
  } catch (e) {
    out.className = "error"; out.textContent = e.message;
  }
}

// -- Replay: manifests run over virtual time on a cluster of their own, stepped through by a slider
const replay = { timeline: null };
async function runReplay() {
  const out = $("replay-result");
  out.className = ""; out.textContent = "running…";
  try {
    replay.timeline = await api("POST", "/kubesched/v1/replay", $("replay-editor").value, "application/yaml");
  } catch (e) {
    const causes = ((e.status || {}).details || {}).causes || [];
    out.className = "error";
    out.textContent = e.message + causes.filter((c) => c.field).map((c) => ` (field ${c.field})`).join("");
    return;
  }
  const tl = replay.timeline;
  out.className = "ok";
  out.textContent = `${tl.pods.length} pod(s) on ${tl.nodes.length} node(s), ${duration(tl.end)} of virtual time` +
    (tl.warnings.length ? "; " + tl.warnings.join("; ") : "");
  const slider = $("replay-time");
  slider.max = String(Math.max(tl.end, 0));
  slider.step = String(Math.max(tl.end / 1000, 1));
  slider.value = slider.max;
  $("replay-controls").hidden = false;
  drawReplay();
}

function duration(seconds) {
  if (seconds < 120) return `${Math.round(seconds)}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  return `${Math.round(seconds / 360) / 10}h`;
}

function drawReplay() {
  const tl = replay.timeline;
  if (!tl) return;
  const t = Number($("replay-time").value);
  $("replay-now").textContent = `t = ${duration(t)} of ${duration(tl.end)}`;
  const used = new Map();
  const podsOn = new Map();
  const waiting = [];
  for (const p of tl.pods) {
    if (p.arrival > t || (p.deleted !== null && p.deleted <= t)) continue;
    const running = p.bound !== null && p.bound <= t && (p.finished === null || p.finished > t);
    if (running && p.node) {
      const u = used.get(p.node) || {};
      for (const [r, v] of Object.entries(p.requests)) u[r] = (u[r] || 0) + v;
      u.pods = (u.pods || 0) + 1;
      used.set(p.node, u);
      if (!podsOn.has(p.node)) podsOn.set(p.node, []);
      podsOn.get(p.node).push(p.key);
    } else if (p.bound === null || p.bound > t) waiting.push(p);
  }
  const cards = tl.nodes.slice(0, PAGE).map((n) => nodeCard(
    { metadata: { name: n.name, labels: n.labels }, spec: {}, status: { allocatable: n.allocatable, conditions: [{ type: "Ready", status: "True" }] } },
    used.get(n.name) || {}, { names: podsOn.get(n.name) || [], count: (podsOn.get(n.name) || []).length }, false));
  $("replay-nodes").replaceChildren(el("h2", {}, `nodes (${tl.nodes.length}${tl.nodes.length > PAGE ? ", the first " + PAGE + " shown" : ""})`),
    el("div", { class: "nodes" }, cards));
  $("replay-waiting").replaceChildren(el("h2", {}, `${waiting.length} pod(s) waiting at t`),
    el("table", {}, el("tr", {}, el("th", {}, "POD"), el("th", {}, "ARRIVED"), el("th", {}, "REASON")),
      waiting.slice(0, PAGE).map((p) => el("tr", {}, el("td", {}, p.key), el("td", {}, duration(p.arrival)), el("td", {}, p.message)))));
  $("replay-charts").replaceChildren(
    chart("pods", tl.series, ["pending", "running", "completed"], t, tl.end),
    chart("allocation (requested / allocatable)", tl.series, Object.keys(tl.series).filter((k) => k.startsWith("alloc.")), t, tl.end, 1));
}

// A line chart of the run's time series, drawn as SVG elements (no markup from data).
function chart(title, series, names, t, end, top) {
  const NS = "http://www.w3.org/2000/svg";
  const W = 560, H = 160, L = 40, B = 20;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("width", W); svg.setAttribute("height", H + 40); svg.setAttribute("class", "chart");
  const times = series.time || [];
  let max = top || 0;
  if (!top) for (const n of names) for (const v of series[n] || []) if (v !== null && v > max) max = v;
  max = max || 1;
  const span = end || Math.max(...times, 1);
  const x = (v) => L + (v / span) * (W - L - 10);
  const y = (v) => 10 + (1 - v / max) * (H - B - 10);
  const colors = ["#3d8bfd", "#e8590c", "#1b7f3b", "#9c36b5", "#c98a00"];
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    svg.append(e);
  };
  add("text", { x: L, y: H + 32, class: "chart-title" }, title);
  add("line", { x1: L, y1: y(0), x2: W - 10, y2: y(0), stroke: "#999" });
  add("text", { x: 2, y: y(max) + 4, class: "chart-axis" }, top ? "100%" : String(Math.round(max)));
  add("text", { x: 2, y: y(0), class: "chart-axis" }, "0");
  names.forEach((n, i) => {
    // Steps: a sample holds until the next one (the series change only at events).
    const pts = [];
    let last = null;
    (series[n] || []).forEach((v, j) => {
      if (v === null) return;
      if (last !== null) pts.push(`${x(times[j]).toFixed(1)},${y(last).toFixed(1)}`);
      pts.push(`${x(times[j]).toFixed(1)},${y(v).toFixed(1)}`);
      last = v;
    });
    if (last !== null) pts.push(`${x(span).toFixed(1)},${y(last).toFixed(1)}`);
    add("polyline", { points: pts.join(" "), fill: "none", stroke: colors[i % colors.length], "stroke-width": 1.5 });
    add("text", { x: L + 10 + i * 130, y: H + 12, fill: colors[i % colors.length], class: "chart-axis" }, n);
  });
  add("line", { x1: x(t), y1: 5, x2: x(t), y2: y(0), stroke: "#b3261e", "stroke-dasharray": "3,3" });
  return svg;
}

// ---- sign-in and start ---------------------------------------------------------------------
function signOut(why) {
  token = "";
  sessionStorage.removeItem("kubesched-token");
  for (const i of Object.values(state.informers)) i.stop();
  state.informers = {};
  summary.data = null;
  if (summary.timer) { clearTimeout(summary.timer); summary.timer = null; }
  podPage.data = null;
  if (podPage.timer) { clearTimeout(podPage.timer); podPage.timer = null; }
  $("tabs").hidden = true; $("logout").hidden = true;
  for (const v of document.querySelectorAll(".view")) v.hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = why || "";
}

function startInformer(kind, path) {
  state.informers[kind] = new Informer(path, scheduleRender);
  state.informers[kind].run();
}

function showView(view) {
  state.view = view;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.view === view);
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== "view-" + view;
  if (view === "config") { loadConfig("scheduler"); loadConfig("batch"); }
  if (view === "pods" && !podPage.timer && !podPage.inFlight) pollPods();
  if (view === "cluster" && !summary.timer && !summary.inFlight) pollSummary();
  render();
}

async function start() {
  try { await api("GET", "/api/v1/namespaces?limit=1"); } catch (e) { return; }
  $("login").hidden = true; $("tabs").hidden = false; $("logout").hidden = false;
  const paths = {
    nodes: "/api/v1/nodes",
    podgroups: "/apis/scheduling.volcano.sh/v1beta1/podgroups", queues: "/apis/scheduling.volcano.sh/v1beta1/queues",
    hypernodes: "/apis/topology.volcano.sh/v1alpha1/hypernodes",
  };
  for (const [kind, path] of Object.entries(paths)) startInformer(kind, path);
  showView(state.view);
}

async function trade(code) {
  history.replaceState(null, "", location.pathname);
  try {
    const res = await fetch("/ui/login", { method: "POST", body: JSON.stringify({ code }), headers: { "Content-Type": "application/json" } });
    if (!res.ok) { signOut("this one-time link was used already or is not valid: sign in with the token"); return; }
    token = (await res.json()).token;
    sessionStorage.setItem("kubesched-token", token);
  } catch (e) { signOut(e.message); return; }
  start();
}

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    token = $("token").value.trim();
    sessionStorage.setItem("kubesched-token", token);
    $("token").value = "";
    start();
  });
  $("logout").addEventListener("click", () => signOut(""));
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showView(b.dataset.view));
  $("node-filter").addEventListener("input", () => { state.nodePage = 0; render(); });
  $("node-sort").addEventListener("change", () => render());
  $("node-group").addEventListener("change", () => render());
  $("pod-filter").addEventListener("input", () => { state.podPage = 0; pollPods(); });
  $("pod-sort").addEventListener("change", () => { state.podPage = 0; pollPods(); });
  $("apply").addEventListener("click", () => editObjects("apply"));
  $("run-replay").addEventListener("click", runReplay);
  $("replay-time").addEventListener("input", drawReplay);
  $("delete-objects").addEventListener("click", () => editObjects("delete"));
  for (const b of document.querySelectorAll(".replace-config")) b.addEventListener("click", () => replaceConfig(b.dataset.config));
  for (const b of document.querySelectorAll(".reload-config")) b.addEventListener("click", () => loadConfig(b.dataset.config));
  const code = new URLSearchParams(location.hash.slice(1)).get("code");
  if (code) trade(code);
  else if (token) start();
  else signOut("");
});
