import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repo's public/ folder: the same depth from src/common/http and dist/common/http. */
export const PUBLIC_DIR = fileURLToPath(new URL('../../../public/', import.meta.url));

/**
 * A folder of an installed package, as npm put it: pages take their vendor files from there.
 * Found from the package's entry point up to its package.json (some packages do not export it).
 */
export function packageDir(name: string, ...inside: string[]): string {
  let dir = dirname(createRequire(import.meta.url).resolve(name));
  while (!isPackageRoot(dir, name)) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`No package.json of ${name} above its entry point`);
    dir = parent;
  }
  return join(dir, ...inside);
}

function isPackageRoot(dir: string, name: string): boolean {
  const manifest = join(dir, 'package.json');
  return (
    existsSync(manifest) &&
    (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === name
  );
}

/**
 * The pages' own policy, stricter than the API's (which lets Swagger UI's inline script run):
 * scripts and styles only from this origin, no inline script, fetch only to this origin, never
 * framed. Their tokens travel in the Authorization header of fetch, never in a URL.
 */
export const PAGE_CSP = [
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

export function withPagePolicy(reply: FastifyReply): FastifyReply {
  return reply.header('Content-Security-Policy', PAGE_CSP);
}

/** A page's HTML: under its policy, never cached (a deploy changes its asset list). */
export function sendPage(reply: FastifyReply, html: string | Buffer): void {
  void withPagePolicy(reply)
    .header('Cache-Control', 'no-cache')
    .type('text/html; charset=utf-8')
    .send(html);
}

/**
 * Serves the files of `root` that `allowed` accepts (paths as `/name.js`) under `prefix`, under
 * the pages' policy. One route per file found at start (no wildcard): nothing outside the
 * folder, and nothing added to it later, is served.
 */
export function serveFiles(
  fastify: FastifyInstance,
  options: { root: string; prefix: string; allowed: (path: string) => boolean },
): void {
  void fastify.register(fastifyStatic, {
    root: options.root,
    prefix: options.prefix,
    wildcard: false,
    index: false,
    decorateReply: false,
    allowedPath: options.allowed,
    setHeaders: (reply) => void withPagePolicy(reply),
  });
}
