// The buyer's page for one sale: the goods and a countdown (public), then, with the buyer's
// token, the waiting room of a queue sale (join, place, ETA, pushed by the queue stream), the
// purchase (the challenge solved here with altcha-lib, the purchase token, the buy) and its
// result pushed by the result stream. It calls the public API like any client; nothing here is
// trusted by the server.
import { readEventStream, takeTokenFromAddress, takeTokenFromForm } from './shared/event-stream.js';
import { solveChallenge } from './vendor/altcha-lib/pow.js';
import { deriveKey } from './vendor/altcha-lib/algorithms/web/pbkdf2.js';

const TOKEN_KEY = 'seckill.buyerToken';
const GOODS_REFRESH_MS = 10_000;
const FINAL_QUEUE_STATES = new Set(['PURCHASED', 'SOLD_OUT', 'EXPIRED']);
const FINAL_RESULTS = new Set(['SUCCESS', 'FAILED']);
/** In the buyer's words; the code stays beside it, so that support can tell what happened. */
const EXPLAINED = {
  SOLD_OUT: 'Sold out: there is nothing left.',
  ALREADY_PURCHASED: 'You already hold an order for this sale.',
  DUPLICATE_REQUEST: 'Your other purchase is still being handled: wait a moment.',
  SALE_NOT_STARTED: 'The sale has not started yet.',
  SALE_ENDED: 'The sale has ended.',
  NOT_PREHEATED: 'The sale is being prepared: try again in a few seconds.',
  QUEUE_NOT_OPEN: 'The queue is not open yet.',
  NOT_ADMITTED: 'It is not your turn: buy once the waiting room lets you in.',
  TOO_MANY_REQUESTS: 'Too many tries at once: wait a moment.',
  UNAVAILABLE: 'The shop is overloaded or down: nothing was taken, try again.',
  GOODS_NOT_FOUND: 'There is no such sale.',
};

const $ = (id) => document.getElementById(id);
const goodsId = /^\/sale\/(\d+)$/.exec(location.pathname)?.[1];
const needs = {
  token: document.body.dataset.tokenRequired === 'true',
  challenge: document.body.dataset.challengeRequired === 'true',
};
const clock = new Intl.DateTimeFormat(undefined, {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});
const dateAndTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

let token = null;
let goods = null;
/** The server's clock minus this one, from the Date header: the countdown follows the server's. */
let skewMs = 0;
let queue = null;
let result = { status: 'NONE' };
/** 'join' or 'buy' while one runs: one action at a time, and no double click sends two. */
let busy = null;
/**
 * A purchase that got no final answer yet (a 503, a 429, a lost connection): its
 * Idempotency-Key and purchase token are used again by the next click, so that a retry can never
 * buy twice and does not solve another challenge.
 */
let attempt = null;
const follows = { queue: null, result: null };

const now = () => Date.now() + skewMs;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class Refused extends Error {
  constructor(status, body, response) {
    super(explain(body, status, response));
    this.status = status;
    this.code = body.code;
  }
}

function explain(body, status, response) {
  const retryAfter = response?.headers.get('Retry-After');
  const wait = retryAfter ? ` (again in ${retryAfter} s)` : '';
  const text = EXPLAINED[body.code] ?? body.message ?? `The shop answered ${status}.`;
  return body.code ? `${text}${wait} [${body.code}]` : text;
}

function duration(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, '0');
  if (hours > 0) return `${hours}:${String(minutes).padStart(2, '0')}:${seconds}`;
  return `${minutes}:${seconds}`;
}

async function call(method, path, { headers = {}, signedIn = true } = {}) {
  const response = await fetch(path, {
    method,
    headers: { ...(signedIn ? { Authorization: `Bearer ${token}` } : {}), ...headers },
    cache: 'no-store',
  });
  const body = await response.json().catch(() => ({}));
  if (response.status === 401 && signedIn) {
    forgetToken(`Your token was refused: ${body.message ?? 'unauthorized'}.`);
  }
  return { status: response.status, body, response };
}

function note(id, text, tone = '') {
  $(id).textContent = text;
  $(id).dataset.tone = tone;
}

const work = (text) => ($('work').textContent = text);

// ---- the goods: public, refreshed every few seconds; the clock is the server's

function takeClock(response) {
  const served = Date.parse(response.headers.get('Date') ?? '');
  if (Number.isNaN(served)) return;
  // The header has whole seconds: the server's clock is 0..1 s past it. Closer than that is noise.
  const estimate = served + 500 - Date.now();
  skewMs = Math.abs(estimate) > 1_000 ? estimate : 0;
}

async function loadGoods() {
  try {
    const { status, body, response } = await call('GET', `/api/v1/goods/${goodsId}`, {
      signedIn: false,
    });
    if (status !== 200) {
      $('goods-problem').hidden = false;
      $('goods-problem').textContent = explain(body, status, response);
      return;
    }
    $('goods-problem').hidden = true;
    takeClock(response);
    goods = body;
    document.title = `${goods.name} · flash sale`;
    $('goods-name').textContent = goods.name;
    $('goods-price').textContent = goods.price.toFixed(2);
    $('goods-remaining').textContent = `${goods.remaining} of ${goods.totalStock} left ·`;
    $('goods-window').textContent =
      `${dateAndTime.format(new Date(goods.startAt))} – ${dateAndTime.format(new Date(goods.endAt))}`;
  } catch (error) {
    $('goods-problem').hidden = false;
    $('goods-problem').textContent = `The shop cannot be reached (${error.message}).`;
  }
}

/** The sale's status now, by the server's clock (the last goods answer may be seconds old). */
function saleStatus() {
  if (!goods) return null;
  const at = now();
  if (at >= Date.parse(goods.endAt)) return 'ENDED';
  if (goods.status === 'SOLD_OUT' || goods.remaining === 0) return 'SOLD_OUT';
  return at < Date.parse(goods.startAt) ? 'UPCOMING' : 'ACTIVE';
}

const isQueueSale = () => goods?.admission === 'queue';

// ---- what the page shows, four times a second

function render() {
  const status = saleStatus();
  if (status) {
    $('goods-status').textContent = status;
    $('goods-status').dataset.status = status;
    const at = now();
    const opens = isQueueSale() ? Date.parse(goods.queueOpensAt) : null;
    $('countdown').textContent =
      status === 'UPCOMING'
        ? opens !== null && at < opens
          ? `The queue opens in ${duration(opens - at)}, the sale in ${duration(Date.parse(goods.startAt) - at)}`
          : `Starts in ${duration(Date.parse(goods.startAt) - at)}`
        : status === 'ACTIVE'
          ? `On sale now · ends in ${duration(Date.parse(goods.endAt) - at)}`
          : status === 'SOLD_OUT'
            ? 'Sold out'
            : 'The sale has ended';
  }
  renderQueueNote();
  const signedIn = token !== null && goods !== null;
  $('queue').hidden = !signedIn || !isQueueSale();
  $('purchase').hidden = !signedIn;
  $('queue-join').hidden = queue !== null && queue.state !== 'NOT_JOINED';
  $('queue-join').disabled = !canJoin();
  $('buy').disabled = !canBuy();
}

function canJoin() {
  if (!token || !isQueueSale() || busy || queue?.state !== 'NOT_JOINED') return false;
  const at = now();
  return at >= Date.parse(goods.queueOpensAt) && at < Date.parse(goods.endAt);
}

function canBuy() {
  if (!token || busy || saleStatus() !== 'ACTIVE') return false;
  if (result.status === 'QUEUED' || result.status === 'SUCCESS') return false;
  return !isQueueSale() || queue?.state === 'ADMITTED';
}

// ---- the waiting room

function showQueue(status) {
  queue = status;
  $('queue-state').textContent = status.state;
  $('queue-state').dataset.state = status.state;
  $('queue-position').textContent = status.position ?? '';
  $('queue-ahead').textContent = status.ahead ?? '';
  $('queue-eta').textContent =
    status.etaSeconds === null || status.etaSeconds === undefined
      ? ''
      : status.etaSeconds === 0
        ? 'now'
        : `about ${duration(status.etaSeconds * 1000)}`;
  if (status.state === 'WAITING' || status.state === 'ADMITTED') follow('queue');
  if (status.state === 'PURCHASED' && !FINAL_RESULTS.has(result.status)) void loadResult();
  render();
}

function renderQueueNote() {
  if (!queue || !goods || busy === 'join') return;
  const at = now();
  switch (queue.state) {
    case 'NOT_JOINED':
      return at < Date.parse(goods.queueOpensAt)
        ? note('queue-note', `The queue opens at ${clock.format(new Date(goods.queueOpensAt))}.`)
        : note('queue-note', 'Join to get your place.');
    case 'WAITING':
      return queue.position === null
        ? note(
            'queue-note',
            `You are in. Your place is drawn at the start (${clock.format(new Date(goods.startAt))}); keep this page open.`,
          )
        : note('queue-note', 'Keep this page open: it lets you in when your turn comes.');
    case 'ADMITTED':
      return note(
        'queue-note',
        `Your turn: buy within ${duration(Date.parse(queue.admittedUntil) - at)}.`,
        'good',
      );
    case 'EXPIRED':
      return note('queue-note', 'Your turn passed without a purchase.', 'bad');
    case 'SOLD_OUT':
      return note('queue-note', 'Sold out before your turn came.', 'bad');
    case 'PURCHASED':
      return note('queue-note', 'You bought one.', 'good');
  }
}

async function loadQueue() {
  const asked = token;
  const { status, body, response } = await call('GET', `/api/v1/seckill/${goodsId}/queue`);
  if (token !== asked) return; // another buyer signed in meanwhile
  if (status === 200) showQueue(body);
  else if (status !== 401) note('queue-note', explain(body, status, response), 'bad');
}

async function join() {
  busy = 'join';
  render();
  try {
    const headers = needs.challenge ? { 'X-Seckill-Challenge': await solvedChallenge() } : {};
    work('Joining…');
    const { status, body, response } = await call('POST', `/api/v1/seckill/${goodsId}/queue`, {
      headers,
    });
    if (status !== 200) throw new Refused(status, body, response);
    busy = null;
    showQueue(body);
  } catch (error) {
    note('queue-note', error instanceof Refused ? error.message : failure(error), 'bad');
  } finally {
    busy = null;
    work('');
    render();
  }
}

// ---- the challenge: the server's ALTCHA v2 challenge, solved here with Web Crypto

async function solvedChallenge() {
  const { status, body, response } = await call('GET', `/api/v1/seckill/${goodsId}/challenge`);
  if (status !== 200) throw new Refused(status, body, response);
  work('Proving this is a person, not a script: a few seconds of work for your device…');
  const solution = await solveChallenge({ challenge: body, deriveKey });
  if (!solution) throw new Error('the proof of work took too long');
  return btoa(JSON.stringify({ challenge: body, solution }));
}

// ---- the purchase and its result

function showResult(next) {
  result = next;
  $('result-status').textContent = next.status;
  $('result-status').dataset.status = next.status;
  $('order-no').textContent = next.status === 'SUCCESS' ? next.orderNo : '';
  if (next.status === 'QUEUED') {
    note('purchase-note', 'Accepted: your order is being written…');
    follow('result');
  } else if (next.status === 'SUCCESS') {
    note('purchase-note', `It is yours: order ${next.orderNo}.`, 'good');
    void showDeadline(next.orderNo);
    void loadGoods();
  } else if (next.status === 'FAILED') {
    note(
      'purchase-note',
      `The order could not be written${next.reason ? ` (${next.reason})` : ''}; nothing was taken.`,
      'bad',
    );
  }
  render();
}

async function showDeadline(orderNo) {
  const { status, body } = await call('GET', `/api/v1/orders/${encodeURIComponent(orderNo)}`);
  if (status === 200 && body.status === 'PENDING_PAYMENT' && result.orderNo === orderNo) {
    note(
      'purchase-note',
      `It is yours: order ${orderNo}. Pay by ${clock.format(new Date(body.expireAt))}, or it is cancelled.`,
      'good',
    );
  }
}

async function loadResult() {
  const asked = token;
  const { status, body } = await call('GET', `/api/v1/seckill/${goodsId}/result`);
  if (status === 200 && token === asked) showResult(body);
}

async function buy() {
  busy = 'buy';
  render();
  try {
    attempt ??= { key: crypto.randomUUID(), purchaseToken: null };
    const headers = { 'Idempotency-Key': attempt.key };
    if (needs.token) {
      attempt.purchaseToken ??= await purchaseToken();
      headers['X-Seckill-Token'] = attempt.purchaseToken;
    }
    work('Buying…');
    const { status, body, response } = await call('POST', `/api/v1/seckill/${goodsId}`, {
      headers,
    });
    if (status === 202) {
      attempt = null;
      showResult({ status: 'QUEUED' });
      return;
    }
    if (status === 503 && body.requestId) {
      // Taken or not, the shop cannot tell yet: the result stream will.
      note('purchase-note', 'The shop could not tell at once whether it worked: checking…');
      follow('result');
      return;
    }
    // A final answer, a refused token or no admission: the next try starts over.
    if (status === 409 || status === 404 || status === 403) attempt = null;
    note('purchase-note', explain(body, status, response), 'bad');
    if (body.code === 'ALREADY_PURCHASED') void loadResult();
    if (body.code === 'NOT_ADMITTED' || body.code === 'SOLD_OUT') {
      if (isQueueSale()) void loadQueue();
      void loadGoods();
    }
  } catch (error) {
    note('purchase-note', error instanceof Refused ? error.message : failure(error), 'bad');
    if (error instanceof Refused && error.status !== 429 && error.status !== 503) attempt = null;
  } finally {
    busy = null;
    work('');
    render();
  }
}

async function purchaseToken() {
  const headers = needs.challenge ? { 'X-Seckill-Challenge': await solvedChallenge() } : {};
  const { status, body, response } = await call('GET', `/api/v1/seckill/${goodsId}/token`, {
    headers,
  });
  if (status !== 200) throw new Refused(status, body, response);
  return body.token;
}

const failure = (error) => `The shop cannot be reached (${error.message}): try again.`;

// ---- the two streams: one reader each, reconnecting until the state is final

const STREAMS = {
  queue: {
    url: () => `/api/v1/seckill/${goodsId}/queue/stream`,
    show: showQueue,
    reload: loadQueue,
    done: () => FINAL_QUEUE_STATES.has(queue?.state),
  },
  result: {
    url: () => `/api/v1/seckill/${goodsId}/result/stream`,
    show: showResult,
    reload: loadResult,
    done: () => FINAL_RESULTS.has(result.status),
  },
};

function follow(name) {
  if (follows[name] || !token) return;
  const stream = STREAMS[name];
  const controller = new AbortController();
  follows[name] = controller;
  void (async () => {
    let backoffMs = 1_000;
    while (follows[name] === controller && !stream.done()) {
      try {
        const refused = await readEventStream(stream.url(), {
          token,
          signal: controller.signal,
          onOpen: () => (backoffMs = 1_000),
          onEvent: (type, data) => type === 'message' && stream.show(data),
        });
        if (refused?.status === 401) break;
        // Refused (too many streams, say): read once instead, and try the stream again later.
        if (refused) await stream.reload();
      } catch {
        if (controller.signal.aborted) return;
      }
      if (stream.done()) break;
      await sleep(backoffMs);
      backoffMs = Math.min(backoffMs * 2, 10_000);
    }
    if (follows[name] === controller) follows[name] = null;
  })();
}

// ---- the token: from the address (#token=…, removed at once) or the field; this tab only

function showLogin(message) {
  $('login').hidden = false;
  $('forget').hidden = true;
  $('login-message').textContent = message;
  render();
}

/** What the page knew of the last buyer: gone before another token is used, or none. */
function resetBuyer() {
  token = null;
  for (const name of Object.keys(follows)) {
    follows[name]?.abort();
    follows[name] = null;
  }
  queue = null;
  attempt = null;
  showResult({ status: 'NONE' });
  note('purchase-note', '');
  note('queue-note', '');
}

function forgetToken(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  resetBuyer();
  showLogin(message);
}

takeTokenFromForm($('token-form'), $('token-input'), TOKEN_KEY, () => {
  resetBuyer();
  void signIn();
});
$('forget').addEventListener('click', () => forgetToken(''));
// Another token pasted into the address of this open page: the page is the new buyer's.
window.addEventListener('hashchange', () => {
  if (!/(?:^#|&)token=/.test(location.hash)) return;
  takeTokenFromAddress(TOKEN_KEY);
  resetBuyer();
  void signIn();
});
$('queue-join').addEventListener('click', () => void join());
$('buy').addEventListener('click', () => void buy());

async function signIn() {
  token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) return showLogin('');
  $('login').hidden = true;
  $('forget').hidden = false;
  if (!goods) return render();
  await Promise.all([isQueueSale() ? loadQueue() : null, loadResult()]);
  render();
}

async function start() {
  if (!goodsId) return;
  takeTokenFromAddress(TOKEN_KEY);
  await loadGoods();
  await signIn();
  let startSeen = saleStatus() !== 'UPCOMING';
  setInterval(() => {
    render();
    // At the start the status and remaining stock change at once: read them then, not 10 s on.
    const started = saleStatus() !== 'UPCOMING';
    if (started && !startSeen) void loadGoods();
    startSeen = started;
  }, 250);
  setInterval(() => {
    void loadGoods();
    // A standing the first read could not get (the shop was unreachable) is read again.
    if (token && isQueueSale() && queue === null) void loadQueue();
  }, GOODS_REFRESH_MS);
}

void start();
