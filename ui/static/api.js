// api.js: the one fetch wrapper of the console. It adds the API key (kept in sessionStorage)
// to every call and, when a call answers 401, asks for the key in #api-key-dialog and retries.
// Until the first call has answered, later calls wait for it, so a server with --api-key sees
// at most one unauthenticated call per page before the key is entered.

const storeKey = 'llmcloud.apiKey';

/** The serving process: "serve", "router", "up" or "train" (from <meta name="llmcloud-mode">). */
export function mode() {
  const m = document.querySelector('meta[name="llmcloud-mode"]');
  return (m && m.content) || 'serve';
}

function key() {
  try { return sessionStorage.getItem(storeKey) || ''; } catch { return ''; }
}

function setKey(k) {
  try { sessionStorage.setItem(storeKey, k); } catch { /* storage off: the key lives until reload */ }
  memKey = k;
}

let memKey = '';
let probe = null; // the first call's promise, while it runs
let probed = false; // the first call has answered
let asking = null; // the open dialog's promise

function withKey(opts) {
  const headers = new Headers(opts.headers || {});
  const k = key() || memKey;
  if (k) headers.set('Authorization', 'Bearer ' + k);
  return { ...opts, headers };
}

/** askKey opens the API-key dialog; it resolves when the user saves a key, rejects on cancel. */
export function askKey() {
  if (asking) return asking;
  const dlg = document.getElementById('api-key-dialog');
  const form = document.getElementById('api-key-form');
  const input = document.getElementById('api-key');
  asking = new Promise((resolve, reject) => {
    const done = () => {
      form.removeEventListener('submit', onSubmit);
      dlg.removeEventListener('cancel', onCancel);
      asking = null;
    };
    const onSubmit = (ev) => {
      const v = input.value.trim();
      if (!v) { ev.preventDefault(); input.focus(); return; }
      setKey(v);
      input.value = '';
      done();
      resolve(v);
    };
    const onCancel = () => {
      done();
      reject(new Error('an API key is needed (the server runs with --api-key)'));
    };
    form.addEventListener('submit', onSubmit);
    dlg.addEventListener('cancel', onCancel);
    if (!dlg.open) dlg.showModal();
    input.focus();
  });
  return asking;
}

async function once(path, opts) {
  let res = await fetch(path, withKey(opts));
  if (res.status === 401) {
    await askKey();
    res = await fetch(path, withKey(opts));
    if (res.status === 401) {
      setKey('');
      await askKey();
      res = await fetch(path, withKey(opts));
    }
  }
  return res;
}

/**
 * apiFetch is fetch with the API key. opts are fetch's options (signal, method, body...).
 * It resolves to the Response (any status other than a handled 401).
 */
export async function apiFetch(path, opts = {}) {
  if (!probed && !key() && !memKey) {
    if (probe) {
      await probe.catch(() => {});
    } else {
      probe = once(path, opts);
      try { return await probe; } finally { probed = true; probe = null; }
    }
  }
  return once(path, opts);
}

/** HTTPError is a non-2xx answer; status says which. */
export class HTTPError extends Error {
  constructor(path, status, text) {
    super(`${path}: HTTP ${status}${text ? ': ' + text : ''}`);
    this.status = status;
  }
}

/** getJSON GETs path and parses the JSON body; a non-2xx answer throws HTTPError. */
export async function getJSON(path, opts = {}) {
  const res = await apiFetch(path, opts);
  if (!res.ok) {
    let text = '';
    try { text = (await res.text()).slice(0, 300); } catch { /* body gone */ }
    try { const j = JSON.parse(text); if (j && j.error) text = j.error.message || String(j.error); } catch { /* not JSON */ }
    throw new HTTPError(path, res.status, text.trim());
  }
  return res.json();
}
