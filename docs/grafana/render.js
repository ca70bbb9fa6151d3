// Draws DATA (made by main.go from the dashboard JSON) in Grafana's
// layout: 24 columns, 30 px grid rows, 8 px gaps.
"use strict";
const palette = ["#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9", "#705da0", "#37872d", "#fade2a"];
const grid = document.getElementById("grid");
const width = document.documentElement.clientWidth - 32, col = (width + 8) / 24, unit = 38;

// trim drops the zeros after a decimal point, and the point.
const trim = (s) => (s.includes(".") && !s.includes("e") ? s.replace(/\.?0+$/, "") : s);

function fmt(v, unit) {
  if (v == null || isNaN(v)) return "–";
  const si = (x) => {
    const a = Math.abs(x);
    if (a >= 1e6) return trim((x / 1e6).toFixed(2)) + " Mil";
    if (a >= 1e3) return trim((x / 1e3).toFixed(1)) + " K";
    if (a >= 10 || a === 0) return x.toFixed(0);
    return trim(x.toPrecision(3));
  };
  switch (unit) {
    case "reqps": return (v >= 10 ? v.toFixed(0) : trim(v.toPrecision(3))) + " req/s";
    case "percentunit": return (v * 100).toFixed(v < 0.1 ? 2 : 1) + "%";
    case "s": return v < 1 ? trim((v * 1000).toPrecision(3)) + " ms" : trim(v.toPrecision(3)) + " s";
    case "bytes": return (v / 1048576).toFixed(1) + " MiB";
    default: return si(v);
  }
}

function place(el, g) {
  el.style.left = g.x * col + "px";
  el.style.top = g.y * unit + "px";
  el.style.width = g.w * col - 8 + "px";
  el.style.height = g.h * unit - 8 + "px";
  grid.appendChild(el);
}

// aligned puts every series on the shared time axis.
function aligned(series) {
  const xs = [];
  for (let t = DATA.from; t <= DATA.to; t += 30000) xs.push(t / 1000);
  const idx = new Map(xs.map((x, i) => [x, i]));
  const ys = series.map((s) => {
    const y = new Array(xs.length).fill(null);
    for (const [t, v] of s.points) if (idx.has(t / 1000)) y[idx.get(t / 1000)] = v;
    return y;
  });
  return [xs, ys];
}

function timeseries(p, body, legend) {
  // The legend first, so that the plot gets the height that is left.
  p.series.forEach((s, i) => {
    const span = document.createElement("span");
    span.style.setProperty("--c", palette[i % palette.length]);
    span.textContent = s.name;
    legend.appendChild(span);
  });
  let [xs, ys] = aligned(p.series);
  if (p.stack) {
    const acc = new Array(xs.length).fill(0);
    ys = ys.map((y) => y.map((v, i) => (acc[i] += v || 0)));
  }
  const conf = p.series.map((s, i) => {
    const c = palette[i % palette.length];
    const o = { label: s.name, stroke: c, width: 1.5, fill: c + (p.stack || p.bars ? "88" : "14") };
    if (p.bars) o.paths = uPlot.paths.bars({ size: [0.9, 12] });
    return o;
  });
  // uPlot fills each series down to zero in order: a stack draws its top
  // sum first, so that every band below stays visible.
  let order = conf.map((_, i) => i);
  if (p.stack) order.reverse();
  const rect = body.getBoundingClientRect();
  const axis = { stroke: "#8e8e8e", grid: { stroke: "#2c2f36", width: 1 }, ticks: { stroke: "#2c2f36" }, font: "11px sans-serif" };
  new uPlot({
    width: rect.width, height: rect.height, legend: { show: false }, cursor: { show: false },
    series: [{}].concat(order.map((i) => conf[i])), scales: { x: { time: true } },
    axes: [Object.assign({}, axis, { values: (u, ts) => ts.map((t) => new Date(t * 1000).toISOString().slice(11, 16)) }),
      Object.assign({}, axis, { size: 64, values: (u, ts) => ts.map((t) => fmt(t, p.unit)) })],
  }, [xs].concat(order.map((i) => ys[i])), body);
}

function stat(p, body) {
  const last = (s) => (s && s.points.length ? s.points[s.points.length - 1][1] : null);
  const el = document.createElement("div");
  el.className = "stat";
  let text = p.series.length ? p.series.map((s) => fmt(last(s), p.unit)).join(" / ") : p.noValue || "No data";
  let color = "#73bf69";
  const v = last(p.series[0]);
  for (const m of p.mappings || []) {
    const hit = m.options && m.options[String(v)];
    if (hit) { text = hit.text; color = hit.color === "red" ? "#f2495c" : "#73bf69"; }
  }
  if (p.unit === "percentunit" && v > 0.05) color = v > 0.2 ? "#f2495c" : "#ff9830";
  el.style.color = color;
  el.textContent = text;
  body.appendChild(el);
  if (p.series.length) {
    const spark = document.createElement("div");
    spark.className = "spark";
    body.appendChild(spark);
    const [xs, ys] = aligned(p.series.slice(-1));
    const r = spark.getBoundingClientRect();
    new uPlot({ width: r.width, height: r.height, legend: { show: false }, cursor: { show: false },
      axes: [{ show: false }, { show: false }], series: [{}, { stroke: color, fill: color + "33", width: 1 }] }, [xs, ys[0]], spark);
  }
}

function bargauge(p, body) {
  const bars = document.createElement("div");
  bars.className = "bars";
  const rows = p.series.map((s) => [s.name, s.points[0][1]]).sort((a, b) => b[1] - a[1]);
  const top = Math.max(...rows.map((r) => r[1]));
  for (const [name, v] of rows) {
    const row = document.createElement("div");
    row.className = "bar";
    row.innerHTML = "<span></span><div><div class=fill></div></div><span class=v></span>";
    row.children[0].textContent = name;
    row.querySelector(".fill").style.width = (100 * v / top) + "%";
    row.children[2].textContent = fmt(v, p.unit);
    bars.appendChild(row);
  }
  body.appendChild(bars);
}

let bottom = 0;
for (const p of DATA.panels) {
  const g = JSON.parse(JSON.stringify(p.grid));
  bottom = Math.max(bottom, (g.y + g.h) * unit);
  if (p.type === "row") {
    const el = document.createElement("div");
    el.className = "row";
    el.textContent = p.title;
    place(el, g);
    continue;
  }
  const el = document.createElement("section");
  el.className = "panel";
  el.innerHTML = "<h3></h3><div class=body></div><div class=legend></div>";
  el.querySelector("h3").textContent = p.title;
  place(el, g);
  const body = el.querySelector(".body"), legend = el.querySelector(".legend");
  if (p.type === "timeseries") timeseries(p, body, legend);
  else if (p.type === "stat") stat(p, body);
  else if (p.type === "bargauge") bargauge(p, body);
}
grid.style.height = bottom + "px";
