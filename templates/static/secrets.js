// /secrets: a person's own secrets (and the shared ones), listed by name,
// scope, hosts and last use, never a value; set with a password field,
// whose value goes to the server once and is cleared at once; deleted
// after an in-page confirmation. Everything is set as text.
'use strict';
(function () {
  const table = document.getElementById('secrets');
  const empty = document.getElementById('secrets-empty');
  const out = document.getElementById('secrets-out');
  const form = document.getElementById('secret-form');
  const value = document.getElementById('secret-value');
  let admin = false;

  function when(t) {
    if (!t) return 'never';
    const d = new Date(t);
    return isNaN(d) ? t : d.toLocaleString();
  }

  async function list() {
    const r = await api('GET', '/api/secrets');
    if (!r.ok) { show(out, r.body.error || 'Error ' + r.status, true); return; }
    const body = table.querySelector('tbody');
    body.replaceChildren();
    for (const s of r.body.secrets || []) {
      const tr = el('tr', s.scope);
      tr.dataset.secret = s.name;
      tr.appendChild(el('td', 'mono name', s.name));
      const scope = el('td');
      scope.appendChild(el('span', 'badge' + (s.scope === 'shared' ? ' pending' : ''), s.scope));
      tr.appendChild(scope);
      const cell = (cls, label, text) => { const td = el('td', cls, text); td.dataset.label = label; tr.appendChild(td); };
      cell('mono', 'sent only to', (s.hosts || []).join(', '));
      cell('when', 'set', when(s.created));
      cell('when', 'last used', when(s.last_used));
      const act = el('td', 'act');
      if (s.scope === 'personal' || admin) act.appendChild(deleteButton(s, act));
      tr.appendChild(act);
      body.appendChild(tr);
    }
    const n = body.children.length;
    table.hidden = n === 0;
    empty.hidden = n !== 0;
  }

  // deleteButton deletes s after a confirmation in place.
  function deleteButton(s, cell) {
    const b = el('button', 'danger small', 'Delete');
    b.type = 'button';
    b.addEventListener('click', () => {
      const yes = el('button', 'danger primary small', 'Delete ' + s.name);
      yes.type = 'button';
      const no = el('button', 'small', 'Keep');
      no.type = 'button';
      no.addEventListener('click', () => cell.replaceChildren(b));
      yes.addEventListener('click', async () => {
        yes.disabled = true;
        const r = await api('DELETE', '/api/secrets/' + encodeURIComponent(s.name) + (s.scope === 'shared' ? '?shared=true' : ''));
        if (!r.ok) { show(out, r.body.error || 'Error ' + r.status, true); cell.replaceChildren(b); return; }
        show(out, s.name + ' deleted.', false);
        list();
      });
      cell.replaceChildren(yes, no);
    });
    return b;
  }

  form.addEventListener('submit', async e => {
    e.preventDefault();
    const box = document.getElementById('secret-out');
    const name = document.getElementById('secret-name').value.trim();
    const hosts = document.getElementById('secret-hosts').value.split(',').map(h => h.trim()).filter(Boolean);
    const body = {value: value.value, hosts, shared: admin && document.getElementById('secret-shared').checked};
    // The value leaves the page with this request and nowhere else.
    value.value = '';
    const save = document.getElementById('secret-save');
    save.disabled = true;
    const r = await api('PUT', '/api/secrets/' + encodeURIComponent(name), body);
    body.value = '';
    save.disabled = false;
    if (!r.ok) { show(box, r.body.error || 'Error ' + r.status, true); return; }
    show(box, r.body.name + ' set (' + r.body.scope + '), sent only to ' + (r.body.hosts || []).join(', ') + '.', false);
    list();
  });

  (async () => {
    const me = await api('GET', '/api/me');
    admin = me.ok && (me.body.can || []).includes('share_secret');
    document.getElementById('shared-box').hidden = !admin;
    list();
  })();
})();
