// The operator dashboard: reads the admin feed (GET /api/v1/admin/events, Server-Sent Events)
// with fetch, so that the token goes in the Authorization header, and draws each snapshot.
// A module, no framework; uPlot (served from node_modules) draws the charts.
import { readEventStream, takeTokenFromAddress, takeTokenFromForm } from './shared/event-stream.js';

(() => {
  const TOKEN_KEY = 'seckill.adminToken';
  const FEED_URL = '/api/v1/admin/events';
  const STALE_AFTER_MS = 3_000;
  /** The chart starts this long before the first answer, and spans at least this long. */
  const LEAD_SECONDS = 5;
  const MIN_SPAN_SECONDS = 20;
  const COLORS = {
    ACCEPTED: '#1a7f37',
    SOLD_OUT: '#8c959f',
    DUPLICATE_REQUEST: '#d4a72c',
    ALREADY_PURCHASED: '#8250df',
    TOO_MANY_REQUESTS: '#cf222e',
    UNAVAILABLE: '#82071e',
    SALE_NOT_STARTED: '#0969da',
    SALE_ENDED: '#57606a',
    NOT_PREHEATED: '#bc4c00',
  };
  const OTHER_COLORS = ['#1b7c83', '#bf3989', '#4d2d00', '#0550ae'];

  const $ = (id) => document.getElementById(id);
  const number = new Intl.NumberFormat('en');
  const time = new Intl.DateTimeFormat('en-GB', {
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });

  /** Per sale id: its card's elements and its chart. */
  const cards = new Map();
  let token = null;
  let feed = null;
  let lastSnapshotAt = 0;

  // ---- the token: from the address (#token=…, removed at once) or the field; this tab only

  function showLogin(message) {
    $('login').hidden = false;
    $('board').hidden = true;
    $('forget').hidden = true;
    $('login-message').textContent = message || '';
    setStatus('not connected', 'idle');
  }

  function forgetToken(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    token = null;
    if (feed) feed.abort();
    feed = null;
    showLogin(message);
  }

  takeTokenFromForm($('token-form'), $('token-input'), TOKEN_KEY, start);
  $('forget').addEventListener('click', () => forgetToken(''));

  // ---- the feed: fetch streaming, parsed as Server-Sent Events, reconnecting with a backoff

  function setStatus(text, state) {
    const status = $('feed-status');
    status.textContent = text;
    status.dataset.state = state;
  }

  async function readFeed(controller) {
    const refused = await readEventStream(FEED_URL, {
      token,
      signal: controller.signal,
      onOpen: () => setStatus('live', 'live'),
      onEvent: (type, payload) => {
        if (type === 'message') render(payload);
        else if (type === 'unavailable') showProblems([payload.message]);
      },
    });
    if (refused === null) return 'ended';
    if (refused.status === 401 || refused.status === 403) {
      const body = await refused.json().catch(() => ({}));
      forgetToken(
        refused.status === 403
          ? 'That token is not an admin token.'
          : `The token was refused: ${body.message || 'unauthorized'}.`,
      );
      return 'refused';
    }
    throw new Error(`feed answered ${refused.status}`);
  }

  async function connectLoop() {
    const controller = new AbortController();
    feed = controller;
    let backoffMs = 1_000;
    while (feed === controller) {
      try {
        const outcome = await readFeed(controller);
        if (outcome === 'refused') return;
        backoffMs = 1_000;
      } catch (error) {
        if (controller.signal.aborted) return;
        setStatus(`reconnecting (${error.message})`, 'down');
      }
      await new Promise((resolve) => setTimeout(resolve, backoffMs));
      backoffMs = Math.min(backoffMs * 2, 10_000);
    }
  }

  setInterval(() => {
    if (!token || lastSnapshotAt === 0) return;
    const age = Date.now() - lastSnapshotAt;
    $('feed-at').textContent = `updated ${Math.round(age / 1000)} s ago`;
    if (age > STALE_AFTER_MS && $('feed-status').dataset.state === 'live') {
      setStatus('stale', 'down');
    }
  }, 1_000);

  // ---- drawing a snapshot

  function showProblems(problems) {
    const box = $('problems');
    box.hidden = problems.length === 0;
    box.textContent = problems.join(' · ');
  }

  function render(snapshot) {
    lastSnapshotAt = Date.now();
    setStatus('live', 'live');
    $('feed-at').textContent = `updated ${new Date(snapshot.at).toLocaleTimeString('en-GB')}`;
    showProblems(snapshot.problems);
    renderQueues(snapshot.queues);
    const seen = new Set();
    const list = $('sales');
    for (const sale of snapshot.sales) {
      seen.add(sale.id);
      const card = cards.get(sale.id) || createCard(sale.id);
      list.appendChild(card.root); // keeps the snapshot's order
      fillCard(card, sale);
    }
    for (const [id, card] of cards) {
      if (seen.has(id)) continue;
      if (card.chart) card.chart.destroy();
      card.root.remove();
      cards.delete(id);
    }
    $('no-sales').hidden = snapshot.sales.length > 0;
  }

  function renderQueues(queues) {
    const body = $('queues');
    body.replaceChildren();
    if (!queues) return;
    for (const queue of queues) {
      const row = document.createElement('tr');
      row.dataset.testid = `queue-${queue.role}`;
      for (const text of [
        `${queue.role} (${queue.queue})`,
        number.format(queue.messages),
        String(queue.consumers),
      ]) {
        const cell = document.createElement('td');
        cell.textContent = text;
        row.appendChild(cell);
      }
      if (queue.role === 'orders' && queue.messages > 0) row.classList.add('lagging');
      if (queue.role === 'dead' && queue.messages > 0) row.classList.add('bad');
      body.appendChild(row);
    }
  }

  function createCard(id) {
    const root = $('sale-template').content.firstElementChild.cloneNode(true);
    const find = (selector) => root.querySelector(selector);
    const card = {
      root,
      name: find('.name'),
      id: find('.id'),
      status: find('.status'),
      window: find('.window'),
      remaining: find('.remaining'),
      sold: find('.sold'),
      of: find('.of'),
      inflight: find('.inflight'),
      consistent: find('.consistent'),
      drift: find('.drift'),
      orders: ['pending', 'paid', 'cancelled', 'refund'].map((key) => find(`.count .${key}`)),
      units: ['pending', 'paid', 'cancelled', 'refund'].map((key) => find(`.units .${key}`)),
      late: { retaken: find('.late-retaken'), refunds: find('.late-refunds') },
      merchant: {
        root: find('.merchant'),
        pending: find('.merchant-pending'),
        delivered: find('.merchant-delivered'),
        parked: find('.merchant-parked'),
        retry: find('.merchant-retry'),
      },
      chartBox: find('.chart'),
      totals: find('.totals'),
      result: find('.action-result'),
      queue: {
        root: find('.queue'),
        paused: find('.queue-paused'),
        waiting: find('.queue-waiting'),
        admitted: find('.queue-admitted'),
        expired: find('.queue-expired'),
        rate: find('.queue-rate'),
        pace: find('.queue-pace'),
        toggle: find('.queue-toggle'),
        input: find('.queue-pace-input'),
        isPaused: false,
      },
      draw: {
        root: find('.draw'),
        pending: find('.draw-pending'),
        terms: find('.draw-terms'),
        entries: find('.draw-entries'),
        rights: find('.draw-rights'),
        claimed: find('.draw-claimed'),
        lapsed: find('.draw-lapsed'),
        head: find('.draw-head'),
        waitlisted: find('.draw-waitlisted'),
      },
      chart: null,
      codes: '',
    };
    root.dataset.testid = `sale-${id}`;
    card.remaining.dataset.testid = `sale-${id}-remaining`;
    card.sold.dataset.testid = `sale-${id}-sold`;
    card.consistent.dataset.testid = `sale-${id}-consistent`;
    card.queue.waiting.dataset.testid = `sale-${id}-queue-waiting`;
    card.queue.admitted.dataset.testid = `sale-${id}-queue-admitted`;
    card.queue.toggle.dataset.testid = `sale-${id}-queue-toggle`;
    for (const key of ['entries', 'rights', 'claimed', 'lapsed', 'head']) {
      card.draw[key].dataset.testid = `sale-${id}-draw-${key}`;
    }
    card.merchant.parked.dataset.testid = `sale-${id}-merchant-parked`;
    card.merchant.retry.dataset.testid = `sale-${id}-merchant-retry`;
    card.merchant.retry.addEventListener('click', () =>
      act(
        card,
        '/api/v1/admin/merchant-events/retry',
        (body) => `${number.format(body.retried)} parked events sent again`,
        { body: { goodsId: id } },
      ),
    );
    card.queue.toggle.addEventListener('click', () => {
      const action = card.queue.isPaused ? 'resume' : 'pause';
      act(card, `/api/v1/admin/goods/${id}/queue/${action}`, (body) =>
        body.paused ? 'admission paused' : 'admission resumed',
      );
    });
    card.queue.root.querySelector('form').addEventListener('submit', (event) => {
      event.preventDefault();
      const admitPerSecond = Number(card.queue.input.value);
      act(
        card,
        `/api/v1/admin/goods/${id}/queue`,
        (body) => `admitting at most ${number.format(body.admitPerSecond)} a second`,
        { method: 'PATCH', body: { admitPerSecond } },
      );
    });
    find('.preheat').addEventListener('click', () =>
      act(card, `/api/v1/admin/goods/${id}/preheat`, (body) =>
        body.loaded === false
          ? `Redis already held it (stock ${body.stock})`
          : `preheated: ${body.stock} in Redis`,
      ),
    );
    find('.repair').addEventListener('click', () => {
      const question =
        `Rebuild sale ${id}'s stock and buyers in Redis from MySQL's orders and what is in ` +
        'flight? Safe while the sale runs.';
      if (!confirm(question)) return;
      act(
        card,
        `/api/v1/admin/goods/${id}/reconcile/repair`,
        (body) =>
          `repaired: Redis stock ${body.before.redisStock} → ${body.after.redisStock}` +
          ` (${body.after.consistent ? 'consistent' : 'still drifting'})`,
      );
    });
    cards.set(id, card);
    return card;
  }

  function fillCard(card, sale) {
    card.name.textContent = sale.name;
    card.id.textContent = `#${sale.id}`;
    card.status.textContent = sale.status.replace('_', ' ').toLowerCase();
    card.status.dataset.status = sale.status;
    card.window.textContent = `${time.format(new Date(sale.startAt))} – ${time.format(new Date(sale.endAt))}`;
    card.remaining.textContent = String(sale.remaining);
    card.remaining.title = sale.preheated
      ? 'units left in Redis'
      : 'not in Redis (not preheated): MySQL stock';
    card.sold.textContent = String(sale.sold);
    card.of.textContent = `of ${number.format(sale.totalStock)}`;
    card.inflight.textContent = String(sale.inFlight);
    const verdict = sale.verdict;
    card.consistent.textContent = verdict ? (verdict.consistent ? 'yes' : 'no') : '…';
    card.consistent.dataset.verdict = verdict ? String(verdict.consistent) : 'pending';
    card.drift.textContent = verdictNote(verdict);
    card.late.retaken.textContent = number.format(sale.latePayments.retaken);
    card.late.refunds.textContent = number.format(sale.latePayments.refundRequired);
    const merchant = sale.merchantEvents;
    card.merchant.root.hidden = !merchant;
    if (merchant) {
      card.merchant.pending.textContent = number.format(merchant.pending);
      card.merchant.delivered.textContent = number.format(merchant.delivered);
      card.merchant.parked.textContent = number.format(merchant.parked);
      card.merchant.retry.hidden = merchant.parked === 0;
    }
    const keys = ['pendingPayment', 'paid', 'cancelled', 'refundRequired'];
    keys.forEach((key, i) => {
      card.orders[i].textContent = number.format(sale.orders[key]);
      card.units[i].textContent = number.format(sale.units[key]);
    });
    fillQueue(card.queue, sale.queue);
    fillDraw(card.draw, sale.draw);
    drawChart(card, sale.rates);
  }

  function fillDraw(view, draw) {
    view.root.hidden = !draw;
    if (!draw) return;
    view.pending.hidden = draw.drawn;
    view.terms.textContent = `· ${draw.winnersFactor} right(s) per unit, ${number.format(draw.claimSeconds)} s each`;
    view.entries.textContent = number.format(draw.entries);
    view.rights.textContent = number.format(draw.rightsOut);
    view.claimed.textContent = number.format(draw.claimed);
    view.lapsed.textContent = number.format(draw.lapsed);
    view.head.textContent = draw.waitlistHead === null ? '–' : number.format(draw.waitlistHead);
    view.waitlisted.textContent = number.format(draw.waitlisted);
  }

  function fillQueue(view, queue) {
    view.root.hidden = !queue;
    if (!queue) return;
    view.isPaused = queue.paused;
    view.paused.hidden = !queue.paused;
    view.waiting.textContent = number.format(queue.waiting);
    view.admitted.textContent = number.format(queue.admitted);
    view.expired.textContent = number.format(queue.expired);
    view.rate.textContent = number.format(Math.round(queue.admittedPerSecond * 10) / 10);
    view.pace.textContent = number.format(queue.admitPerSecond);
    view.toggle.textContent = queue.paused ? 'Resume admission' : 'Pause admission';
    if (document.activeElement !== view.input && !view.input.value) {
      view.input.value = String(queue.admitPerSecond);
    }
  }

  function verdictNote(verdict) {
    if (!verdict) return 'checking…';
    const age = Math.max(0, Math.round((Date.now() - verdict.checkedAt) / 1000));
    const when = `checked ${age} s ago`;
    if (verdict.consistent) return verdict.settling ? `restocks settling · ${when}` : when;
    const redis =
      verdict.redisState === 'NOT_LOADED' || verdict.drift.redis === null
        ? 'Redis: sale not loaded'
        : `Redis: ${signed(verdict.drift.redis)}`;
    return `drift ${redis}, MySQL: ${signed(verdict.drift.db)} · ${when}`;
  }

  const signed = (n) => (n > 0 ? `${n} unaccounted` : n < 0 ? `${-n} too many` : '0');

  /** The window from a few seconds before its first answer (at least 20 s of it). */
  function trimmed(rates, codes) {
    const length = codes.length ? rates.codes[codes[0]].length : 0;
    let first = length;
    for (const code of codes) {
      const index = rates.codes[code].findIndex((count) => count > 0);
      if (index >= 0) first = Math.min(first, index);
    }
    const from = Math.max(0, Math.min(first - LEAD_SECONDS, length - MIN_SPAN_SECONDS));
    const xs = [];
    for (let i = from; i < length; i++) xs.push(rates.start + i);
    return [xs, ...codes.map((code) => rates.codes[code].slice(from))];
  }

  const label = (code) => code.toLowerCase().replace(/_/g, ' ');

  function drawChart(card, rates) {
    const codes = Object.keys(rates.codes).sort((a, b) =>
      a === 'ACCEPTED' ? -1 : b === 'ACCEPTED' ? 1 : a.localeCompare(b),
    );
    card.totals.textContent = codes.length
      ? codes
          .map(
            (code) =>
              `${label(code)} ${number.format(rates.codes[code].reduce((a, b) => a + b, 0))}`,
          )
          .join(' · ')
      : 'no purchase answers in the last 3 minutes';
    const data = trimmed(rates, codes);
    const signature = codes.join(',');
    if (card.chart && card.codes === signature) {
      card.chart.setData(data);
      return;
    }
    if (card.chart) card.chart.destroy();
    card.codes = signature;
    card.chartBox.replaceChildren();
    card.chart = null;
    if (codes.length === 0) return;
    let other = 0;
    card.chart = new uPlot(
      {
        width: Math.max(260, card.chartBox.clientWidth || 420),
        height: 150,
        legend: { live: false },
        cursor: { show: true, points: { show: false } },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(10, max)] } },
        axes: [{ stroke: '#57606a' }, { stroke: '#57606a', size: 48 }],
        series: [
          {},
          ...codes.map((code) => ({
            label: label(code),
            stroke: COLORS[code] || OTHER_COLORS[other++ % OTHER_COLORS.length],
            width: code === 'ACCEPTED' ? 2 : 1.5,
            fill: code === 'ACCEPTED' ? 'rgba(26, 127, 55, 0.15)' : undefined,
            paths: uPlot.paths.stepped({ align: 1 }),
            points: { show: false },
          })),
        ],
      },
      data,
      card.chartBox,
    );
  }

  window.addEventListener('resize', () => {
    for (const card of cards.values()) {
      if (card.chart) card.chart.setSize({ width: card.chartBox.clientWidth, height: 150 });
    }
  });

  // ---- the buttons: the same admin REST routes, with the same token

  async function adminPost(path, body, method = 'POST') {
    const response = await fetch(path, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...(body ? { 'Content-Type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(`${answer.code || response.status}: ${answer.message || ''}`);
    return answer;
  }

  async function act(card, path, describe, request = {}) {
    card.result.textContent = '…';
    try {
      card.result.textContent = describe(await adminPost(path, request.body, request.method));
    } catch (error) {
      card.result.textContent = error.message;
    }
  }

  $('create-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    const result = $('create-result');
    const startAt = Date.now() + Number(form.get('startsIn')) * 60_000;
    try {
      const created = await adminPost('/api/v1/admin/goods', {
        name: String(form.get('name')),
        price: Number(form.get('price')),
        stock: Number(form.get('stock')),
        startAt: new Date(startAt).toISOString(),
        endAt: new Date(startAt + Number(form.get('lasts')) * 60_000).toISOString(),
        perUserLimit: Number(form.get('perUserLimit')),
      });
      result.textContent = `created sale #${created.id}`;
      if (form.get('preheat')) {
        await adminPost(`/api/v1/admin/goods/${created.id}/preheat`);
        result.textContent = `created and preheated sale #${created.id}`;
      }
    } catch (error) {
      result.textContent = error.message;
    }
  });

  // ---- start

  function start() {
    token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) return showLogin('');
    $('login').hidden = true;
    $('board').hidden = false;
    $('forget').hidden = false;
    setStatus('connecting', 'idle');
    if (feed) feed.abort();
    void connectLoop();
  }

  takeTokenFromAddress(TOKEN_KEY);
  start();
})();
