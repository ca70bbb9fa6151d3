// /tools: filter the list as the user types. Every row carries its words in
// data-search; a row shows when it holds every word typed.
'use strict';
(function () {
  const search = document.getElementById('search');
  const rows = [...document.querySelectorAll('#tools tbody tr')];
  const count = document.getElementById('count');
  const none = document.getElementById('none');
  function filter() {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const r of rows) {
      const hay = r.dataset.search.toLowerCase();
      const ok = words.every(w => hay.includes(w));
      r.hidden = !ok;
      if (ok) shown++;
    }
    count.textContent = words.length ? shown + ' of ' + rows.length : rows.length;
    none.hidden = shown > 0;
  }
  search.addEventListener('input', filter);
  const q = new URLSearchParams(location.search).get('q');
  if (q) { search.value = q; }
  filter();
})();

// The failure cases column: each local tool's open cases (and thumbs-downs
// waiting for a person), linked to its page's Failures section.
(function () {
  const cells = [...document.querySelectorAll('#tools td[data-failures]')].filter(td => td.dataset.failures);
  if (!cells.length) return;
  api('GET', '/api/failures').then(r => {
    if (!r.ok) return;
    const tools = r.body.tools || {};
    for (const td of cells) {
      const name = td.dataset.failures;
      const f = tools[name];
      if (!f) { td.textContent = '0'; continue; }
      const a = el('a', f.open ? 'failing' : '', f.open + ' open' + (f.unconfirmed ? ' · ' + f.unconfirmed + ' to check' : ''));
      a.href = '/tools/' + encodeURIComponent(name) + '#failures-title';
      a.title = f.failures + ' failed call' + (f.failures === 1 ? '' : 's') + ' kept, last ' + new Date(f.last_seen).toLocaleString();
      td.replaceChildren(a);
    }
  });
})();

// Skills from traffic: the chains of tools that recur in chats, the skill
// proposed for each and the chats it came from (their traces).
(function () {
  const box = document.getElementById('skills');
  if (!box) return;
  api('GET', '/api/skills').then(r => {
    const skills = (r.ok && r.body.skills) || [];
    if (!skills.length) return;
    const tbody = box.querySelector('tbody');
    for (const s of skills) {
      const tr = el('tr', 'skill ' + s.status);
      const chain = el('td');
      chain.appendChild(el('code', '', s.chain.join(' → ')));
      const seen = el('td', 'num', String(s.seen));
      seen.dataset.label = 'seen';
      const skill = el('td');
      skill.dataset.label = 'skill';
      if (s.tool) {
        const a = el('a', 'name', s.tool);
        a.href = '/tools/' + encodeURIComponent(s.tool);
        skill.append(a, ' ');
      }
      skill.appendChild(el('span', 'badge ' + s.status, s.status));
      if (s.error) skill.appendChild(el('div', 'lasterr', s.error));
      const from = el('td');
      from.dataset.label = 'from the chats';
      for (const id of s.requests || []) {
        const a = el('a', '', id);
        a.href = '/api/requests/' + encodeURIComponent(id);
        a.target = '_blank';
        from.append(a, ' ');
      }
      tr.append(chain, seen, skill, from);
      tbody.appendChild(tr);
    }
    box.hidden = false;
  });
})();
