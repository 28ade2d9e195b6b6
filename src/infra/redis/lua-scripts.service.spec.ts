import {
  cpSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LuaScriptsService, MAX_THROTTLE_BUDGETS, readScripts } from './lua-scripts.service.js';
import type { RedisClient } from './redis-client.js';

const LUA_DIR = fileURLToPath(new URL('../../../lua/', import.meta.url));

describe('LuaScriptsService', () => {
  const copies: string[] = [];
  afterEach(() => copies.splice(0).forEach((dir) => rmSync(dir, { recursive: true })));

  /** A copy of lua/ to break. */
  function copyOfLua(): string {
    const dir = mkdtempSync(join(tmpdir(), 'lua-scripts-'));
    copies.push(dir);
    cpSync(LUA_DIR, dir, { recursive: true });
    return dir;
  }

  it('should define every script at init, the throttle script once per budget count, and send nothing', () => {
    const defineCommand = vi.fn(
      (_name: string, _definition: { numberOfKeys?: number }) => undefined,
    );
    new LuaScriptsService({ defineCommand } as unknown as RedisClient).onModuleInit();

    const defined = new Map(
      defineCommand.mock.calls.map(([name, definition]) => [name, definition.numberOfKeys]),
    );
    expect(defined.get('seckillDeduct')).toBe(10);
    expect(defined.get('redisTime')).toBe(1);
    for (let budgets = 1; budgets <= MAX_THROTTLE_BUDGETS; budgets++) {
      expect(defined.get(`throttleHits${budgets}`)).toBe(budgets * 2);
    }
    expect(defined.has('throttleHits')).toBe(false);
    // The dashboard's caller passes its key count first.
    expect(defined.has('dashboardSale')).toBe(true);
    expect(defined.get('dashboardSale')).toBeUndefined();
    const files = readdirSync(LUA_DIR).filter((file) => file.endsWith('.lua'));
    // One command a file, but the throttle script's one per budget count.
    expect(defineCommand).toHaveBeenCalledTimes(files.length - 1 + MAX_THROTTLE_BUDGETS);
  });

  it('should refuse to start when a registered script is missing, naming its file', () => {
    const dir = copyOfLua();
    unlinkSync(join(dir, 'barrier-tick.lua'));

    expect(() => readScripts(dir)).toThrow(/barrier-tick\.lua \(script barrierTick\) is missing/);
  });

  it('should paste an included library into the scripts that name it, and refuse a missing one', () => {
    const library = readFileSync(join(LUA_DIR, 'lib/queue-order.lua'), 'utf8');
    const bodies = readScripts();
    expect(bodies.get('queueTick')).toContain(library);
    expect(bodies.get('queueTick')).not.toMatch(/^--!include/m);

    const dir = copyOfLua();
    unlinkSync(join(dir, 'lib/queue-order.lua'));
    expect(() => readScripts(dir)).toThrow(/includes lib\/queue-order\.lua, which is missing/);
  });

  it('should refuse to start when a script in the folder has no registry entry, naming it', () => {
    const dir = copyOfLua();
    writeFileSync(join(dir, 'forgotten.lua'), "return redis.call('PING')");

    expect(() => readScripts(dir)).toThrow(/forgotten\.lua .*no entry in the script registry/);
  });
});
