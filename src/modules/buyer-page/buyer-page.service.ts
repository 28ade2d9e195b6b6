import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageDir, PUBLIC_DIR, serveFiles } from '../../common/http/page-files.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';

const PAGE_DIR = join(PUBLIC_DIR, 'sale');
/**
 * The browser half of altcha-lib (its ES modules as npm installed them: the solver and the Web
 * Crypto PBKDF2), so that the page solves the same challenge the server made, with no widget
 * and no bundler.
 */
const ALTCHA_FILES = new Set(['/pow.js', '/helpers.js', '/types.js', '/algorithms/web/pbkdf2.js']);

/**
 * The buyer's page (`GET /sale/:goodsId`, public/sale/index.html): its HTML says once what this
 * deployment asks of a purchase (a purchase token, a solved challenge), so that the page asks
 * for no more and no less. Its script and stylesheet are under /sale/assets/, the pages' shared
 * scripts under /sale/assets/shared/ and altcha-lib under /sale/assets/vendor/altcha-lib/.
 */
@Injectable()
export class BuyerPageService implements OnModuleInit {
  readonly html: string;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @InjectConfig(seckillConfig) seckill: SeckillConfig,
  ) {
    this.html = readFileSync(join(PAGE_DIR, 'index.html'), 'utf8')
      .replace('{{tokenRequired}}', String(seckill.requireToken))
      .replace('{{challengeRequired}}', String(seckill.requireChallenge));
  }

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    serveFiles(fastify, {
      root: PAGE_DIR,
      prefix: '/sale/assets/',
      allowed: (path) => path !== '/index.html',
    });
    serveFiles(fastify, {
      root: join(PUBLIC_DIR, 'shared'),
      prefix: '/sale/assets/shared/',
      allowed: () => true,
    });
    serveFiles(fastify, {
      root: packageDir('altcha-lib', 'dist', 'esm', 'v2'),
      prefix: '/sale/assets/vendor/altcha-lib/',
      allowed: (path) => ALTCHA_FILES.has(path),
    });
  }
}
