// The benchmarks dashboard: fetches /api/benchmarks with the page's filters
// and draws cards, uPlot time series, bar lists and the recent requests.
// Everything is set with textContent: queries and errors come from users
// and models, and never reach the DOM as HTML.
'use strict';

const DASH = '–';
const $ = id => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

function secs(v) { return v === null || v === undefined ? DASH : (+v).toFixed(3); }
function num(v, d) { return v === null || v === undefined ? DASH : (+v).toFixed(d); }
function pct(v) { return v === null || v === undefined ? DASH : (100 * v).toFixed(1) + '%'; }

// secondsTick labels a time axis tick given in seconds: milliseconds below
// one second (0.0004 s is "0.4 ms", not "0"), seconds above.
function secondsTick(v) {
  if (v === null || v === undefined) return '';
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (a < 1) {
    const ms = v * 1000;
    return (Math.abs(ms) < 10 ? +ms.toFixed(2) : Math.abs(ms) < 100 ? +ms.toFixed(1) : Math.round(ms)) + ' ms';
  }
  return (a < 10 ? +v.toFixed(2) : a < 100 ? +v.toFixed(1) : Math.round(v)) + ' s';
}

// secondsAxis is a uPlot y axis of seconds, labelled by secondsTick; the
// labels last drawn are kept on the box (data-ticks) for tests.
function secondsAxis(box) {
  return {size: 64, values: (u, splits) => {
    const labels = splits.map(secondsTick);
    box.dataset.ticks = labels.join('|');
    return labels;
  }};
}

// withFilter returns the dashboard URL with one filter changed.
function withFilter(name, value) {
  const q = new URLSearchParams(location.search);
  if (value) q.set(name, value); else q.delete(name);
  return '/dashboard?' + q.toString();
}

function cards(s) {
  const box = $('cards');
  box.replaceChildren();
  const scope = s.scope.toLowerCase();
  const list = [
    ['requests', s.requests],
    [s.requests ? 'errors (' + pct(s.errors / s.requests) + ')' : 'errors', s.requests ? s.errors : DASH],
  ];
  // Chats refused for want of a model are an install to finish, not
  // errors: counted apart, and only shown when there are some.
  if (s.not_configured) list.push(['refused: no model configured', s.not_configured]);
  list.push(
    [scope + ' p50 latency s', secs(s.latency.p50_sec)],
    [scope + ' p95 latency s', secs(s.latency.p95_sec)],
    ['model calls / ' + scope, num(s.per_request.llm_calls, 2)],
    ['answered directly by a tool', s.scope_requests ? (s.direct_answers || 0) : DASH],
    ['tokens / ' + scope, s.per_request.prompt_tokens === null ? DASH : num(s.per_request.prompt_tokens + s.per_request.completion_tokens, 0)],
    ['tool execution ok' + (s.tool_execution.total ? ' (of ' + s.tool_execution.total + ')' : ''), pct(s.tool_execution.rate)],
    ['builds' + (s.builds.failed ? ' (' + s.builds.failed + ' failed)' : '') + (s.builds.plans ? ' · ' + s.builds.plans + ' planned apart' : ''), s.builds.requests || DASH],
    ['satisfaction' + (s.feedback.up + s.feedback.down ? ' (' + s.feedback.up + ' up · ' + s.feedback.down + ' down)' : ''), pct(s.feedback.satisfaction)]);
  // Which tier of the sandbox ran the tools (issue 31), once any ran.
  const tiers = s.tiers || {};
  const withTools = (tiers.interpreted || 0) + (tiers.native || 0) + (tiers.mixed || 0);
  if (withTools) {
    list.push(['ran their tools natively (of ' + withTools + ' ' + scope + 's with tools' + (tiers.mixed ? '; ' + tiers.mixed + ' mixed' : '') + ')', tiers.native || 0]);
  }
  for (const [label, value] of list) {
    const c = el('div', 'card');
    c.append(el('b', '', String(value)), el('span', '', label));
    box.appendChild(c);
  }
}

// Charts drawn so far, resized with their containers.
const plots = [];

function empty(box, text) {
  box.replaceChildren(el('p', 'empty', text));
}

// timeChart draws one uPlot chart of series over s.series, or says there is
// no data (hasData false, or every value null); a run of zeros is data and
// is drawn. cols: [{label, get(point), color, scale, bars}]; axes, the y
// axes, or a function of the chart's box that returns them.
function timeChart(id, s, hasData, cols, axes, emptyText) {
  const box = $(id);
  box.replaceChildren();
  const pts = s.series || [];
  const xs = pts.map(p => Date.parse(p.t) / 1000);
  const ys = cols.map(c => pts.map(p => { const v = c.get(p); return v === undefined ? null : v; }));
  if (!hasData || !pts.length || ys.every(col => col.every(v => v === null))) {
    empty(box, emptyText);
    box.dataset.drawn = 'empty';
    return;
  }
  const series = [{}];
  cols.forEach((c, i) => {
    // Buckets without requests have no latency or mean: lines join the
    // buckets that have one, and sparse values show as dots too.
    const values = ys[i].filter(v => v !== null).length;
    const one = {label: c.label, stroke: c.color, width: 2, scale: c.scale || 'y', spanGaps: !c.bars,
      value: (u, v) => v === null || v === undefined ? DASH : (c.decimals === undefined ? v : (+v).toFixed(c.decimals))};
    if (c.bars) { one.paths = uPlot.paths.bars({size: [0.7, 40]}); one.fill = c.color + '55'; one.points = {show: false}; }
    else one.points = {show: values <= 60, size: 5};
    series.push(one);
  });
  const opts = {
    width: Math.max(box.clientWidth, 200), height: 210,
    tzDate: ts => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
    series, axes: [{}].concat((typeof axes === 'function' ? axes(box) : axes) || [{}]),
    // One bucket alone would get uPlot's default span of years; show the
    // bucket with a bucket's width of room on each side instead.
    scales: {x: xs.length === 1
      ? {time: true, range: () => [xs[0] - (s.bucket_sec || 60), xs[0] + (s.bucket_sec || 60)]}
      : {time: true}},
    legend: {live: true},
    cursor: {drag: {x: false, y: false}},
  };
  const u = new uPlot(opts, [xs].concat(ys), box);
  plots.push([u, box]);
  box.dataset.drawn = 'chart';
}

// bars draws a list of labelled horizontal bars.
function bars(id, rows, emptyText) {
  const box = $(id);
  box.replaceChildren();
  if (!rows.length) { empty(box, emptyText); box.dataset.drawn = 'empty'; return; }
  for (const r of rows) {
    const row = el('div', 'bar-row');
    const label = el('div', 'label');
    if (r.href) { const a = el('a', '', r.label); a.href = r.href; label.appendChild(a); }
    else label.textContent = r.label;
    label.title = r.title || r.label;
    if (r.note) label.appendChild(el('small', '', r.note));
    const pair = el('div', 'bar-pair');
    for (const b of r.bars) {
      const line = el('div', 'bar-line');
      const track = el('div', 'track');
      const fill = el('div', 'fill' + (b.cls ? ' ' + b.cls : ''));
      fill.style.width = Math.max(0, Math.min(100, b.pct)).toFixed(1) + '%';
      track.appendChild(fill);
      line.append(track, el('span', 'value', b.text));
      pair.appendChild(line);
    }
    if (!r.bars.length) pair.appendChild(el('span', 'value', r.value));
    row.append(label, pair);
    box.appendChild(row);
  }
  box.dataset.drawn = 'bars';
}

function drawBreakdowns(s) {
  const maxPath = Math.max(1, ...(s.paths || []).map(p => p.requests));
  bars('chart-paths', (s.paths || []).map(p => ({
    label: p.path, note: p.label, href: p.path === '(none)' ? null : withFilter('path', p.path),
    bars: [{pct: 100 * p.requests / maxPath, cls: p.intent === 'BUILD' ? 'run' : '', text: p.requests + (p.errors ? ' · ' + p.errors + ' err' : '')}],
  })), 'No chats or builds in this selection.');

  bars('chart-tools', (s.tools || []).map(t => ({
    label: t.tool, href: withFilter('tool', t.tool),
    bars: [{pct: t.chat.rate === null ? 0 : 100 * t.chat.rate, text: 'chat ' + pct(t.chat.rate) + ' of ' + t.chat.requests},
      {pct: t.run.rate === null ? 0 : 100 * t.run.rate, cls: 'run', text: 'run ' + pct(t.run.rate) + ' of ' + t.run.requests}],
  })), 'No tool ran in this selection.');

  const attempts = s.builds.attempts || [];
  const maxA = Math.max(1, ...attempts.map(a => a.builds));
  bars('chart-attempts', attempts.map(a => ({
    label: a.attempts === 0 ? 'attempts not recorded' : a.attempts + (a.attempts === 1 ? ' attempt' : ' attempts'),
    note: a.attempts === 0 ? 'older rows' : '',
    bars: [{pct: 100 * a.builds / maxA, cls: 'run', text: a.builds + (a.builds === 1 ? ' build' : ' builds')}],
  })).concat(s.builds.requests ? [{
    label: 'build time', note: 'tool generation, seconds',
    bars: [], value: 'p50 ' + secs(s.builds.generation.p50_sec) + ' · p95 ' + secs(s.builds.generation.p95_sec),
  }] : []), 'No builds in this selection.');

  const steps = s.steps || [];
  const maxS = Math.max(1e-9, ...steps.map(st => st.mean_sec * st.runs));
  bars('chart-steps', steps.map(st => ({
    label: st.step, note: st.per_request.toFixed(2) + ' per request',
    bars: [{pct: 100 * st.mean_sec * st.runs / maxS, text: 'mean ' + secs(st.mean_sec) + ' s · ' + pct(st.share_of_step_time)}],
  })), 'No step times in this selection.');

  bars('chart-satisfaction', (s.feedback.tools || []).map(t => ({
    label: t.tool, href: withFilter('tool', t.tool),
    bars: [{pct: t.satisfaction === null ? 0 : 100 * t.satisfaction, cls: t.satisfaction !== null && t.satisfaction < 0.5 ? 'bad' : '', text: pct(t.satisfaction) + ' · ' + t.up + ' up · ' + t.down + ' down'}],
  })), 'No feedback on answers that ran a tool in this selection.');

  const errs = s.top_errors || [];
  const maxE = Math.max(1, ...errs.map(e => e.count));
  bars('chart-errors', errs.map(e => ({label: e.message, title: e.message, bars: [{pct: 100 * e.count / maxE, cls: 'bad', text: String(e.count)}]})), 'No errors in this selection.');
}

function drawSeries(s) {
  const scope = s.scope;
  timeChart('chart-requests', s, s.requests > 0, [
    {label: 'chat', get: p => p.chat, color: '#2f6fed', bars: true},
    {label: 'build', get: p => p.build, color: '#8e44ad'},
    {label: 'run', get: p => p.run, color: '#16a085'},
    {label: 'errors', get: p => p.errors, color: '#c0392b'},
  ].concat(s.not_configured ? [{label: 'refused: no model', get: p => p.not_configured, color: '#7f8c8d'}] : []),
  null, 'No requests in this selection.');
  timeChart('chart-latency', s, s.scope_requests > 0, [
    {label: 'p50 s', get: p => p.p50_sec, color: '#2f6fed', decimals: 4},
    {label: 'p95 s', get: p => p.p95_sec, color: '#e67e22', decimals: 4},
  ], box => [secondsAxis(box)], 'No ' + scope + ' requests in this selection.');
  timeChart('chart-tokens', s, s.scope_requests > 0, [
    {label: 'model calls', get: p => p.llm_calls_per_request, color: '#2f6fed', decimals: 2},
    {label: 'tokens', get: p => p.tokens_per_request, color: '#16a085', scale: 'tokens', decimals: 0},
  ], [{label: 'calls'}, {scale: 'tokens', side: 1, label: 'tokens', grid: {show: false}}], 'No ' + scope + ' requests in this selection.');
  timeChart('chart-builds', s, s.builds.requests > 0, [
    {label: 'builds', get: p => p.builds, color: '#8e44ad', bars: true},
    {label: 'mean build s', get: p => p.build_sec_mean, color: '#e67e22', scale: 'sec', decimals: 1},
  ], [{label: 'builds'}, {scale: 'sec', side: 1, label: 's', grid: {show: false}}], 'No builds in this selection.');
  timeChart('chart-feedback', s, s.feedback.up + s.feedback.down > 0, [
    {label: 'thumbs up', get: p => p.feedback_up, color: '#1e7e50', bars: true},
    {label: 'thumbs down', get: p => p.feedback_down, color: '#c0392b', bars: true},
    {label: 'satisfaction %', get: p => p.satisfaction === null ? null : 100 * p.satisfaction, color: '#2f6fed', scale: 'pct', decimals: 0},
  ], [{label: 'ratings'}, {scale: 'pct', side: 1, label: '%', grid: {show: false}}], 'No feedback in this selection.');
}

// queryText is a recent row's query as a person reads it: a direct run's
// query is its JSON arguments, shown as "name: value" pairs.
function queryText(r) {
  const q = r.query || '';
  if (r.intent !== 'RUN' || !q.startsWith('{')) return q;
  let args;
  try { args = JSON.parse(q); } catch (e) { return q; }
  if (!args || typeof args !== 'object' || Array.isArray(args)) return q;
  const parts = Object.entries(args).map(([k, v]) => k + ': ' + (typeof v === 'string' ? v : JSON.stringify(v)));
  return parts.length ? parts.join(' · ') : 'no arguments';
}

function drawRecent(s) {
  const body = document.querySelector('#recent tbody');
  body.replaceChildren();
  const labels = ['time (UTC)', 'intent', 'path', 'tools', 'latency s', 'query', 'error', 'rating', 'user', 'trace'];
  for (const r of s.recent || []) {
    const tr = el('tr');
    const cells = [r.timestamp ? r.timestamp.replace('T', ' ').replace(/\.\d+Z$|Z$/, '') : DASH, r.intent || DASH,
      r.path || DASH, (r.tools || []).join(', ') || DASH, secs(r.latency_sec), queryText(r), r.error || '',
      r.feedback > 0 ? 'up' : r.feedback < 0 ? 'down' : '', r.user || DASH];
    // A refusal for want of a model is not shown as an error.
    const errCls = r.outcome === 'not_configured' ? 'not-configured' : 'error';
    cells.forEach((text, i) => {
      // A long error is cut to a few lines; its whole text is the tooltip and in the trace.
      const td = i === 6 ? el('td', errCls) : el('td', '', text);
      if (i === 6) { const d = el('div', 'clamp', text); d.title = text; td.appendChild(d); }
      td.dataset.label = labels[i];
      tr.appendChild(td);
    });
    const td = el('td');
    td.dataset.label = labels[9];
    // The trace view (/requests/<id>), not its JSON (r.trace).
    if (r.trace) { const a = el('a', 'trace-link', r.request_id); a.href = '/requests/' + encodeURIComponent(r.request_id); td.appendChild(a); } else td.textContent = DASH;
    tr.appendChild(td);
    body.appendChild(tr);
  }
  if (!(s.recent || []).length) {
    const tr = el('tr'); const td = el('td', 'empty', 'No requests in this selection.'); td.colSpan = 10; tr.appendChild(td); body.appendChild(tr);
  }
  $('recent-note').textContent = s.recent_note ? 'Showing ' + s.recent_note + '; each links to its trace.' : '';
}

function fillLists(s) {
  const tools = $('tool-names'), paths = $('path-names');
  tools.replaceChildren(...(s.tools || []).map(t => { const o = el('option'); o.value = t.tool; return o; }));
  const names = new Set((s.paths || []).map(p => p.path).filter(p => p !== '(none)'));
  names.add('build');
  paths.replaceChildren(...[...names].map(p => { const o = el('option'); o.value = p; return o; }));
}

function bucketText(sec) {
  if (sec % 86400 === 0) return sec / 86400 + ' d';
  if (sec % 3600 === 0) return sec / 3600 + ' h';
  return sec / 60 + ' min';
}

async function load() {
  const line = $('summary-line');
  let s;
  try {
    const resp = await fetch('/api/benchmarks' + location.search);
    s = await resp.json();
    if (!resp.ok) { line.textContent = s.error || ('Error ' + resp.status); line.className = 'problem'; return; }
  } catch (e) {
    line.textContent = 'The server did not answer: ' + e; line.className = 'problem';
    return;
  }
  const range = s.from ? ', ' + s.from.replace('T', ' ').slice(0, 16) + ' to ' + s.to.replace('T', ' ').slice(0, 16) + ' UTC' : '';
  line.textContent = s.requests + (s.requests === 1 ? ' request' : ' requests') + range + '; buckets of ' + bucketText(s.bucket_sec) + '.';
  cards(s);
  $('scope-note').textContent = 'Latency, model calls and tokens are over ' + s.scope +
    ' requests (' + s.scope_requests + ')' + (s.filter.intent ? '' : ': direct runs and builds are counted apart; pick an intent to see theirs') +
    '. Model: ' + s.by_model_note + '.';
  for (const e of document.querySelectorAll('.scope')) e.textContent = '(' + s.scope + ')';
  drawSeries(s);
  drawBreakdowns(s);
  drawRecent(s);
  fillLists(s);
  document.body.dataset.loaded = 'true';
}

// The since select applies at once; the other fields wait for Apply.
$('f-since').addEventListener('change', () => $('filters').submit());

new ResizeObserver(() => {
  for (const [u, box] of plots) {
    const w = Math.max(box.clientWidth, 200);
    if (Math.abs(u.width - w) > 2) u.setSize({width: w, height: u.height});
  }
}).observe(document.querySelector('main'));

load();
