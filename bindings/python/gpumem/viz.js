// The script of gpumem-viz's page: draws the model that bindings/python/gpumem/viz.py puts in
// #gpumem-data.  viz.py inlines it into the page, which needs no network.
// SPDX-License-Identifier: MIT
(function () {
"use strict";
var D = JSON.parse(document.getElementById("gpumem-data").textContent);
var KIND_COLORS = {device: "#3b6fd4", host_pinned: "#e0892b", host_registered: "#c9a227", managed: "#3fa372",
  stream_ordered: "#8a56c9", virtual: "#d04f6a", buffer: "#2aa3b8", unknown: "#8c96a1"};
var POOL_COLORS = ["#8a56c9", "#2aa3b8", "#e0892b", "#3fa372", "#d04f6a", "#3b6fd4", "#c9a227", "#6b4f2a"];
var $ = function (id) { return document.getElementById(id); };

function fmtBytes(n) {
  var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0, v = Math.abs(n);
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (n < 0 ? "-" : "") + (i ? v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0) : v.toFixed(0)) + " " + u[i];
}
function fmtTime(us) {
  var a = Math.abs(us);
  if (a >= 1e6) return (us / 1e6).toFixed(a >= 1e7 ? 1 : 2) + " s";
  if (a >= 1e3) return (us / 1e3).toFixed(a >= 1e4 ? 1 : 2) + " ms";
  return us.toFixed(a >= 10 ? 0 : 1) + " \u00b5s";
}
// A pool is named with its memory ("pool 0x.. (pinned)") wherever the file says it.
function poolName(p) {
  if (p < 0) return "no pool";
  var memory = D.pool_memory && D.pool_memory[p];
  return "pool " + D.pools[p] + (memory ? " (" + memory + ")" : "");
}
// "device 1.5 GiB, pinned 16 MiB": bytes per memory of one moment.
function byMemory(bytesOf) {
  return (D.memories_used || []).filter(function (k) { return bytesOf(k); }).map(function (k) {
    return D.memories[k] + " " + fmtBytes(bytesOf(k));
  }).join(", ");
}
function legend(el, items) {
  el.textContent = "";
  items.forEach(function (it) {
    var s = document.createElement("span"), i = document.createElement("i");
    i.style.background = it[1];
    s.appendChild(i); s.appendChild(document.createTextNode(it[0])); el.appendChild(s);
  });
}
function niceStep(range, n) {
  var raw = range / n, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
  return (m < 1.5 ? 1 : m < 3 ? 2 : m < 7 ? 5 : 10) * p;
}
function niceByteStep(range, n) {
  var raw = range / n, p = Math.pow(2, Math.ceil(Math.log2(Math.max(raw, 1))));
  return p / 2 >= raw ? p / 2 : p;
}
// A canvas sized to its box (sharp on high-DPI screens) with axes; returns the mapping.
function chart(id, x0, x1, y1, yLabel) {
  var c = $(id), w = c.clientWidth || 1000, h = c.height;
  var dpr = window.devicePixelRatio || 1;
  if (!c.dataset.h) c.dataset.h = h;
  h = +c.dataset.h;
  c.style.height = h + "px"; c.width = w * dpr; c.height = h * dpr;
  var ctx = c.getContext("2d"); ctx.scale(dpr, dpr);
  var L = 72, R = 12, T = 10, B = 26;
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= 0) y1 = 1;
  var m = {ctx: ctx, w: w, h: h, L: L, R: R, T: T, B: B, x0: x0, x1: x1, y1: y1,
    x: function (t) { return L + (t - x0) / (x1 - x0) * (w - L - R); },
    y: function (v) { return h - B - v / y1 * (h - T - B); },
    t: function (px) { return x0 + (px - L) / (w - L - R) * (x1 - x0); },
    v: function (py) { return (h - B - py) / (h - T - B) * y1; }};
  ctx.font = "11px system-ui,sans-serif"; ctx.fillStyle = "#5a6470"; ctx.strokeStyle = "#eceef1";
  var ys = niceByteStep(y1, 5);
  for (var v = 0; v <= y1 * 1.0001; v += ys) {
    ctx.beginPath(); ctx.moveTo(L, m.y(v)); ctx.lineTo(w - R, m.y(v)); ctx.stroke();
    ctx.textAlign = "right"; ctx.fillText(fmtBytes(v), L - 6, m.y(v) + 4);
  }
  var xs = niceStep(x1 - x0, 8);
  for (var t = Math.ceil(x0 / xs) * xs; t <= x1; t += xs) {
    ctx.textAlign = "center"; ctx.fillText(fmtTime(t), m.x(t), h - B + 16);
    ctx.beginPath(); ctx.moveTo(m.x(t), h - B); ctx.lineTo(m.x(t), h - B + 4); ctx.strokeStyle = "#9aa3ad"; ctx.stroke();
  }
  ctx.strokeStyle = "#9aa3ad"; ctx.beginPath(); ctx.moveTo(L, T); ctx.lineTo(L, h - B); ctx.lineTo(w - R, h - B); ctx.stroke();
  return m;
}
var tip = $("tip");
function hover(id, fn) {
  var c = $(id);
  c.addEventListener("mousemove", function (ev) {
    var r = c.getBoundingClientRect(), text = fn(ev.clientX - r.left, ev.clientY - r.top);
    if (!text) { tip.style.display = "none"; return; }
    tip.textContent = text; tip.style.display = "block";
    tip.style.left = (ev.clientX + 14) + "px"; tip.style.top = (ev.clientY + 10) + "px";
  });
  c.addEventListener("mouseleave", function () { tip.style.display = "none"; });
}
function lastIndexAtOrBefore(ts, t) {
  var lo = 0, hi = ts.length - 1;
  if (hi < 0 || t < ts[0]) return -1;
  while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (ts[mid] <= t) lo = mid; else hi = mid - 1; }
  return lo;
}
// A step function through (t[i], v[i]).
function stepPath(ctx, m, ts, base, top) {
  ctx.beginPath(); ctx.moveTo(m.x(ts[0]), m.y(base[0]));
  for (var i = 0; i < ts.length; i++) {
    if (i) ctx.lineTo(m.x(ts[i]), m.y(base[i - 1]));
    ctx.lineTo(m.x(ts[i]), m.y(base[i]));
  }
  ctx.lineTo(m.x(D.meta.t_end), m.y(base[ts.length - 1]));
  ctx.lineTo(m.x(D.meta.t_end), m.y(top[ts.length - 1]));
  for (i = ts.length - 1; i >= 0; i--) {
    ctx.lineTo(m.x(ts[i]), m.y(top[i]));
    if (i) ctx.lineTo(m.x(ts[i]), m.y(top[i - 1]));
  }
  ctx.closePath();
}
function stepLine(ctx, m, ts, vs) {
  ctx.beginPath(); ctx.moveTo(m.x(ts[0]), m.y(vs[0]));
  for (var i = 1; i < ts.length; i++) { ctx.lineTo(m.x(ts[i]), m.y(vs[i - 1])); ctx.lineTo(m.x(ts[i]), m.y(vs[i])); }
  ctx.lineTo(m.x(D.meta.t_end), m.y(vs[ts.length - 1])); ctx.stroke();
}

function summary() {
  var M = D.meta, parts = [];
  $("title").textContent = D.source || D.type;
  parts.push(D.type === "trace" ? "trace" : "snapshot");
  if (M.backend) parts.push("backend " + M.backend);
  if (M.version) parts.push("gpumem " + M.version);
  (M.devices || []).forEach(function (d) {
    parts.push("device " + d.device + ": " + (d.name || "?") + (d.total ? ", " + fmtBytes(d.total) : "") +
      (d.free != null ? " (" + fmtBytes(d.free) + " free)" : ""));
  });
  if (D.type === "trace") {
    parts.push(M.events + " events over " + fmtTime(M.t_end - M.t_start));
    parts.push(M.counts.alloc + " allocations, " + M.counts.free + " frees");
    parts.push("peak " + fmtBytes(M.peak_total) + " at " + fmtTime(M.peak_time));
  }
  parts.push(M.live_at_end + " live allocations (" + fmtBytes(M.live_bytes_at_end) + ")" +
    (D.type === "trace" ? " at the end" : ""));
  var s = $("summary"); s.textContent = parts.join(" \u00b7 ");
  var warn = [];
  if (M.dropped) warn.push("the trace was cut: " + M.dropped + " older events were dropped (GPUMEM_TRACE_MAX); " +
    M.unmatched_frees + " frees are of allocations made before the trace starts (drawn from its start); " +
    "allocations made before it and never freed are missing");
  if (M.cut_short) warn.push("the trace ends without its closing ]} (the program did not reach gpumem_finalize " +
    "or exit): drawn up to its last whole line" + (M.skipped_lines ? "; the line after it, cut in the middle, is skipped" : ""));
  if (M.no_address) warn.push(M.no_address + " allocation and free events have no address (ptr 0x0): they cannot " +
    "be paired, so they are not drawn");
  warn.forEach(function (w) { var d = document.createElement("div"); d.className = "warn"; d.textContent = w; s.appendChild(d); });
  // Each failed allocation with what would have fit (the first 20; the rest counted).
  var ooms = D.ooms || [];
  ooms.slice(0, 20).forEach(function (o) {
    var d = document.createElement("div"); d.className = "warn oom";
    d.textContent = "out of memory at " + fmtTime(o.t) + ": " + fmtBytes(o.bytes) + " of " + o.kind +
      (o.device != null ? " on device " + o.device : "") + (o.pool >= 0 ? " from " + poolName(o.pool) : "") +
      " \u2014 " + (o.verdict || "no verdict recorded");
    s.appendChild(d);
  });
  if (ooms.length > 20) {
    var more = document.createElement("div"); more.className = "warn oom";
    more.textContent = (ooms.length - 20) + " more allocations failed out of memory"; s.appendChild(more);
  }
}

// A red line and cross at each failed allocation, on a time chart.
function markOoms(m, y1) {
  var ooms = D.ooms || [];
  if (!ooms.length) return;
  var ctx = m.ctx;
  ctx.save(); ctx.strokeStyle = "#d62728"; ctx.fillStyle = "#d62728"; ctx.lineWidth = 1.5;
  ooms.forEach(function (o) {
    var x = m.x(o.t);
    ctx.setLineDash([4, 3]); ctx.beginPath(); ctx.moveTo(x, m.y(y1)); ctx.lineTo(x, m.y(0)); ctx.stroke();
    ctx.setLineDash([]); ctx.font = "bold 13px sans-serif"; ctx.fillText("\u2715 OOM", x + 3, m.y(y1) + 12);
  });
  ctx.restore();
}

function kindsTimeline() {
  var S = D.series, ts = S.t;
  $("timeline-note").textContent = "Live bytes per kind of allocation (stacked; hover for the bytes per kind and " +
    "per memory: device, pinned, managed); " + ts.length +
    " points drawn (the largest per pixel column are kept, so peaks show).";
  var y1 = Math.max.apply(null, S.total.concat([1])) * 1.05;
  var m = chart("kinds", D.meta.t_start, D.meta.t_end, y1);
  var ctx = m.ctx, base = ts.map(function () { return 0; }), items = [];
  D.kinds_used.forEach(function (k) {
    var top = base.map(function (b, i) { return b + S.kind[k][i]; });
    stepPath(ctx, m, ts, base, top);
    ctx.fillStyle = KIND_COLORS[D.kinds[k]]; ctx.globalAlpha = 0.85; ctx.fill(); ctx.globalAlpha = 1;
    items.push([D.kinds[k], KIND_COLORS[D.kinds[k]]]);
    base = top;
  });
  markOoms(m, y1);
  if ((D.ooms || []).length) items.push(["out of memory (see the summary)", "#d62728"]);
  legend($("kinds-legend"), items);
  hover("kinds", function (x, y) {
    var i = lastIndexAtOrBefore(ts, m.t(x));
    if (i < 0) return "";
    var lines = [fmtTime(ts[i]) + ": " + fmtBytes(S.total[i])];
    (D.ooms || []).forEach(function (o) {
      if (Math.abs(m.x(o.t) - x) <= 4) lines.push("out of memory: " + fmtBytes(o.bytes) + " of " + o.kind + "; " + o.verdict);
    });
    D.kinds_used.forEach(function (k) { if (S.kind[k][i]) lines.push("  " + D.kinds[k] + " " + fmtBytes(S.kind[k][i])); });
    var memory = byMemory(function (k) { return S.memory[k][i]; });
    if (memory) lines.push("memory: " + memory);
    return lines.join("\n");
  });
}

function poolsTimeline() {
  var S = D.series, ts = S.t, n = D.pools.length;
  if (!n) { $("pools-note").textContent = "No pool appears in this trace."; $("pools").style.display = "none"; return; }
  $("pools-note").textContent = "Solid: bytes held by live allocations (used); dashed: bytes the pool holds (reserved; " +
    "from pool_grow, pool_release, trim and the pool counters).";
  var y1 = 1;
  for (var p = 0; p < n; p++) y1 = Math.max(y1, Math.max.apply(null, S.pool_used[p]), Math.max.apply(null, S.pool_reserved[p]));
  var m = chart("pools", D.meta.t_start, D.meta.t_end, y1 * 1.05), ctx = m.ctx, items = [];
  for (p = 0; p < n; p++) {
    var col = POOL_COLORS[p % POOL_COLORS.length];
    ctx.strokeStyle = col; ctx.lineWidth = 1.6; ctx.setLineDash([]); stepLine(ctx, m, ts, S.pool_used[p]);
    ctx.setLineDash([5, 4]); stepLine(ctx, m, ts, S.pool_reserved[p]); ctx.setLineDash([]); ctx.lineWidth = 1;
    items.push([poolName(p), col]);
  }
  legend($("pools-legend"), items);
  hover("pools", function (x) {
    var i = lastIndexAtOrBefore(ts, m.t(x));
    if (i < 0) return "";
    var lines = [fmtTime(ts[i])];
    for (var p = 0; p < n; p++) lines.push(poolName(p) + ": used " + fmtBytes(S.pool_used[p][i]) + ", reserved " + fmtBytes(S.pool_reserved[p][i]));
    return lines.join("\n");
  });
}

function shade(hex, id) {  // one colour per kind, each block a little lighter or darker
  var f = ((id * 2654435761) >>> 0) % 7 / 14 - 0.2, n = parseInt(hex.slice(1), 16);
  var c = [n >> 16, (n >> 8) & 255, n & 255].map(function (v) {
    return Math.max(0, Math.min(255, Math.round(f > 0 ? v + (255 - v) * f : v * (1 + f))));
  });
  return "rgb(" + c.join(",") + ")";
}
function blockY(b, t) {   // the band's bottom at time t (p = [t0, y0, t1, y1, ..., t_end])
  var y = b.p[1];
  for (var i = 2; i + 1 < b.p.length; i += 2) { if (b.p[i] > t) break; y = b.p[i + 1]; }
  return y;
}
function blocksChart() {
  var B = D.blocks, O = D.other;
  $("blocks-note").textContent = "Each band is one allocation, from its allocation to its free, stacked on those made " +
    "before it (as PyTorch's memory_viz draws them): when one is freed, those above it move down. " +
    B.length + " largest drawn one by one" + (O.count ? "; the " + O.count + " smaller ones form the grey band on top" : "") +
    ". Hover for the allocation and its backtrace.";
  var y1 = 1;
  for (var i = 0; i < O.t.length; i++) y1 = Math.max(y1, O.base[i] + O.bytes[i]);
  B.forEach(function (b) { y1 = Math.max(y1, b.p[1] + b.bytes); });
  var m = chart("blocks", D.meta.t_start, D.meta.t_end, y1 * 1.05), ctx = m.ctx;
  B.forEach(function (b, id) {
    var p = b.p, k = (p.length - 1) / 2 - 1, tEnd = p[p.length - 1], h = b.bytes;  // (t_i, y_i) for i = 0..k
    var T = function (i) { return m.x(p[2 * i]); }, Y = function (i, dy) { return m.y(p[2 * i + 1] + dy); };
    ctx.beginPath(); ctx.moveTo(T(0), Y(0, 0));
    for (var i = 1; i <= k; i++) { ctx.lineTo(T(i), Y(i - 1, 0)); ctx.lineTo(T(i), Y(i, 0)); }
    ctx.lineTo(m.x(tEnd), Y(k, 0)); ctx.lineTo(m.x(tEnd), Y(k, h));
    for (i = k; i >= 1; i--) { ctx.lineTo(T(i), Y(i, h)); ctx.lineTo(T(i), Y(i - 1, h)); }
    ctx.lineTo(T(0), Y(0, h));
    ctx.closePath();
    ctx.fillStyle = shade(KIND_COLORS[D.kinds[b.kind]], id); ctx.fill();
  });
  if (O.count && O.t.length) {
    stepPath(ctx, m, O.t, O.base, O.base.map(function (v, i) { return v + O.bytes[i]; }));
    ctx.fillStyle = "#b9c0c8"; ctx.fill();
  }
  hover("blocks", function (x, y) {
    var t = m.t(x), v = m.v(y);
    for (var i = 0; i < B.length; i++) {
      var b = B[i];
      if (t < b.p[0] || t > b.p[b.p.length - 1]) continue;
      var y0 = blockY(b, t);
      if (v >= y0 && v < y0 + b.bytes) {
        var s = b.ptr + "  " + fmtBytes(b.bytes) + "  " + D.kinds[b.kind] + ", " + D.memories[b.memory] + " memory" +
          (b.pool >= 0 ? "  " + poolName(b.pool) : "") +
          "\n" + (b.before ? "allocated before the trace starts" : "allocated at " + fmtTime(b.p[0]));
        if (b.bt >= 0) s += "\n" + D.backtraces[b.bt].join("\n");
        return s;
      }
    }
    return "";
  });
}

function segmentsChart() {
  var segs = D.segments.filter(function (s) { return s.bytes > 0; });
  var derived = D.type === "trace";
  $("segments-note").textContent = derived ?
    "A trace has no segment table: per pool, at the moment its live allocations held the most, their address span " +
    "with the gaps between them, and what the pool had reserved then. A snapshot (gpumem_snapshot_write_json) " +
    "shows the real segments." :
    "Each segment gpumem's own pools hold: blocks in use and free blocks (holes), to scale within the segment.";
  var c = $("segments");
  if (!segs.length) {
    $("segments-note").textContent += " Nothing to draw: no pool allocation" + (derived ? " in the trace." : " is live.");
    c.style.display = "none"; return;
  }
  var rowH = 34, w = c.clientWidth || 1000, dpr = window.devicePixelRatio || 1, h = segs.length * rowH + 8;
  c.style.height = h + "px"; c.width = w * dpr; c.height = h * dpr;
  var ctx = c.getContext("2d"); ctx.scale(dpr, dpr); ctx.font = "11px system-ui,sans-serif";
  var L = 330, R = 12, bw = w - L - R;
  segs.forEach(function (s, r) {
    var y = 4 + r * rowH, col = POOL_COLORS[s.pool % POOL_COLORS.length];
    ctx.fillStyle = "#1d232b"; ctx.textAlign = "left";
    ctx.fillText(poolName(s.pool), 4, y + 12);
    ctx.fillStyle = "#5a6470";
    ctx.fillText(derived ? "at " + fmtTime(s.t) + ": " + fmtBytes(s.peak) + " live over " + fmtBytes(s.bytes) +
      ", reserved " + fmtBytes(s.reserved) : (s.base || "") + "  " + fmtBytes(s.bytes), 4, y + 26);
    var sx = function (off) { return L + off / s.bytes * bw; };
    if (derived) {
      ctx.fillStyle = "#eef0f3"; ctx.fillRect(L, y + 4, bw, rowH - 10);
      ctx.fillStyle = col; s.used.forEach(function (u) { ctx.fillRect(sx(u[0]), y + 4, Math.max(1, sx(u[0] + u[1]) - sx(u[0])), rowH - 10); });
    } else {
      ctx.fillStyle = col; ctx.fillRect(L, y + 4, bw, rowH - 10);
      ctx.fillStyle = "#eef0f3"; s.holes.forEach(function (u) { ctx.fillRect(sx(u[0]), y + 4, Math.max(1, sx(u[0] + u[1]) - sx(u[0])), rowH - 10); });
    }
    ctx.strokeStyle = "#9aa3ad"; ctx.strokeRect(L + 0.5, y + 4.5, bw - 1, rowH - 11);
  });
  legend($("segments-legend"), [["in use", POOL_COLORS[0]], ["free (hole)", "#d5d9df"]]);
  hover("segments", function (x, y) {
    var r = Math.floor((y - 4) / rowH), s = segs[r];
    if (!s || x < L) return "";
    var off = (x - L) / bw * s.bytes, list = derived ? s.used : s.holes;
    for (var i = 0; i < list.length; i++)
      if (off >= list[i][0] && off < list[i][0] + list[i][1])
        return (derived ? "live allocation" : "free block") + " at +" + list[i][0] + ": " + fmtBytes(list[i][1]);
    return derived ? "gap between live allocations" : "in use";
  });
}

function poolTable() {
  if (!D.pool_rows) return;
  var t = document.createElement("table"), head = t.insertRow();
  ["pool", "device", "implementation", "memory", "reserved", "used"].forEach(function (h, i) {
    var th = document.createElement("th"); th.textContent = h; if (i > 3) th.className = "n"; head.appendChild(th);
  });
  D.pool_rows.forEach(function (r) {
    var row = t.insertRow();
    [D.pools[r.pool], r.device, r.implementation, r.memory, fmtBytes(r.reserved), fmtBytes(r.used)].forEach(function (v, i) {
      var td = row.insertCell(); td.textContent = v == null ? "" : v; if (i > 3) td.className = "n";
    });
  });
  $("pool-table").appendChild(t);
}

function kindBars() {  // a snapshot is one moment: bytes per kind and per pool as bars
  var items = D.kinds_used.map(function (k) { return [D.kinds[k], D.kind_bytes[k], KIND_COLORS[D.kinds[k]]]; });
  $("timeline").querySelector("h2").textContent = "Live memory per kind";
  var memory = byMemory(function (k) { return D.memory_bytes[k]; });
  $("timeline-note").textContent = "A snapshot is one moment (" + fmtTime(D.meta.time_us || 0) +
    " after init); record a trace (GPUMEM_TRACE) to see memory over time." + (memory ? " By memory: " + memory + "." : "");
  var c = $("kinds"), w = c.clientWidth || 1000, dpr = window.devicePixelRatio || 1, rowH = 26, h = items.length * rowH + 10;
  c.style.height = h + "px"; c.width = w * dpr; c.height = h * dpr;
  var ctx = c.getContext("2d"); ctx.scale(dpr, dpr); ctx.font = "12px system-ui,sans-serif";
  var max = Math.max.apply(null, items.map(function (i) { return i[1]; }).concat([1]));
  items.forEach(function (it, r) {
    var y = 5 + r * rowH; ctx.fillStyle = "#1d232b"; ctx.textAlign = "left"; ctx.fillText(it[0], 6, y + 15);
    ctx.fillStyle = it[2]; ctx.fillRect(140, y + 3, Math.max(1, it[1] / max * (w - 260)), rowH - 8);
    ctx.fillStyle = "#1d232b"; ctx.fillText(fmtBytes(it[1]), 146 + it[1] / max * (w - 260), y + 15);
  });
  $("pools-section").querySelector("h2").textContent = "Pools";
  $("pools-note").textContent = "Reserved: what each pool holds; used: what its live allocations hold.";
  $("pools").style.display = "none";
  poolTable();
  $("blocks-note").textContent = "A snapshot has no timeline: record a trace (GPUMEM_TRACE) to see allocations over time.";
  $("blocks").style.display = "none";
}

function topTable() {
  var rows = D.top;
  $("top-note").textContent = rows.length ? "The " + rows.length + " largest allocations live " +
    (D.type === "trace" ? "at the end of the trace" : "in the snapshot") +
    "; backtraces are recorded with GPUMEM_BACKTRACE=1." : "No allocation is live.";
  if (!rows.length) return;
  var t = document.createElement("table"), head = t.insertRow();
  ["#", "address", "bytes", "kind", "memory", "pool", "stream", "allocated", "backtrace"].forEach(function (h, i) {
    var th = document.createElement("th"); th.textContent = h; if (i === 2) th.className = "n"; head.appendChild(th);
  });
  rows.forEach(function (r, n) {
    var row = t.insertRow();
    [n + 1, r.ptr, fmtBytes(r.bytes), D.kinds[r.kind], D.memories[r.memory], r.pool >= 0 ? D.pools[r.pool] : "",
     r.stream || "default",
     r.before ? "before the trace" : fmtTime(r.t)].forEach(function (v, i) {
      var td = row.insertCell(); td.textContent = v; if (i === 2) { td.className = "n"; td.title = r.bytes + " bytes"; }
    });
    var cell = row.insertCell();
    if (r.bt >= 0) {
      var d = document.createElement("details"), s = document.createElement("summary"), pre = document.createElement("pre");
      var frames = D.backtraces[r.bt];
      s.textContent = frames[1] || frames[0]; pre.textContent = frames.join("\n");
      d.appendChild(s); d.appendChild(pre); cell.appendChild(d);
    } else cell.textContent = "not recorded";
  });
  $("top").appendChild(t);
}

function render() {
  summary();
  if (D.type === "trace") { kindsTimeline(); poolsTimeline(); blocksChart(); }
  else kindBars();
  segmentsChart();
  topTable();
}
render();
var statusEl = $("gpumem-viz-status");
if (!window.gpumemVizErrors.length) { statusEl.setAttribute("data-status", "rendered"); statusEl.textContent = "rendered"; }
var resizeTimer = null;
window.addEventListener("resize", function () {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(function () { ["pool-table", "top"].forEach(function (id) { $(id).textContent = ""; }); render(); }, 150);
});
})();
