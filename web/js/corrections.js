// Corrections log: corrections.json (checked in next to this page), newest first.
import { fetchJson, el, showError } from './common.js';

async function main() {
  const box = document.getElementById('log');
  let log;
  try { log = await fetchJson('corrections.json'); } catch (e) { showError(box, e); return; }
  const items = [...log.entries].sort((a, b) => b.date.localeCompare(a.date));
  box.replaceChildren(...items.map((e) => el('article', { class: 'panel' },
    el('h2', {}, el('time', { datetime: e.date }, e.date), ` — ${e.title}`),
    el('p', {}, e.what),
    el('p', {}, el('strong', {}, 'Here: '), e.here),
    e.date_note ? el('p', { class: 'hint' }, `Date: ${e.date_note}`) : null,
    el('p', { class: 'hint' }, `Source: ${e.source}`))));
  document.body.dataset.ready = '1';
}

main();
