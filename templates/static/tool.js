// /tools/<name>: run with the form, test the examples, compare versions,
// roll back, approve, delete. Output is always set as text, never as HTML.
'use strict';
(function () {
  const name = document.body.dataset.tool;
  if (!name) return;
  const base = '/api/tools/' + encodeURIComponent(name);

  // Run: the arguments come from the form's inputs, named after the schema's
  // properties; empty optional fields are left out.
  const form = document.getElementById('run-form');
  if (form) {
    form.addEventListener('submit', async e => {
      e.preventDefault();
      const out = document.getElementById('run-out');
      const args = {};
      for (const input of form.querySelectorAll('[name]')) {
        const type = input.dataset.type, key = input.name;
        if (type === 'boolean') { if (input.checked) args[key] = true; continue; }
        const v = input.value.trim();
        if (v === '') {
          if (input.required) { show(out, key + ' is required.', true); input.focus(); return; }
          continue;
        }
        if (type === 'number' || type === 'integer') args[key] = Number(v);
        else if (type === 'object' || type === 'array') {
          try { args[key] = JSON.parse(v); } catch (err) { show(out, key + ' is not valid JSON: ' + err.message, true); return; }
        } else args[key] = v;
      }
      const button = document.getElementById('run');
      button.disabled = true;
      show(out, 'Running…');
      const r = await runAsking(args, out);
      button.disabled = false;
      const meta = document.getElementById('run-meta');
      meta.textContent = r.body.ms !== undefined ? r.body.ms.toFixed(1) + ' ms' : '';
      if (r.body.request_id) {
        const a = el('a', '', 'request ' + r.body.request_id);
        a.href = '/api/requests/' + encodeURIComponent(r.body.request_id);
        meta.append(' · ', a);
      }
      if (r.ok) show(out, pretty(r.body.output), false);
      else show(out, (r.body.error || 'Error ' + r.status) + (r.body.parameters ? '\n\nparameters: ' + JSON.stringify(r.body.parameters, null, 2) : ''), true);
      if (r.cards) out.prepend(r.cards);
    });
  }

  // runAsking runs the tool as a stream: a request of the tool's that
  // changes something shows its approval card in out, and the run waits
  // for the answer. It returns what api() would.
  async function runAsking(args, out) {
    let resp;
    try {
      resp = await fetch(base + '/run', {method: 'POST', headers: {'Content-Type': 'application/json', 'Accept': 'text/event-stream'}, body: JSON.stringify(args)});
    } catch (e) {
      return {ok: false, status: 0, body: {error: 'The server did not answer: ' + e.message}};
    }
    if (!(resp.headers.get('Content-Type') || '').includes('text/event-stream')) {
      const body = await resp.json().catch(() => ({error: 'The server answered ' + resp.status + '.'}));
      if (resp.status === 401) signIn();
      return {ok: resp.ok, status: resp.status, body};
    }
    const cards = el('div', 'approvals');
    let res = {ok: false, status: 0, body: {error: 'The server closed the run early.'}};
    await readEvents(resp, (event, p) => {
      if (event === 'approval') {
        out.replaceChildren(cards);
        cards.appendChild(approvalCard(p, {forChat: false}));
      } else if (event === 'result') res = {ok: true, status: 200, body: p};
      else if (event === 'error') res = {ok: false, status: p.status || 500, body: p};
    });
    for (const card of cards.querySelectorAll('.approval')) {
      const rec = (res.body.approvals || []).find(a => a.id === card.dataset.approval);
      card.settleAs(rec ? rec.outcome : 'cancelled');
    }
    if (cards.firstChild) res.cards = cards;
    return res;
  }

  function pretty(s) {
    try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { return s; }
  }

  // Trust: an admin lets the serving version's requests to a host go
  // without asking, or asks again.
  for (const b of document.querySelectorAll('#hosts button.trust, #hosts button.untrust')) {
    b.addEventListener('click', async () => {
      b.disabled = true;
      const host = b.dataset.host;
      const r = b.classList.contains('trust')
        ? await api('POST', base + '/trust', {host, version: Number(b.dataset.version)})
        : await api('DELETE', base + '/trust?host=' + encodeURIComponent(host));
      const out = document.getElementById('trust-out');
      if (!r.ok) { b.disabled = false; show(out, r.body.error || 'Error ' + r.status, true); return; }
      show(out, (b.classList.contains('trust') ? 'Trusted: version ' + r.body.version + '\'s requests to ' + host + ' go without asking.' : host + ' asks first again.') + ' Reloading…', false);
      setTimeout(() => location.reload(), 600);
    });
  }

  // Test: re-run the stored examples.
  const test = document.getElementById('test');
  if (test) {
    test.addEventListener('click', async () => {
      const out = document.getElementById('test-out');
      test.disabled = true;
      show(out, 'Running the examples…');
      const r = await api('POST', base + '/test');
      test.disabled = false;
      if (!r.ok) { show(out, r.body.error || 'Error ' + r.status, true); return; }
      const lines = (r.body.results || []).map((x, i) => (x.ok ? '✓ ' : '✗ ') + 'example ' + (i + 1) + ': ' + (x.ok ? x.output : x.error));
      show(out, (r.body.ok ? 'All examples pass.' : 'Some examples fail.') + '\n' + lines.join('\n'), !r.body.ok);
    });
  }

  // Diff: each version against the one before, as a unified diff.
  for (const b of document.querySelectorAll('.diff-btn')) {
    b.addEventListener('click', async () => {
      const li = b.closest('li') || b.closest('.notice');
      const box = li.querySelector('.diff-out') || document.getElementById('approve-out');
      if (box.firstChild && box.dataset.shown === b.dataset.to) { box.replaceChildren(); box.dataset.shown = ''; return; }
      const r = await api('GET', base + '/diff?from=' + b.dataset.from + '&to=' + b.dataset.to);
      if (!r.ok) { show(box, r.body.error || 'Error ' + r.status, true); return; }
      const pre = el('pre', 'diff');
      if (r.body.same) pre.textContent = 'v' + r.body.from + ' and v' + r.body.to + ' have the same source.';
      for (const line of r.body.diff.split('\n')) {
        let cls = '';
        if (line.startsWith('+') && !line.startsWith('+++')) cls = 'add';
        else if (line.startsWith('-') && !line.startsWith('---')) cls = 'del';
        else if (line.startsWith('@@')) cls = 'hunk';
        const span = el('span', cls, line);
        pre.append(span);
        if (!cls) pre.append('\n');
      }
      box.replaceChildren(pre);
      box.dataset.shown = b.dataset.to;
    });
  }

  // Rollback: serve an older version again, as a new version.
  for (const b of document.querySelectorAll('.rollback-btn')) {
    b.addEventListener('click', async () => {
      b.disabled = true;
      const r = await api('POST', base + '/rollback', {version: Number(b.dataset.version)});
      const out = document.getElementById('rollback-out');
      if (!r.ok) { b.disabled = false; show(out, r.body.error || 'Error ' + r.status, true); return; }
      show(out, 'Version ' + r.body.restored + ' serves again as version ' + r.body.version + '. Reloading…');
      setTimeout(() => location.reload(), 600);
    });
  }

  const approve = document.getElementById('approve');
  if (approve) {
    approve.addEventListener('click', async () => {
      approve.disabled = true;
      const r = await api('POST', base + '/approve');
      const out = document.getElementById('approve-out');
      if (!r.ok) { approve.disabled = false; show(out, r.body.error || 'Error ' + r.status, true); return; }
      show(out, 'Approved: version ' + r.body.version + ' serves. Reloading…');
      setTimeout(() => location.reload(), 600);
    });
  }

  // Delete, after an in-page confirmation.
  const del = document.getElementById('delete');
  const confirmBox = document.getElementById('confirm-delete');
  if (del) {
    del.addEventListener('click', () => { confirmBox.hidden = false; del.hidden = true; });
    document.getElementById('delete-no').addEventListener('click', () => { confirmBox.hidden = true; del.hidden = false; });
    document.getElementById('delete-yes').addEventListener('click', async () => {
      const yes = document.getElementById('delete-yes');
      yes.disabled = true;
      const r = await api('DELETE', base);
      const out = document.getElementById('delete-out');
      if (!r.ok) { yes.disabled = false; show(out, r.body.error || 'Error ' + r.status, true); return; }
      show(out, name + ' is deleted; its versions stay in history.');
      confirmBox.hidden = true;
      setTimeout(() => { location.href = '/tools'; }, 900);
    });
  }
})();

// Failures: the ways this tool failed in use, newest first, each with its
// input, error, count, last time seen and a link to its latest trace; a
// thumbs-down waits to be confirmed or dismissed; Repair asks the model for
// a version that passes the examples and these cases.
(function () {
  const name = document.body.dataset.tool;
  const box = document.getElementById('failures');
  if (!name || !box) return;
  const base = '/api/tools/' + encodeURIComponent(name);
  const summary = document.getElementById('failures-summary');
  const table = document.getElementById('failures-table');
  const repair = document.getElementById('repair');
  const note = document.getElementById('repair-note');
  const out = document.getElementById('repair-out');

  function when(t) { return t ? new Date(t).toLocaleString() : ''; }
  // The API's word for a failure kind, as a person reads it.
  const kindWords = {invalid_arguments: 'invalid arguments', bad_output: 'bad output'};

  function draw(rep) {
    const cases = rep.cases || [];
    const tbody = table.querySelector('tbody');
    tbody.replaceChildren();
    for (const c of cases) {
      const tr = el('tr', 'case ' + c.status + (c.fixed_in ? ' fixed' : ''));
      tr.dataset.case = c.id;
      const input = el('td', 'input');
      // Someone else's input is theirs and the admins' (docs/privacy.md).
      if (c.arguments == null) input.appendChild(el('span', 'muted withheld', 'someone else’s input: shown to them and to admins'));
      else input.appendChild(el('code', '', typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments)));
      if (!c.exact && c.arguments != null) input.appendChild(el('div', 'muted', 'cut: ' + c.arguments_bytes + ' bytes sent'));
      const err = el('td', 'err');
      const kind = el('span', 'badge kind', kindWords[c.kind] || c.kind);
      kind.title = c.kind;
      err.appendChild(kind);
      err.append(' ' + (c.message || ''));
      if (c.comment) err.appendChild(el('div', 'muted', '“' + c.comment + '”'));
      const seen = el('td', 'when', when(c.last_seen));
      if (c.request_id) {
        const a = el('a', '', 'trace');
        a.href = '/api/requests/' + encodeURIComponent(c.request_id);
        a.target = '_blank';
        seen.append(' ', a);
      }
      const status = el('td', 'status');
      if (c.status === 'accepted') status.textContent = 'accepted: a repair kept this refusal as the right answer' + (c.fixed_in ? ' (v' + c.fixed_in + ')' : '');
      else if (c.fixed_in) status.textContent = 'fixed in v' + c.fixed_in + (c.fixed_in === rep.pending_version ? ' (waiting for approval)' : '');
      else if (c.status === 'unconfirmed') {
        status.append('a thumbs-down: ');
        status.appendChild(triage('Confirm', 'POST', '/confirm', c.id));
        status.appendChild(triage('Dismiss', 'DELETE', '', c.id));
      } else if (c.kind === 'invalid_arguments' || !c.exact) {
        status.textContent = c.exact ? 'the caller’s arguments' : 'cannot be run again';
      } else {
        // Failures and clear errors alike are in the next repair, which
        // may keep a refusal as the right answer.
        const label = el('label');
        const pick = el('input');
        pick.type = 'checkbox';
        pick.className = 'pick';
        pick.value = c.id;
        pick.checked = true;
        pick.addEventListener('change', count);
        label.append(pick, c.kind === 'error' ? ' a refusal: the repair judges it' : ' open: in the repair');
        status.appendChild(label);
      }
      const times = el('td', 'num', String(c.count));
      times.dataset.label = 'count';
      seen.dataset.label = 'last seen';
      const version = el('td', 'num', 'v' + c.version);
      version.dataset.label = 'version';
      tr.append(input, err, times, seen, version, status);
      tbody.appendChild(tr);
    }
    table.hidden = cases.length === 0;
    const auto = rep.auto_repair || {};
    let text = cases.length
      ? cases.length + ' way' + (cases.length === 1 ? '' : 's') + ' this tool failed in use (at most ' + rep.keep + ' are kept): ' + rep.open + ' open for a repair' + (rep.errors ? ', ' + rep.errors + ' clear error' + (rep.errors === 1 ? '' : 's') + ' for a repair to judge' : '') + (rep.accepted ? ', ' + rep.accepted + ' refusal' + (rep.accepted === 1 ? '' : 's') + ' accepted' : '') + (rep.unconfirmed ? ', ' + rep.unconfirmed + ' thumbs-down to check' : '') + '.'
      : 'No failure in use so far.';
    if (auto.mode && auto.mode !== 'off') text += ' Automatic repair (' + auto.mode + ') starts after ' + auto.after + ' distinct cases of the serving version; ' + auto.since_change + ' so far.';
    summary.textContent = text;
    count();
    note.textContent = rep.pending_version ? 'Version ' + rep.pending_version + ' waits for approval above.' : '';
    const list = document.getElementById('repairs');
    list.replaceChildren();
    for (const r of (rep.repairs || []).slice().reverse()) {
      let what = r.ok ? 'made version ' + r.version + (r.pending ? ' (waiting for approval)' : '') + ', fixing ' + (r.fixed || []).length + ' of ' + r.cases.length + ' cases' : 'failed: ' + (r.error || 'no reason given');
      list.appendChild(el('li', r.ok ? 'ok' : 'fail', when(r.at) + ' — ' + (r.auto ? 'automatic repair' : 'repair') + ' of version ' + r.from_version + ': ' + what));
    }
  }

  // picked are the cases ticked for the next repair.
  function picked() { return [...table.querySelectorAll('input.pick:checked')].map(p => p.value); }

  function count() {
    const n = picked().length;
    repair.hidden = !table.querySelector('input.pick');
    repair.disabled = n === 0;
    repair.textContent = 'Repair from ' + n + ' case' + (n === 1 ? '' : 's');
  }

  function triage(label, method, suffix, id) {
    const b = el('button', 'small', label);
    b.type = 'button';
    b.addEventListener('click', async () => {
      b.disabled = true;
      const r = await api(method, base + '/failures/' + encodeURIComponent(id) + suffix);
      if (!r.ok) { b.disabled = false; show(out, r.body.error || 'Error ' + r.status, true); return; }
      draw(r.body);
    });
    return b;
  }

  async function load() {
    const r = await api('GET', base + '/failures');
    if (!r.ok) { summary.textContent = r.body.error || 'The failure cases could not be read.'; return; }
    draw(r.body);
  }

  repair.addEventListener('click', async () => {
    repair.disabled = true;
    show(out, 'Repairing: the model rewrites the tool, then its examples and every failing case are run. This takes a minute or so…');
    const r = await api('POST', base + '/repair', {cases: picked()});
    repair.disabled = false;
    if (!r.ok) { show(out, r.body.error || 'Error ' + r.status, true); return; }
    const lines = [r.body.summary || (r.body.ok ? 'Repaired.' : r.body.error)];
    for (const c of (r.body.cases || [])) lines.push((c.ok ? '✓ ' : '✗ ') + JSON.stringify(c.input) + ': ' + (c.outcome === 'result' ? 'a result' + (c.example ? ', kept as an example' : '') : c.outcome === 'error' ? 'a clear error: ' + c.error : 'still fails: ' + c.error));
    show(out, lines.join('\n'), !r.body.ok);
    if (r.body.ok) setTimeout(() => location.reload(), 1500);
    else load();
  });

  load();
})();
