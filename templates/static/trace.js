// The trace of one request, drawn the same way on the chat page (under an
// answer's badge) and on a request's own page (/requests/<id>, where the
// dashboard's trace links go). Everything is set with textContent:
// arguments, outputs and errors come from people, tools and models.
'use strict';

function fmtMs(ms) { return ms >= 1000 ? (ms / 1000).toFixed(2) + ' s' : (+ms).toFixed(ms < 100 ? 1 : 0) + ' ms'; }

// PATH_WORDS say in people's words what a path that is not a tool's name
// means (the row's category, as benchmarks.PathLabel explains it at
// length); a tool's path is the tool's name.
const PATH_WORDS = {
  general: 'answered by the model',
  need_tool: 'no tool fits',
  build_create: 'built a tool',
  build_modify: 'changed a tool',
  build_delete: 'deleted a tool',
  build_rollback: 'served an earlier version',
  build_approve: 'approved a version',
  build_test: 'ran a tool\'s examples',
  build_plan: 'planned a build',
  build_import: 'imported tools',
  build_skill: 'proposed a skill',
};

// pathWords is what an answer's badge says: the tools it ran, in order, or
// what its path means.
function pathWords(r) {
  const used = [...new Set(r.tools || [])];
  if (used.length > 1) return used.join(' → ');
  return PATH_WORDS[r.path] || r.path;
}

// drawTrace fills box with the steps of result r (a chat's or a run's
// result, with its request_id); stored says it came from the server's
// record of the request.
function drawTrace(box, r, stored) {
  box.replaceChildren();
  const table = el('table');
  for (const s of (r.trace || [])) {
    const tr = el('tr');
    tr.appendChild(el('td', 'node', s.node));
    tr.appendChild(el('td', 'ms', s.ms !== undefined ? fmtMs(s.ms) : ''));
    const d = el('td');
    const tool = s.tool || (s.node === 'execute' ? r.tool : '');
    if (tool) d.appendChild(el('div', '', 'tool: ' + tool));
    const args = s.arguments !== undefined ? s.arguments : (s.node === 'execute' ? r.arguments : undefined);
    if (args !== undefined && args !== null) { d.appendChild(el('div', 'muted', 'arguments')); d.appendChild(el('pre', '', typeof args === 'string' ? args : JSON.stringify(args, null, 1))); }
    if (s.output) { d.appendChild(el('div', 'muted', 'output')); d.appendChild(el('pre', '', s.output)); }
    if (s.error) d.appendChild(el('div', 'err', s.error));
    const calls = [];
    if (s.llm_calls) calls.push(s.llm_calls + ' model call' + (s.llm_calls === 1 ? '' : 's'));
    if (s.prompt_tokens || s.completion_tokens) calls.push((s.prompt_tokens || 0) + ' + ' + (s.completion_tokens || 0) + ' tokens');
    if (calls.length) d.appendChild(el('div', 'muted', calls.join(', ')));
    if (s.detail) d.appendChild(el('div', 'muted', s.detail));
    // The calls of one round ran at once: when each began and ended.
    if (s.round) d.appendChild(el('div', 'muted', 'round ' + s.round + ' · ran from ' + fmtMs(s.start_ms || 0) + ' to ' + fmtMs(s.end_ms || 0)));
    if (s.direct) d.appendChild(el('div', 'muted', 'the model marked this output as the answer'));
    tr.appendChild(d);
    table.appendChild(tr);
  }
  if (!(r.trace || []).length) box.appendChild(el('div', 'muted', 'No steps were recorded.'));
  else box.appendChild(table);
  if (r.discovery && r.discovery.length) box.appendChild(el('div', 'sum', 'looked for more tools: ' + r.discovery.map(d => d.domain + '/' + d.operation).join(', ')));
  const sum = el('div', 'sum');
  const parts = [];
  if (r.total_ms !== undefined) parts.push('total ' + fmtMs(r.total_ms));
  parts.push((r.llm_calls || 0) + ' model call' + (r.llm_calls === 1 ? '' : 's'));
  if (r.usage) parts.push((r.usage.prompt_tokens || 0) + ' prompt + ' + (r.usage.completion_tokens || 0) + ' completion tokens');
  sum.textContent = parts.join(' · ');
  if (r.request_id) {
    sum.append(' · request ');
    const a = el('a', '', r.request_id);
    a.href = '/requests/' + encodeURIComponent(r.request_id);
    sum.appendChild(a);
    if (stored) sum.append(' (stored)');
  }
  box.appendChild(sum);
}
