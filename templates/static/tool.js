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
      const r = await api('POST', base + '/run', args);
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
    });
  }

  function pretty(s) {
    try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { return s; }
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
