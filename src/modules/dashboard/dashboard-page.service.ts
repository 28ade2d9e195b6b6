import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageDir, PUBLIC_DIR, sendPage, serveFiles } from '../../common/http/page-files.js';

const PAGE_DIR = join(PUBLIC_DIR, 'dashboard');
/** uPlot's browser build, served from node_modules as npm installed it: no CDN, no bundler. */
const UPLOT_FILES = new Set(['/uPlot.iife.min.js', '/uPlot.min.css']);

/**
 * Serves the operator dashboard: `GET /dashboard` (public/dashboard/index.html; the page itself
 * asks for an admin token), its script and stylesheet under /dashboard/, the pages' shared
 * scripts under /dashboard/shared/ and uPlot under /dashboard/vendor/uplot/. Routes are added on
 * Fastify directly: they sit outside /api/v1 and carry no Nest guard (the data they show comes
 * from the admin feed, which has one).
 */
@Injectable()
export class DashboardPageService implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    const page = readFileSync(join(PAGE_DIR, 'index.html'));
    fastify.get('/dashboard', (_request, reply) => sendPage(reply, page));
    serveFiles(fastify, {
      root: PAGE_DIR,
      prefix: '/dashboard/',
      allowed: (path) => path !== '/index.html',
    });
    serveFiles(fastify, {
      root: join(PUBLIC_DIR, 'shared'),
      prefix: '/dashboard/shared/',
      allowed: () => true,
    });
    serveFiles(fastify, {
      root: packageDir('uplot', 'dist'),
      prefix: '/dashboard/vendor/uplot/',
      allowed: (path) => UPLOT_FILES.has(path),
    });
  }
}
