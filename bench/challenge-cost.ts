// What the purchase token's proof-of-work costs (SECKILL_REQUIRE_CHALLENGE): the server's issue
// and check, and a client's solve, at CHALLENGE_COST (default 5000) with the service's own code.
// A bot solves with Node's native PBKDF2 (altcha-lib/algorithms/pbkdf2); a browser's solver uses
// WebCrypto (altcha-lib/algorithms/web/pbkdf2), run here in Node's WebCrypto.
import { Logger } from '@nestjs/common';
import { solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey as nativeDeriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { deriveKey as webDeriveKey } from 'altcha-lib/algorithms/web/pbkdf2';
import { integerFlag, readFlags } from '../scripts/lib/args.js';
import { runScript } from '../scripts/lib/main.js';
import type { AuthConfig } from '../src/config/auth.config.js';
import type { SeckillConfig } from '../src/config/seckill.config.js';
import { ChallengeService } from '../src/modules/challenge/challenge.service.js';
import type { ChallengeStore } from '../src/modules/challenge/challenge.store.js';

const USAGE = `usage: npm run bench:challenge -- [--cost <n>] [--runs <n>]

  --cost <n>   CHALLENGE_COST (default 5000, the service's default)
  --runs <n>   challenges per figure (default 20)`;

function parse(argv: string[]): { cost: number; runs: number } | 'help' {
  const values = readFlags(argv, {
    cost: { type: 'string', default: '5000' },
    runs: { type: 'string', default: '20' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  return {
    cost: integerFlag('cost', values.cost, 1, 10_000_000),
    runs: integerFlag('runs', values.runs, 1, 1_000),
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? NaN;
const ms = (value: number) => `${value.toFixed(value < 10 ? 2 : 0)} ms`;

async function run({ cost, runs }: { cost: number; runs: number }): Promise<boolean> {
  Logger.overrideLogger(['error']);
  // Redemption's replay check is one SET NX in Redis; only the proof is timed here.
  const redeemed = { redeemOnce: async () => true } as unknown as ChallengeStore;
  const service = new ChallengeService(
    redeemed,
    { jwtSecret: 'challenge-cost-secret' } as AuthConfig,
    { challengeCost: cost, challengeTtlMs: 600_000 } as SeckillConfig,
  );
  const issue: number[] = [];
  const check: number[] = [];
  const bot: number[] = [];
  const browser: number[] = [];
  for (let i = 0; i < runs; i++) {
    let started = performance.now();
    const challenge: Challenge = await service.issue(1, 1);
    issue.push(performance.now() - started);

    started = performance.now();
    const solution = await solveChallenge({ challenge, deriveKey: nativeDeriveKey });
    bot.push(performance.now() - started);
    started = performance.now();
    await solveChallenge({ challenge, deriveKey: webDeriveKey });
    browser.push(performance.now() - started);

    const payload = Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
    started = performance.now();
    await service.redeem(1, 1, payload);
    check.push(performance.now() - started);
  }
  console.log(`CHALLENGE_COST=${cost}, ${runs} challenges, medians:`);
  console.log(`  server: issue ${ms(median(issue))}, check a solution ${ms(median(check))}`);
  console.log(`  bot (Node's native PBKDF2): solve ${ms(median(bot))}`);
  console.log(`  browser-style solver (WebCrypto, here in Node): solve ${ms(median(browser))}`);
  return true;
}

await runScript(parse, USAGE, run);
