// The buyer's page for one sale: the goods and a countdown (public), then, with the buyer's
// token, the waiting room of a queue sale (join, place, ETA, pushed by the queue stream) or the
// entry of a draw sale (enter, rank, purchase right, pushed by the entry stream), the
// purchase (the challenge solved here with altcha-lib, the purchase token, the buy) and its
// result pushed by the result stream. It calls the public API like any client; nothing here is
// trusted by the server.
import { readEventStream, takeTokenFromAddress, takeTokenFromForm } from './shared/event-stream.js';
import { solveChallenge } from './vendor/altcha-lib/pow.js';
import { deriveKey } from './vendor/altcha-lib/algorithms/web/pbkdf2.js';

const TOKEN_KEY = 'seckill.buyerToken';
const GOODS_REFRESH_MS = 10_000;
/** The states that cannot change, for a standing that does not say (`final`, from an older server). */
const FINAL_QUEUE_STATES = new Set(['PURCHASED', 'SOLD_OUT', 'EXPIRED']);
/** A restore's Retry-After is believed within these bounds: a wrong header neither spins nor stalls. */
const RETRY_AFTER_MS = { min: 1_000, max: 60_000 };
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
  NOT_SELECTED: 'You hold no purchase right in this draw (or it lapsed).',
  ENTRIES_CLOSED: 'Entries are not open.',
  TOO_MANY_REQUESTS: 'Too many tries at once: wait a moment.',
  UNAVAILABLE: 'The shop is overloaded or down: nothing was taken, try again.',
  OVERLOADED: 'Too many buyers at this moment: nothing was taken, try again shortly.',
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
/** A stream cut and not opened again yet: what it last pushed may be stale. */
const lost = { queue: false, result: false };
/**
 * Why the last request got no answer at all (the shop down, the network cut), until the next
 * answer: the banner says it, and the first answer of any kind takes it away.
 */
let unreachable = null;
/** What the goods answer itself said was wrong (no such sale…), shown when the shop is reached. */
let goodsProblem = null;
/** While the waiting room is being restored (503 with Retry-After): when the standing is read again. */
let restoring = null;

const now = () => Date.now() + skewMs;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** A standing says whether it can still change; one from an older server, by its state. */
const isFinalStanding = (status) =>
  typeof status.final === 'boolean' ? status.final : FINAL_QUEUE_STATES.has(status.state);

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

/**
 * One request to the shop. An answer of any kind clears the "cannot be reached" banner; none at
 * all raises it (and rejects). A token the shop refuses (401, or 431 for a header block over its
 * limit) is dropped here, whoever asked: the sign-in form comes back with the reason.
 */
async function call(method, path, { headers = {}, signedIn = true } = {}) {
  const asked = token;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: { ...(signedIn ? { Authorization: `Bearer ${asked}` } : {}), ...headers },
      cache: 'no-store',
    });
  } catch (error) {
    unreached(error);
    if (signedIn) await checkTokenSendable(asked);
    throw error;
  }
  reached(response);
  const body = await response.json().catch(() => ({}));
  if (signedIn) refuseToken(asked, response.status, body);
  return { status: response.status, body, response };
}

/** The shop answered: no banner, unless a gateway says the shop behind it did not. */
function reached(response) {
  if (response.status === 502 || response.status === 504) {
    return unreached(new Error(`its gateway answered ${response.status}`));
  }
  unreachable = null;
  showBanner();
}

function unreached(error) {
  unreachable = error.message;
  showBanner();
}

function showBanner() {
  const text =
    unreachable !== null
      ? `The shop cannot be reached (${unreachable}): reconnecting…`
      : goodsProblem;
  $('goods-problem').hidden = text === null;
  $('goods-problem').textContent = text ?? '';
}

/** Drops `asked` if the shop refused it (and it is still the page's token). */
function refuseToken(asked, status, body) {
  if (token !== asked || (status !== 401 && status !== 431)) return;
  const reason =
    status === 431
      ? `it is too large for the shop to take (${asked.length.toLocaleString('en')} characters) [HEADERS_TOO_LARGE]`
      : `${body.message ?? 'unauthorized'} [${body.code ?? 'UNAUTHORIZED'}]`;
  forgetToken(`Your token was refused: ${reason}. Sign in again with the token your sign-in gave.`);
}

/**
 * A request with the token got no answer at all. The shop answers a header block over its limit
 * with 431 but closes the connection at once, and over a slow link the browser may see only the
 * reset: if a request without the token is answered and a harmless one with it then fails
 * outright too, it is the token the shop cannot take.
 */
async function checkTokenSendable(asked) {
  const answered = (path, headers) => fetch(path, { headers, cache: 'no-store' }).catch(() => null);
  if (token !== asked || (await answered(`/api/v1/goods/${goodsId}`, {})) === null) return;
  const again = await answered(`/api/v1/seckill/${goodsId}/result`, {
    Authorization: `Bearer ${asked}`,
  });
  if (again === null) refuseToken(asked, 431, {});
  else refuseToken(asked, again.status, await again.json().catch(() => ({})));
}

/** Retry-After (seconds or a date) in ms, within bounds; `fallbackMs` without one. */
function retryAfterMs(response, fallbackMs) {
  const header = response.headers.get('Retry-After');
  if (!header) return fallbackMs;
  const ms = /^\d+$/.test(header) ? Number(header) * 1000 : Date.parse(header) - Date.now();
  if (Number.isNaN(ms)) return fallbackMs;
  return Math.min(RETRY_AFTER_MS.max, Math.max(RETRY_AFTER_MS.min, ms));
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
  let answer;
  try {
    answer = await call('GET', `/api/v1/goods/${goodsId}`, { signedIn: false });
  } catch {
    return; // the banner says so; the next refresh tries again
  }
  const { status, body, response } = answer;
  goodsProblem = status === 200 ? null : explain(body, status, response);
  showBanner();
  if (status !== 200) return;
  takeClock(response);
  const first = goods === null;
  goods = body;
  document.title = `${goods.name} · flash sale`;
  $('goods-name').textContent = goods.name;
  $('goods-price').textContent = goods.price.toFixed(2);
  $('goods-remaining').textContent = `${goods.remaining} of ${goods.totalStock} left ·`;
  $('goods-window').textContent =
    `${dateAndTime.format(new Date(goods.startAt))} – ${dateAndTime.format(new Date(goods.endAt))}`;
  // A queue sale's commitment to the secret its order is drawn with (from the queue's opening).
  $('queue-fairness').hidden = !goods.seedCommitment;
  $('seed-commitment').textContent = goods.seedCommitment ?? '';
  $('fairness-link').href = `/api/v1/goods/${goodsId}/fairness`;
  // Signed in while the shop was out of reach: the buyer's standing is read now.
  if (first && token) void loadBuyer();
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
const isDrawSale = () => goods?.admission === 'draw';
/** A sale with a room: a queue sale's waiting room, or a draw sale's entries (the same room). */
const hasRoom = () => isQueueSale() || isDrawSale();
/** The room's routes: `…/queue` or a draw's `…/entry`. */
const roomPath = () => `/api/v1/seckill/${goodsId}/${isDrawSale() ? 'entry' : 'queue'}`;
/** When joining (entering) opens and ends. */
const joinWindow = () =>
  isDrawSale()
    ? { opens: Date.parse(goods.entriesOpenAt), closes: Date.parse(goods.entriesCloseAt) }
    : { opens: Date.parse(goods.queueOpensAt), closes: Date.parse(goods.endAt) };

/** A draw entry's states as the waiting room's, whose display the page shares. */
const ROOM_STATE_OF_ENTRY = {
  NOT_ENTERED: 'NOT_JOINED',
  ENTERED: 'WAITING',
  WAITLISTED: 'WAITING',
  SELECTED: 'ADMITTED',
  NOT_SELECTED: 'SOLD_OUT',
  PURCHASED: 'PURCHASED',
  EXPIRED: 'EXPIRED',
};

/** A standing as the page keeps it: a draw entry's is put in the room's terms, its own kept. */
function asStanding(body) {
  if (!isDrawSale()) return body;
  return {
    state: ROOM_STATE_OF_ENTRY[body.state] ?? body.state,
    entryState: body.state,
    position: body.rank ?? null,
    ahead: body.ahead ?? null,
    etaSeconds: null,
    admittedUntil: body.rightUntil,
    final: body.final,
  };
}

// ---- what the page shows, four times a second

function render() {
  const status = saleStatus();
  if (status) {
    $('goods-status').textContent = status;
    $('goods-status').dataset.status = status;
    const at = now();
    const opens = hasRoom() ? joinWindow().opens : null;
    const closes = isDrawSale() ? joinWindow().closes : null;
    $('countdown').textContent =
      status === 'UPCOMING'
        ? opens !== null && at < opens
          ? `${isDrawSale() ? 'Entries open' : 'The queue opens'} in ${duration(opens - at)}, the sale in ${duration(Date.parse(goods.startAt) - at)}`
          : closes !== null && at < closes
            ? `Entries close in ${duration(closes - at)}, the sale starts in ${duration(Date.parse(goods.startAt) - at)}`
            : `Starts in ${duration(Date.parse(goods.startAt) - at)}`
        : status === 'ACTIVE'
          ? `On sale now · ends in ${duration(Date.parse(goods.endAt) - at)}`
          : status === 'SOLD_OUT'
            ? 'Sold out'
            : 'The sale has ended';
  }
  renderQueueNote();
  $('queue-eta').textContent = etaText();
  const signedIn = token !== null && goods !== null;
  $('queue').hidden = !signedIn || !hasRoom();
  if (isDrawSale()) {
    $('queue-title').textContent = 'Draw';
    $('queue-explain').textContent =
      'Enter before entries close: then a draw ranks every entry at random. The first get a right to buy for a while; a right left unused, or a unit that comes back, passes to the next entry in the ranking.';
    $('queue-position-label').textContent = 'Your rank';
    $('queue-eta-label').textContent = 'Your right';
    if (!busy) $('queue-join').textContent = 'Enter the draw';
  }
  $('purchase').hidden = !signedIn;
  $('queue-join').hidden = queue !== null && queue.state !== 'NOT_JOINED';
  $('queue-join').disabled = !canJoin();
  $('buy').disabled = !canBuy();
}

function canJoin() {
  if (!token || !hasRoom() || busy || queue?.state !== 'NOT_JOINED') return false;
  const at = now();
  const { opens, closes } = joinWindow();
  return at >= opens && at < closes;
}

function canBuy() {
  if (!token || busy || saleStatus() !== 'ACTIVE') return false;
  if (result.status === 'QUEUED' || result.status === 'SUCCESS') return false;
  return !hasRoom() || queue?.state === 'ADMITTED';
}

// ---- the waiting room

function showQueue(answer) {
  const status = asStanding(answer);
  queue = status;
  restoring = null;
  $('queue-state').textContent = status.entryState ?? status.state;
  $('queue-state').dataset.state = status.state;
  $('queue-state').dataset.final = String(isFinalStanding(status));
  $('queue-position').textContent = status.position ?? '';
  $('queue-ahead').textContent = status.ahead ?? '';
  // Followed until the server says it cannot change: a SOLD_OUT for now stays in line.
  if (status.state !== 'NOT_JOINED' && !isFinalStanding(status)) follow('queue');
  if (status.state === 'PURCHASED' && !FINAL_RESULTS.has(result.status)) void loadResult();
  render();
}

/**
 * The expected wait, or why there is none: the standing stream lost ("reconnecting", the place
 * shown may be stale), the waiting room being restored, or no ETA from the server (admissions
 * paused, the sale ended) while the buyer waits ("unknown", never a number or "now").
 */
function etaText() {
  if (restoring !== null) return 'restoring…';
  if (isDrawSale()) {
    return queue?.state === 'ADMITTED' && queue.admittedUntil
      ? `until ${clock.format(new Date(queue.admittedUntil))}`
      : '';
  }
  if (queue === null) return unreachable !== null && token !== null ? 'reconnecting…' : '';
  const waiting =
    queue.state === 'WAITING' || (queue.state === 'SOLD_OUT' && !isFinalStanding(queue));
  if (waiting && lost.queue) return 'reconnecting…';
  if (queue.etaSeconds === null || queue.etaSeconds === undefined) return waiting ? 'unknown' : '';
  if (queue.etaSeconds === 0) return 'now';
  return `about ${duration(queue.etaSeconds * 1000)}`;
}

function renderQueueNote() {
  if (!goods || busy === 'join') return;
  const at = now();
  if (restoring !== null) {
    return note(
      'queue-note',
      `The waiting room is being restored: your place is kept. Checking again in ${duration(restoring - Date.now())}.`,
    );
  }
  if (!queue) return;
  if (isDrawSale()) return renderEntryNote(at);
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
      return isFinalStanding(queue)
        ? note('queue-note', 'Sold out for good: nothing is left for this sale.', 'bad')
        : note(
            'queue-note',
            'Sold out for now: you stay in line; a unit may come back from an order left unpaid.',
          );
    case 'PURCHASED':
      return note('queue-note', 'You bought one.', 'good');
  }
}

/** A draw entry's standing in the entrant's words. */
function renderEntryNote(at) {
  const { opens, closes } = joinWindow();
  switch (queue.entryState) {
    case 'NOT_ENTERED':
      return at < opens
        ? note('queue-note', `Entries open at ${clock.format(new Date(opens))}.`)
        : at < closes
          ? note('queue-note', `Enter before ${clock.format(new Date(closes))}.`)
          : note('queue-note', 'Entries are closed.');
    case 'ENTERED':
      return note(
        'queue-note',
        `You are in the draw (at ${clock.format(new Date(closes))}); keep this page open.`,
      );
    case 'WAITLISTED':
      return note(
        'queue-note',
        'On the waitlist: a right left unused, or a unit that comes back, reaches you in rank order.',
      );
    case 'SELECTED':
      return at < Date.parse(goods.startAt)
        ? note(
            'queue-note',
            `You were drawn: buy from ${clock.format(new Date(goods.startAt))} until ${clock.format(new Date(queue.admittedUntil))}.`,
            'good',
          )
        : note(
            'queue-note',
            `You were drawn: buy within ${duration(Date.parse(queue.admittedUntil) - at)}.`,
            'good',
          );
    case 'NOT_SELECTED':
      return note('queue-note', 'Not selected: no right can reach you any more.', 'bad');
    case 'EXPIRED':
      return note('queue-note', 'Your right lapsed without a purchase.', 'bad');
    case 'PURCHASED':
      return note('queue-note', 'You bought one.', 'good');
  }
}

let restoreTimer = null;

async function loadQueue() {
  const asked = token;
  clearTimeout(restoreTimer);
  let answer;
  try {
    answer = await call('GET', roomPath());
  } catch {
    return; // the banner says so; read again by the next refresh
  }
  const { status, body, response } = answer;
  if (token !== asked) return; // another buyer signed in meanwhile, or the token was refused
  if (status === 200) return showQueue(body);
  if (status === 503 && body.code === 'UNAVAILABLE' && response.headers.has('Retry-After')) {
    // Being restored: not an error of the buyer's, and the place is kept. Read again when told.
    const waitMs = retryAfterMs(response, RETRY_AFTER_MS.min);
    restoring = Date.now() + waitMs;
    restoreTimer = setTimeout(() => void loadQueue(), waitMs);
    return render();
  }
  restoring = null;
  note('queue-note', explain(body, status, response), 'bad');
}

async function join() {
  const asked = token;
  busy = 'join';
  render();
  try {
    const headers = needs.challenge ? { 'X-Seckill-Challenge': await solvedChallenge() } : {};
    work(isDrawSale() ? 'Entering…' : 'Joining…');
    const { status, body, response } = await call('POST', roomPath(), { headers });
    if (status !== 200) throw new Refused(status, body, response);
    busy = null;
    showReceipt(body.receipt);
    showQueue(body);
  } catch (error) {
    // A refused token took the buyer's notes with it: nothing stale is written after.
    if (token === asked) {
      note('queue-note', error instanceof Refused ? error.message : failure(error), 'bad');
    }
  } finally {
    busy = null;
    work('');
    render();
  }
}

/** What the buyer checks its place with once the draw is revealed (the join's receipt). */
function showReceipt(receipt) {
  if (!receipt) return;
  $('queue-receipt').textContent =
    isDrawSale() && receipt.joinIndex !== null
      ? `Your receipt: entry ${receipt.joinIndex}, pseudonym ${receipt.pseudonym.slice(0, 16)}… (npm run verify-draw -- --goods ${goodsId} --join-index ${receipt.joinIndex} gives your rank once drawn).`
      : receipt.joinIndex === null
        ? `You joined after the draw: arrival ${receipt.arrival}, in order behind the drawn buyers.`
        : `Your receipt: join index ${receipt.joinIndex}, pseudonym ${receipt.pseudonym.slice(0, 16)}… (npm run verify-draw -- --goods ${goodsId} --join-index ${receipt.joinIndex} gives your place once drawn).`;
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
  const answer = await call('GET', `/api/v1/seckill/${goodsId}/result`).catch(() => null);
  if (answer?.status === 200 && token === asked) showResult(answer.body);
}

/** The signed-in buyer's standing and result, read once (the streams follow them after). */
async function loadBuyer() {
  await Promise.all([hasRoom() ? loadQueue() : null, loadResult()]);
  render();
}

async function buy() {
  const asked = token;
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
    if (token !== asked) return;
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
    if (body.code === 'NOT_ADMITTED' || body.code === 'NOT_SELECTED' || body.code === 'SOLD_OUT') {
      if (hasRoom()) void loadQueue();
      void loadGoods();
    }
  } catch (error) {
    if (token !== asked) return;
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
    url: () => `${roomPath()}/stream`,
    show: showQueue,
    reload: loadQueue,
    done: () => queue !== null && isFinalStanding(queue),
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
    const asked = token;
    while (follows[name] === controller && !stream.done()) {
      let toldMs = 0;
      try {
        const refused = await readEventStream(stream.url(), {
          token: asked,
          signal: controller.signal,
          onOpen: (response) => {
            backoffMs = 1_000;
            lost[name] = false;
            reached(response);
          },
          onEvent: (type, data) => type === 'message' && stream.show(data),
        });
        if (refused) {
          reached(refused);
          refuseToken(asked, refused.status, await refused.json().catch(() => ({})));
          if (token !== asked) break;
          // Refused (too many streams, the room being restored): read once instead, and try the
          // stream again when told. A 5xx leaves what was pushed stale until then.
          lost[name] = refused.status >= 500;
          toldMs = retryAfterMs(refused, 0);
          await stream.reload();
        }
      } catch (error) {
        if (controller.signal.aborted) return;
        // Cut or out of reach: "reconnecting" until the stream opens again.
        lost[name] = true;
        unreached(error);
      }
      render();
      if (stream.done()) break;
      // From 1 s after a stream that opened; longer if the shop said so (Retry-After).
      await sleep(Math.max(backoffMs, toldMs));
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
  restoring = null;
  clearTimeout(restoreTimer);
  lost.queue = lost.result = false;
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
  if (!fitsInHeader(token)) {
    return forgetToken(
      'Your token cannot be sent: it holds characters a header cannot carry (a line break, say). ' +
        'Paste the token your sign-in gave.',
    );
  }
  $('login').hidden = true;
  $('forget').hidden = false;
  if (!goods) return render();
  await loadBuyer();
}

/** Whether the browser would send `value` in a header at all (fetch throws on one it would not). */
function fitsInHeader(value) {
  try {
    new Headers({ Authorization: `Bearer ${value}` });
    return true;
  } catch {
    return false;
  }
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
    if (token && hasRoom() && queue === null && restoring === null) void loadQueue();
  }, GOODS_REFRESH_MS);
}

void start();
