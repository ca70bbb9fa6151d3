// Shared by the pages: element building and API calls.
'use strict';

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

// api sends a JSON request and returns {ok, status, body}. The browser's
// session cookie says who is asking; a 401 sends it to sign in.
// thumbIcon is a thumbs-up (or, with up false, thumbs-down) icon as inline
// SVG, so that it shows on machines without an emoji font. It is
// decorative: the control that holds it carries the label.
function thumbIcon(up) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '1em');
  svg.setAttribute('height', '1em');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'icon');
  const path = document.createElementNS(ns, 'path');
  // A hand with the thumb raised: the palm, then the cuff at the wrist.
  path.setAttribute('d', 'M2 10h4v12H2zM8 21V10l5-8c1.1 0 2 .9 2 2v4h5.5c1.2 0 2.1 1.1 1.9 2.3l-1.6 9c-.2 1-1 1.7-2 1.7z');
  path.setAttribute('fill', 'currentColor');
  if (!up) svg.setAttribute('transform', 'rotate(180)');
  svg.appendChild(path);
  return svg;
}

async function api(method, url, body) {
  const headers = {'Accept': 'application/json'};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let resp;
  try {
    resp = await fetch(url, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
  } catch (e) {
    return {ok: false, status: 0, body: {error: 'The server did not answer: ' + e.message}};
  }
  const data = await resp.json().catch(() => ({error: 'The server answered ' + resp.status + ' without JSON.'}));
  if (resp.status === 401 && !url.startsWith('/login')) {
    // Not signed in, or the session ended: sign in, then come back here.
    signIn();
  }
  return {ok: resp.ok, status: resp.status, body: data};
}

// show replaces box's content with a block of text, marked as an error or not.
function show(box, text, isError) {
  box.replaceChildren(el('pre', 'out ' + (isError ? 'error' : 'okay'), text));
}

// signIn sends the browser to the sign-in page, to come back here after.
function signIn() {
  window.location.assign('/login?next=' + encodeURIComponent(location.pathname + location.search));
}

// signOut ends the session and goes to the sign-in page.
async function signOut() {
  await api('POST', '/logout');
  window.location.assign('/login');
}

// The header says who is signed in, with a way to sign out; the one local
// user of a single-user server has nothing to sign out of.
document.addEventListener('DOMContentLoaded', async () => {
  const header = document.querySelector('header.top');
  if (!header || document.body.dataset.page === 'login') return;
  let me;
  try {
    const resp = await fetch('/api/me', {headers: {'Accept': 'application/json'}});
    if (!resp.ok) return;
    me = await resp.json();
  } catch (e) {
    return;
  }
  if (!me || !me.name) return;
  // The dashboard is everyone's requests: offered only to who may read them.
  if (!(me.can || []).includes('read_all')) document.querySelector('header.top nav a[href="/dashboard"]')?.remove();
  if (me.method === 'loopback') return;
  const who = el('span', 'who');
  who.id = 'whoami';
  who.append(el('span', null, me.name), el('span', 'badge', me.role));
  if (me.method === 'session') {
    const out = el('button', null, 'Sign out');
    out.type = 'button';
    out.id = 'sign-out';
    out.addEventListener('click', signOut);
    who.append(out);
  }
  header.append(who);
});

// readEvents reads a Server-Sent Events response, calling on(event,
// payload) as each arrives (payload is the event's JSON data). Shared by
// the chat page and the tool page.
async function readEvents(resp, on) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += decoder.decode(value, {stream: true});
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, i); buf = buf.slice(i + 2);
      let event = 'message', data = '';
      for (const line of frame.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      let payload = {};
      try { payload = data ? JSON.parse(data) : {}; } catch (e) { continue; }
      on(event, payload);
    }
  }
}
