import { Injectable } from '@nestjs/common';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';

/** The blocklist's script (lua/blocklist-prune.lua), typed. */
@Injectable()
export class BlocklistScripts {
  constructor(private readonly lua: LuaScriptsService) {}

  /** See lua/blocklist-prune.lua: drops each `[field, json]` read as expired, if still that. */
  async prune(key: string, expired: readonly [string, string][]): Promise<number> {
    return (await this.lua.run('blocklistPrune', key, ...expired.flat())) as number;
  }
}
