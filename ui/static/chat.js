// chat.js: the playground. It streams /v1/chat/completions (SSE read from fetch's body, one
// `data:` line per event), measures TTFT and tokens/s in the page, takes the token counts from
// the final usage chunk, and stops a reply with an AbortController (the partial text stays).

import { apiFetch, getJSON, mode } from './api.js';
import { el, download } from './dom.js';

const $ = (id) => document.getElementById(id);
const conversation = []; // {role, content, stats, node}
let controller = null; // the streaming reply's AbortController
let loaded = false;

export function mount(_sec, { first }) {
  if (!first) return;
  $('chat-form').addEventListener('submit', (ev) => { ev.preventDefault(); send(); });
  $('chat-input').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      send();
    }
  });
  $('chat-stop').addEventListener('click', stop);
  $('chat-clear').addEventListener('click', clearChat);
  $('chat-export').addEventListener('click', exportChat);
  $('chat-settings').addEventListener('submit', (ev) => ev.preventDefault());
  setStreaming(false);
  loadModels();
}

export function unmount() {
  // A streaming reply keeps streaming in the background; the chat is idle otherwise.
}

async function loadModels() {
  if (loaded) return;
  loaded = true;
  const sel = $('chat-model');
  if (mode() === 'train') {
    note('This console serves a training run: there is no model to chat with. Start `llmcloud serve` to use the playground.');
    $('chat-send').disabled = true;
    sel.append(el('option', { value: '' }, 'no model'));
    return;
  }
  try {
    const list = await getJSON('/v1/models');
    const models = (list.data || []).map((m) => m.id).filter(Boolean);
    for (const id of models) sel.append(el('option', { value: id }, id));
    if (!models.length) sel.append(el('option', { value: '' }, 'no model'));
  } catch (e) {
    sel.append(el('option', { value: '' }, 'no model'));
    note('Could not list the models: ' + e.message);
  }
}

function note(text) {
  const n = $('chat-note');
  n.textContent = text;
  n.hidden = false;
}

function setStreaming(on) {
  document.body.dataset.chat = on ? 'streaming' : 'idle';
  $('chat-stop').disabled = !on;
  $('chat-send').disabled = on || mode() === 'train';
}

function status(text) {
  $('chat-status').textContent = text;
}

function num(id, parse) {
  const v = $(id).value.trim();
  if (v === '') return undefined;
  const x = parse(v);
  return Number.isFinite(x) ? x : undefined;
}

// params reads the sampling fields; empty fields are left to the server's defaults.
function params() {
  const p = {
    temperature: num('param-temperature', parseFloat),
    top_p: num('param-top-p', parseFloat),
    max_tokens: num('param-max-tokens', (s) => parseInt(s, 10)),
    seed: num('param-seed', (s) => parseInt(s, 10)),
  };
  const stop = $('param-stop').value.split(',').map((s) => s.replace(/\\n/g, '\n').replace(/\\t/g, '\t'))
    .filter((s) => s.trim() !== '');
  if (stop.length) p.stop = stop;
  for (const k of Object.keys(p)) if (p[k] === undefined) delete p[k];
  return p;
}

// structured reads the structured-output and tool fields; bad JSON throws an Error naming the
// field, so nothing is sent.
function structured() {
  const out = {};
  const fmt = $('param-response-format').value;
  if (fmt === 'json_object') out.response_format = { type: 'json_object' };
  if (fmt === 'json_schema') {
    let schema;
    try { schema = JSON.parse($('param-json-schema').value); } catch (e) { throw new Error('JSON schema: ' + e.message); }
    out.response_format = { type: 'json_schema', json_schema: { name: 'output', schema, strict: true } };
  }
  const tools = $('chat-tools').value.trim();
  if (tools) {
    try { out.tools = JSON.parse(tools); } catch (e) { throw new Error('Tools: ' + e.message); }
    if (!Array.isArray(out.tools)) throw new Error('Tools: want a JSON array of {"type": "function", "function": {...}}');
  }
  const choice = $('param-tool-choice').value;
  if (choice && out.tools) out.tool_choice = choice;
  return out;
}

function addMessage(role, content) {
  const reasoning = el('div', { class: 'msg-reasoning' });
  const text = el('div', { class: 'msg-text' }, content);
  const tools = el('div', { class: 'msg-tools' });
  const stats = el('div', { class: 'msg-stats' });
  const node = el('article', { class: `msg msg-${role}`, 'aria-label': role === 'user' ? 'You' : 'Assistant' },
    el('div', { class: 'msg-role' }, role === 'user' ? 'You' : 'Assistant'), reasoning, text, tools, stats);
  $('chat-messages').append(node);
  const m = { role, content, stats: null, node, text, statsNode: stats, reasoningNode: reasoning, toolsNode: tools, reasoning: '', toolCalls: [] };
  conversation.push(m);
  scrollDown();
  return m;
}

// scrollDown keeps the newest text in view inside the message list (not the page, which
// scrollIntoView would move too).
function scrollDown() {
  const box = $('chat-messages');
  box.scrollTop = box.scrollHeight;
}

function showStats(m, s) {
  m.stats = s;
  const parts = [];
  if (s.prompt_tokens !== undefined) parts.push(`${s.prompt_tokens} prompt`);
  if (s.completion_tokens !== undefined) parts.push(`${s.completion_tokens} completion tokens`);
  else if (s.chunks) parts.push(`~${s.chunks} tokens`);
  if (s.ttft_ms !== undefined) parts.push(`TTFT ${s.ttft_ms.toFixed(0)} ms`);
  if (s.tokens_per_s !== undefined) parts.push(`${s.tokens_per_s.toFixed(1)} tokens/s`);
  if (s.finish_reason) parts.push(s.finish_reason);
  m.statsNode.textContent = parts.join(' · ');
}

async function send() {
  if (controller) return;
  const input = $('chat-input');
  const content = input.value;
  if (!content.trim() || $('chat-send').disabled) return;
  let extra;
  try {
    extra = structured();
  } catch (e) {
    status(e.message);
    return;
  }
  input.value = '';
  addMessage('user', content);
  const messages = [];
  const sys = $('chat-system').value;
  if (sys.trim()) messages.push({ role: 'system', content: sys });
  for (const m of conversation) if (m.content) messages.push({ role: m.role, content: m.content });
  const body = {
    model: $('chat-model').value || undefined,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    ...params(),
    ...extra,
  };
  const reply = addMessage('assistant', '');
  reply.node.classList.add('msg-pending');
  controller = new AbortController();
  setStreaming(true);
  status('Streaming…');
  const s = { chunks: 0 };
  const t0 = performance.now();
  let tFirst = 0;
  try {
    const res = await apiFetch('/v1/chat/completions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    if (!res.ok) {
      let msg = `HTTP ${res.status}`;
      try { const j = await res.json(); if (j.error) msg += ': ' + (j.error.message || j.error); } catch { /* not JSON */ }
      throw new Error(msg);
    }
    for await (const ev of sseEvents(res.body)) {
      if (ev.error) throw new Error(ev.error.message || JSON.stringify(ev.error));
      for (const ch of ev.choices || []) {
        const d = ch.delta || {};
        const piece = d.content || '';
        const thought = d.reasoning_content || d.reasoning || '';
        if ((piece || thought || d.tool_calls) && !tFirst) {
          tFirst = performance.now();
          s.ttft_ms = tFirst - t0;
          reply.node.classList.remove('msg-pending');
        }
        if (thought) {
          s.chunks++;
          reply.reasoning += thought;
          reply.reasoningNode.textContent = reply.reasoning;
        }
        if (Array.isArray(d.tool_calls)) {
          for (const tc of d.tool_calls) addToolCall(reply, tc);
          reply.toolsNode.textContent = reply.toolCalls
            .map((c) => `${c.function.name}(${c.function.arguments})`).join('\n');
        }
        if (piece) {
          s.chunks++;
          reply.content += piece;
          reply.text.textContent = reply.content;
          scrollDown();
        }
        if (ch.finish_reason) s.finish_reason = ch.finish_reason;
      }
      if (ev.usage) {
        s.prompt_tokens = ev.usage.prompt_tokens;
        s.completion_tokens = ev.usage.completion_tokens;
      }
      showStats(reply, s);
    }
    const tEnd = performance.now();
    const n = s.completion_tokens ?? s.chunks;
    if (tFirst && n > 1 && tEnd > tFirst) s.tokens_per_s = (n - 1) / ((tEnd - tFirst) / 1000);
    showStats(reply, s);
    status('');
  } catch (e) {
    if (e.name === 'AbortError') {
      reply.node.classList.add('msg-stopped');
      const tEnd = performance.now();
      if (tFirst && s.chunks > 1) s.tokens_per_s = (s.chunks - 1) / ((tEnd - tFirst) / 1000);
      s.finish_reason = 'stopped';
      showStats(reply, s);
      status('Stopped.');
    } else {
      reply.node.classList.add('msg-error');
      reply.statsNode.textContent = 'Error: ' + e.message;
      status('');
    }
  } finally {
    reply.node.classList.remove('msg-pending');
    controller = null;
    setStreaming(false);
  }
}

// addToolCall merges one streamed tool_calls piece into the reply's calls (the first piece of a
// call has its id and name, the later ones more of its arguments).
function addToolCall(reply, tc) {
  const i = Number.isInteger(tc.index) ? tc.index : reply.toolCalls.length;
  const c = reply.toolCalls[i] || (reply.toolCalls[i] = { id: '', type: 'function', function: { name: '', arguments: '' } });
  if (tc.id) c.id = tc.id;
  if (tc.function) {
    if (tc.function.name) c.function.name += tc.function.name;
    if (tc.function.arguments) c.function.arguments += tc.function.arguments;
  }
}

// sseEvents yields the JSON of each `data:` line of a server-sent-events body until [DONE].
async function* sseEvents(body) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, '');
        buf = buf.slice(nl + 1);
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') return;
        if (data) yield JSON.parse(data);
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function stop() {
  if (controller) controller.abort();
}

function clearChat() {
  stop();
  conversation.length = 0;
  $('chat-messages').replaceChildren();
  status('');
}

function safeStructured() {
  try { return structured(); } catch { return {}; }
}

function exportChat() {
  const out = {
    exported: new Date().toISOString(),
    model: $('chat-model').value,
    system: $('chat-system').value,
    params: { ...params(), ...safeStructured() },
    messages: conversation.map((m) => ({
      role: m.role,
      content: m.content,
      ...(m.reasoning ? { reasoning_content: m.reasoning } : {}),
      ...(m.toolCalls.length ? { tool_calls: m.toolCalls.filter(Boolean) } : {}),
      ...(m.stats ? { stats: m.stats } : {}),
    })),
  };
  const stamp = out.exported.replace(/[:.]/g, '-');
  download(`chat-${stamp}.json`, JSON.stringify(out, null, 2));
}
