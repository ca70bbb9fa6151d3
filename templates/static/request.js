// A request's own page (/requests/<id>): the steps of its trace, drawn by
// trace.js as under an answer's badge on the chat page. The stored record
// is fetched again as JSON, which the server checks as it does for the API.
'use strict';
(async function () {
  const main = document.getElementById('request');
  const box = document.getElementById('trace');
  const got = await api('GET', '/api/requests/' + encodeURIComponent(main.dataset.id));
  if (!got.ok) { box.replaceChildren(el('p', 'problem', got.body.error || 'The request cannot be read.')); return; }
  const r = Object.assign({}, got.body.result || {}, {request_id: got.body.request_id});
  const answer = r.response || r.output || r.summary || '';
  document.getElementById('answer').textContent = answer;
  drawTrace(box, r, true);
  document.body.dataset.loaded = 'true';
})();
