// The dramock device map: lists + watch streams against this server (the same API kubectl uses), redrawn on
// every event. No framework, no build step, nothing fetched from elsewhere.
"use strict";

const RES = "/apis/resource.k8s.io/v1";
const SOURCES = {
  nodes: "/api/v1/nodes",
  pods: "/api/v1/pods",
  slices: `${RES}/resourceslices`,
  claims: `${RES}/resourceclaims`,
};
// As dramock.scheduler.explain.REASON_ORDER: what stood in the way first, never-candidates and the usable last.
const REASON_ORDER = ["Chosen", "Allocated", "ReservedInFlight", "ChosenForOtherRequest", "CountersExhausted",
  "CapacityExceeded", "CompatibilityGroupConflict", "ConstraintNotSatisfied", "Tainted", "PoolIncomplete",
  "PoolInvalid", "SelectorFalse", "FeatureDisabled", "NodeNotSelected", "Usable"];
const state = { nodes: new Map(), pods: new Map(), slices: new Map(), claims: new Map() };
const explanations = new Map(); // "ns/name" -> PodExplanation
let liveStreams = 0;

// ------------------------------------------------------------------ data

function keyOf(o) {
  const m = o.metadata || {};
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

async function follow(kind) {
  // List, then watch from the list's resourceVersion; on any end or error start over (relist).
  for (;;) {
    try {
      const list = await (await fetch(SOURCES[kind])).json();
      const map = new Map();
      for (const item of list.items || []) map.set(keyOf(item), item);
      state[kind] = map;
      schedule();
      const rv = (list.metadata || {}).resourceVersion || "";
      const resp = await fetch(`${SOURCES[kind]}?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`);
      if (!resp.ok || !resp.body) throw new Error(`watch ${kind}: ${resp.status}`);
      setLive(+1);
      try {
        await readEvents(resp.body, (ev) => {
          if (ev.type === "ERROR") throw new Error("watch expired");
          if (ev.type === "BOOKMARK") return;
          const k = keyOf(ev.object);
          if (ev.type === "DELETED") state[kind].delete(k); else state[kind].set(k, ev.object);
          schedule();
        });
      } finally {
        setLive(-1);
      }
    } catch (e) {
      console.warn(kind, e);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function readEvents(body, onEvent) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) onEvent(JSON.parse(line));
    }
  }
}

function setLive(delta) {
  liveStreams += delta;
  const el = document.getElementById("live");
  const all = Object.keys(SOURCES).length;
  el.textContent = liveStreams >= all ? "live" : `reconnecting (${liveStreams}/${all})`;
  el.classList.toggle("on", liveStreams >= all);
}

let pendingRender = false;
function schedule() {
  if (pendingRender) return;
  pendingRender = true;
  setTimeout(() => { pendingRender = false; render(); refreshExplanations(); }, 60);
}

let explaining = false;
let explainAgain = false;
async function refreshExplanations() {
  if (explaining) { explainAgain = true; return; }
  explaining = true;
  try {
    const list = await (await fetch("/dramock/explain/pods")).json();
    explanations.clear();
    for (const e of list.items || []) explanations.set(`${e.metadata.namespace}/${e.metadata.name}`, e);
    renderPending();
  } catch (e) {
    console.warn("explain", e);
  } finally {
    explaining = false;
    if (explainAgain) { explainAgain = false; refreshExplanations(); }
  }
}

// ------------------------------------------------------------------ quantities

const SUFFIX = { n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

function qty(v) {
  if (v && typeof v === "object") v = v.value;
  if (v === undefined || v === null) return 0;
  const m = String(v).match(/^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/);
  if (!m) return 0;
  return parseFloat(m[1]) * (SUFFIX[m[2]] ?? 1);
}

function showQty(n, like) {
  const unit = String((like && like.value) || like || "").match(/[a-zA-Z]+$/);
  const binary = unit && unit[0].endsWith("i");
  if (binary) {
    for (const s of ["Ei", "Pi", "Ti", "Gi", "Mi", "Ki"]) {
      if (Math.abs(n) >= SUFFIX[s]) return `${+(n / SUFFIX[s]).toFixed(1)}${s}`;
    }
  }
  if (unit && unit[0] !== "" && SUFFIX[unit[0]] && !binary) return `${+(n / SUFFIX[unit[0]]).toFixed(2)}${unit[0]}`;
  return `${+n.toFixed(2)}`;
}

// ------------------------------------------------------------------ DOM

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "style") el.setAttribute("style", v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function bar(label, used, total, like) {
  const pct = total > 0 ? Math.min(100, (used / total) * 100) : 0;
  return h("div", { class: "bar" },
    h("span", {}, label),
    h("div", { class: "track" }, h("div", { class: `fill${pct >= 99.9 ? " full" : ""}`, style: `width:${pct}%` })),
    h("span", {}, `${showQty(used, like)} / ${showQty(total, like)}`));
}

// ------------------------------------------------------------------ model

function holdings() {
  // device id "driver/pool/device" -> [{claim, request, shareID, consumed, pods}]
  const out = new Map();
  for (const claim of state.claims.values()) {
    const alloc = (claim.status || {}).allocation;
    if (!alloc) continue;
    const pods = ((claim.status || {}).reservedFor || []).map((r) => r.name);
    for (const r of ((alloc.devices || {}).results || [])) {
      const id = `${r.driver}/${r.pool}/${r.device}`;
      if (!out.has(id)) out.set(id, []);
      out.get(id).push({ claim: keyOf(claim), request: r.request, shareID: r.shareID,
        consumed: r.consumedCapacity || {}, admin: !!r.adminAccess, pods });
    }
  }
  return out;
}

function pools() {
  // newest generation of every pool: {driver, name, node, slices, devices, counterSets}
  const byPool = new Map();
  for (const s of state.slices.values()) {
    const spec = s.spec || {};
    const pid = `${spec.driver}/${(spec.pool || {}).name}`;
    const gen = (spec.pool || {}).generation || 0;
    const cur = byPool.get(pid);
    if (!cur || gen > cur.gen) byPool.set(pid, { gen, slices: [s] });
    else if (gen === cur.gen) cur.slices.push(s);
  }
  const out = [];
  for (const [pid, { slices }] of byPool) {
    slices.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const spec0 = slices[0].spec;
    const pool = { id: pid, driver: spec0.driver, name: spec0.pool.name, node: null, devices: [], counterSets: [],
      expected: spec0.pool.resourceSliceCount || 1, present: slices.length, selector: null };
    for (const s of slices) {
      const spec = s.spec;
      if (spec.nodeName) pool.node = spec.nodeName;
      if (spec.nodeSelector) pool.selector = "nodeSelector";
      if (spec.allNodes) pool.selector = "all nodes";
      for (const cs of spec.sharedCounters || []) pool.counterSets.push(cs);
      for (const d of spec.devices || []) pool.devices.push({ ...d, driver: spec.driver, pool: spec.pool.name });
    }
    out.push(pool);
  }
  out.sort((a, b) => a.id.localeCompare(b.id));
  return out;
}

function attrSummary(d) {
  const parts = [];
  for (const [k, v] of Object.entries(d.attributes || {})) {
    const val = v.string ?? v.version ?? v.int ?? v.bool;
    if (val === undefined) continue;
    parts.push(`${k.split("/").pop()}=${val}`);
    if (parts.length >= 2) break;
  }
  const mem = (d.capacity || {}).memory;
  if (mem && parts.length < 3) parts.push(String(mem.value));
  return parts.join(" · ");
}

// ------------------------------------------------------------------ views

function deviceTile(d, held) {
  const id = `${d.driver}/${d.pool}/${d.name}`;
  const holders = (held.get(id) || []).filter((x) => !x.admin);
  const taints = (d.taints || []).filter((t) => t.effect === "NoSchedule" || t.effect === "NoExecute");
  const cls = ["tile", holders.length ? "used" : "free", taints.length ? "tainted" : ""].join(" ");
  const tile = h("div", { class: cls, "data-device": id, title: id },
    h("div", { class: "name" }, d.name),
    h("div", { class: "attrs" }, attrSummary(d)));
  for (const t of taints) {
    tile.append(h("div", {}, h("span", { class: "badge taint" }, `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`)));
  }
  if (d.allowMultipleAllocations) {
    // A shared device: bars for each consumable capacity, then every share.
    for (const [name, cap] of Object.entries(d.capacity || {})) {
      const used = holders.reduce((sum, x) => sum + qty(x.consumed[name]), 0);
      tile.append(bar(name, used, qty(cap.value), cap.value));
    }
  }
  for (const x of holders) {
    tile.append(h("div", { class: "holder", "data-claim": x.claim, title: `claim ${x.claim}, request ${x.request}` },
      x.shareID ? "◐ " : "● ", x.claim.split("/").pop(),
      x.pods.length ? h("span", { class: "pod" }, `pod ${x.pods.join(", ")}`) : ""));
  }
  return tile;
}

function poolView(pool, held) {
  const head = h("div", { class: "pool-head" }, h("b", {}, pool.driver), " / ", pool.name,
    pool.selector ? ` · ${pool.selector}` : "",
    pool.present < pool.expected ? h("span", { class: "badge taint" }, `incomplete ${pool.present}/${pool.expected}`) : "");
  const view = h("div", { class: "pool", "data-pool": pool.id }, head);
  const partitioned = new Set();
  for (const cs of pool.counterSets) {
    const members = pool.devices.filter((d) => (d.consumesCounters || []).some((c) => c.counterSet === cs.name));
    members.forEach((d) => partitioned.add(d.name));
    const box = h("div", { class: "counterset", "data-counterset": cs.name },
      h("div", { class: "counterset-head" }, `counter set ${cs.name}`));
    for (const [cname, total] of Object.entries(cs.counters || {})) {
      let used = 0;
      for (const d of members) {
        if (!(held.get(`${d.driver}/${d.pool}/${d.name}`) || []).some((x) => !x.admin)) continue;
        for (const c of d.consumesCounters || []) {
          if (c.counterSet === cs.name && c.counters && c.counters[cname]) used += qty(c.counters[cname]);
        }
      }
      box.append(bar(cname, used, qty(total), total.value));
    }
    box.append(h("div", { class: "tiles" }, members.map((d) => deviceTile(d, held))));
    view.append(box);
  }
  const rest = pool.devices.filter((d) => !partitioned.has(d.name));
  if (rest.length) view.append(h("div", { class: "tiles" }, rest.map((d) => deviceTile(d, held))));
  if (!pool.devices.length) view.append(h("div", { class: "empty" }, "no devices"));
  return view;
}

function nodeView(node, nodePools, held) {
  const name = node.metadata.name;
  const podsHere = [...state.pods.values()].filter((p) => (p.spec || {}).nodeName === name);
  const taints = ((node.spec || {}).taints || []).map((t) =>
    h("span", { class: "badge taint" }, `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`));
  const devices = nodePools.reduce((n, p) => n + p.devices.length, 0);
  const used = nodePools.reduce((n, p) => n + p.devices.filter((d) =>
    (held.get(`${d.driver}/${d.pool}/${d.name}`) || []).some((x) => !x.admin)).length, 0);
  return h("div", { class: "card", "data-node": name },
    h("div", { class: "card-head" }, h("h3", {}, name),
      h("span", { class: "meta" }, `${devices} devices · ${used} in use · ${podsHere.length} pods`),
      (node.spec || {}).unschedulable ? h("span", { class: "badge taint" }, "unschedulable") : "", taints),
    nodePools.length ? nodePools.map((p) => poolView(p, held)) : h("div", { class: "empty" }, "no ResourceSlices"));
}

function render() {
  const held = holdings();
  const all = pools();
  const nodes = [...state.nodes.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const nodesEl = document.getElementById("nodes");
  nodesEl.replaceChildren(...nodes.map((n) => nodeView(n, all.filter((p) => p.node === n.metadata.name), held)));
  const floating = all.filter((p) => !p.node);
  document.getElementById("cluster-pools").hidden = !floating.length;
  document.getElementById("cluster-pool-list").replaceChildren(
    ...floating.map((p) => h("div", { class: "card" }, poolView(p, held))));
  const devices = all.reduce((n, p) => n + p.devices.length, 0);
  const pending = [...state.pods.values()].filter((p) => !(p.spec || {}).nodeName).length;
  document.getElementById("summary").textContent =
    `${nodes.length} nodes · ${all.length} pools · ${devices} devices · ${state.claims.size} claims · ` +
    `${held.size} devices held · ${pending} pending pods`;
  renderPending();
}

function renderPending() {
  const pods = [...state.pods.values()].filter((p) => !(p.spec || {}).nodeName && !(p.metadata || {}).deletionTimestamp)
    .sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  document.getElementById("pending").hidden = !pods.length;
  document.getElementById("pending-list").replaceChildren(...pods.map((p) => {
    const e = explanations.get(keyOf(p));
    const card = h("div", { class: "card pending-pod", "data-pending-pod": keyOf(p) },
      h("div", { class: "card-head" }, h("h3", {}, keyOf(p))),
      h("div", { class: "verdict" }, e ? e.verdict : "…"));
    if (!e) return card;
    const list = h("ul", { class: "why" });
    for (const node of e.nodes || []) {
      list.append(h("li", {}, h("span", { class: "node" }, node.name), ": ", node.fits ? "fits" : node.reason));
      for (const claim of node.claims || []) {
        for (const req of claim.requests || []) {
          const groups = new Map();
          for (const d of req.devices || []) {
            if (!groups.has(d.reason)) groups.set(d.reason, []);
            groups.get(d.reason).push(d);
          }
          const rank = (r) => { const i = REASON_ORDER.indexOf(r); return i < 0 ? REASON_ORDER.length : i; };
          for (const [reason, devs] of [...groups].sort((a, b) => rank(a[0]) - rank(b[0]))) {
            const first = devs[0];
            list.append(h("li", { style: "margin-left:16px" },
              h("span", { class: `reason${reason === "Usable" || reason === "Chosen" ? " good" : ""}` },
                `${reason} ×${devs.length}`), " ",
              h("span", { class: "dev" }, `${claim.name}/${req.name}: ${first.device}`),
              first.message ? ` — ${first.message}` : ""));
          }
        }
      }
    }
    card.append(list);
    return card;
  }));
}

for (const kind of Object.keys(SOURCES)) follow(kind);
