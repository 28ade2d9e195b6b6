import { Injectable } from '@nestjs/common';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import { queueRestoreKeys } from '../../infra/redis/seckill-keys.js';

/** The room's state as the restore writes it back first (lua/queue-restore.lua "begin"). */
export interface RestoreBegin {
  /** '' when none is written back. */
  seed: string;
  preSize: number | '';
  head: number;
  preSeq: number;
  seq: number;
  /** The room's clock when the journal last had it, '' when none. */
  roomMs: number | '';
  /** This restore's own token, which "open" must show. */
  token: string;
}

/** The waiting room's restore from its MySQL journal, step by step (lua/queue-restore.lua), typed. */
@Injectable()
export class QueueRestoreScripts {
  constructor(private readonly lua: LuaScriptsService) {}

  /** True while the room is the journal's. */
  async isJournals(goodsId: number): Promise<boolean> {
    return (await this.step(goodsId, 'journal')) === 1;
  }

  /** The room stops being the journal's; how long ago (ms) it stopped taking joins. */
  drop(goodsId: number): Promise<number> {
    return this.step(goodsId, 'drop');
  }

  async begin(goodsId: number, room: RestoreBegin): Promise<void> {
    const { seed, preSize, head, preSeq, seq, roomMs, token } = room;
    await this.step(goodsId, 'begin', seed, preSize, head, preSeq, seq, roomMs, token);
  }

  /** Joins of the pre-queue or the line, as flat (position, userId) pairs. */
  async members(goodsId: number, line: 'pre' | 'line', pairs: (string | number)[]): Promise<void> {
    await this.step(goodsId, line, ...pairs);
  }

  /** Accounts per address, as flat (address, accounts) pairs. */
  async addresses(goodsId: number, pairs: (string | number)[]): Promise<void> {
    await this.step(goodsId, 'addresses', ...pairs);
  }

  /** Admissions, as flat (userId, until, used "1"/"0") triples. */
  async admitted(
    goodsId: number,
    roomMs: number | '',
    triples: (string | number)[],
  ): Promise<void> {
    await this.step(goodsId, 'admitted', roomMs, ...triples);
  }

  /** The room made the journal's; false when this restore was cut short (see the script). */
  async open(goodsId: number, token: string): Promise<boolean> {
    return (await this.step(goodsId, 'open', token)) === 1;
  }

  private async step(goodsId: number, ...args: (string | number)[]): Promise<number> {
    return (await this.lua.run('queueRestore', ...queueRestoreKeys(goodsId), ...args)) as number;
  }
}
