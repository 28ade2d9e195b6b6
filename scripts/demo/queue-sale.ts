// The demo's queue sale (--queue): people join the waiting room over the pre-queue and follow
// their place on the queue stream, as the buyer's page does; scripted buyers join in the last few
// hundred milliseconds before the start and then fire purchases as fast as the rate limits let
// them. People buy once admitted, after a moment's thought, but a share of them walks away (their
// admission lapses and the next buyer is admitted). Then the same crowd on an open sale, for the
// comparison.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import { Redis } from 'ioredis';

import { queueKeys } from '../../src/infra/redis/seckill-keys.js';
import {
  verifyDraw,
  type DrawExport,
  type DrawVerdict,
  type PublishedDraw,
} from '../../src/modules/waiting-room/draw-verifier.js';
import { ScriptError } from '../lib/errors.js';
import { readEventStream } from '../lib/event-stream.js';
import { isRecord, requestJson } from '../lib/http.js';
import { buyerHeaders, errorCode, runLoad, type LoadRequest } from '../lib/load.js';
import { createGoods, preheatGoods } from '../lib/sale.js';
import type { DemoOptions } from './options.js';
import { FIRST_BUYER_ID as FIRST_ID } from './phases.js';

/** How long before the start the scripts join: the last moment, as a sniping script would. */
const SCRIPTS_JOIN_BEFORE_START_MS = 300;
/** The pre-queue lasts this long at least, plus JOIN_LEAD_PER_PERSON_MS per person. */
const MIN_PRE_QUEUE_MS = 3_000;
const JOIN_LEAD_PER_PERSON_MS = 2;
/** A person's time from seeing ADMITTED (or the start, on the open sale) to pressing "buy". */
export const THINK_MS = { min: 200, max: 1_500 };
/** The connections the scripts join over, at most. */
const SCRIPT_CONNECTIONS = 50;
/**
 * A script's pace on the purchase route: just inside THROTTLE_PURCHASE_USER_LIMIT's default (5 a
 * second), the fastest that is never throttled.
 */
const SCRIPT_INTERVAL_MS = 210;
/** Every phase of the queue sale gives up after this long. */
export const SALE_TIMEOUT_MS = 180_000;
/** How often the admissions log (kept ten seconds in Redis) is read: well inside its life. */
const ADMITS_SAMPLE_MS = 1_000;
/** A person's tries of one purchase answered 429 or 503 (the page retries too). */
const BUY_TRIES = 20;

const FINAL_QUEUE_STATES = new Set(['PURCHASED', 'SOLD_OUT', 'EXPIRED']);
/** Purchase answers after which asking again gets the same (FORBIDDEN: blocklisted). */
const FINAL_PURCHASE_CODES = new Set(['SOLD_OUT', 'ALREADY_PURCHASED', 'SALE_ENDED', 'FORBIDDEN']);

export interface Person {
  id: number;
  index: number;
  walksAway: boolean;
  /** ms since the start (startAt) of each queue state first seen on the stream. */
  seen: Map<string, number>;
  /** The purchase's final answer: 202, or the error code. */
  bought?: string;
  boughtAt?: number;
}

export interface QueueSaleRun {
  goodsId: number;
  /** The sale's startAt (epoch ms). */
  startAt: number;
  stock: number;
  admitPerSecond: number;
  people: Person[];
  scripts: number[];
  /** Joins answered 200, and how long the people's took. */
  joins: { people: number; scripts: number; peopleMs: number };
  /** Buyers (people and scripts) whose purchase was answered 202, and when (ms after the start). */
  accepted: Map<number, number>;
  /** What the scripts' purchases were answered, by code (202 included). */
  scriptAnswers: Map<string, number>;
  /** Every admission the server recorded: at (epoch ms, Redis's clock) and how many. */
  admissions: { at: number; count: number }[];
  /** ms after the start: the last purchase accepted, and the last waiting person told SOLD_OUT. */
  lastAcceptedMs: number | undefined;
  lastSoldOutMs: number | undefined;
  /** Ids of the buyers holding an order whose queue state did not read PURCHASED afterwards. */
  boughtWithoutAdmission: number[];
  /** The same crowd on an open sale (runOpenComparison). */
  open?: OpenComparison;
  timedOut: boolean;
  /** The draw checked from the outside: the public fairness answer against the admin export. */
  draw: DrawVerdict;
}

export interface OpenComparison {
  goodsId: number;
  scriptsSold: number;
  peopleSold: number;
}

export interface Crowd {
  origin: string;
  goodsId: number;
  startAt: number;
}

export const between = (range: { min: number; max: number }) =>
  range.min + Math.random() * (range.max - range.min);

/** Reads the admissions log (lua/queue-tick.lua's `admits`) until stopped; returns every entry. */
function sampleAdmissions(goodsId: number): {
  stop: () => Promise<{ at: number; count: number }[]>;
} {
  const redis = new Redis(process.env.REDIS_URL || 'redis://127.0.0.1:6379/0', {
    lazyConnect: true,
    maxRetriesPerRequest: 2,
  });
  const entries = new Map<string, number>();
  let stopped = false;
  const read = async () => {
    const flat = await redis.zrange(queueKeys(goodsId).admits, 0, -1, 'WITHSCORES');
    for (let i = 0; i < flat.length; i += 2) entries.set(flat[i], Number(flat[i + 1]));
  };
  const loop = (async () => {
    await redis.connect();
    while (!stopped) {
      await read();
      await sleep(ADMITS_SAMPLE_MS);
    }
    await read();
  })();
  return {
    stop: async () => {
      stopped = true;
      try {
        await loop;
      } finally {
        redis.disconnect();
      }
      // "head:count": the place admission stood at before this step, and how many it admitted.
      return [...entries].map(([member, at]) => ({ at, count: Number(member.split(':')[1]) }));
    },
  };
}

/** One line of where the crowd stands: each person's latest state, and the scripts' answers. */
export function describeProgress(
  people: Person[],
  scriptAnswers: Map<string, number>,
  startAt: number,
) {
  const latest = new Map<string, number>();
  for (const person of people) {
    let state = 'NOT_JOINED';
    let at = -Infinity;
    for (const [seen, when] of person.seen) if (when >= at) [state, at] = [seen, when];
    latest.set(state, (latest.get(state) ?? 0) + 1);
  }
  const states = [...latest].map(([state, n]) => `${state} ${n}`).join(', ');
  const answers = [...scriptAnswers].map(([code, n]) => `${code} ${n}`).join(', ');
  return `${((Date.now() - startAt) / 1000).toFixed(0)} s: people ${states}; scripts answered ${answers || 'nothing yet'}`;
}

/** One purchase request: '202', or the error's code; and the Retry-After, in ms (0 without). */
async function purchase(crowd: Crowd, headers: Record<string, string>) {
  const response = await fetch(`${crowd.origin}/api/v1/seckill/${crowd.goodsId}`, {
    method: 'POST',
    headers,
  }).catch(() => undefined);
  const text = response ? await response.text() : '';
  const code = response?.status === 202 ? '202' : (errorCode(text) ?? `HTTP ${response?.status}`);
  return { code, retryAfterMs: Number(response?.headers.get('retry-after') ?? 0) * 1000 };
}

/** One purchase as a person makes it: retried on 429 and 503 with the same Idempotency-Key. */
export async function buyAsPerson(crowd: Crowd, person: Person): Promise<void> {
  const headers = { ...buyerHeaders(person.id, person.index), 'idempotency-key': randomUUID() };
  for (let attempt = 1; ; attempt++) {
    const { code } = await purchase(crowd, headers);
    if ((code === 'TOO_MANY_REQUESTS' || code === 'UNAVAILABLE') && attempt < BUY_TRIES) {
      await sleep(250 + Math.random() * 250);
      continue;
    }
    person.bought = code;
    person.boughtAt = Date.now() - crowd.startAt;
    return;
  }
}

/** Which stream a person follows, and the state that lets it buy. */
export interface Standing {
  /** `queue` (GET …/queue/stream) or a draw's `entry` (…/entry/stream). */
  stream: 'queue' | 'entry';
  buyOn: 'ADMITTED' | 'SELECTED';
  finalStates: ReadonlySet<string>;
  /** After a purchase answered 202 (a draw's winners pay or cancel at once). */
  afterBuy?: (person: Person) => Promise<void>;
}

const QUEUE_STANDING: Standing = {
  stream: 'queue',
  buyOn: 'ADMITTED',
  finalStates: FINAL_QUEUE_STATES,
};

/**
 * A person on the queue (or entry) stream, reconnecting (as the page does) until its state is
 * final; buys once admitted (drawn; not before the start), unless they walk away.
 */
export async function follow(
  crowd: Crowd,
  person: Person,
  deadline: number,
  standing: Standing = QUEUE_STANDING,
): Promise<void> {
  let buying: Promise<void> | undefined;
  while (Date.now() < deadline) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), deadline - Date.now());
    let final = false;
    try {
      const url = `${crowd.origin}/api/v1/seckill/${crowd.goodsId}/${standing.stream}/stream`;
      const response = await fetch(url, {
        headers: { ...buyerHeaders(person.id, person.index), accept: 'text/event-stream' },
        signal: abort.signal,
      });
      if (response.ok && response.body) {
        await readEventStream(response.body, {
          onEvent: ({ data }) => {
            const status: unknown = JSON.parse(data);
            const state = isRecord(status) ? String(status.state) : 'unknown';
            if (!person.seen.has(state)) person.seen.set(state, Date.now() - crowd.startAt);
            if (state === standing.buyOn && !person.walksAway && buying === undefined) {
              const wait = Math.max(between(THINK_MS), crowd.startAt - Date.now());
              buying = sleep(wait)
                .then(() => buyAsPerson(crowd, person))
                .then(() => (person.bought === '202' ? standing.afterBuy?.(person) : undefined));
            }
            // A person stops listening at a final state, and at "sold out for now" too (the page
            // keeps waiting for a unit to come back; the demo's people go home).
            const told = isRecord(status) && status.final === true;
            if (!told && !standing.finalStates.has(state)) return;
            final = true;
            return 'stop';
          },
        });
      } else {
        await response.body?.cancel();
      }
    } catch {
      // Refused or cut: try again, as the page does.
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
    if (final) break;
    await sleep(500);
  }
  await buying;
}

/**
 * A script, from the start: a purchase every SCRIPT_INTERVAL_MS, as fast as the per-user rate
 * limit lets it without being throttled (a script that hammers past it is blocklisted by the
 * autoban, and then buys nothing anywhere), until it has a final answer.
 */
async function snipe(
  crowd: Crowd,
  userId: number,
  index: number,
  answers: Map<string, number>,
  accepted: Map<number, number>,
  deadline: number,
): Promise<void> {
  const headers = buyerHeaders(userId, index);
  while (Date.now() < deadline) {
    const sentAt = Date.now();
    const { code, retryAfterMs } = await purchase(crowd, headers);
    answers.set(code, (answers.get(code) ?? 0) + 1);
    if (code === '202') accepted.set(userId, Date.now() - crowd.startAt);
    if (code === '202' || FINAL_PURCHASE_CODES.has(code)) return;
    await sleep(Math.max(SCRIPT_INTERVAL_MS - (Date.now() - sentAt), retryAfterMs));
  }
}

/** Every script sniping at once; a script's address follows the people's. */
export function snipeAll(
  crowd: Crowd,
  scripts: number[],
  firstIndex: number,
  answers: Map<string, number>,
  accepted: Map<number, number>,
  deadline: number,
): Promise<void[]> {
  return Promise.all(
    scripts.map((id, j) => snipe(crowd, id, firstIndex + j, answers, accepted, deadline)),
  );
}

export function joinRequest(
  goodsId: number,
  userId: number,
  index: number,
  room: 'queue' | 'entry' = 'queue',
): LoadRequest {
  return {
    method: 'POST',
    path: `/api/v1/seckill/${goodsId}/${room}`,
    headers: buyerHeaders(userId, index),
  };
}

export async function joinAll(origin: string, requests: LoadRequest[], connections: number) {
  const run = await runLoad({
    origin,
    connections: Math.min(connections, requests.length),
    next: (i) => requests[i],
  });
  const refused = new Map<string, number>();
  for (const r of run.results) {
    if (r.status !== 200)
      refused.set(
        r.code ?? `HTTP ${r.status}`,
        (refused.get(r.code ?? `HTTP ${r.status}`) ?? 0) + 1,
      );
  }
  return {
    joined: run.results.filter((r) => r.status === 200).length,
    ms: run.elapsedMs,
    refused: [...refused].map(([code, n]) => `${code} ${n}`).join(', '),
  };
}

/** The whole queue sale, from its creation until every buyer has a final answer. */
export async function runQueueSale(
  baseUrl: string,
  adminToken: string,
  options: DemoOptions,
): Promise<QueueSaleRun> {
  const origin = new URL(baseUrl).origin;
  const people: Person[] = Array.from({ length: options.buyers }, (_, index) => ({
    id: FIRST_ID + index,
    index,
    walksAway: Math.random() < options.walkAway,
    seen: new Map(),
  }));
  const scripts = Array.from({ length: options.scripts }, (_, j) => FIRST_ID + options.buyers + j);
  const startAt = Date.now() + MIN_PRE_QUEUE_MS + options.buyers * JOIN_LEAD_PER_PERSON_MS;
  const goodsId = await createGoods(baseUrl, adminToken, {
    name: 'Demo phone (waiting room)',
    price: 4999,
    stock: options.stock,
    admission: 'queue',
    admitPerSecond: options.admitPerSecond,
    admissionTtlSeconds: options.admissionTtlSeconds,
    startAt: new Date(startAt),
    queueOpensAt: new Date(Date.now()),
  });
  await preheatGoods(baseUrl, adminToken, goodsId);
  const crowd: Crowd = { origin, goodsId, startAt };
  console.log(
    `queue sale ${goodsId}: ${options.stock} units, starts in ${((startAt - Date.now()) / 1000).toFixed(1)} s; ` +
      `${people.length} people join now, ${scripts.length} scripts ${SCRIPTS_JOIN_BEFORE_START_MS} ms before the start`,
  );

  const peopleJoins = await joinAll(
    origin,
    people.map((p) => joinRequest(goodsId, p.id, p.index)),
    options.concurrency,
  );
  if (Date.now() > startAt - SCRIPTS_JOIN_BEFORE_START_MS) {
    throw new ScriptError(
      `the people's joins took ${Math.round(peopleJoins.ms)} ms, past the pre-queue: try fewer --buyers`,
    );
  }
  const deadline = startAt + SALE_TIMEOUT_MS;
  const following = people.map((person) => follow(crowd, person, deadline));
  const admissions = sampleAdmissions(goodsId);

  await sleep(startAt - SCRIPTS_JOIN_BEFORE_START_MS - Date.now());
  const scriptJoins = await joinAll(
    origin,
    scripts.map((id, j) => joinRequest(goodsId, id, people.length + j)),
    SCRIPT_CONNECTIONS,
  );
  console.log(
    `joined: ${peopleJoins.joined} people in ${(peopleJoins.ms / 1000).toFixed(2)} s, ` +
      `${scriptJoins.joined} scripts in the last ${SCRIPTS_JOIN_BEFORE_START_MS} ms; the sale starts`,
  );
  await sleep(startAt - Date.now());

  const accepted = new Map<number, number>();
  const scriptAnswers = new Map<string, number>();
  const progress = setInterval(
    () => console.log(describeProgress(people, scriptAnswers, startAt)),
    2_000,
  );
  try {
    await Promise.all([
      snipeAll(crowd, scripts, people.length, scriptAnswers, accepted, deadline),
      Promise.all(following),
    ]);
  } finally {
    clearInterval(progress);
  }
  for (const person of people) {
    if (person.bought === '202') accepted.set(person.id, person.boughtAt!);
  }
  const timedOut =
    Date.now() >= deadline ||
    people.some((p) => ![...p.seen.keys()].some((state) => FINAL_QUEUE_STATES.has(state)));
  const soldOutTimes = people.map((p) => p.seen.get('SOLD_OUT')).filter((t) => t !== undefined);
  return {
    goodsId,
    startAt,
    stock: options.stock,
    admitPerSecond: options.admitPerSecond,
    people,
    scripts,
    joins: { people: peopleJoins.joined, scripts: scriptJoins.joined, peopleMs: peopleJoins.ms },
    accepted,
    scriptAnswers,
    admissions: await admissions.stop(),
    lastAcceptedMs: accepted.size > 0 ? Math.max(...accepted.values()) : undefined,
    lastSoldOutMs: soldOutTimes.length > 0 ? Math.max(...soldOutTimes) : undefined,
    boughtWithoutAdmission: [],
    timedOut,
    draw: await verifyTheDraw(baseUrl, adminToken, goodsId),
  };
}

/** What `npm run verify-draw -- --export` checks, from the routes an auditor has. */
export async function verifyTheDraw(
  baseUrl: string,
  adminToken: string,
  goodsId: number,
): Promise<DrawVerdict> {
  const origin = new URL(baseUrl).origin;
  const published = await requestJson('GET', `${origin}/api/v1/goods/${goodsId}/fairness`);
  const exported = await requestJson('GET', `${origin}/api/v1/admin/goods/${goodsId}/entries`, {
    token: adminToken,
  });
  if (published.status !== 200 || exported.status !== 200) {
    return {
      ok: false,
      place: null,
      problem: `the fairness answer (${published.status}) or the export (${exported.status}) not read`,
    };
  }
  return verifyDraw(published.body as PublishedDraw, exported.body as DrawExport);
}

/** The buyers holding an order whose queue state is not PURCHASED: each must have used an admission. */
export async function findBoughtWithoutAdmission(
  baseUrl: string,
  goodsId: number,
  userIds: number[],
): Promise<number[]> {
  const origin = new URL(baseUrl).origin;
  const without: number[] = [];
  for (const userId of userIds) {
    const response = await fetch(`${origin}/api/v1/seckill/${goodsId}/queue`, {
      headers: buyerHeaders(userId, userId - FIRST_ID),
    });
    const body: unknown = await response.json();
    if (!isRecord(body) || body.state !== 'PURCHASED') without.push(userId);
  }
  return without;
}

/**
 * The same crowd on an open sale of the same stock: the scripts fire from the start, each person
 * clicks once after a moment's thought (as fast as a person is). Returns who got the units.
 */
export async function runOpenComparison(
  baseUrl: string,
  adminToken: string,
  run: QueueSaleRun,
): Promise<OpenComparison> {
  const origin = new URL(baseUrl).origin;
  const startAt = Date.now() + 2_000;
  const goodsId = await createGoods(baseUrl, adminToken, {
    name: 'Demo phone (open sale)',
    price: 4999,
    stock: run.stock,
    startAt: new Date(startAt),
  });
  await preheatGoods(baseUrl, adminToken, goodsId);
  const crowd: Crowd = { origin, goodsId, startAt };
  await sleep(startAt - Date.now());
  const accepted = new Map<number, number>();
  const people = run.people.map(async (person) => {
    const clicker: Person = { ...person, seen: new Map(), bought: undefined };
    await sleep(between(THINK_MS));
    await buyAsPerson(crowd, clicker);
    if (clicker.bought === '202') accepted.set(clicker.id, clicker.boughtAt!);
  });
  await Promise.all([
    snipeAll(crowd, run.scripts, run.people.length, new Map(), accepted, startAt + SALE_TIMEOUT_MS),
    Promise.all(people),
  ]);
  const scripts = new Set(run.scripts);
  const sold = [...accepted.keys()];
  return {
    goodsId,
    scriptsSold: sold.filter((id) => scripts.has(id)).length,
    peopleSold: sold.filter((id) => !scripts.has(id)).length,
  };
}
