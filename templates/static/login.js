// The sign-in page: a key typed here becomes a session cookie (the key is
// sent once, as JSON, and never stored in the page); sign-out ends it.
'use strict';

(function () {
  const next = document.body.dataset.next || '/';
  const form = document.getElementById('key-form');
  if (form) {
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const input = document.getElementById('key');
      const out = document.getElementById('key-result');
      const res = await api('POST', '/login/key', {key: input.value.trim()});
      input.value = '';
      if (!res.ok) {
        const note = el('div', 'notice bad', res.body.error || ('The server answered ' + res.status));
        note.setAttribute('role', 'alert');
        out.replaceChildren(note);
        return;
      }
      window.location.assign(next);
    });
  }
  document.getElementById('sign-out')?.addEventListener('click', signOut);
})();
