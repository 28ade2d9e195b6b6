// The project's own Redis scripts, purchase lock and key layout, wired on a client of a tool's own
// as the app wires them (one loader, the typed wrappers): what the Redis-only benches drive,
// through this one seam, so that a change in the sale store is followed here once, not in each
// bench.
import { LuaScriptsService } from '../../src/infra/redis/lua-scripts.service.js';
import type { RedisClient } from '../../src/infra/redis/redis-client.js';
import { RedisLocksService } from '../../src/infra/redis/redis-locks.service.js';
import { LedgerScripts } from '../../src/modules/sale-store/ledger.scripts.js';
import { LoadScripts } from '../../src/modules/sale-store/load.scripts.js';
import { ThrottleScripts } from '../../src/modules/rate-limit/throttle.scripts.js';
import { QueueScripts } from '../../src/modules/waiting-room/queue.scripts.js';

export { keySlot } from '../../src/infra/redis/redis-client.js';
export {
  allBucketKeys,
  bucketKeys,
  queueKeys,
  saleKeys,
  throttleKeys,
} from '../../src/infra/redis/seckill-keys.js';
export { ADMIT_BATCH, JoinCode } from '../../src/modules/waiting-room/queue.scripts.js';
export { homeBucket } from '../../src/common/stock-buckets.js';
export { encodeOrderMessage } from '../../src/modules/messaging/order-message.js';
export { splitEvenly } from '../../src/modules/sale-store/bucket-counts.store.js';
export { DeductCode } from '../../src/modules/sale-store/ledger.scripts.js';

export interface SaleScripts {
  /** deduct, release, claim, complete (lua/seckill-*.lua) */
  ledger: LedgerScripts;
  /** preheat, rebuild, freeze */
  load: LoadScripts;
  /** the rate limits' budgets (lua/throttle-hits.lua) */
  throttle: ThrottleScripts;
  /** the per-user purchase lock (Redlock) and its release with the outbox entry */
  locks: RedisLocksService;
  /** a queue sale's waiting room: join, tick (shuffle, lapse, admit), standing, room */
  queue: QueueScripts;
}

/** The scripts loaded on `client` (every one, as the app's loader does at start). */
export function saleScriptsOn(client: RedisClient): SaleScripts {
  const lua = new LuaScriptsService(client);
  lua.onModuleInit();
  return {
    ledger: new LedgerScripts(lua),
    load: new LoadScripts(lua),
    throttle: new ThrottleScripts(lua),
    locks: new RedisLocksService(client, lua),
    queue: new QueueScripts(lua),
  };
}
