const log = document.getElementById('log');
const form = document.getElementById('chat');
const input = document.getElementById('message');
const history = [];

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function addMessage(role, text, extraClass) {
  const m = el('div', 'msg ' + role + (extraClass ? ' ' + extraClass : ''), text);
  log.appendChild(m);
  m.scrollIntoView({block: 'end'});
  return m;
}

function describe(m, r) {
  const info = el('div', 'info');
  if (r.path) info.appendChild(el('span', 'badge path', r.path));
  if (r.intent === 'BUILD') info.appendChild(el('span', 'badge', 'build'));
  const steps = (r.trace || []).map(s => s.node + (s.tool ? ' ' + s.tool : '') + ' ' + s.ms.toFixed(0) + ' ms').join(' · ');
  if (steps) info.appendChild(el('span', '', steps));
  if (r.discovery && r.discovery.length) info.appendChild(el('span', '', ' · looked for: ' + r.discovery.map(d => d.domain + '/' + d.operation).join(', ')));
  m.appendChild(info);
}

// readEvents reads a Server-Sent Events response, calling on(event, payload)
// for each event as it arrives.
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
      on(event, data ? JSON.parse(data) : {});
    }
  }
}

// progressList adds a list of build steps to message m and returns a
// function that appends one step.
function progressList(m) {
  const list = el('ul', 'progress');
  list.id = 'progress';
  m.appendChild(list);
  return (text, cls) => { const li = el('li', cls || '', text); list.appendChild(li); li.scrollIntoView({block: 'end'}); };
}

function stepClass(stage) { return stage === 'failed' ? 'fail' : (stage === 'done' ? 'ok' : ''); }

async function ask(text, showUser = true) {
  if (showUser) addMessage('user', text);
  const pending = addMessage('bot', '…');
  const fail = msg => { pending.textContent = msg; pending.classList.add('error'); };
  let r = null, step = null, streamed = '';
  try {
    const resp = await fetch('/chat', {method: 'POST',
      headers: {'Content-Type': 'application/json', 'Accept': 'text/event-stream'},
      body: JSON.stringify({message: text, history: history.slice(-8)})});
    if (!resp.ok) {
      const e = await resp.json().catch(() => ({}));
      fail(e.error || ('Error ' + resp.status));
      return;
    }
    await readEvents(resp, (event, payload) => {
      if (event === 'progress') {
        if (!step) { pending.textContent = 'Building a tool…'; step = progressList(pending); }
        step(payload.message, stepClass(payload.stage));
      } else if (event === 'token') {
        // The answer as the model writes it; the result replaces it.
        streamed += payload.text || '';
        pending.textContent = streamed;
      } else if (event === 'result') r = payload;
      else if (event === 'error') fail(payload.error || 'The request failed.');
    });
  } catch (e) {
    fail('The server did not answer: ' + e);
    return;
  }
  if (!r) { if (!pending.classList.contains('error')) fail('The server closed the answer early.'); return; }
  const list = pending.querySelector('ul.progress');
  pending.textContent = r.response;
  if (list) pending.appendChild(list);
  if (r.error) pending.classList.add('error');
  describe(pending, r);
  history.push({role: 'user', content: text}, {role: 'assistant', content: r.response});
  if (r.need_tool) offerBuild(pending, r.original_question || text);
  if (r.tool_build && r.tool_build.ok) refreshCount();
}

function offerBuild(m, question) {
  const actions = el('div', 'actions');
  const create = el('button', 'primary', 'Create Tool');
  create.id = 'create-tool';
  const cancel = el('button', '', 'Cancel');
  cancel.id = 'cancel-tool';
  actions.append(create, cancel);
  m.appendChild(actions);
  cancel.onclick = () => actions.remove();
  create.onclick = () => { create.disabled = cancel.disabled = true; build(m, question); };
}

async function build(m, question) {
  const step = progressList(m);
  step('asking the model for a tool…');
  let resp;
  try {
    resp = await fetch('/api/tools/build', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({request: question})});
  } catch (e) { step('The server did not answer: ' + e, 'fail'); return; }
  if (!resp.ok) {
    const r = await resp.json().catch(() => ({}));
    step(r.error || ('Error ' + resp.status), 'fail');
    return;
  }
  let result = null, finished = false;
  await readEvents(resp, (event, payload) => {
    if (event === 'progress') { finished = finished || payload.stage === 'done'; step(payload.message, stepClass(payload.stage)); }
    else if (event === 'error') step(payload.error, 'fail');
    else if (event === 'result') result = payload;
  });
  if (!result) return;
  if (!result.ok) { step(result.error || 'The tool could not be built.', 'fail'); return; }
  if (!finished) step(result.summary || ('registered ' + result.tool), 'ok');
  refreshCount();
  await ask(question, false);
}

async function refreshCount() {
  try {
    const r = await (await fetch('/healthz')).json();
    document.getElementById('tool-count').textContent = r.tools;
  } catch (e) {}
}

form.addEventListener('submit', e => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = '';
  ask(text);
});
