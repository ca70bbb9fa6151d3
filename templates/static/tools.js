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
