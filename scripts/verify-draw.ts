// Checks a queue sale's draw from the outside: the public fairness answer and the operator's
// export, nothing else (src/modules/waiting-room/draw-verifier.ts does the arithmetic).
import { readFile } from 'node:fs/promises';

import { parsePositiveInteger, readFlags } from './lib/args.js';
import { ScriptError, UsageError } from './lib/errors.js';
import { runScript } from './lib/main.js';
import { seedCommitment } from '../src/modules/queue-journal/fairness.js';
import {
  verifyDraw,
  type DrawExport,
  type PublishedDraw,
} from '../src/modules/waiting-room/draw-verifier.js';
import { queueOrder } from '../src/modules/waiting-room/queue-order.js';

const USAGE = `usage: npm run verify-draw -- --goods <id> [--base-url <url>] [--export <file>] [--join-index <n>]

Reads GET <url>/api/v1/goods/<id>/fairness (public) and checks that the revealed secret is the
one committed to before the first join. With --export (the JSON of the admin route
GET /api/v1/admin/goods/<id>/entries) it recomputes the pre-queue's digest, the seed and every
admission's place, and exits 0 when all agree, or 1 naming the first place that differs. With
--join-index (a join receipt's joinIndex) it prints the place the draw gives that join.

  --goods <id>        the sale
  --base-url <url>    the service (default http://localhost:3000)
  --export <file>     the operator's export of the sale
  --join-index <n>    a pre-queue join index: its place in the drawn order`;

interface Options {
  goodsId: number;
  baseUrl: string;
  exportFile: string | undefined;
  joinIndex: number | undefined;
}

function parse(argv: string[]): Options | 'help' {
  const values = readFlags(argv, {
    goods: { type: 'string' },
    'base-url': { type: 'string', default: 'http://localhost:3000' },
    export: { type: 'string' },
    'join-index': { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  const joinIndex = values['join-index'];
  if (joinIndex !== undefined && !/^(0|[1-9][0-9]*)$/.test(joinIndex)) {
    throw new UsageError(`--join-index must be a join index (0, 1, …), got ${joinIndex}`);
  }
  return {
    goodsId: parsePositiveInteger('goods', values.goods),
    baseUrl: values['base-url'].replace(/\/+$/, ''),
    exportFile: values.export,
    joinIndex: joinIndex === undefined ? undefined : Number(joinIndex),
  };
}

async function published(options: Options): Promise<PublishedDraw> {
  const url = `${options.baseUrl}/api/v1/goods/${options.goodsId}/fairness`;
  const response = await fetch(url).catch((error: Error) => {
    throw new ScriptError(`${url}: ${error.message}`);
  });
  const body = (await response.json().catch(() => null)) as PublishedDraw | null;
  if (!response.ok || body === null) {
    throw new ScriptError(`${url} answered ${response.status}: ${JSON.stringify(body)}`);
  }
  return body;
}

async function run(options: Options): Promise<boolean> {
  const draw = await published(options);
  if (options.joinIndex !== undefined) {
    if (!draw.drawn || !draw.seed || !draw.preSize) {
      console.log(`goods ${options.goodsId}: the order is not drawn yet`);
      return false;
    }
    if (options.joinIndex >= draw.preSize) {
      console.log(
        `join index ${options.joinIndex} is not in the pre-queue (0..${draw.preSize - 1})`,
      );
      return false;
    }
    const place = queueOrder(draw.seed, draw.preSize).placeOf(options.joinIndex);
    console.log(
      `join index ${options.joinIndex}: place ${place} of ${draw.preSize} (0-based; places nobody holds are passed over)`,
    );
  }
  if (options.exportFile === undefined) {
    if (options.joinIndex !== undefined) return true;
    if (!draw.drawn || !draw.secret) {
      console.log(`goods ${options.goodsId}: committed to ${draw.seedCommitment}, not drawn yet`);
      return true;
    }
    const ok = seedCommitment(Buffer.from(draw.secret, 'hex')) === draw.seedCommitment;
    console.log(
      ok
        ? `OK goods ${options.goodsId}: the revealed secret matches its commitment (add --export to check the order)`
        : `FAILED goods ${options.goodsId}: the revealed secret does not hash to the commitment`,
    );
    return ok;
  }
  const exported = JSON.parse(await readFile(options.exportFile, 'utf8')) as DrawExport;
  const verdict = verifyDraw(draw, exported);
  console.log(verdict.ok ? `OK ${verdict.summary}` : `FAILED ${verdict.problem}`);
  return verdict.ok;
}

await runScript(parse, USAGE, run);
