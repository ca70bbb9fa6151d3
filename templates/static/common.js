// Shared by the pages: element building and API calls.
'use strict';

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

// api sends a JSON request and returns {ok, status, body}. Changes need the
// admin token when the server listens beyond loopback: on a 403 that asks
// for it, the page asks once and keeps it in this browser.
async function api(method, url, body, retried) {
  const headers = {'Accept': 'application/json'};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const token = localStorage.getItem('adaptbot.token');
  if (token) headers['Authorization'] = 'Bearer ' + token;
  let resp;
  try {
    resp = await fetch(url, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
  } catch (e) {
    return {ok: false, status: 0, body: {error: 'The server did not answer: ' + e.message}};
  }
  const data = await resp.json().catch(() => ({error: 'The server answered ' + resp.status + ' without JSON.'}));
  if (resp.status === 403 && !retried && /ADMIN_TOKEN/.test(data.error || '')) {
    const t = window.prompt('This server needs its admin token (ADAPTBOT_ADMIN_TOKEN) for changes and runs:');
    if (t) { localStorage.setItem('adaptbot.token', t.trim()); return api(method, url, body, true); }
  }
  return {ok: resp.ok, status: resp.status, body: data};
}

// show replaces box's content with a block of text, marked as an error or not.
function show(box, text, isError) {
  box.replaceChildren(el('pre', 'out ' + (isError ? 'error' : 'okay'), text));
}
