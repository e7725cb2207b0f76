// app.js: the console's shell. It routes #/chat, #/cloud, #/bench and #/train to their views
// (each view module exports mount and unmount; a hidden view polls nothing), picks the default
// view from the serving process's mode, and keeps the light/dark theme.

import { mode } from './api.js';
import * as chat from './chat.js';
import * as cloud from './cloud.js';
import * as bench from './bench.js';
import * as train from './train.js';

const views = { chat, cloud, bench, train };
const defaults = { serve: 'chat', router: 'cloud', up: 'cloud', train: 'train' };
const mounted = new Set();
let current = '';

function route() {
  const m = location.hash.match(/^#\/(\w+)/);
  let name = m && views[m[1]] ? m[1] : '';
  if (!name) {
    name = defaults[mode()] || 'chat';
    history.replaceState(null, '', '#/' + name);
  }
  if (name === current) return;
  if (current) {
    views[current].unmount();
    document.getElementById('view-' + current).hidden = true;
  }
  current = name;
  const sec = document.getElementById('view-' + name);
  sec.hidden = false;
  document.body.dataset.view = name;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === '#/' + name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = sec.querySelector('h1').textContent + ' · llmcloud console';
  views[name].mount(sec, { first: !mounted.has(name) });
  mounted.add(name);
}

// Theme: follow prefers-color-scheme until the user toggles; the choice lasts for this tab.
const themeKey = 'llmcloud.theme';
const dark = matchMedia('(prefers-color-scheme: dark)');

function applyTheme(t) {
  document.documentElement.dataset.theme = t;
  const btn = document.getElementById('theme-toggle');
  const other = t === 'dark' ? 'light' : 'dark';
  btn.textContent = other === 'dark' ? 'Dark' : 'Light';
  btn.setAttribute('aria-label', `Switch to ${other} theme`);
  document.dispatchEvent(new CustomEvent('themechange'));
}

function chosenTheme() {
  try { return sessionStorage.getItem(themeKey); } catch { return null; }
}

applyTheme(chosenTheme() || (dark.matches ? 'dark' : 'light'));
dark.addEventListener('change', () => {
  if (!chosenTheme()) applyTheme(dark.matches ? 'dark' : 'light');
});
document.getElementById('theme-toggle').addEventListener('click', () => {
  const t = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
  try { sessionStorage.setItem(themeKey, t); } catch { /* storage off */ }
  applyTheme(t);
});

document.getElementById('mode-badge').textContent = mode();
window.addEventListener('hashchange', () => {
  route();
  // After a nav link, the keyboard continues in the view just opened.
  document.getElementById('main').focus({ preventScroll: true });
});
route();
