// The Mnemo memory inspector. Plain JavaScript, no build step, no
// dependencies. Every read and write goes through the public /v1 routes
// with `Authorization: Bearer <key>`; the key lives in sessionStorage only.
//
// Safety rule for this file: data (memory texts, user ids, messages, error
// messages) reaches the page only as text nodes or textContent. Nothing here
// parses HTML from strings; app.js is checked for that by a unit test.
'use strict';

const KEY_SLOT = 'mnemo.inspector.key';
const S = {
  key: sessionStorage.getItem(KEY_SLOT) || '',
  me: null,
  user: '',
  users: [],
  usersLoaded: Promise.resolve(null),
  threadIds: new Set(),
  firstRender: false,
  pendingEval: null,
};

// ----- helpers -------------------------------------------------------------

function el(tag, props, ...kids) {
  const n = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') n.textContent = String(v);
      else if (k === 'class') n.className = v;
      else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
      else if (k === 'style') for (const [p, q] of Object.entries(v)) n.style.setProperty(p, q);
      else if (k === 'value' || k === 'checked' || k === 'disabled') n[k] = v;
      else n.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    n.append(kid instanceof Node ? kid : String(kid));
  }
  return n;
}

const $ = (id) => document.getElementById(id);

// Replaces a node's children; like el(), arrays are flattened and empty
// slots (null, undefined, false) skipped.
function fill(node, ...kids) {
  node.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
}

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (S.key) headers.Authorization = 'Bearer ' + S.key;
  const init = { method, headers, credentials: 'omit', cache: 'no-store', redirect: 'error' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (_) {
    data = text;
  }
  if (!res.ok) {
    const err = data && data.error ? data.error : {};
    throw new ApiError(res.status, err.code || '', err.message || res.status + ' ' + res.statusText);
  }
  return data;
}

function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v !== null && v !== undefined) p.set(k, v);
  const s = p.toString();
  return s ? '?' + s : '';
}

function toast(message, bad) {
  const t = $('toast');
  t.textContent = message;
  t.className = 'toast' + (bad ? ' bad' : '');
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 4000);
}

function errorBox(e) {
  return el('p', { class: 'error', role: 'alert', text: e instanceof Error ? e.message : String(e) });
}

function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  const s = (Date.now() - d.getTime()) / 1000;
  const abs = Math.abs(s);
  let rel;
  if (abs < 60) rel = Math.round(abs) + ' s';
  else if (abs < 3600) rel = Math.round(abs / 60) + ' min';
  else if (abs < 86400) rel = Math.round(abs / 3600) + ' h';
  else rel = Math.round(abs / 86400) + ' d';
  return el('time', { datetime: iso, title: d.toISOString(), text: s >= 0 ? rel + ' ago' : 'in ' + rel });
}

const num = (x, d = 3) => (x === null || x === undefined ? '—' : Number(x).toFixed(d));
const short = (id) => String(id).slice(-8);
const badge = (text, kind) => el('span', { class: 'badge ' + (kind || text), text });

function link(view, params, text, extra) {
  return el('a', Object.assign({ href: '#/' + view + qs(params), text }, extra || {}));
}

function section(title, ...kids) {
  return el('section', { class: 'card' }, el('h2', { text: title }), kids);
}

function table(headers, rows, cls) {
  return el('div', { class: 'table-wrap' },
    el('table', { class: cls || '' },
      el('thead', null, el('tr', null, headers.map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', null, rows)));
}

function td(label, ...kids) {
  return el('td', { 'data-label': label }, kids);
}

function bar(label, value, max, shown, factor) {
  const pct = max > 0 && value !== null && value !== undefined ? Math.max(0, Math.min(1, value / max)) * 100 : 0;
  return el('div', { class: 'bar', 'data-factor': factor },
    el('span', { class: 'bar-label', text: label }),
    el('span', { class: 'bar-track' }, el('span', { class: 'bar-fill ' + factor, style: { width: pct.toFixed(1) + '%' } })),
    el('span', { class: 'bar-value', text: shown }));
}

function noteThreads(memories) {
  for (const m of memories) {
    if (m.thread_id) S.threadIds.add(m.thread_id);
    if (m.source && m.source.thread_id) S.threadIds.add(m.source.thread_id);
  }
}

// ----- roles and navigation -------------------------------------------------

const VIEWS = [
  { id: 'memories', title: 'Users & memories', roles: ['admin', 'agent', 'user'] },
  { id: 'review', title: 'Review queue', roles: ['admin', 'agent', 'user'] },
  { id: 'why', title: 'Why this memory', roles: ['admin', 'agent', 'user'] },
  { id: 'history', title: 'History', roles: ['admin', 'agent', 'user'] },
  { id: 'threads', title: 'Threads', roles: ['admin', 'agent', 'user'] },
  { id: 'forget', title: 'Forget this user', roles: ['admin', 'user'] },
  { id: 'evals', title: 'Evaluations', roles: ['admin'] },
  { id: 'ops', title: 'Operations', roles: ['admin'] },
];

function allowed(view) {
  const v = VIEWS.find((x) => x.id === view);
  return v && S.me && v.roles.includes(S.me.role);
}

function route() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  return { view: path || 'memories', params: new URLSearchParams(query || '') };
}

function go(view, params) {
  location.hash = '#/' + view + qs(params || {});
}

function drawNav(active) {
  const nav = $('nav');
  fill(nav, ...VIEWS.filter((v) => allowed(v.id)).map((v) =>
    el('a', { href: '#/' + v.id, class: v.id === active ? 'active' : '', 'data-view': v.id, text: v.title })));
  nav.hidden = false;
}

function setUser(u) {
  S.user = u || '';
  $('user-input').value = S.user;
}

async function loadUsers(cursor) {
  if (S.me.role === 'user') {
    S.users = [{ user_id: S.me.user_id, memories_seen: null, has_key: true }];
    return { users: S.users, next_cursor: null, scanned: 0 };
  }
  const page = await api('GET', '/v1/users' + qs({ cursor }));
  const known = new Map(S.users.map((u) => [u.user_id, u]));
  for (const u of page.users) {
    const k = known.get(u.user_id);
    if (k) { k.memories_seen += u.memories_seen; k.has_key = k.has_key || u.has_key; } else known.set(u.user_id, u);
  }
  S.users = [...known.values()].sort((a, b) => (a.user_id < b.user_id ? -1 : 1));
  const list = $('user-list');
  fill(list, ...S.users.map((u) => el('option', { value: u.user_id })));
  return page;
}

// ----- sign in ----------------------------------------------------------------

async function signIn(key) {
  S.key = key;
  const me = await api('GET', '/v1/whoami');
  S.me = me;
  if (key) sessionStorage.setItem(KEY_SLOT, key);
  $('signin').hidden = true;
  $('who').hidden = false;
  $('who-text').textContent = me.role + ' · tenant ' + me.tenant_id + (me.user_id ? ' · user ' + me.user_id : '') +
    (me.insecure_dev ? ' · insecure dev mode' : '');
  $('who').setAttribute('data-role', me.role);
  if (me.role === 'user') {
    setUser(me.user_id);
    $('user-input').readOnly = true;
    $('user-go').hidden = true;
  } else {
    $('user-input').readOnly = false;
    $('user-go').hidden = false;
  }
  S.users = [];
  // In the background: the first view does not wait for the users scan.
  S.usersLoaded = loadUsers().catch((e) => { toast(e.message, true); return null; });
  render();
}

function signOut() {
  sessionStorage.removeItem(KEY_SLOT);
  S.key = '';
  S.me = null;
  S.user = '';
  S.users = [];
  S.threadIds = new Set();
  $('nav').hidden = true;
  $('who').hidden = true;
  $('userbar').hidden = true;
  fill($('view'));
  $('signin').hidden = false;
  $('key').value = '';
  history.replaceState(null, '', '#/memories');
  $('key').focus();
}

// ----- view: users & memories ----------------------------------------------------

const TIERS = ['', 'long_term', 'working', 'reference'];
const KINDS = ['', 'preference', 'fact', 'instruction', 'event', 'message', 'summary', 'document'];
const STATUSES = ['', 'active', 'pending', 'superseded', 'archived', 'expired', 'deleted'];

function select(name, options, current) {
  return el('select', { name, id: 'f-' + name, 'aria-label': name },
    options.map((o) => el('option', { value: o, text: o || 'any ' + name, selected: o === current })));
}

async function viewMemories(root, params) {
  if (!S.user) return viewUsers(root);
  const filters = { tier: params.get('tier') || '', kind: params.get('kind') || '', status: params.get('status') || '' };
  const cursor = params.get('cursor') || '';
  const limit = params.get('limit') || '50';
  const form = el('form', { class: 'filters', id: 'memory-filters' },
    select('tier', TIERS, filters.tier), select('kind', KINDS, filters.kind), select('status', STATUSES, filters.status),
    el('button', { type: 'submit', text: 'Filter' }));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    go('memories', { user: S.user, tier: f.get('tier'), kind: f.get('kind'), status: f.get('status') });
  });
  const out = el('div', { id: 'memories' }, el('p', { class: 'muted', text: 'Loading…' }));
  root.append(section('Memories of ' + S.user, form, out));
  const query = Object.assign({}, filters, { limit, cursor });
  if (filters.tier !== 'reference') query.user_id = S.user;
  const t0 = performance.now();
  let page;
  try {
    page = await api('GET', '/v1/memories' + qs(query));
  } catch (e) {
    fill(out, errorBox(e));
    return;
  }
  noteThreads(page.memories);
  const rows = page.memories.map((m) => el('tr', { 'data-id': m.id },
    td('Text', el('span', { class: 'memtext', text: m.text })),
    td('Tier', m.tier), td('Kind', m.kind), td('Status', badge(m.status)),
    td('Importance', el('span', { class: 'mini' }, el('span', { style: { width: (m.importance * 100).toFixed(0) + '%' } })), ' ', num(m.importance, 2)),
    td('Confidence', num(m.confidence, 2)),
    td('Accesses', String(m.access_count), m.last_accessed_at ? el('br') : null, m.last_accessed_at ? when(m.last_accessed_at) : null),
    td('Expires', m.expires_at ? when(m.expires_at) : 'never'),
    td('Created', when(m.created_at)),
    td('', link('history', { id: m.id }, 'History', { class: 'act' }), ' ',
      link('why', { user: S.user, q: m.text.slice(0, 200) }, 'Why', { class: 'act' }))));
  const pager = el('div', { class: 'pager' },
    cursor ? el('button', { type: 'button', text: '← First page', onclick: () => go('memories', Object.assign({ user: S.user }, filters)) }) : null,
    page.next_cursor ? el('button', { type: 'button', id: 'next-page', text: 'Next page →',
      onclick: () => go('memories', Object.assign({ user: S.user, cursor: page.next_cursor }, filters)) }) : null,
    el('span', { class: 'muted', text: page.memories.length + ' shown · ' + (performance.now() - t0).toFixed(0) + ' ms' }));
  fill(out, 
    page.memories.length ? table(['Text', 'Tier', 'Kind', 'Status', 'Importance', 'Confidence', 'Accesses', 'Expires', 'Created', ''], rows, 'memories') :
      el('p', { class: 'muted', text: 'No memories match.' }),
    pager);
  if (!S.firstRender) {
    S.firstRender = true;
    performance.mark('mnemo-first-render');
  }
}

async function viewUsers(root) {
  const out = el('div', { id: 'users' });
  root.append(section('Users', el('p', { class: 'muted', text: S.me.role === 'user' ? 'This key acts for one user.' :
    'Users of tenant ' + S.me.tenant_id + ', found from their memories and user keys. Type any user id above to open it.' }), out));
  const draw = (page) => {
    const rows = S.users.map((u) => el('tr', { 'data-user': u.user_id },
      td('User', link('memories', { user: u.user_id }, u.user_id)),
      td('Memories seen', u.memories_seen === null ? '—' : String(u.memories_seen)),
      td('Own key', u.has_key ? 'yes' : 'no')));
    fill(out, 
      rows.length ? table(['User', 'Memories seen', 'Own key'], rows, 'users') : el('p', { class: 'muted', text: 'No users yet.' }),
      page && page.next_cursor ? el('button', { type: 'button', text: 'Scan further',
        onclick: async () => { try { draw(await loadUsers(page.next_cursor)); } catch (e) { out.append(errorBox(e)); } } }) : null);
  };
  if (S.me.role !== 'user') {
    S.users = [];
    S.usersLoaded = loadUsers().catch((e) => { out.append(errorBox(e)); return null; });
  }
  draw(await S.usersLoaded);
  if (!S.firstRender) {
    S.firstRender = true;
    performance.mark('mnemo-first-render');
  }
}

// ----- view: review queue ----------------------------------------------------------

const threadCache = new Map();
async function sourceMessage(m) {
  const tid = m.source && m.source.thread_id;
  if (!tid) return null;
  if (!threadCache.has(tid)) threadCache.set(tid, api('GET', '/v1/threads/' + encodeURIComponent(tid)).catch(() => null));
  const t = await threadCache.get(tid);
  const seq = Number(m.source.message_id);
  const msg = t && t.messages.find((x) => x.seq === seq);
  return { tid, seq, msg };
}

async function viewReview(root, params) {
  const all = params.get('all') === '1' && S.me.role !== 'user';
  const out = el('div', { id: 'review' }, el('p', { class: 'muted', text: 'Loading…' }));
  const scope = S.me.role === 'user' || !all ? (S.user ? 'user ' + S.user : null) : 'every user of tenant ' + S.me.tenant_id;
  const toggle = S.me.role !== 'user' ? el('label', { class: 'check' },
    el('input', { type: 'checkbox', id: 'review-all', checked: all, onchange: (ev) => go('review', { user: S.user, all: ev.target.checked ? '1' : '' }) }),
    ' all users') : null;
  root.append(section('Review queue', el('p', { class: 'muted' }, 'Pending candidates, oldest first', scope ? ' — ' + scope : ' — choose a user or tick “all users”', '. '), toggle, out));
  if (!scope) { fill(out); return; }
  let page;
  try {
    page = await api('GET', '/v1/memories' + qs({ status: 'pending', user_id: all ? '' : S.user, limit: 200 }));
  } catch (e) {
    fill(out, errorBox(e));
    return;
  }
  if (!page.memories.length) {
    fill(out, el('p', { class: 'muted', id: 'review-empty', text: 'Nothing is waiting for review.' }));
    return;
  }
  const boxes = [];
  const act = async (ids, what) => {
    let ok = 0;
    const errors = [];
    for (const id of ids) {
      try { await api('POST', '/v1/memories/' + id + '/' + what); ok++; } catch (e) { errors.push(e.message); }
    }
    toast((what === 'confirm' ? 'Confirmed ' : 'Rejected ') + ok + (errors.length ? ' · ' + errors.length + ' failed: ' + errors[0] : ''), errors.length > 0);
    render();
  };
  const selected = () => boxes.filter((b) => b.checked).map((b) => b.value);
  const rows = page.memories.map((m) => {
    const box = el('input', { type: 'checkbox', value: m.id, 'aria-label': 'select' });
    boxes.push(box);
    const text = el('span', { class: 'memtext', text: m.text });
    const cell = el('div', null, text);
    const src = el('div', { class: 'source muted' });
    sourceMessage(m).then((s) => {
      if (!s) { src.textContent = 'added directly (no thread)'; return; }
      fill(src, el('span', { text: 'from ' }), link('threads', { id: s.tid }, 'thread …' + short(s.tid)),
        el('span', { text: ' #' + s.seq + ': ' }),
        s.msg ? el('q', { class: 'msg', text: s.msg.content }) : el('span', { text: '(message compacted or not visible)' }));
    });
    const edit = () => {
      const area = el('textarea', { rows: 3, class: 'edit', value: m.text });
      const save = el('button', { type: 'button', class: 'primary', text: 'Save',
        onclick: async () => {
          try {
            await api('PATCH', '/v1/memories/' + m.id, { text: area.value, refresh: true });
            toast('Saved');
            render();
          } catch (e) { cell.append(errorBox(e)); }
        } });
      fill(cell, area, save, el('button', { type: 'button', text: 'Cancel', onclick: () => fill(cell, text) }));
      area.focus();
    };
    return el('tr', { 'data-id': m.id },
      td('', box),
      td('Candidate', cell, src),
      td('User', m.user_id || '—'), td('Kind', m.kind), td('Confidence', num(m.confidence, 2)), td('Created', when(m.created_at)),
      td('', el('button', { type: 'button', class: 'confirm', text: 'Confirm', onclick: () => act([m.id], 'confirm') }),
        el('button', { type: 'button', class: 'reject', text: 'Reject', onclick: () => act([m.id], 'reject') }),
        el('button', { type: 'button', class: 'edit-btn', text: 'Edit', onclick: edit })));
  });
  const allBox = el('input', { type: 'checkbox', 'aria-label': 'select all', onchange: (ev) => boxes.forEach((b) => { b.checked = ev.target.checked; }) });
  fill(out, 
    el('div', { class: 'bulk' }, el('label', { class: 'check' }, allBox, ' select all'),
      el('button', { type: 'button', id: 'bulk-confirm', class: 'primary', text: 'Confirm selected', onclick: () => act(selected(), 'confirm') }),
      el('button', { type: 'button', id: 'bulk-reject', text: 'Reject selected', onclick: () => act(selected(), 'reject') }),
      el('span', { class: 'muted', text: page.memories.length + (page.next_cursor ? '+' : '') + ' pending' })),
    table(['', 'Candidate', 'User', 'Kind', 'Confidence', 'Created', ''], rows, 'review'));
}

// ----- view: why this memory ------------------------------------------------------

async function viewWhy(root, params) {
  const q = params.get('q') || '';
  const windowTokens = params.get('window') || '';
  const pending = params.get('pending') === '1';
  const form = el('form', { class: 'search', id: 'why-form' },
    el('input', { name: 'q', id: 'why-q', type: 'search', value: q, placeholder: 'What would the agent ask? (any language)', required: true }),
    el('input', { name: 'window', id: 'why-window', type: 'number', min: 100, step: 1, value: windowTokens, placeholder: 'window tokens (optional)' }),
    el('label', { class: 'check' }, el('input', { type: 'checkbox', name: 'pending', checked: pending }), ' include pending'),
    el('button', { type: 'submit', class: 'primary', text: 'Search' }));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    go('why', { user: S.user, q: f.get('q'), window: f.get('window'), pending: f.get('pending') ? '1' : '' });
  });
  const out = el('div', { id: 'why' });
  root.append(section('Why this memory', el('p', { class: 'muted', text: 'Runs the real search for ' + (S.user || '(choose a user)') +
    ' with explain: every factor of each hit’s score. With a window size, also builds the /v1/context block and marks what its budget cut.' }), form, out));
  if (!q || !S.user) return;
  fill(out, el('p', { class: 'muted', text: 'Searching…' }));
  let res;
  let ctx = null;
  try {
    const calls = [api('POST', '/v1/search', { user_id: S.user, query: q, explain: true, include_pending: pending })];
    if (windowTokens) calls.push(api('POST', '/v1/context', { user_id: S.user, query: q, model_context_tokens: Number(windowTokens) }));
    [res, ctx] = await Promise.all(calls);
  } catch (e) {
    fill(out, errorBox(e));
    return;
  }
  const inCtx = new Set(ctx ? ctx.memory_ids : []);
  // Only admin keys get the raw BM25 score (its idf spans tenants); other
  // keys see the lexical leg's normalised contribution.
  const bm25Of = (b) => (b.bm25_score === null || b.bm25_score === undefined ? b.bm25_contribution : b.bm25_score);
  const maxBm25 = Math.max(0, ...res.hits.map((h) => (h.breakdown && bm25Of(h.breakdown)) || 0));
  const maxFinal = Math.max(0, ...res.hits.map((h) => h.score));
  const head = el('p', { class: 'muted', id: 'why-summary' },
    res.hits.length + ' hits in ' + res.took_ms.toFixed(1) + ' ms (embedding ' + res.embed_ms.toFixed(1) + ' ms)',
    ctx ? ' · context block: ' + ctx.tokens + ' of ' + ctx.budget_tokens + ' budget tokens, ' + ctx.memory_ids.length + ' memories kept, ' +
      res.hits.filter((h) => !inCtx.has(h.memory.id)).length + ' cut' : '');
  const cards = res.hits.map((h, i) => {
    const b = h.breakdown || {};
    const fate = ctx ? (inCtx.has(h.memory.id) ? badge('in prompt', 'kept') : badge('cut by budget', 'cut')) : null;
    return el('article', { class: 'hit', 'data-id': h.memory.id },
      el('header', null, el('span', { class: 'rank', text: '#' + (i + 1) }), el('span', { class: 'memtext', text: h.memory.text }), fate),
      el('div', { class: 'meta muted' }, h.memory.tier + ' · ' + h.memory.kind + ' · ' + h.memory.status + ' · ',
        link('history', { id: h.memory.id }, 'history')),
      el('div', { class: 'bars' },
        bar('BM25', bm25Of(b), maxBm25, b.bm25_rank === null || b.bm25_rank === undefined ? 'no match'
          : (b.bm25_score === null || b.bm25_score === undefined ? 'contribution ' + num(b.bm25_contribution) : num(b.bm25_score, 2)) + ' (rank ' + b.bm25_rank + ')', 'bm25'),
        bar('Vector', b.vector_similarity, 1, b.vector_similarity === null || b.vector_similarity === undefined ? 'below threshold' : num(b.vector_similarity) + ' (rank ' + b.vector_rank + ')', 'vector'),
        bar('Fusion', b.fused_score, 1, num(b.fused_score), 'fused'),
        bar('Decay ×', b.decay_factor, 1, num(b.decay_factor), 'decay'),
        bar('Importance ×', b.importance_factor, Math.max(1, b.importance_factor || 0), num(b.importance_factor), 'importance'),
        bar('Final', h.score, maxFinal, num(h.score, 4), 'final')));
  });
  fill(out, head, cards.length ? cards : el('p', { class: 'muted', text: 'No memory matches.' }));
  if (ctx) {
    out.append(el('details', { class: 'ctx' }, el('summary', { text: 'The context block as the model would see it' }),
      el('pre', { text: ctx.text })));
  }
}

// ----- view: history -----------------------------------------------------------------

async function viewHistory(root, params) {
  const id = params.get('id') || '';
  const form = el('form', { class: 'search' },
    el('input', { name: 'id', id: 'history-id', value: id, placeholder: 'memory id', spellcheck: 'false', required: true }),
    el('button', { type: 'submit', class: 'primary', text: 'Show' }));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); go('history', { id: new FormData(form).get('id').trim() }); });
  const out = el('div', { id: 'history' });
  root.append(section('History', el('p', { class: 'muted', text: 'A memory’s supersede chain (what it replaced, what replaced it) and every audited change.' }), form, out));
  if (!id) return;
  let chain;
  let events;
  try {
    [chain, events] = await Promise.all([api('GET', '/v1/memories/' + encodeURIComponent(id) + '/lineage'),
      api('GET', '/v1/memories/' + encodeURIComponent(id) + '/history')]);
  } catch (e) {
    fill(out, errorBox(e));
    return;
  }
  const links = [];
  chain.memories.forEach((m, i) => {
    if (i > 0) links.push(el('span', { class: 'arrow', 'aria-hidden': 'true', text: '→' }));
    links.push(el('a', { href: '#/history' + qs({ id: m.id }), class: 'version' + (m.id === id ? ' current' : ''), 'data-id': m.id },
      el('span', { class: 'memtext', text: m.text }),
      el('span', { class: 'muted' }, badge(m.status), ' ', when(m.created_at), ' · …' + short(m.id))));
  });
  const timeline = events.events.map((e) => el('li', { 'data-action': e.action },
    el('div', null, badge(e.action, 'action'), ' ', when(e.at), el('span', { class: 'muted', text: ' by ' + e.actor })),
    e.before_text !== null && e.before_text !== undefined ? el('div', { class: 'diff' }, el('del', { text: e.before_text })) : null,
    e.after_text !== null && e.after_text !== undefined ? el('div', { class: 'diff' }, el('ins', { text: e.after_text })) : null,
    e.details && Object.keys(e.details).length ? el('code', { class: 'details', text: JSON.stringify(e.details) }) : null));
  fill(out, 
    el('h3', { text: 'Supersede chain (' + chain.memories.length + ' version' + (chain.memories.length === 1 ? '' : 's') + ')' }),
    el('div', { class: 'chain', id: 'chain' }, links),
    el('h3', { text: 'Audit timeline' }),
    el('ol', { class: 'timeline', id: 'timeline' }, timeline));
}

// ----- view: threads ---------------------------------------------------------------------

const PARTS = ['system', 'goal', 'summary', 'history', 'memories', 'message'];

async function viewThreads(root, params) {
  const id = params.get('id') || '';
  const form = el('form', { class: 'search' },
    el('input', { name: 'id', id: 'thread-id', value: id, list: 'thread-list', placeholder: 'thread id', spellcheck: 'false', required: true }),
    el('datalist', { id: 'thread-list' }, [...S.threadIds].map((t) => el('option', { value: t }))),
    el('button', { type: 'submit', class: 'primary', text: 'Open' }));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); go('threads', { id: new FormData(form).get('id').trim() }); });
  const known = [...S.threadIds].slice(0, 20).map((t) => link('threads', { id: t }, '…' + short(t), { class: 'chip' }));
  const out = el('div', { id: 'thread' });
  root.append(section('Threads', el('p', { class: 'muted', text: 'A thread’s pinned goal, summary with open to-dos, recent turns, and the token breakdown of an assembled prompt.' }),
    form, known.length ? el('div', { class: 'chips' }, el('span', { class: 'muted', text: 'Seen in memories: ' }), known) : null, out));
  if (!id) return;
  let t;
  try {
    t = await api('GET', '/v1/threads/' + encodeURIComponent(id));
  } catch (e) {
    fill(out, errorBox(e));
    return;
  }
  const lastUser = [...t.messages].reverse().find((m) => m.role === 'user');
  const msgs = t.messages.slice(-30).map((m) => el('li', { class: 'turn ' + m.role },
    el('div', { class: 'muted' }, m.role, ' · ', when(m.created_at), m.role === 'user' ? ' · extraction ' + m.extraction_state : ''),
    el('div', { class: 'content', text: m.tool ? '[tool ' + m.tool.name + ' · ' + m.tool.status + '] ' + m.tool.summary : m.content })));
  const pf = el('form', { class: 'search', id: 'prompt-form' },
    el('input', { name: 'message', value: lastUser ? lastUser.content : '', placeholder: 'next user message', required: true }),
    el('input', { name: 'window', type: 'number', min: 256, value: '8192', 'aria-label': 'window tokens' }),
    el('button', { type: 'submit', text: 'Assemble prompt' }));
  const breakdown = el('div', { id: 'tokens' });
  pf.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = new FormData(pf);
    try {
      const p = await api('POST', '/v1/threads/' + encodeURIComponent(id) + '/prompt', { message: f.get('message'), model_context_tokens: Number(f.get('window')) });
      drawTokens(breakdown, p.tokens, Number(f.get('window')));
    } catch (e) { fill(breakdown, errorBox(e)); }
  });
  fill(out, 
    el('dl', { class: 'kv' },
      el('dt', { text: 'User' }), el('dd', { text: t.user_id }),
      el('dt', { text: 'Goal (pinned)' }), el('dd', { class: 'goal', text: t.goal || '—' }),
      el('dt', { text: 'Summary' }), el('dd', { class: 'summary', text: t.summary.text || '—' }),
      el('dt', { text: 'Open to-dos' }), el('dd', null, t.summary.open_todos.length ? el('ul', { class: 'todos' }, t.summary.open_todos.map((x) => el('li', { text: x }))) : '—'),
      el('dt', { text: 'Commitments' }), el('dd', null, t.summary.commitments.length ? el('ul', null, t.summary.commitments.map((x) => el('li', { text: x }))) : '—'),
      el('dt', { text: 'Messages' }), el('dd', { text: t.messages.length + ' in working memory, ' + t.compacted_messages + ' compacted into the summary' })),
    el('h3', { text: 'Recent turns' }), el('ol', { class: 'turns' }, msgs),
    el('h3', { text: 'Token breakdown of the prompt' }),
    el('p', { class: 'muted', text: 'Assembles the prompt for the next message exactly as a turn would (POST /v1/threads/{id}/prompt); nothing is stored.' }),
    pf, breakdown);
  if (lastUser) pf.requestSubmit();
}

function drawTokens(target, tokens, windowTokens) {
  const total = Math.max(tokens.total, 1);
  const scale = Math.max(windowTokens || 0, total);
  fill(target, 
    el('div', { class: 'stack', role: 'img', 'aria-label': 'token breakdown' },
      PARTS.map((p) => el('span', { class: 'seg ' + p, title: p + ': ' + tokens[p], style: { width: (100 * tokens[p] / scale).toFixed(2) + '%' } }))),
    el('ul', { class: 'legend' }, PARTS.map((p) => el('li', { 'data-part': p }, el('span', { class: 'swatch ' + p }), p + ' ' + tokens[p]))),
    el('p', { class: 'muted', text: 'total ' + tokens.total + ' of a ' + windowTokens + '-token window; memory budget ' + tokens.budget_memories + ' tokens' }));
}

// ----- view: forget this user ------------------------------------------------------------

const VERIFY_FIELDS = ['memories', 'audit_events', 'threads', 'messages', 'lexical_docs', 'vectors', 'pending_erasure', 'live_nodes'];

async function viewForget(root) {
  const u = S.user;
  const out = el('div', { id: 'forget' });
  root.append(section('Forget this user', el('p', { class: 'muted', text: 'Erases every memory, audit event, thread, message, index entry and cached embedding of the user, from every store. It cannot be undone.' }), out));
  if (!u) { out.append(el('p', { class: 'muted', text: 'Choose a user first.' })); return; }
  const confirmInput = el('input', { id: 'forget-confirm', placeholder: 'type ' + u, spellcheck: 'false', autocomplete: 'off' });
  const erase = el('button', { type: 'button', id: 'forget-go', class: 'danger', text: 'Erase ' + u, disabled: true });
  confirmInput.addEventListener('input', () => { erase.disabled = confirmInput.value !== u; });
  const receipt = el('div', { id: 'receipt' });
  const verification = el('div', { id: 'verification' });
  const verify = async () => {
    fill(verification, el('p', { class: 'muted', text: 'Verifying…' }));
    try {
      const v = await api('GET', '/v1/users/' + encodeURIComponent(u) + '/erasure');
      fill(verification, 
        el('h3', { text: 'Live verification, every store' }),
        el('p', { class: v.erased ? 'ok' : 'error', id: 'erased', 'data-erased': String(v.erased),
          text: v.erased ? 'Verified: nothing of ' + u + ' is left.' : 'Not erased: data of ' + u + ' remains (counts below).' }),
        table(['Store', 'Still holds'], VERIFY_FIELDS.map((k) => el('tr', { 'data-field': k }, td('Store', k), td('Still holds', String(v[k]))))),
        v.nodes_behind && v.nodes_behind.length ? el('p', { class: 'error', text: 'Nodes behind: ' + v.nodes_behind.join(', ') }) : null,
        v.last_erasure_at ? el('p', { class: 'muted' }, 'Last erasure completed ', when(v.last_erasure_at)) : null,
        el('button', { type: 'button', text: 'Verify again', onclick: verify }));
    } catch (e) { fill(verification, errorBox(e)); }
  };
  erase.addEventListener('click', async () => {
    erase.disabled = true;
    fill(receipt, el('p', { class: 'muted', text: 'Erasing…' }));
    try {
      const r = await api('DELETE', '/v1/users/' + encodeURIComponent(u));
      fill(receipt, el('h3', { text: 'Receipt' }),
        el('p', null, 'Completed ', when(r.completed_at)),
        table(['Erased', 'Count'], Object.entries(r.erased).map(([k, n]) => el('tr', { 'data-field': k }, td('Erased', k), td('Count', String(n))))));
      await verify();
    } catch (e) { fill(receipt, errorBox(e)); }
  });
  out.append(el('div', { class: 'danger-zone' }, el('label', { for: 'forget-confirm', text: 'To confirm, type the user id: ' }), confirmInput, erase,
    el('button', { type: 'button', id: 'forget-check', text: 'Check what is stored', onclick: verify })), receipt, verification);
}

// ----- view: evaluations -------------------------------------------------------------------

const EVAL_METRICS = ['ndcg@10', 'mrr@10', 'recall_any@10'];

async function viewEvals(root) {
  const out = el('div', { id: 'evals' }, el('p', { class: 'muted', text: 'Loading…' }));
  const status = el('div', { id: 'eval-status' });
  root.append(section('Evaluations', el('p', { class: 'muted', text: 'Past reports of POST /v1/evals on this server, newest first; start one on a named set.' }), status, out));
  let data;
  try { data = await api('GET', '/v1/evals'); } catch (e) { fill(out, errorBox(e)); return; }
  const set = el('select', { id: 'eval-set', 'aria-label': 'set' }, data.sets.map((s) => el('option', { value: s, text: s })));
  const start = el('button', { type: 'button', class: 'primary', id: 'eval-start', text: 'Start evaluation', disabled: !data.sets.length,
    onclick: async () => {
      try {
        const job = await api('POST', '/v1/evals', { sets: [set.value] });
        S.pendingEval = job.id;
        pollEval(status);
      } catch (e) { fill(status, errorBox(e)); }
    } });
  const reports = data.reports.map((r) => {
    const bySet = new Map();
    for (const run of r.runs) { if (!bySet.has(run.set)) bySet.set(run.set, []); bySet.get(run.set).push(run); }
    return el('article', { class: 'report', 'data-id': r.id },
      el('h3', null, 'Report …' + short(r.id) + ' ', r.finished_at ? when(r.finished_at) : null),
      [...bySet.entries()].map(([name, runs]) => el('div', { class: 'report-set' },
        el('h4', { text: name + ' (' + runs[0].queries + ' queries)' }),
        EVAL_METRICS.map((metric) => el('div', { class: 'metric' }, el('div', { class: 'muted', text: metric }),
          runs.map((run) => bar(run.preset, run.metrics[metric], 1, num(run.metrics[metric]), 'final')))))),
      (r.comparisons || []).map((c) => {
        const d = c.metrics && c.metrics['ndcg@10'];
        return d ? el('p', { class: 'muted', text: c.set + ': ' + c.b + ' − ' + c.a + ' nDCG@10 ' + (d.delta >= 0 ? '+' : '') + num(d.delta) +
          ' [' + num(d.ci_low) + ', ' + num(d.ci_high) + ']' + (d.significant ? ' significant' : '') }) : null;
      }));
  });
  fill(out, el('div', { class: 'filters' }, set, start), reports.length ? reports : el('p', { class: 'muted', text: 'No reports yet.' }));
  if (S.pendingEval) pollEval(status);
}

async function pollEval(status) {
  const id = S.pendingEval;
  if (!id) return;
  try {
    const job = await api('GET', '/v1/evals/' + id);
    fill(status, el('p', { class: job.status === 'failed' ? 'error' : 'muted', 'data-status': job.status,
      text: 'Evaluation …' + short(id) + ': ' + job.status + (job.error ? ' — ' + job.error : '') }));
    if (job.status === 'running') {
      setTimeout(() => { if (route().view === 'evals' && document.body.contains(status)) pollEval(status); }, 2000);
    } else {
      S.pendingEval = null;
      if (job.status === 'succeeded') render();
    }
  } catch (e) { fill(status, errorBox(e)); }
}

// ----- view: operations ----------------------------------------------------------------------

async function viewOps(root) {
  const keys = el('div', { id: 'keys' });
  const jobs = el('div', { id: 'jobs' });
  const index = el('div', { id: 'index' });
  const pol = el('div', { id: 'policy' });
  root.append(section('API keys', keys), section('Lifecycle jobs', jobs), section('Index health', index), section('Policy in force', pol));
  drawKeys(keys);
  drawJobs(jobs);
  api('GET', '/v1/index').then((h) => {
    const rows = [['embedding model', h.embedding_model], ['memories the indexes should hold', h.store_indexed],
      ['lexical documents', h.lexical_docs + ' (lag ' + h.lexical_lag + ')'], ['vector points', h.vector_points + ' (lag ' + h.vector_lag + ')'],
      ['embedding queue', h.embedding_queue_depth], ['change feed head', h.change_feed_head]];
    const tiers = Object.entries(h.memories).map(([tier, by]) => [tier, Object.entries(by).map(([s, n]) => s + ' ' + n).join(' · ')]);
    fill(index, el('dl', { class: 'kv' }, rows.concat(tiers).map(([k, v]) => [el('dt', { text: k }), el('dd', { text: String(v) })])),
      el('p', { class: 'muted', text: 'Process-wide figures (every tenant), as on /metrics.' }));
  }).catch((e) => fill(index, errorBox(e)));
  api('GET', '/v1/policy').then((p) => fill(pol, el('pre', { class: 'policy', text: p.toml }))).catch((e) => fill(pol, errorBox(e)));
}

async function drawKeys(box) {
  let data;
  try { data = await api('GET', '/v1/keys'); } catch (e) { fill(box, errorBox(e)); return; }
  const role = el('select', { name: 'role', 'aria-label': 'role' }, ['user', 'agent', 'admin'].map((r) => el('option', { value: r, text: r })));
  const user = el('input', { name: 'user_id', placeholder: 'user id (user keys)', spellcheck: 'false' });
  const secret = el('div', { id: 'new-secret' });
  const form = el('form', { class: 'filters', id: 'key-form' }, role, user, el('button', { type: 'submit', class: 'primary', text: 'Create key' }));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const k = await api('POST', '/v1/keys', { role: role.value, user_id: user.value.trim() || null });
      const code = el('code', { class: 'secret', text: k.secret });
      fill(secret, el('div', { class: 'secret-box' },
        el('strong', { text: 'New ' + k.key.role + ' key ' + k.key.id + ' — copy the secret now; it is shown only this once:' }), code,
        el('button', { type: 'button', text: 'Copy', onclick: () => navigator.clipboard && navigator.clipboard.writeText(k.secret).then(() => toast('Copied')) }),
        el('button', { type: 'button', text: 'Done', onclick: () => { fill(secret); drawKeys(box); } })));
    } catch (e) { fill(secret, errorBox(e)); }
  });
  const rows = data.keys.map((k) => el('tr', { 'data-key': k.id, class: k.revoked_at ? 'revoked' : '' },
    td('Key', k.id), td('Role', k.role), td('User', k.user_id || '—'), td('Created', when(k.created_at)),
    td('State', k.revoked_at ? el('span', null, 'revoked ', when(k.revoked_at)) : 'active'),
    td('', !k.revoked_at && k.id !== S.me.key_id ? el('button', { type: 'button', class: 'reject', text: 'Revoke',
      onclick: async () => {
        if (!window.confirm('Revoke key ' + k.id + '? It stops working at once.')) return;
        try { await api('DELETE', '/v1/keys/' + encodeURIComponent(k.id)); toast('Revoked ' + k.id); drawKeys(box); } catch (e) { toast(e.message, true); }
      } }) : (k.id === S.me.key_id ? el('span', { class: 'muted', text: 'this key' }) : null))));
  fill(box, form, secret, table(['Key', 'Role', 'User', 'Created', 'State', ''], rows, 'keys'));
}

async function drawJobs(box) {
  let data;
  try { data = await api('GET', '/v1/jobs'); } catch (e) { fill(box, errorBox(e)); return; }
  const preview = el('div', { id: 'dry-run' });
  const rows = data.jobs.map((j) => {
    const s = j.last_stats || {};
    const counts = s.counts ? Object.entries(s.counts).map(([k, n]) => k + ' ' + n).join(' · ') : '';
    return el('tr', { 'data-job': j.job },
      td('Job', j.job), td('Every', j.interval_secs >= 86400 ? (j.interval_secs / 86400) + ' d' : j.interval_secs + ' s'),
      td('State', j.running ? 'running' : 'idle'),
      td('Last run', j.last_completed_at ? when(j.last_completed_at) : j.first_due_at ? 'never (first due ' + when(j.first_due_at) + ')' : 'never'),
      td('Last result', s.scanned !== undefined ? 'scanned ' + s.scanned + (counts ? ' · ' + counts : '') + ' · ' + s.elapsed_ms + ' ms' : '—'),
      td('', el('button', { type: 'button', class: 'dry', text: 'Dry run', onclick: async () => {
        fill(preview, el('p', { class: 'muted', text: 'Running ' + j.job + ' dry…' }));
        try {
          const r = await api('POST', '/v1/jobs/' + j.job + '/dry-run');
          fill(preview, el('h3', { text: 'Dry run of ' + r.job + ': nothing was written' }),
            el('p', { class: 'muted', text: 'scanned ' + r.scanned + ' · ' + (Object.entries(r.counts).map(([k, n]) => 'would ' + k + ' ' + n).join(' · ') || 'nothing to do') + ' · ' + r.elapsed_ms + ' ms (every tenant)' }),
            r.changes.length ? table(['Memory', 'Action', 'Detail'], r.changes.slice(0, 100).map((c) => el('tr', null,
              td('Memory', link('history', { id: c.id }, '…' + short(c.id))), td('Action', c.action), td('Detail', c.detail)))) : null);
        } catch (e) { fill(preview, errorBox(e)); }
      } })));
  });
  fill(box, table(['Job', 'Every', 'State', 'Last run', 'Last result', ''], rows, 'jobs'), preview);
}

// ----- rendering --------------------------------------------------------------------------------

const RENDER = { memories: viewMemories, review: viewReview, why: viewWhy, history: viewHistory, threads: viewThreads, forget: viewForget, evals: viewEvals, ops: viewOps };
const NEEDS_USER = new Set(['memories', 'review', 'why', 'forget']);

let renderSeq = 0;
async function render() {
  if (!S.me) return;
  const { view, params } = route();
  const target = allowed(view) ? view : 'memories';
  if (params.has('user') && S.me.role !== 'user') setUser(params.get('user'));
  drawNav(target);
  $('userbar').hidden = !NEEDS_USER.has(target);
  const root = $('view');
  const seq = ++renderSeq;
  const fresh = el('div', { 'data-view': target });
  fill(root, fresh);
  document.title = VIEWS.find((v) => v.id === target).title + ' · Mnemo inspector';
  try {
    await RENDER[target](fresh, params);
  } catch (e) {
    if (seq === renderSeq) fresh.append(errorBox(e));
    if (e.status === 401) signOut();
  }
}

function start() {
  $('signin-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('signin-error').textContent = '';
    try {
      await signIn($('key').value.trim());
    } catch (e) {
      S.key = '';
      $('signin-error').textContent = e.status === 401 ? 'That key is not valid (unknown or revoked).' : e.message;
    }
  });
  $('sign-out').addEventListener('click', signOut);
  const openUser = () => {
    const u = $('user-input').value.trim();
    const { view } = route();
    go(NEEDS_USER.has(view) ? view : 'memories', { user: u });
    if (!u) { setUser(''); render(); }
  };
  $('user-go').addEventListener('click', openUser);
  $('user-input').addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { ev.preventDefault(); openUser(); } });
  window.addEventListener('hashchange', render);
  signIn(S.key).catch(() => {
    S.key = '';
    sessionStorage.removeItem(KEY_SLOT);
    $('signin').hidden = false;
    $('key').focus();
  });
}

start();
