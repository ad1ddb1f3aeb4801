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
  const searchForm = document.getElementById('search');
  const searchQ = document.getElementById('search-q');
  const searchMethod = document.getElementById('search-method');
  const searchClear = document.getElementById('search-clear');
  const searchStatus = document.getElementById('search-status');
  const downloadHar = document.getElementById('download-har');
  const seen = new Set();
  let next = null;
  // The active search ({q, method}) or null; while one is active, live captures are not inserted.
  let search = null;

  // The expiry in local time like every capture's time; the markup carries the ISO instant (kept as the tooltip).
  const expiresAt = document.getElementById('expires-at');
  if (expiresAt && expiresAt.dateTime) {
    expiresAt.title = expiresAt.dateTime;
    expiresAt.textContent = new Date(expiresAt.dateTime).toLocaleString();
  }

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
    const badge = request.signature
      ? el('span', { className: request.signature.valid ? 'badge valid' : 'badge invalid' }, request.signature.valid ? 'signed ✓' : 'signature ✗')
      : null;
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
      badge ? ' ' : null,
      badge,
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
    if (request.signature) {
      const check = request.signature;
      parts.push(
        section(
          'Signature',
          el(
            'p',
            { className: check.valid ? 'signature valid' : 'signature invalid' },
            check.valid ? `valid (${check.scheme})` : `invalid (${check.scheme}): ${check.reason.replace(/_/g, ' ')}`,
          ),
        ),
      );
    }
    const queryRows = Object.entries(request.queryParams).flatMap(([name, values]) => values.map((value) => [name, value]));
    if (queryRows.length > 0) parts.push(section('Query', table(queryRows)));
    if (request.form) {
      parts.push(section('Form', table(Object.entries(request.form).flatMap(([name, values]) => values.map((value) => [name, value])))));
    }
    if (request.multipart) {
      parts.push(
        section(
          'Multipart parts',
          table(
            request.multipart.map((part) => [
              part.name,
              `${part.filename ? `${part.filename}, ` : ''}${part.contentType}, ${formatSize(part.size)}${part.text !== null && part.filename === null ? `: ${part.text}` : ''}`,
            ]),
          ),
        ),
      );
    }
    if (request.json !== null) parts.push(section('JSON', el('pre', { className: 'body' }, JSON.stringify(request.json, null, 2))));
    if (request.bodyOmitted) {
      parts.push(section('Body', el('p', { className: 'omitted' }, `${formatSize(request.size)}: too large to list here; use the raw body link below.`)));
    } else if (request.body !== null) {
      if (request.body !== '') parts.push(section('Body', el('pre', { className: 'body' }, request.body)));
    } else {
      parts.push(section('Body (binary, base64)', el('pre', { className: 'body' }, request.bodyBase64)));
    }
    const raw = el('a', { href: request.links.raw, download: '' }, 'Download raw body');
    const json = el('a', { href: request.links.self }, 'JSON');
    const har = el('a', { href: request.links.har, download: '', className: 'download-har' }, 'Download HAR');
    const copy = el('button', { type: 'button', className: 'copy-curl' }, 'Copy as cURL');
    copy.addEventListener('click', async () => {
      const response = await fetch(request.links.curl);
      const command = await response.text();
      copy.dataset.command = command;
      try {
        await navigator.clipboard.writeText(command);
        copy.textContent = 'Copied';
      } catch {
        // No clipboard permission (or an insecure origin): show the command to copy by hand.
        copy.textContent = 'Copy as cURL';
        copy.after(el('pre', { className: 'body curl' }, command));
      }
    });
    const remove = el('button', { type: 'button' }, 'Delete');
    const item = el('li', { className: 'request' });
    remove.addEventListener('click', async () => {
      const response = await fetch(`/inspect/${routeId}/requests/${request.id}`, { method: 'DELETE' });
      if (response.ok || response.status === 404) item.remove();
    });
    parts.push(el('p', { className: 'actions' }, raw, ' · ', json, ' · ', har, ' · ', copy, ' · ', remove));
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

  function searchParams() {
    const query = new URLSearchParams();
    if (search && search.q) query.set('q', search.q);
    if (search && search.method) query.set('method', search.method);
    return query;
  }

  async function loadPage() {
    const query = searchParams();
    query.set('limit', '50');
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

  function restart() {
    list.replaceChildren();
    seen.clear();
    next = null;
    const query = searchParams();
    downloadHar.href = `/inspect/${routeId}/export.har${query.size > 0 ? `?${query}` : ''}`;
    searchClear.hidden = !search;
    searchStatus.textContent = search ? 'Search results (live updates paused)' : '';
    history.replaceState(null, '', `${location.pathname}${query.size > 0 ? `?${query}` : ''}`);
    empty.hidden = false;
    void loadPage();
  }

  searchForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const q = searchQ.value.trim();
    const method = searchMethod.value;
    search = q || method ? { q, method } : null;
    restart();
  });
  searchClear.addEventListener('click', () => {
    searchQ.value = '';
    searchMethod.value = '';
    search = null;
    restart();
  });

  const events = new EventSource(`/inspect/${routeId}/stream`);
  events.onopen = () => {
    status.textContent = 'live';
    status.className = 'live';
  };
  events.onerror = () => {
    status.textContent = 'reconnecting…';
    status.className = 'offline';
  };
  events.onmessage = (event) => {
    if (!search) add(JSON.parse(event.data), true);
  };

  // A page opened with ?q= or ?method= starts with that search.
  const initial = new URLSearchParams(location.search);
  if (initial.get('q') || initial.get('method')) {
    searchQ.value = initial.get('q') || '';
    searchMethod.value = (initial.get('method') || '').toUpperCase();
    search = { q: searchQ.value, method: searchMethod.value };
    restart();
  } else {
    void loadPage();
  }
})();
