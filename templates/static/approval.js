// Approvals, shared by the chat page and the tool page: a tool's request
// that changes something waits for the person who asked, who sees the
// tool, its version, the method, the URL and the body as the tool wrote
// them (a secret shows as its placeholder, {{secret:NAME}}: the server
// fills it in, and nothing here ever holds its value) and answers Allow,
// Allow for the rest of this chat, or Deny (POST /api/approvals/<id>).
// Everything a tool wrote is set as text, never as HTML.
'use strict';

// approvalCard returns the card of approval a. opts.forChat offers "Allow
// for the rest of this chat"; opts.onSettled hears the outcome in words.
function approvalCard(a, opts) {
  opts = opts || {};
  const card = el('div', 'approval');
  card.dataset.approval = a.id;
  card.setAttribute('role', 'group');
  card.setAttribute('aria-label', 'Approval of a request of ' + a.tool);
  const head = el('div', 'approval-head');
  head.append(el('b', '', 'Approve this request?'), ' ');
  head.append(el('span', 'mono', a.tool), el('span', 'muted', ' version ' + a.version));
  card.appendChild(head);
  const req = el('div', 'approval-req');
  req.append(el('code', 'method', a.method), ' ', el('code', 'url', a.url));
  card.appendChild(req);
  if (a.body) card.appendChild(el('pre', 'approval-body', a.body));
  const expires = new Date(a.expires);
  const note = el('p', 'muted approval-note', 'Nothing is sent unless you allow it. A secret shows as {{secret:NAME}}: the server puts your value in. ' +
    (isNaN(expires) ? '' : 'Expires at ' + expires.toLocaleTimeString() + '.'));
  card.appendChild(note);
  const actions = el('div', 'actions');
  const outcome = el('div', 'approval-outcome');
  outcome.setAttribute('role', 'status');
  const buttons = [];
  const button = (label, cls, answer) => {
    const b = el('button', cls, label);
    b.type = 'button';
    b.addEventListener('click', () => answerApproval(a, answer));
    buttons.push(b);
    actions.appendChild(b);
  };
  button('Allow', 'primary allow', {decision: 'allow'});
  if (opts.forChat) button('Allow for the rest of this chat', 'allow-chat', {decision: 'allow', for_chat: true});
  button('Deny', 'danger deny', {decision: 'deny'});
  card.append(actions, outcome);

  let timer = 0;
  const settle = (text, cls) => {
    if (timer) clearTimeout(timer);
    actions.remove();
    note.remove();
    card.classList.add('settled', cls);
    outcome.textContent = text;
    if (opts.onSettled) opts.onSettled(text);
  };
  async function answerApproval(a, answer) {
    for (const b of buttons) b.disabled = true;
    const r = await api('POST', '/api/approvals/' + encodeURIComponent(a.id), answer);
    if (r.ok) {
      settle(outcomeWords(r.body.outcome), r.body.outcome === 'denied' ? 'denied' : 'allowed');
    } else if (r.status === 409 || r.status === 410) {
      settle(r.body.error || 'This approval is settled already.', r.status === 410 ? 'expired' : 'denied');
    } else {
      for (const b of buttons) b.disabled = false;
      outcome.textContent = r.body.error || ('The server answered ' + r.status + '.');
    }
  }
  // Past its expiry nobody can allow it any more: the card says so.
  if (!isNaN(expires)) {
    timer = setTimeout(() => { if (actions.isConnected) settle('Expired: nobody answered in time, so nothing was sent.', 'expired'); }, Math.max(0, expires - Date.now()) + 500);
  }
  card.settleAs = outcome => { if (actions.isConnected) settle(outcomeWords(outcome), outcome === 'allowed' || outcome === 'allowed_for_chat' ? 'allowed' : 'denied'); };
  return card;
}

// outcomeWords says what became of an approval.
function outcomeWords(outcome) {
  switch (outcome) {
    case 'allowed': return 'Allowed: the request was sent once.';
    case 'allowed_for_chat': return 'Allowed, and for the rest of this chat: this tool version\'s requests to this host go without asking.';
    case 'remembered': return 'Allowed earlier in this chat.';
    case 'denied': return 'Denied: nothing was sent, nothing was changed.';
    case 'expired': return 'Expired: nobody answered in time, so nothing was sent.';
    case 'cancelled': return 'Given up before anyone answered: nothing was sent.';
  }
  return outcome || '';
}

// approvalSummary lists, in words, the approvals a finished request asked
// for (its result's "approvals").
function approvalSummary(list) {
  const ul = el('ul', 'approvals-done');
  for (const a of list || []) {
    const li = el('li', a.outcome === 'allowed' || a.outcome === 'allowed_for_chat' ? 'ok' : 'fail');
    li.append(el('code', 'method', a.method), ' ', el('code', 'url', a.url), ' · ', outcomeWords(a.outcome));
    ul.appendChild(li);
  }
  return ul;
}
