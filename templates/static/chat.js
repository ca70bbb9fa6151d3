// The chat page. Answers are Markdown, rendered by marked and sanitized by
// DOMPurify before they reach the DOM, so HTML in an answer never runs. They
// stream in as "token" events arrive. The conversation is kept in this
// browser (localStorage) until New chat. A tool's request that changes
// something arrives as an "approval" event: a card (approval.js) that the
// person answers while the stream waits. Approvals asked through other
// doors that wait for this person (a plain JSON chat) show above the chat.
'use strict';
(function () {
  const STORE = 'adaptbot.chat';
  const CHAT_ID = 'adaptbot.chat.id';
  const KEEP = 60; // messages kept in the browser
  const log = document.getElementById('log');
  const form = document.getElementById('chat');
  const input = document.getElementById('message');
  const send = document.getElementById('send');
  let conv = load();
  let busy = false;
  let chatId = loadChatId(false);
  const shown = new Set(); // the approvals with a card on the page
  const waiting = document.getElementById('waiting');

  if (window.marked) marked.setOptions({gfm: true, breaks: true});

  // markdown renders model text as sanitized HTML inside box.
  function markdown(box, text) {
    if (window.marked && window.DOMPurify) {
      box.innerHTML = DOMPurify.sanitize(marked.parse(text || ''), {FORBID_TAGS: ['style', 'form', 'input', 'button']});
      for (const a of box.querySelectorAll('a[href]')) { a.target = '_blank'; a.rel = 'noopener noreferrer'; }
    } else {
      box.textContent = text || ''; // the libraries failed to load: plain text, still safe
    }
  }

  // loadChatId names this conversation for "allow for the rest of this
  // chat"; a new chat gets a new name.
  function loadChatId(fresh) {
    let id = '';
    try { id = fresh ? '' : (localStorage.getItem(CHAT_ID) || ''); } catch (e) { /* no storage */ }
    if (!id) {
      const b = new Uint8Array(12);
      crypto.getRandomValues(b);
      id = Array.from(b, x => x.toString(16).padStart(2, '0')).join('');
      try { localStorage.setItem(CHAT_ID, id); } catch (e) { /* kept for this page only */ }
    }
    return id;
  }

  function load() {
    try { const c = JSON.parse(localStorage.getItem(STORE) || '[]'); return Array.isArray(c) ? c : []; } catch (e) { return []; }
  }
  function save() {
    conv = conv.slice(-KEEP);
    try { localStorage.setItem(STORE, JSON.stringify(conv)); } catch (e) { /* full: keep going without */ }
  }

  // keep is the part of a chat result the page needs again after a reload.
  function keep(r) {
    const k = {};
    for (const f of ['intent', 'path', 'need_tool', 'original_question', 'trace', 'total_ms', 'request_id', 'tool', 'arguments', 'llm_calls', 'usage', 'tools', 'error', 'tool_build', 'discovery', 'approvals']) {
      if (r[f] !== undefined && r[f] !== null) k[f] = r[f];
    }
    return k;
  }

  // history is what the server gets as context: the answered turns before
  // the message being sent (which is the last user entry).
  function history() {
    const h = [];
    const upTo = conv.length && conv[conv.length - 1].role === 'user' ? conv.length - 1 : conv.length;
    for (const m of conv.slice(0, upTo)) {
      if (m.error || !m.text) continue;
      h.push({role: m.role === 'user' ? 'user' : 'assistant', content: m.text});
    }
    return h.slice(-8);
  }

  function scrollDown() { log.scrollTop = log.scrollHeight; }

  function userBox(text) {
    const m = el('div', 'msg user', text);
    log.appendChild(m);
    return m;
  }

  function botBox() {
    const m = el('div', 'msg bot');
    m.appendChild(el('div', 'md'));
    log.appendChild(m);
    return m;
  }

  // renderBot fills a bot message from a stored entry.
  function renderBot(m, entry) {
    m.classList.toggle('error', !!entry.error);
    markdown(m.querySelector('.md'), entry.text);
    if (entry.result && entry.result.approvals) m.appendChild(approvalSummary(entry.result.approvals));
    if (entry.result) describe(m, entry.result);
    if (entry.result) feedbackControls(m, entry, save);
    if (entry.failed) retryButton(m, entry.failed);
    if (entry.result && entry.result.need_tool && !entry.offered) offerBuild(m, entry.result.original_question || entry.question, entry);
  }

  function render() {
    log.replaceChildren();
    for (const entry of conv) {
      if (entry.role === 'user') userBox(entry.text);
      else renderBot(botBox(), entry);
    }
    scrollDown();
  }

  // describe adds the path badge and a one-line summary; the badge opens
  // the trace.
  function describe(m, r) {
    m.querySelector('.info')?.remove();
    const info = el('div', 'info');
    if (r.path) {
      // Every tool the answer used, in the order they first ran (path alone
      // names only the first), or what the path means (trace.js).
      const b = el('button', 'badge path', pathWords(r));
      b.type = 'button';
      b.title = 'Show the trace of this answer';
      b.setAttribute('aria-expanded', 'false');
      b.addEventListener('click', () => toggleTrace(m, r, b));
      info.appendChild(b);
    }
    if (r.intent === 'BUILD') info.appendChild(el('span', 'badge', 'build'));
    const bits = [];
    if (r.total_ms !== undefined) bits.push(fmtMs(r.total_ms));
    else if (r.trace && r.trace.length) bits.push(fmtMs(r.trace.reduce((a, s) => a + (s.ms || 0), 0)));
    if (r.llm_calls) bits.push(r.llm_calls + ' model call' + (r.llm_calls === 1 ? '' : 's'));
    if (bits.length) info.appendChild(el('span', '', bits.join(' · ')));
    m.appendChild(info);
  }

  async function toggleTrace(m, r, badge) {
    const open = m.querySelector('.trace');
    if (open) { open.remove(); badge.setAttribute('aria-expanded', 'false'); return; }
    const box = el('div', 'trace');
    m.appendChild(box);
    badge.setAttribute('aria-expanded', 'true');
    drawTrace(box, r, false);
    // The stored trace may know more than the page kept (or the page kept
    // nothing, after a reload from an older version).
    if (r.request_id) {
      const got = await api('GET', '/api/requests/' + encodeURIComponent(r.request_id));
      if (got.ok && got.body.result && box.isConnected) drawTrace(box, Object.assign({}, got.body.result, {request_id: r.request_id}), true);
    }
  }

  // Build progress, said in plain words: what is built, its inputs, and why
  // each repair is needed. A failure is said once, by the answer itself.
  function progressList(m) {
    for (const old of document.querySelectorAll('#progress')) old.removeAttribute('id');
    const list = el('ul', 'progress');
    list.id = 'progress';
    m.appendChild(list);
    return list;
  }

  function addStep(list, ev) {
    if (!list || ev.stage === 'failed') return;
    // One line per step: the page says it is working out what to build
    // while it asks for the plan, and the build's own first step says the
    // same again.
    if (ev.stage === 'decide') {
      if (list.dataset.decided) return;
      list.dataset.decided = '1';
    }
    let text = ev.message;
    if (ev.stage === 'write' && ev.summary && ev.tool && !list.dataset.planned) {
      list.dataset.planned = '1';
      const li = el('li', '', 'Building ' + ev.tool + ': ' + ev.summary);
      list.appendChild(li);
    }
    if (ev.stage === 'compile' && ev.inputs && ev.inputs.length && !list.dataset.inputs) {
      list.dataset.inputs = '1';
      list.appendChild(el('li', '', 'inputs: ' + ev.inputs.join(', ')));
    }
    const li = el('li', ev.stage === 'done' ? 'ok' : '', text);
    if (ev.stage === 'repair' && ev.problems && ev.problems.length) {
      li.textContent = text + ', because the last attempt ' + plain(ev.problems[0]);
      if (ev.problems.length > 1 || ev.problems[0].length > 140) {
        const d = el('details');
        d.appendChild(el('summary', '', 'all ' + ev.problems.length + ' problem' + (ev.problems.length === 1 ? '' : 's')));
        d.appendChild(el('pre', '', ev.problems.join('\n')));
        li.appendChild(d);
      }
    }
    list.appendChild(li);
    scrollDown();
  }

  // plain words one problem of an attempt, cut short.
  function plain(p) {
    let s = p.replace(/^example (\d+) of (\d+) \(input [^)]*\): /, 'failed example $1 of $2: ');
    if (!/^failed/.test(s)) s = 'had a problem: ' + s;
    return s.length > 140 ? s.slice(0, 137) + '…' : s;
  }

  function setBusy(on) {
    busy = on;
    send.disabled = on;
    send.textContent = on ? 'Sending…' : 'Send';
  }

  function retryButton(m, text) {
    const actions = el('div', 'actions');
    const b = el('button', '', 'Retry');
    b.type = 'button';
    b.className = 'retry';
    b.addEventListener('click', () => {
      if (busy) return;
      // Drop the failed answer and ask again.
      const i = conv.findIndex(e => e.failed === text && e.role === 'bot');
      if (i >= 0) conv.splice(i, 1);
      save();
      m.remove();
      ask(text, false);
    });
    actions.appendChild(b);
    m.appendChild(actions);
  }

  async function ask(text, showUser) {
    if (busy) return;
    setBusy(true);
    if (showUser) { conv.push({role: 'user', text}); save(); userBox(text); }
    const m = botBox();
    m.classList.add('pending');
    const md = m.querySelector('.md');
    md.textContent = '…';
    scrollDown();
    const entry = {role: 'bot', text: '', question: text};
    let streamed = '', result = null, failure = null, list = null, frame = 0;
    const draw = () => { frame = 0; markdown(md, streamed); scrollDown(); };
    try {
      const resp = await fetch('/chat', {method: 'POST',
        headers: {'Content-Type': 'application/json', 'Accept': 'text/event-stream'},
        body: JSON.stringify({message: text, history: history(), chat: chatId})});
      if (!resp.ok || !(resp.headers.get('Content-Type') || '').includes('text/event-stream')) {
        const e = await resp.json().catch(() => ({}));
        failure = e.error || ('The server answered ' + resp.status + '.');
      } else {
        await readEvents(resp, (event, p) => {
          if (event === 'token') {
            streamed += p.text || '';
            if (!frame) frame = requestAnimationFrame(draw);
          } else if (event === 'progress') {
            if (!list) { if (!streamed) md.textContent = 'Building a tool…'; list = progressList(m); }
            addStep(list, p);
          } else if (event === 'approval') {
            // The tool waits for this person: the stream holds until the
            // card is answered, or the approval expires.
            shown.add(p.id);
            if (!streamed) md.textContent = 'A tool asks to send a request: it waits for your answer.';
            m.appendChild(approvalCard(p, {forChat: true}));
            scrollDown();
          } else if (event === 'result') result = p;
          else if (event === 'error') failure = p.error || 'The request failed.';
        });
      }
    } catch (e) {
      failure = 'The server did not answer: ' + e.message;
    }
    if (frame) cancelAnimationFrame(frame);
    m.classList.remove('pending');
    // Cards answered elsewhere (another tab, an admin) say what became of
    // them; the answer lists every approval it asked for.
    for (const card of m.querySelectorAll('.approval')) {
      const rec = ((result && result.approvals) || []).find(r => r.id === card.dataset.approval);
      card.settleAs(rec ? rec.outcome : 'cancelled');
    }
    if (!result && !failure) failure = 'The server closed the answer early.';
    if (failure) {
      entry.text = failure;
      entry.error = true;
      entry.failed = text;
      m.classList.add('error');
      markdown(md, failure);
      retryButton(m, text);
    } else {
      entry.text = result.response || streamed;
      entry.result = keep(result);
      if (result.error || (result.tool_build && !result.tool_build.ok)) m.classList.add('error');
      markdown(md, entry.text);
      describe(m, entry.result);
      feedbackControls(m, entry, save);
      if (result.need_tool) offerBuild(m, result.original_question || text, entry);
      if (result.tool_build && result.tool_build.ok) refreshCount();
    }
    conv.push(entry);
    save();
    setBusy(false);
    scrollDown();
    input.focus();
  }

  // offerBuild offers to build a tool for a question no tool answers.
  function offerBuild(m, question, entry) {
    const plan = el('div', 'plan', 'No tool can answer this yet. Create Tool asks the model to write one; you will see its name and inputs before it is built, and nothing serves until its code is checked, compiled and tested.');
    m.appendChild(plan);
    const actions = el('div', 'actions');
    const create = el('button', 'primary', 'Create Tool');
    create.id = 'create-tool';
    create.type = 'button';
    const cancel = el('button', '', 'Cancel');
    cancel.id = 'cancel-tool';
    cancel.type = 'button';
    actions.append(create, cancel);
    m.appendChild(actions);
    const done = () => { entry.offered = true; save(); };
    // Either choice is made once: the offer and its buttons go.
    cancel.addEventListener('click', () => { actions.remove(); plan.remove(); done(); });
    create.addEventListener('click', () => { actions.remove(); plan.remove(); done(); build(m, question); });
  }

  // build first asks what will be built (name, summary, inputs) and says
  // it, then builds exactly that.
  async function build(m, question) {
    setBusy(true);
    const list = progressList(m);
    addStep(list, {stage: 'decide', message: 'working out what to build…'});
    const body = {request: question};
    const planned = await api('POST', '/api/tools/plan', {request: question});
    if (planned.ok && planned.body.tool) {
      const p = planned.body;
      const li = el('li', 'planned');
      li.append('Will ' + p.op + ' ');
      li.appendChild(el('b', '', p.tool));
      li.append(': ' + p.summary);
      if (p.op === 'create') li.append(p.inputs && p.inputs.length ? ' Inputs: ' + p.inputs.join(', ') + '.' : ' The model named no inputs yet: they are settled when it writes the code.');
      list.appendChild(li);
      list.dataset.planned = '1';
      body.op = p.op;
      body.tool = p.tool;
      body.request = question + '\n\nPlan: ' + p.summary + (p.inputs && p.inputs.length ? ' Inputs: ' + p.inputs.join(', ') + '.' : '');
    } else if (planned.status === 403 || planned.status === 503) {
      list.appendChild(el('li', 'fail', planned.body.error || 'The tool cannot be built here.'));
      setBusy(false);
      return;
    }
    let result = null, failure = null;
    try {
      const headers = {'Content-Type': 'application/json', 'Accept': 'text/event-stream'};
      const resp = await fetch('/api/tools/build', {method: 'POST', headers, body: JSON.stringify(body)});
      if (!resp.ok) {
        const r = await resp.json().catch(() => ({}));
        failure = r.error || ('The server answered ' + resp.status + '.');
      } else {
        await readEvents(resp, (event, p) => {
          if (event === 'progress') addStep(list, p);
          else if (event === 'error') failure = p.error;
          else if (event === 'result') result = p;
        });
      }
    } catch (e) { failure = 'The server did not answer: ' + e.message; }
    setBusy(false);
    if (!failure && result && !result.ok) failure = 'The tool could not be built: ' + (result.error || 'no reason given') + (result.attempts ? ' (after ' + result.attempts + ' attempt' + (result.attempts === 1 ? '' : 's') + ')' : '');
    if (failure || !result) {
      list.appendChild(el('li', 'fail', failure || 'The build ended without a result.'));
      return;
    }
    if (!list.querySelector('li.ok')) list.appendChild(el('li', 'ok', result.summary || ('registered ' + result.tool)));
    if (result.pending) {
      // Review is on: nothing serves until a person approves it.
      const li = el('li', '');
      const a = el('a', '', 'Review and approve ' + result.tool);
      a.href = '/tools/' + encodeURIComponent(result.tool);
      li.appendChild(a);
      list.appendChild(li);
      return;
    }
    refreshCount();
    await ask(question, false);
  }

  async function refreshCount() {
    const r = await api('GET', '/healthz');
    if (!r.ok) return;
    document.getElementById('tool-count').textContent = r.body.tools;
    modelBanner(r.body.model);
    // The server checks the model in the background at start-up: ask
    // again soon if that first check has not ended yet.
    if (r.body.model && r.body.model.provider && r.body.model.reachable === null) setTimeout(refreshCount, 2000);
  }

  // modelBanner says when the configured model does not answer, and where
  // the server looked.
  function modelBanner(model) {
    const box = document.getElementById('model-down');
    if (!model || !model.provider || model.reachable !== false) { box.hidden = true; return; }
    box.replaceChildren();
    box.appendChild(el('b', '', 'The model does not answer. '));
    box.append('The server tried ' + model.provider + (model.name ? ' (' + model.name + ')' : '') + ' at ');
    box.appendChild(el('code', '', model.url));
    box.append(': ' + (model.error || 'no answer') + '. Chat fails until it answers; tools still run from the ');
    const a = el('a', '', 'tools page');
    a.href = '/tools';
    box.append(a, '.');
    box.hidden = false;
  }

  form.addEventListener('submit', e => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || busy) return;
    input.value = '';
    ask(text, true);
  });

  // pollWaiting shows the approvals that wait for this person and have no
  // card here yet: asked through another door (a plain JSON chat) or
  // another tab.
  async function pollWaiting() {
    if (document.hidden || !waiting) return;
    const r = await api('GET', '/api/approvals');
    if (!r.ok) return;
    for (const a of r.body.approvals || []) {
      if (shown.has(a.id)) continue;
      shown.add(a.id);
      waiting.appendChild(approvalCard(a, {forChat: false, onSettled: () => setTimeout(tidyWaiting, 8000)}));
    }
    waiting.hidden = !waiting.querySelector('.approval');
  }
  function tidyWaiting() {
    for (const card of waiting.querySelectorAll('.approval.settled')) card.remove();
    waiting.hidden = !waiting.querySelector('.approval');
  }

  document.getElementById('new-chat').addEventListener('click', () => {
    if (busy) return;
    chatId = loadChatId(true);
    conv = [];
    save();
    render();
    input.focus();
  });

  render();
  refreshCount();
  setInterval(refreshCount, 60000);
  pollWaiting();
  setInterval(pollWaiting, 15000);
})();
