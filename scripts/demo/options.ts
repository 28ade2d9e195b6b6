// The demo's command line: flags, their checks, and the usage text.

import { parsePositiveInteger, readFlags } from '../lib/args.js';
import { ScriptError, UsageError } from '../lib/errors.js';
import { MAX_BUYERS } from '../lib/load.js';

export const DEFAULT_DATABASE_URL = 'mysql://root:@127.0.0.1:3306/seckill';

// Shorter than the burst plus the drain, orders would expire while the first table's stock
// checks read them, and those checks would compare a moving target.
const MIN_PAYMENT_TIMEOUT_SECONDS = 5;
const MAX_PAYMENT_TIMEOUT_SECONDS = (2 ** 31 - 1) / 1000;
const EXPIRY_TIMEOUT_SLACK_SECONDS = 60;
/**
 * With --queue, orders are written over the whole sale (admissions are paced), not in one burst:
 * long enough that the first are not due before the pays after the sale.
 */
const QUEUE_PAYMENT_TIMEOUT_SECONDS = '30';
/** With --queue, the scripted buyers are this share of the people unless --scripts says. */
const DEFAULT_SCRIPT_SHARE = 0.05;

export const USAGE = `usage: npm run demo -- [options]

  --stock <n>            units for sale (default 100)
  --buyers <n>           distinct buyers (default 1000)
  --clicks <n>           concurrent purchase requests per buyer (default 2)
  --concurrency <n>      max requests in flight (default 200)
  --port <n>             port for the server this demo starts (default: a free one)
  --drain-timeout <s>    seconds to wait for accepted orders to reach MySQL (default 60)
  --pay-share <f>        fraction of the orders paid (through the fake provider), 0..1 (default 0.5);
                         the others are left to expire
  --payment-timeout <s>  ORDER_PAYMENT_TIMEOUT_MS of the server this demo starts, in seconds
                         (default 10, 30 with --queue; at least 5); with --url the server's own timeout applies
  --expiry-timeout <s>   seconds to wait for the unpaid orders to be cancelled
                         (default: payment timeout + ${EXPIRY_TIMEOUT_SLACK_SECONDS})
  --url <base>           use an already running server (e.g. http://127.0.0.1:3000) instead of starting one
  --queue                a queue sale instead of the burst: people join its waiting room and
                         follow their place on the queue stream, scripted buyers join in the
                         last moment and hammer the purchase route; then the same crowd on an
                         open sale, for the fairness figure
  --draw                 a draw sale instead of the burst: people enter during the entry window
                         and follow their entry on its stream, scripted buyers enter at the
                         last moment and hammer the purchase route; the draw at the close gives
                         the rights, the winners buy, some rights lapse to the waitlist; then
                         npm run verify-draw checks the draw from the outside
  --scripts <n>          with --queue or --draw: scripted buyers besides the --buyers people
                         (default: 5% of --buyers)
  --admit-per-second <n> with --queue: the sale's admitPerSecond (default 50)
  --admission-ttl <s>    with --queue: the sale's admissionTtlSeconds; with --draw: its
                         claimSeconds (default 5)
  --walk-away <f>        with --queue or --draw: the share of people who never buy once
                         admitted (drawn), 0..1 (default 0.1): their admissions (rights) lapse
                         and pass to the next
  --screenshot <file>    save a PNG of the operator dashboard (/dashboard) once the pays are done,
                         taken with headless Chromium (/usr/bin/chromium or CHROMIUM_PATH)
  --help                 show this help

Environment: DATABASE_URL (default ${DEFAULT_DATABASE_URL}), JWT_SECRET; ./.env is read too.`;

export interface DemoOptions {
  stock: number;
  buyers: number;
  clicks: number;
  concurrency: number;
  port: number | undefined;
  drainTimeoutSeconds: number;
  payShare: number;
  paymentTimeoutSeconds: number;
  expiryTimeoutSeconds: number;
  url: string | undefined;
  screenshot: string | undefined;
  /** A queue sale (scripts/demo/queue-sale.ts) instead of the burst. */
  queue: boolean;
  /** A draw sale (scripts/demo/draw-sale.ts) instead of the burst. */
  draw: boolean;
  scripts: number;
  admitPerSecond: number;
  admissionTtlSeconds: number;
  walkAway: number;
}

export class DemoError extends ScriptError {}

export function parsePositiveSeconds(name: string, raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value <= 0) {
    throw new UsageError(
      `--${name} must be a positive number of seconds, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

export function parsePaymentTimeout(raw: string): number {
  const value = Number(raw);
  if (
    raw.trim() === '' ||
    !Number.isFinite(value) ||
    value < MIN_PAYMENT_TIMEOUT_SECONDS ||
    value > MAX_PAYMENT_TIMEOUT_SECONDS
  ) {
    throw new UsageError(
      `--payment-timeout must be between ${MIN_PAYMENT_TIMEOUT_SECONDS} and ${Math.floor(MAX_PAYMENT_TIMEOUT_SECONDS)} seconds, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

export function parseFraction(name: string, raw: string): number {
  // Plain decimals only, for the same reason as parsePositiveInteger ("0x1" would be 1).
  const value = Number(raw);
  if (!/^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$/.test(raw) || value > 1) {
    throw new UsageError(`--${name} must be a number between 0 and 1, got ${JSON.stringify(raw)}`);
  }
  return value;
}

export function parseBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--url must be an absolute URL, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`--url must be http or https, got ${url.protocol}`);
  }
  // Routes are appended as absolute paths, so a trailing slash would double up.
  return url.href.replace(/\/+$/, '');
}

export function flagsOf(argv: string[]) {
  return readFlags(argv, {
    stock: { type: 'string', default: '100' },
    buyers: { type: 'string', default: '1000' },
    clicks: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '200' },
    port: { type: 'string' },
    'drain-timeout': { type: 'string', default: '60' },
    'pay-share': { type: 'string', default: '0.5' },
    // No default here: it follows --queue.
    'payment-timeout': { type: 'string' },
    // No default here: it follows --payment-timeout.
    'expiry-timeout': { type: 'string' },
    url: { type: 'string' },
    screenshot: { type: 'string' },
    queue: { type: 'boolean', default: false },
    draw: { type: 'boolean', default: false },
    // No default here: it follows --buyers.
    scripts: { type: 'string' },
    'admit-per-second': { type: 'string', default: '50' },
    'admission-ttl': { type: 'string', default: '5' },
    'walk-away': { type: 'string', default: '0.1' },
    help: { type: 'boolean', short: 'h', default: false },
  });
}

export function parseOptions(argv: string[]): DemoOptions | 'help' {
  const flags = flagsOf(argv);
  if (flags.help) return 'help';
  if (flags.queue && flags.draw) throw new UsageError('--queue and --draw: one sale at a time');
  const paymentTimeoutSeconds = parsePaymentTimeout(
    flags['payment-timeout'] ?? (flags.queue || flags.draw ? QUEUE_PAYMENT_TIMEOUT_SECONDS : '10'),
  );
  const buyers = parsePositiveInteger('buyers', flags.buyers, MAX_BUYERS - 1);
  return {
    stock: parsePositiveInteger('stock', flags.stock),
    buyers,
    clicks: parsePositiveInteger('clicks', flags.clicks, 1000),
    concurrency: parsePositiveInteger('concurrency', flags.concurrency, 100_000),
    port: flags.port === undefined ? undefined : parsePositiveInteger('port', flags.port, 65_535),
    drainTimeoutSeconds: parsePositiveSeconds('drain-timeout', flags['drain-timeout']),
    payShare: parseFraction('pay-share', flags['pay-share']),
    paymentTimeoutSeconds,
    expiryTimeoutSeconds:
      flags['expiry-timeout'] === undefined
        ? paymentTimeoutSeconds + EXPIRY_TIMEOUT_SLACK_SECONDS
        : parsePositiveSeconds('expiry-timeout', flags['expiry-timeout']),
    url: flags.url === undefined ? undefined : parseBaseUrl(flags.url),
    screenshot: flags.screenshot,
    queue: flags.queue,
    draw: flags.draw,
    scripts:
      flags.scripts === undefined
        ? Math.max(1, Math.round(buyers * DEFAULT_SCRIPT_SHARE))
        : parsePositiveInteger('scripts', flags.scripts, MAX_BUYERS - buyers),
    admitPerSecond: parsePositiveInteger('admit-per-second', flags['admit-per-second'], 100_000),
    admissionTtlSeconds: parsePositiveInteger('admission-ttl', flags['admission-ttl'], 3_600),
    walkAway: parseFraction('walk-away', flags['walk-away']),
  };
}
