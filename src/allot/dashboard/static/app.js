// allot dashboard: plain JavaScript, no build step, no library; served by allot itself.
// Views are routes in the URL's fragment: #/cluster, #/nodes, #/node/NAME, #/apps, #/app/KIND/NAME,
// #/pod/NAMESPACE/NAME. Data comes from api/v1/ (aggregated by the server, one page at a time);
// a live cluster pushes "change" events (server-sent), a simulation is browsed with the time slider.
"use strict";
(function () {
  const S = {
    meta: null, run: "", t: null, seq: 0, routeKey: "", timer: null, events: null, playing: null,
    poll: null, lastChange: 0,
  };
  const $ = (id) => document.getElementById(id);
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

  // -- formatting ------------------------------------------------------------------------
  function esc(value) {
    return String(value === null || value === undefined ? "" : value)
      .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }
  function num(x, digits) {
    if (x === null || x === undefined) return "–";
    const d = digits === undefined ? (Math.abs(x - Math.round(x)) < 1e-9 ? 0 : 2) : digits;
    return Number(x).toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
  }
  function pct(part, whole) { return whole > 0 ? (100 * part / whole).toFixed(1) + " %" : "–"; }
  function dur(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return s + " s";
    const m = Math.floor(s / 60), h = Math.floor(m / 60), d = Math.floor(h / 24);
    if (d > 0) return d + "d " + (h % 24) + "h";
    if (h > 0) return h + "h " + String(m % 60).padStart(2, "0") + "m";
    return s % 60 ? m + "m " + String(s % 60).padStart(2, "0") + "s" : m + "m";
  }
  function when(t) {
    if (t === null || t === undefined) return "";
    if (S.meta && S.meta.mode === "simulation") return "t = " + dur(t);
    return new Date(t * 1000).toLocaleTimeString();
  }
  function ratio(value) {
    if (value === null || value === undefined) return "–";
    const cls = value >= 0.9 ? "good" : "bad";
    return '<span class="' + cls + '">' + value.toFixed(2) + "</span>";
  }
  function bar(value, max, used, mark) {
    const w = max > 0 ? Math.min(100, 100 * value / max) : 0;
    let html = '<div class="bar" title="' + esc(num(value) + " of " + num(max)) + '"><span style="width:' + w.toFixed(1) + '%"></span>';
    if (used !== undefined && used !== null && max > 0) {
      html += '<span class="use" style="width:' + Math.min(100, 100 * used / max).toFixed(1) + '%;height:4px;top:auto"></span>';
    }
    if (mark !== undefined && mark !== null && max > 0) {
      html += '<i style="left:' + Math.min(99, 100 * mark / max).toFixed(1) + '%"></i>';
    }
    return html + "</div>";
  }
  function shade(fraction) {
    if (fraction <= 1e-9) return "#ffffff";
    if (fraction >= 1 - 1e-9) return PALETTE[0];
    return "#a9c1dc";
  }
  function minimap(values) {
    return '<span class="minimap">' + values.map((v) => '<b style="background:' + shade(v) + '" title="' + esc(num(v * 100, 0) + " %") + '"></b>').join("") + "</span>";
  }

  // -- links ---------------------------------------------------------------------------------
  const enc = (text) => String(text).split("/").map(encodeURIComponent).join("/");
  const nodeLink = (name) => name ? '<a href="#/node/' + enc(name) + '">' + esc(name) + "</a>" : "";
  const podLink = (key) => '<a href="#/pod/' + enc(key) + '">' + esc(key) + "</a>";
  function appLink(app, text) {
    const [kind, ...rest] = app.split("/");
    const name = rest.join("/");
    return '<a href="#/app/' + enc(kind) + "/" + enc(name) + '" title="' + esc(kind) + '">' + esc(text || name) + "</a>";
  }
  const KIND_NAMES = { namespace: "Namespace", localqueue: "LocalQueue", clusterqueue: "ClusterQueue", podgroup: "Pod group" };
  function appsOf(row) {
    return row.apps.map((a) => '<span class="muted">' + esc(KIND_NAMES[a.split("/")[0]] || "") + "</span> " + appLink(a)).join(" · ");
  }

  // -- data ------------------------------------------------------------------------------
  async function api(path, params) {
    const query = new URLSearchParams();
    if (S.run) query.set("run", S.run);
    if (S.t !== null) query.set("t", String(S.t));
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== undefined && v !== null && v !== "") query.set(k, String(v));
    }
    const text = query.toString();
    const response = await fetch("api/v1/" + path + (text ? "?" + text : ""), { cache: "no-store" });
    const body = await response.json().catch(() => ({ error: response.statusText }));
    if (!response.ok) {
      const error = new Error(body.error || response.statusText);
      error.status = response.status;
      throw error;
    }
    return body;
  }

  function route() {
    const hash = location.hash.replace(/^#\/?/, "");
    const [path, query] = hash.split("?");
    const parts = (path || "cluster").split("/").map(decodeURIComponent);
    return { view: parts[0] || "cluster", rest: parts.slice(1), params: new URLSearchParams(query || "") };
  }
  function setParams(params) {
    const r = route();
    const text = params.toString();
    const base = "#/" + [r.view, ...r.rest].map(encodeURIComponent).join("/");
    history.replaceState(null, "", base + (text ? "?" + text : ""));
  }

  // -- charts ----------------------------------------------------------------------------
  function chart(points, fields) {
    if (!points || points.length < 2) return '<p class="muted">History appears here as samples accumulate.</p>';
    const W = 900, H = 220, L = 44, R = 10, T = 10, B = 24;
    const at = (name) => fields.indexOf(name);
    const series = [
      { name: "ready", color: "#5b6575", dash: "4 3" },
      { name: "allocated", color: PALETTE[0], area: true },
      { name: "inUse", color: PALETTE[2] },
      { name: "pendingGpus", color: PALETTE[3], dash: "2 2" },
    ];
    const t0 = points[0][0], t1 = points[points.length - 1][0];
    let most = 1;
    for (const p of points) for (const s of series) most = Math.max(most, p[at(s.name)]);
    // A round step (1, 2 or 5 times a power of ten) giving four or five grid lines.
    const magnitude = Math.pow(10, Math.floor(Math.log10(most / 4)));
    const step = [1, 2, 5, 10].map((m) => m * magnitude).find((v) => most / v <= 5);
    const top = step * Math.ceil(most / step);
    const x = (t) => L + (W - L - R) * (t1 > t0 ? (t - t0) / (t1 - t0) : 0);
    const y = (v) => T + (H - T - B) * (1 - v / top);
    let svg = '<svg class="chart" viewBox="0 0 ' + W + " " + H + '" preserveAspectRatio="none" role="img" aria-label="GPU allocation over time">';
    const decimals = step < 1 ? Math.ceil(-Math.log10(step)) : 0;
    for (let v = 0; v <= top + step / 2; v += step) {
      svg += '<line x1="' + L + '" x2="' + (W - R) + '" y1="' + y(v) + '" y2="' + y(v) + '" stroke="#e3e7ee"/>';
      svg += '<text x="' + (L - 4) + '" y="' + (y(v) + 4) + '" text-anchor="end">' + num(v, decimals) + "</text>";
    }
    for (let i = 0; i <= 4; i++) {
      const t = t0 + (t1 - t0) * i / 4;
      svg += '<text x="' + x(t) + '" y="' + (H - 6) + '" text-anchor="middle">' + esc(when(t).replace("t = ", "")) + "</text>";
    }
    for (const s of series) {
      const k = at(s.name);
      const line = points.map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[k]).toFixed(1)).join("");
      if (s.area) {
        svg += '<path d="' + line + "L" + x(t1) + "," + y(0) + "L" + x(t0) + "," + y(0) + 'Z" fill="' + s.color + '" opacity="0.25"/>';
      }
      svg += '<path d="' + line + '" fill="none" stroke="' + s.color + '" stroke-width="1.6"' + (s.dash ? ' stroke-dasharray="' + s.dash + '"' : "") + "/>";
    }
    svg += "</svg>";
    const legend = '<div class="legend">' + [["GPUs ready", "#5b6575"], ["allocated", PALETTE[0]], ["in use (running pods)", PALETTE[2]], ["GPUs asked by pending pods", PALETTE[3]]]
      .map(([n, c]) => '<span><i style="background:' + c + '"></i>' + n + "</span>").join("") + "</div>";
    return svg + legend;
  }

  // -- tables --------------------------------------------------------------------------------
  // Cells are markup (escape what goes in); `textColumns` are left-aligned, `reasonColumn` wraps long text.
  function table(headers, rows, textColumns, reasonColumn) {
    const text = new Set(textColumns || []);
    const cls = (i) => (i === reasonColumn ? ' class="reason"' : text.has(i) ? ' class="text"' : "");
    const head = headers.map((h, i) => "<th" + (text.has(i) || i === reasonColumn ? ' class="text"' : "") + ">" + esc(h) + "</th>").join("");
    const body = rows.map((r) => "<tr>" + r.map((c, i) => "<td" + cls(i) + ">" + c + "</td>").join("") + "</tr>").join("");
    return "<table><thead><tr>" + head + "</tr></thead><tbody>" + (body || '<tr><td class="muted" colspan="' + headers.length + '">none</td></tr>') + "</tbody></table>";
  }
  function pager(page, param) {
    if (page.total <= page.limit) return "";
    const from = page.offset + 1, to = Math.min(page.offset + page.limit, page.total);
    return '<div class="pager"><button type="button" data-page="' + param + '" data-offset="' + Math.max(0, page.offset - page.limit) + '"' + (page.offset === 0 ? " disabled" : "") + ">‹ previous</button>" +
      '<span class="muted">' + num(from) + "–" + num(to) + " of " + num(page.total) + "</span>" +
      '<button type="button" data-page="' + param + '" data-offset="' + (page.offset + page.limit) + '"' + (to >= page.total ? " disabled" : "") + ">next ›</button></div>";
  }
  function pendingTable(rows) {
    return table(
      ["pod", "GPUs", "priority", "waited", "applications", "reason"],
      rows.map((p) => [podLink(p.pod), num(p.gpus), num(p.priority), dur(p.waited), appsOf(p), esc(p.reason)]),
      [0, 4],
      5,
    );
  }
  function runningTable(rows) {
    return table(["pod", "node", "GPUs", "phase", "applications"],
      rows.map((p) => [podLink(p.pod), nodeLink(p.node), num(p.gpus), esc(p.phase || "–"), appsOf(p)]), [0, 1, 3, 4]);
  }

  // -- views -----------------------------------------------------------------------------
  async function viewCluster() {
    const c = await api("cluster");
    const t = c.totals;
    const cards = [
      ["GPUs ready", num(t.ready), "of " + num(t.gpus) + " on " + num(t.nodesReady) + "/" + num(t.nodes) + " ready nodes"],
      ["GPUs allocated", num(t.allocated), pct(t.allocated, t.ready) + " of ready (GPU-equivalents)"],
      ["GPUs in use", num(t.inUse), pct(t.inUse, t.ready) + " held by running pods"],
      ["Stranded share", num(t.fragmented), "free share left on partly used GPUs"],
      ["Unhealthy GPUs", num(t.unhealthy), "tainted NoSchedule/NoExecute"],
      ["Pending pods", num(c.pending.pods), num(c.pending.gpus) + " GPUs asked; oldest " + dur(c.pending.oldest)],
      ["GPU-hours waiting", num(c.pending.gpuHours, 1), "GPUs asked × time waited"],
    ];
    const appTables = c.apps.map((apps) => "<h2>" + (apps.kind === "clusterqueue" ? "ClusterQueues" : "Namespaces") + ': GPUs against fair share</h2><p class="lead">Fair share: the GPUs on ready nodes split by weighted max-min over what each holds and asks for; ratio = held ÷ fair (below 0.90 in red). <a href="#/apps?kind=' + apps.kind + '">All ' + num(apps.total) + "</a></p>" +
      '<div id="cluster-' + apps.kind + '">' + table(["", "weight", "GPUs held", "asked (pending)", "fair share", "ratio", ""], apps.items.map((a) => [appLink(a.app), num(a.weight), num(a.held), num(a.pending) + " (" + num(a.pendingPods) + " pods)", num(a.fair), ratio(a.ratio), bar(a.held, Math.max(a.fair, a.held + a.pending), null, a.fair)]), [0]) + "</div>").join("");
    return '<h1>Cluster</h1><p class="lead">' + esc(c.title || "") + " " + esc(when(c.time)) + "</p>" +
      '<div class="cards" id="cluster-totals">' + cards.map(([n, v, s]) => '<div class="card"><div class="small">' + esc(n) + '</div><div class="big">' + v + '</div><div class="small">' + esc(s) + "</div></div>").join("") + "</div>" +
      "<h2>Allocation over time</h2>" + chart(c.history, c.historyFields) +
      '<div class="grid2"><div><h2>By GPU model</h2>' +
      table(["model", "GPUs", "ready", "allocated", "in use", "stranded", ""], c.byModel.map((m) => [esc(m.model), num(m.gpus), num(m.ready), num(m.allocated), num(m.inUse), num(m.fragmented), bar(m.allocated, m.ready, m.inUse)]), [0]) +
      "</div><div><h2>By node pool</h2>" +
      table(["pool", "nodes", "GPUs", "allocated", "in use", "stranded", ""], c.byPool.map((p) => ['<a href="#/nodes?pool=' + encodeURIComponent(p.pool) + '">' + esc(p.pool) + "</a>", num(p.nodesReady) + "/" + num(p.nodes), num(p.ready) + "/" + num(p.gpus), num(p.allocated), num(p.inUse), num(p.fragmented), bar(p.allocated, p.ready, p.inUse)]), [0]) +
      "</div></div>" +
      appTables +
      '<h2>Why pods wait</h2><div class="grid2"><div>' +
      table(["reason (names and counts taken out)", "pods", "GPUs"], c.pending.reasons.map((r) => ['<span class="mono">' + esc(r.reason) + "</span>", num(r.pods), num(r.gpus)]), [0]) +
      '</div></div><h2>Longest waits</h2><p class="lead">Pending pods, the most GPU-hours of waiting first, then the longest waits.</p>' +
      '<div id="pending-top">' + pendingTable(c.pending.top) + "</div>";
  }

  function nodesControls(params, pools) {
    const pool = params.get("pool") || "";
    return '<h1>Nodes</h1><div class="controls"><input id="q" type="search" placeholder="filter by name" value="' + esc(params.get("q") || "") + '">' +
      '<label>pool <select id="pool"><option value="">all</option>' + pools.map((p) => "<option" + (p === pool ? " selected" : "") + ">" + esc(p) + "</option>").join("") + "</select></label>" +
      '<label>sort <select id="sort">' + ["name", "pool", "allocated", "free", "pods"].map((s) => "<option" + (s === (params.get("sort") || "name") ? " selected" : "") + ">" + s + "</option>").join("") + "</select></label>" +
      '<label>order <select id="order">' + ["asc", "desc"].map((s) => "<option" + (s === (params.get("order") || "asc") ? " selected" : "") + ">" + s + "</option>").join("") + "</select></label></div>" +
      '<div id="data"></div>';
  }
  async function viewNodes(params, first) {
    const query = { q: params.get("q"), pool: params.get("pool"), sort: params.get("sort"), order: params.get("order"), offset: params.get("offset"), limit: 50 };
    const list = await api("nodes", query);
    const rows = list.items.map((n) => [nodeLink(n.name), esc(n.pool), n.ready ? "yes" : '<span class="bad">no</span>', num(n.gpus), num(n.allocated), num(n.inUse), num(n.free), n.unhealthy ? '<span class="bad">' + num(n.unhealthy) + "</span>" : "0", num(n.pods), minimap(n.map), esc(n.models.join(", "))]);
    const data = table(["node", "pool", "ready", "GPUs", "allocated", "in use", "free", "unhealthy", "pods", "GPUs (each)", "models"], rows, [0, 1, 9, 10]) + pager(list, "offset");
    if (first) return { shell: nodesControls(params, list.pools), data: data };
    return { data: data };
  }

  function holderLine(h, label) {
    const share = h.share < 0.9999 ? " · " + num(h.share * 100, 0) + " %" : "";
    const domain = h.domain ? ' <span class="domain">trust ' + esc(h.domain) + "</span>" : "";
    const who = h.pod.startsWith("claim ") ? esc(h.pod) : podLink(h.pod);
    return "<li>" + who + share + domain + (h.device && h.device !== label ? ' <span class="muted">' + esc(h.device) + "</span>" : "") + "</li>";
  }
  function gpuCard(g) {
    const taints = g.taints.length ? '<div class="taint">' + g.taints.map(esc).join("<br>") + "</div>" : "";
    let body = "";
    if (g.mode === "partition") {
      body = "<div class=\"muted\" style=\"font-size:11px\">MIG: " + num(g.slices.length) + " slice(s) in use of " + num(g.placements) + " placements</div><ul>" +
        g.slices.map((s) => "<li><b>" + esc(s.model || s.name) + "</b> " + esc(s.name) + "<ul>" + s.holders.map((h) => holderLine(h, "")).join("") + "</ul></li>").join("") + "</ul>";
    } else if (g.holders.length) {
      body = "<ul>" + g.holders.map((h) => holderLine(h, g.label)).join("") + "</ul>";
    } else {
      body = '<div class="muted" style="font-size:12px">free</div>';
    }
    const mode = { whole: "whole", partition: "MIG", shared: "shared", plugin: "device plugin" }[g.mode] || g.mode;
    return '<div class="gpu' + (g.healthy ? "" : " unhealthy") + '" data-gpu="' + esc(g.label) + '"><div class="head"><span>' + esc(g.label) + ' <span class="muted">' + esc(mode) + "</span></span><span>" + num(g.allocated * 100, 0) + " %</span></div>" +
      '<div class="muted" style="font-size:11px">' + esc(g.model) + (g.healthy ? "" : ' · <span class="bad">unhealthy</span>') + "</div>" + bar(g.allocated, 1, g.inUse) + taints + body + "</div>";
  }
  function chip(d) {
    const holders = d.holders.map((h) => h.pod.startsWith("claim ") ? esc(h.pod) : podLink(h.pod)).join(", ");
    const taints = d.taints.length ? ' <span class="taint">' + d.taints.map(esc).join(", ") + "</span>" : "";
    return '<span class="chip ' + esc(d.kind) + (d.healthy ? "" : " unhealthy") + '" title="' + esc(d.driver + " " + d.model) + '">' + esc(d.kind) + " " + esc(d.name) + (holders ? " ← " + holders : "") + taints + "</span>";
  }
  async function viewNode(name) {
    const n = await api("nodes/" + encodeURIComponent(name));
    const s = n.summary;
    const layout = n.layout.map((numa) => '<div class="numa"><h3>NUMA node ' + esc(numa.numa) + "</h3>" +
      (numa.local.length ? '<div class="devs">' + numa.local.map(chip).join("") + "</div>" : "") +
      numa.roots.map((r) => '<div class="root"><div class="label">PCIe root ' + esc(r.root) + "</div>" +
        '<div class="devs">' + r.gpus.map(gpuCard).join("") + "</div>" +
        (r.devices.length ? '<div class="devs" style="margin-top:4px">' + r.devices.map(chip).join("") + "</div>" : "") + "</div>").join("") + "</div>").join("");
    const cpu = n.cpu, mem = n.memory;
    return '<h1>Node ' + esc(n.name) + '</h1><p class="lead">pool <a href="#/nodes?pool=' + encodeURIComponent(n.pool) + '">' + esc(n.pool) + "</a> · " +
      (n.ready ? '<span class="good">Ready</span>' : '<span class="bad">NotReady</span>') + (n.schedulable ? "" : ' · <span class="bad">cordoned</span>') +
      " · " + num(s.gpus) + " GPUs, " + num(s.allocated) + " allocated, " + num(s.inUse) + " in use · CPU " + num(cpu.requested / 1000, 1) + "/" + num(cpu.allocatable / 1000, 1) +
      " · memory " + num(mem.requested / 2 ** 30, 1) + "/" + num(mem.allocatable / 2 ** 30, 1) + " GiB · " + esc(when(n.time)) + "</p>" +
      (n.taints.length ? '<p class="taint">taints: ' + n.taints.map(esc).join(", ") + "</p>" : "") +
      '<h2>Devices by NUMA node and PCIe root</h2><div class="numa-row" id="node-map">' + (layout || '<p class="muted">This node publishes no devices.</p>') + "</div>" +
      "<h2>Pods (" + num(n.podsTotal) + ")</h2>" + runningTable(n.pods);
  }

  const KINDS = ["namespace", "clusterqueue", "localqueue", "podgroup"];
  function appsControls(params) {
    const kind = params.get("kind") || "namespace";
    return "<h1>Applications</h1><div class=\"controls\"><span class=\"tabs\">" + KINDS.map((k) => '<a href="#/apps?kind=' + k + '"' + (k === kind ? ' class="active"' : "") + ">" + KIND_NAMES[k] + "s</a>").join("") + "</span>" +
      '<input id="q" type="search" placeholder="filter by name" value="' + esc(params.get("q") || "") + '"></div><div id="data"></div>';
  }
  async function viewApps(params, first) {
    const kind = params.get("kind") || "namespace";
    const list = await api("apps", { kind: kind, q: params.get("q"), offset: params.get("offset"), limit: 50 });
    const rows = list.items.map((a) => [appLink(a.app), num(a.held), num(a.pending) + " (" + num(a.pendingPods) + ")", num(a.runningPods), a.fair === null ? "–" : num(a.fair), ratio(a.ratio), a.weightedShare === null ? "–" : num(a.weightedShare), a.borrowing === null ? "–" : (a.borrowing ? "yes" : "no"), num(a.preemptions)]);
    const data = table([KIND_NAMES[kind], "GPUs held", "asked (pods)", "running pods", "fair share", "ratio", "weighted share", "borrowing", "preemptions"], rows, [0]) + pager(list, "offset");
    return first ? { shell: appsControls(params), data: data } : { data: data };
  }

  async function viewApp(kind, name, params) {
    const a = await api("apps/" + encodeURIComponent(kind) + "/" + enc(name), { offset: params.get("offset"), roffset: params.get("roffset") });
    const links = [];
    for (const k of KINDS) {
      const names = a.links[k] || [];
      if (names.length) links.push(esc(KIND_NAMES[k]) + ": " + names.map((n) => appLink(k + "/" + n)).join(", "));
    }
    if (a.links.cohort) links.push("cohort " + esc(a.links.cohort));
    const g = a.gpus;
    const cards = [
      ["GPUs held", num(g.held), g.fair === null ? "" : "fair share " + num(g.fair)],
      ["Fair-share ratio", ratio(g.ratio), g.weight === null ? "held ÷ fair share" : "weight " + num(g.weight)],
      ["GPUs asked", num(g.pending), num(a.pending.total) + " pending pods"],
      ["Waits (started)", dur(a.waits.started.p50), "p50 · p95 " + dur(a.waits.started.p95) + " · " + num(a.waits.started.count) + " pods"],
      ["Oldest pending", dur(a.waits.pending.max), "p50 " + dur(a.waits.pending.p50)],
      ["Preemptions", a.decisionsSeen ? num(a.preemptions) : "–", a.decisionsSeen ? num(a.admissions) + " admissions" : "not seen by a read-only view"],
    ];
    if (a.kueue && a.kueue.weightedShare !== undefined) {
      cards.push(["Weighted share", a.kueue.weightedShare === null ? "–" : num(a.kueue.weightedShare), "Kueue's fairSharing (" + esc(a.kueue.dominantResource || "none") + ")"]);
    }
    let quota = "";
    if (a.quota) {
      quota = "<h2>Quota</h2>" + table(["flavor", "resource", "nominal", "usage", "borrowed", "borrowing limit", "lending limit", ""],
        a.quota.map((q) => [esc(q.flavor), esc(q.resource), esc(q.nominal || "–"), esc(q.usage || "–"), q.borrowed && q.borrowed !== "0" ? '<span class="bad">' + esc(q.borrowed) + "</span>" : esc(q.borrowed || "–"), esc(q.borrowingLimit || "–"), esc(q.lendingLimit || "–"), q.used === undefined || q.used === null ? "" : bar(q.used, Math.max(1, q.used), null, 1)]), [0, 1]);
    }
    return "<h1>" + esc(KIND_NAMES[kind] || kind) + " " + esc(name) + '</h1><p class="lead">' + links.join(" · ") + " · " + esc(when(a.time)) + "</p>" +
      '<div class="cards">' + cards.map(([n, v, s]) => '<div class="card"><div class="small">' + esc(n) + '</div><div class="big">' + v + '</div><div class="small">' + s + "</div></div>").join("") + "</div>" +
      quota +
      "<h2>Why its pods wait</h2>" + table(["reason", "pods", "GPUs"], a.reasons.map((r) => ['<span class="mono">' + esc(r.reason) + "</span>", num(r.pods), num(r.gpus)]), [0]) +
      "<h2>Pending pods (" + num(a.pending.total) + ')</h2><div id="app-pending">' + pendingTable(a.pending.items) + pager(a.pending, "offset") + "</div>" +
      "<h2>Running pods (" + num(a.running.total) + ')</h2><div id="app-running">' + runningTable(a.running.items) + pager(a.running, "roffset") + "</div>";
  }

  async function viewPod(key) {
    const p = await api("pods/" + enc(key));
    const where = p.node ? "runs on node " + nodeLink(p.node) + " (" + esc(p.phase || "phase unknown") + ")" : "is pending";
    return "<h1>Pod " + esc(p.pod) + '</h1><p class="lead">' + esc(when(p.time)) + '</p><div class="card" id="pod-detail"><p>This pod ' + where + ".</p>" +
      (p.node ? "" : '<p><b>Why it waits</b> (waited ' + dur(p.waited) + '):</p><p class="mono" id="pod-reason">' + esc(p.reason) + "</p>") +
      "<p>GPUs " + (p.node ? "held" : "asked") + ": " + num(p.gpus) + " · priority " + num(p.priority) + " · scheduler " + esc(p.scheduler) + "</p>" +
      "<p>Applications: " + appsOf(p) + "</p>" +
      (p.node ? "" : '<p class="muted">Every node\'s reason: <span class="mono">allot place CLUSTER --explain ' + esc(p.pod) + "</span></p>") + "</div>";
  }

  // -- the loop ----------------------------------------------------------------------------
  async function render() {
    const seq = ++S.seq;
    const r = route();
    for (const a of document.querySelectorAll("#nav a")) {
      const v = a.getAttribute("data-view");
      a.classList.toggle("active", v === r.view || (v === "nodes" && r.view === "node") || (v === "apps" && (r.view === "app" || r.view === "pod")));
    }
    const key = r.view + "|" + r.rest.join("/") + (r.view === "apps" ? "|" + (r.params.get("kind") || "") : "");
    const first = key !== S.routeKey;
    const main = $("main");
    try {
      let html = null;
      let parts = null;
      if (r.view === "cluster") html = await viewCluster();
      else if (r.view === "nodes") parts = await viewNodes(r.params, first);
      else if (r.view === "node") html = await viewNode(r.rest.join("/"));
      else if (r.view === "apps") parts = await viewApps(r.params, first);
      else if (r.view === "app") html = await viewApp(r.rest[0], r.rest.slice(1).join("/"), r.params);
      else if (r.view === "pod") html = await viewPod(r.rest.join("/"));
      else html = '<p class="error">No view named ' + esc(r.view) + '. <a href="#/cluster">Cluster</a></p>';
      if (seq !== S.seq) return;
      if (parts) {
        if (parts.shell) { main.innerHTML = parts.shell; bindControls(); }
        const data = $("data");
        if (data) data.innerHTML = parts.data;
      } else {
        const y = window.scrollY;
        main.innerHTML = html;
        if (!first) window.scrollTo(0, y);
      }
      S.routeKey = key;
    } catch (error) {
      if (seq !== S.seq) return;
      main.innerHTML = '<p class="error">' + esc(error.message) + "</p>" + (error.status === 404 ? '<p><a href="#/cluster">Back to the cluster</a></p>' : "");
      S.routeKey = "";
    }
  }
  function refresh(delay) {
    clearTimeout(S.timer);
    S.timer = setTimeout(render, delay === undefined ? 60 : delay);
  }
  function bindControls() {
    const q = $("q");
    if (q) q.addEventListener("input", () => { const p = route().params; p.set("q", q.value); p.delete("offset"); setParams(p); refresh(250); });
    for (const id of ["pool", "sort", "order"]) {
      const el = $(id);
      if (el) el.addEventListener("change", () => { const p = route().params; p.set(id, el.value); p.delete("offset"); setParams(p); refresh(0); });
    }
  }
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-page]");
    if (!button) return;
    const p = route().params;
    p.set(button.getAttribute("data-page"), button.getAttribute("data-offset"));
    setParams(p);
    refresh(0);
  });

  function connect() {
    const mode = $("mode");
    if (S.events) S.events.close();
    if (!window.EventSource) { S.poll = setInterval(() => refresh(0), 5000); return; }
    S.events = new EventSource("api/v1/events" + (S.run ? "?run=" + encodeURIComponent(S.run) : ""));
    S.events.addEventListener("change", (event) => {
      const data = JSON.parse(event.data);
      mode.className = "badge " + (S.meta.mode === "watch" ? "watch" : "live");
      mode.textContent = S.meta.mode === "watch" ? "read-only" : "live";
      $("clock").textContent = data.time ? "updated " + when(data.time) : (data.error || "");
      S.lastChange = Date.now();
      refresh();
    });
    S.events.onerror = () => { mode.className = "badge down"; mode.textContent = "reconnecting"; };
  }

  function setupTime() {
    const times = S.meta.times;
    $("timebar").hidden = false;
    const slider = $("time");
    slider.max = String(Math.max(0, times.length - 1));
    slider.value = String(times.length - 1);
    const show = () => { const t = times[Number(slider.value)]; S.t = t; $("timetext").textContent = "t = " + dur(t) + " (" + (Number(slider.value) + 1) + "/" + times.length + ")"; };
    show();
    slider.addEventListener("input", () => { show(); refresh(120); });
    $("play").addEventListener("click", () => {
      if (S.playing) { clearInterval(S.playing); S.playing = null; $("play").innerHTML = "&#9654;"; return; }
      if (Number(slider.value) >= times.length - 1) slider.value = "0";
      $("play").innerHTML = "&#10074;&#10074;";
      S.playing = setInterval(() => {
        if (Number(slider.value) >= times.length - 1) { clearInterval(S.playing); S.playing = null; $("play").innerHTML = "&#9654;"; return; }
        slider.value = String(Number(slider.value) + 1); show(); refresh(0);
      }, 700);
    });
    const runs = $("run");
    runs.innerHTML = S.meta.runs.map((r) => "<option" + (r === S.meta.run ? " selected" : "") + ">" + esc(r) + "</option>").join("");
    runs.addEventListener("change", async () => { S.run = runs.value; S.meta = await api("meta"); S.t = null; setupTime(); refresh(0); });
    const mode = $("mode");
    mode.className = "badge sim";
    mode.textContent = "simulation";
  }

  async function start() {
    try {
      S.meta = await api("meta");
    } catch (error) {
      $("main").innerHTML = '<p class="error">' + esc(error.message) + "</p>";
      setTimeout(start, 2000);
      return;
    }
    S.run = S.meta.run;
    $("title").textContent = S.meta.title || "";
    document.title = "allot · " + (S.meta.title || S.meta.mode);
    if (S.meta.mode === "simulation") setupTime();
    else connect();
    window.addEventListener("hashchange", () => refresh(0));
    render();
  }
  start();
})();
