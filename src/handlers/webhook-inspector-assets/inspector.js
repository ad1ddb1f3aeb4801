// Webhook inspector page. Served from /inspect-assets/ under `script-src 'self'`.
// Every captured value is inserted with textContent (never innerHTML), so a captured body such as
// <script>…</script> is shown as text and can never run.
'use strict';

(function () {
  const routeId = document.body.dataset.routeId;
  if (!routeId) return;
  const list = document.getElementById('requests');
  const empty = document.getElementById('empty');
  const status = document.getElementById('live-status');
  const loadMore = document.getElementById('load-more');
  const seen = new Set();
  let next = null;

  const captureUrl = `${location.origin}/${routeId}`;
  document.getElementById('capture-url').textContent = captureUrl;
  document.getElementById('curl-example').textContent = `curl -X POST -H 'Content-Type: application/json' -d '{"hello":"world"}' ${captureUrl}`;
  document.getElementById('copy-url').addEventListener('click', () => navigator.clipboard?.writeText(captureUrl));
  document.getElementById('delete-route').addEventListener('click', async () => {
    if (!confirm('Delete this route and everything captured on it?')) return;
    await fetch(`/inspect/${routeId}`, { method: 'DELETE' });
    location.href = '/inspect';
  });

  /** Builds an element whose children are elements or plain text (text nodes, never markup). */
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (name === 'className') node.className = value;
      else node.setAttribute(name, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  function formatSize(size) {
    if (size < 1024) return `${size} B`;
    if (size < 1024 * 1024) return `${(size / 1024).toFixed(1)} KiB`;
    return `${(size / 1024 / 1024).toFixed(1)} MiB`;
  }

  function table(rows) {
    const body = el('tbody');
    for (const [name, value] of rows) body.append(el('tr', null, el('th', { scope: 'row' }, name), el('td', null, value)));
    return el('table', null, body);
  }

  function section(title, ...content) {
    return el('section', null, el('h3', null, title), ...content);
  }

  function render(request) {
    const target = request.query ? `${request.path}?${request.query}` : request.path;
    const time = new Date(request.receivedAt);
    const summary = el(
      'summary',
      null,
      el('span', { className: 'method' }, request.method),
      ' ',
      el('span', { className: 'target' }, target),
      ' ',
      el('time', { datetime: request.receivedAt, className: 'received' }, time.toLocaleString()),
      ' ',
      el('span', { className: 'size' }, formatSize(request.size) + (request.truncated ? ' (truncated)' : '')),
    );
    const parts = [
      section(
        'Request',
        table([
          ['Id', request.id],
          ['Received', request.receivedAt],
          ['From', request.remoteAddress],
          ['HTTP', request.httpVersion],
          ['Content-Type', request.contentType ?? '(none)'],
          ['Size', `${request.size} bytes${request.truncated ? ', truncated' : ''}`],
        ]),
      ),
      section('Headers', table(request.headers)),
    ];
    const queryRows = Object.entries(request.queryParams).flatMap(([name, values]) => values.map((value) => [name, value]));
    if (queryRows.length > 0) parts.push(section('Query', table(queryRows)));
    if (request.form) {
      parts.push(section('Form', table(Object.entries(request.form).flatMap(([name, values]) => values.map((value) => [name, value])))));
    }
    if (request.json !== null) parts.push(section('JSON', el('pre', { className: 'body' }, JSON.stringify(request.json, null, 2))));
    if (request.body !== null) {
      if (request.body !== '') parts.push(section('Body', el('pre', { className: 'body' }, request.body)));
    } else {
      parts.push(section('Body (binary, base64)', el('pre', { className: 'body' }, request.bodyBase64)));
    }
    const raw = el('a', { href: `/inspect/${routeId}/requests/${request.id}/raw`, download: '' }, 'Download raw body');
    const json = el('a', { href: `/inspect/${routeId}/requests/${request.id}` }, 'JSON');
    const remove = el('button', { type: 'button' }, 'Delete');
    const item = el('li', { className: 'request' });
    remove.addEventListener('click', async () => {
      const response = await fetch(`/inspect/${routeId}/requests/${request.id}`, { method: 'DELETE' });
      if (response.ok || response.status === 404) item.remove();
    });
    parts.push(el('p', { className: 'actions' }, raw, ' · ', json, ' · ', remove));
    item.append(el('details', null, summary, ...parts));
    item.dataset.id = request.id;
    return item;
  }

  function add(request, atTop) {
    if (seen.has(request.id)) return;
    seen.add(request.id);
    const item = render(request);
    if (atTop) list.prepend(item);
    else list.append(item);
    empty.hidden = true;
  }

  async function loadPage() {
    const query = new URLSearchParams({ limit: '50' });
    if (next) query.set('before', next);
    const response = await fetch(`/inspect/${routeId}?${query}`, { headers: { accept: 'application/json' } });
    if (!response.ok) {
      status.textContent = response.status === 404 ? 'route not found (expired?)' : `error ${response.status}`;
      return;
    }
    const page = await response.json();
    for (const request of page.items) add(request, false);
    next = page.next;
    loadMore.hidden = !next;
  }

  loadMore.addEventListener('click', () => void loadPage());

  const events = new EventSource(`/inspect/${routeId}/stream`);
  events.onopen = () => {
    status.textContent = 'live';
    status.className = 'live';
  };
  events.onerror = () => {
    status.textContent = 'reconnecting…';
    status.className = 'offline';
  };
  events.onmessage = (event) => add(JSON.parse(event.data), true);

  void loadPage();
})();
