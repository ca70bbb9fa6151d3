// /tools: import a bundle of tools (POST /api/tools/import). The bundle is
// sent base64-encoded in JSON, the only body the server takes.
'use strict';
(function () {
  const open = document.getElementById('import-open');
  const box = document.getElementById('import');
  const form = document.getElementById('import-form');
  const file = document.getElementById('bundle');
  const rename = document.getElementById('rename');
  const replace = document.getElementById('replace');
  const go = document.getElementById('import-go');
  const out = document.getElementById('import-out');
  if (!open || !form) return;

  open.addEventListener('click', () => {
    box.hidden = !box.hidden;
    open.setAttribute('aria-expanded', String(!box.hidden));
    if (!box.hidden) file.focus();
  });

  // base64 reads a file as base64, without the data: URL's prefix.
  function base64(f) {
    return new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
      r.onerror = () => reject(r.error);
      r.readAsDataURL(f);
    });
  }

  // renames reads "old=new, a=b" into {old: "new", a: "b"}.
  function renames(text) {
    const out = {};
    for (const part of text.split(/[,\s]+/).filter(Boolean)) {
      const [from, to, extra] = part.split('=');
      if (!from || !to || extra !== undefined) throw new Error('Rename as old=new, separated by commas: "' + part + '" is not.');
      out[from] = to;
    }
    return out;
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = file.files[0];
    if (!f) { show(out, 'Choose a bundle (.tar.gz) first.', true); return; }
    let body;
    try {
      body = {bundle: await base64(f), rename: renames(rename.value), replace: replace.checked};
    } catch (e) {
      show(out, e.message, true);
      return;
    }
    go.disabled = true;
    show(out, 'Checking ' + f.name + '…', false);
    const r = await api('POST', '/api/tools/import', body);
    go.disabled = false;
    if (!r.ok) {
      const where = [r.body.tool && 'tool ' + r.body.tool, r.body.path && 'file ' + r.body.path].filter(Boolean).join(', ');
      show(out, 'Nothing was imported' + (where ? ' (' + where + ')' : '') + ': ' + (r.body.error || 'error ' + r.status), true);
      return;
    }
    const lines = (r.body.imported || []).map(t => {
      let line = t.name + (t.from ? ' (' + t.from + ' in the bundle)' : '') + ': ' + (t.replaced ? 'replaced' : 'imported') + ' as version ' + t.version;
      return line + (t.status === 'pending' ? ', waiting for review on its page' : ', serving');
    });
    show(out, lines.join('\n'), false);
    const again = el('button', '', 'Show them in the list');
    again.type = 'button';
    again.id = 'import-reload';
    again.addEventListener('click', () => location.reload());
    out.append(again);
  });
})();
