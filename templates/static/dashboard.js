// The dashboard: the benchmarks summary as cards and tables.
'use strict';
function cell(tr, text) { const td = document.createElement('td'); td.textContent = text; tr.appendChild(td); }
function fmt(x) { return (x === undefined || x === null) ? '–' : (+x).toFixed(3); }
function pct(r) { return r && r.total ? (100 * r.rate).toFixed(0) + '% of ' + r.total : '–'; }
(async () => {
  const body = await (await fetch('/api/benchmarks')).json();
  const r = body.report || {};
  const cards = [
    ['requests', r.rows || 0], ['p50 latency s', fmt(r.latency && r.latency.p50_sec)],
    ['p95 latency s', fmt(r.latency && r.latency.p95_sec)], ['extraction ok', pct(r.parameter_extraction)],
    ['execution ok', pct(r.tool_execution)], ['builds', r.builds ? r.builds.count : 0],
    ['errors', r.errors || 0], ['LLM calls', r.llm_calls || 0],
  ];
  const box = document.getElementById('cards');
  for (const [k, v] of cards) { const d = document.createElement('div'); d.className = 'card'; d.innerHTML = '<b></b><span></span>'; d.firstChild.textContent = v; d.lastChild.textContent = k; box.appendChild(d); }
  const cats = document.querySelector('#categories tbody');
  for (const c of (r.categories || [])) { const tr = document.createElement('tr'); cell(tr, c.category); cell(tr, c.count); cell(tr, c.errors); cell(tr, fmt(c.latency.p50_sec)); cell(tr, fmt(c.latency.p95_sec)); cell(tr, fmt(c.latency.p99_sec)); cats.appendChild(tr); }
  const errs = document.querySelector('#errors tbody');
  for (const e of (r.top_errors || [])) { const tr = document.createElement('tr'); cell(tr, e.message); cell(tr, e.count); errs.appendChild(tr); }
  if (body.warning) document.getElementById('warning').textContent = body.warning;
})();
