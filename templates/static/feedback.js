// Feedback on a chat answer: thumbs up or down and an optional comment,
// sent to POST /api/requests/<id>/feedback. An answer takes one feedback;
// the page keeps it with the conversation, so it still shows after a
// reload. Everything is set as text, never as HTML.
'use strict';

// feedbackControls adds the controls to the answer m, whose stored entry
// (entry.result.request_id) says what to rate; save keeps the
// conversation once the feedback is given.
function feedbackControls(m, entry, save) {
  m.querySelector('.feedback')?.remove();
  const id = entry.result && entry.result.request_id;
  if (!id || entry.error) return;
  const box = el('div', 'feedback');
  m.appendChild(box);
  if (entry.feedback) {
    const f = entry.feedback;
    const said = el('span', 'said', ' Thanks for the feedback' + (f.comment ? ': “' + f.comment + '”' : '.'));
    said.prepend(thumbIcon(f.score > 0));
    box.appendChild(said);
    return;
  }
  const thumb = (score, label) => {
    const b = el('button', 'thumb');
    b.appendChild(thumbIcon(score > 0));
    b.type = 'button';
    b.title = label;
    b.setAttribute('aria-label', label);
    b.setAttribute('aria-pressed', 'false');
    b.dataset.score = String(score);
    b.addEventListener('click', () => ask(score));
    return b;
  };
  const up = thumb(1, 'Good answer');
  const down = thumb(-1, 'Wrong answer');
  box.append(up, down);

  // ask opens the comment for a score; Send posts both.
  function ask(score) {
    up.setAttribute('aria-pressed', String(score > 0));
    down.setAttribute('aria-pressed', String(score < 0));
    box.querySelector('form')?.remove();
    box.querySelector('.err')?.remove();
    const form = el('form');
    const input = el('input');
    input.name = 'comment';
    input.maxLength = 2000;
    input.autocomplete = 'off';
    input.placeholder = score < 0 ? 'What was wrong? (optional)' : 'A comment (optional)';
    input.setAttribute('aria-label', 'comment');
    const send = el('button', 'primary', 'Send');
    send.type = 'submit';
    form.append(input, send);
    form.addEventListener('submit', async e => {
      e.preventDefault();
      send.disabled = true;
      const comment = input.value.trim();
      const r = await api('POST', '/api/requests/' + encodeURIComponent(id) + '/feedback', {score, comment});
      if (!r.ok && r.status !== 409) {
        send.disabled = false;
        box.querySelector('.err')?.remove();
        box.appendChild(el('span', 'err', r.body.error || 'The feedback was not sent (' + r.status + ').'));
        return;
      }
      // 409: this answer was rated already (in another tab): keep that.
      entry.feedback = {score, comment};
      save();
      feedbackControls(m, entry, save);
    });
    box.appendChild(form);
    input.focus();
  }
}
