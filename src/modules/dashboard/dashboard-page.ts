import fastifyStatic from '@fastify/static';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Same depth from src/modules/dashboard and dist/modules/dashboard: the repo's public/dashboard.
const PAGE_DIR = fileURLToPath(new URL('../../../public/dashboard/', import.meta.url));
/** uPlot's browser build, served from node_modules as npm installed it: no CDN, no bundler. */
const UPLOT_DIR = join(
  dirname(createRequire(import.meta.url).resolve('uplot/package.json')),
  'dist',
);
const UPLOT_FILES = new Set(['/uPlot.iife.min.js', '/uPlot.min.css']);

/**
 * The page's own policy, stricter than the API's (which lets Swagger UI's inline script run):
 * scripts and styles only from this origin, no inline script, fetch only to this origin, never
 * framed. The token travels in the Authorization header of fetch, never in a URL.
 */
export const DASHBOARD_CSP = [
  `default-src 'self'`,
  `script-src 'self'`,
  `style-src 'self'`,
  `img-src 'self' data:`,
  `connect-src 'self'`,
  `object-src 'none'`,
  `base-uri 'none'`,
  `form-action 'none'`,
  `frame-ancestors 'none'`,
].join('; ');

/**
 * Serves the operator dashboard: `GET /dashboard` (public/dashboard/index.html; the page itself
 * asks for an admin token), its script and stylesheet under /dashboard/, and uPlot under
 * /dashboard/vendor/uplot/. Routes are added on Fastify directly: they sit outside /api/v1 and
 * carry no Nest guard (the data they show comes from the admin feed, which has one).
 */
@Injectable()
export class DashboardPage implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    const page = readFileSync(join(PAGE_DIR, 'index.html'));
    const withPolicy = (reply: FastifyReply) =>
      reply.header('Content-Security-Policy', DASHBOARD_CSP);
    fastify.get('/dashboard', (_request, reply) => {
      void withPolicy(reply)
        .header('Cache-Control', 'no-cache')
        .type('text/html; charset=utf-8')
        .send(page);
    });
    // One route per file found at start (no wildcard): nothing outside these folders is served.
    void fastify.register(fastifyStatic, {
      root: PAGE_DIR,
      prefix: '/dashboard/',
      wildcard: false,
      index: false,
      decorateReply: false,
      allowedPath: (path) => path !== '/index.html',
      setHeaders: (reply) => void withPolicy(reply),
    });
    void fastify.register(fastifyStatic, {
      root: UPLOT_DIR,
      prefix: '/dashboard/vendor/uplot/',
      wildcard: false,
      index: false,
      decorateReply: false,
      allowedPath: (path) => UPLOT_FILES.has(path),
    });
  }
}
