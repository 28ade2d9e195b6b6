// Where a side's CPU went, from the V8 profile `node --cpu-prof` writes at exit: self time summed
// by package (or the project's own files), by function, and for the project by layer of a
// purchase (PURCHASE_LAYERS).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
}

export interface ProfileShare {
  name: string;
  percent: number;
}

export interface ProfileSummary {
  seconds: number;
  byPackage: ProfileShare[];
  byFunction: ProfileShare[];
  /** With layers given: every sample's share, by the layer its stack is in (all of them). */
  byLayer?: ProfileShare[];
}

/** A layer: the frames it owns, by file (and, for a file whose hooks call the next, function). */
export interface Layer {
  name: string;
  url: RegExp;
  functions?: readonly string[];
}

/**
 * The project's purchase, layer by layer. A sample belongs to the innermost frame on its stack
 * that one of these owns, so a layer's share includes the library code it calls (the JWT
 * library under the token check, ioredis writing a script call under the deduct); samples no
 * layer owns go by the package of their innermost frame that has one. Fastify's request hooks
 * run the next hook inside their own frame, so those files are named by the functions that do
 * the layer's work, not by the hook.
 */
export const PURCHASE_LAYERS: readonly Layer[] = [
  { name: 'token check (JWT)', url: /\/modules\/auth\/authenticator\.js$/ },
  {
    name: 'client address',
    url: /\/common\/http\/client-address\.js$/,
    functions: ['resolveClient'],
  },
  {
    name: 'security headers',
    url: /\/common\/http\/security-headers\.js$/,
    functions: ['setSecurityHeaders'],
  },
  { name: 'blocklist and sold-out memo', url: /\/(blocklist\.service|sold-out-memo)\.js$/ },
  {
    name: 'entry guard and rate limits',
    url: /\/modules\/(rate-limit\/|auth\/(entry|auth)\.guard\.js$)/,
  },
  { name: 'per-user lock (Redlock)', url: /\/infra\/redis\/redis-locks\.js$/ },
  { name: 'deduct (sale store, Lua)', url: /\/modules\/sale-store\// },
  {
    name: 'publish and confirm',
    url: /\/modules\/messaging\/(order-publisher\.service|order-message)\.js$/,
  },
  {
    name: 'purchase service, controller, errors',
    url: /\/(modules\/(seckill|availability)\/|common\/(errors|pipes)\/)/,
  },
  {
    name: 'order consumer and MySQL writer',
    url: /\/modules\/(messaging\/order-consumer|orders\/)|\/common\/batching\//,
  },
  { name: 'metrics', url: /\/modules\/metrics\/|node_modules\/prom-client\// },
];

/** Samples no layer owns, by the package of their innermost frame that has one. */
function packageLayer(url: string): string | undefined {
  const name = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (name === undefined) return undefined;
  if (name.startsWith('@nestjs/')) return 'Nest (router, guards, interceptors)';
  if (/^(fastify|find-my-way|@fastify\/|avvio|light-my-request)/.test(name)) return 'Fastify';
  if (/^(ioredis|redis-parser|redlock|cluster-key-slot)$/.test(name))
    return 'Redis client (replies)';
  if (/^(amqplib|amqp-connection-manager)$/.test(name)) return 'RabbitMQ client';
  if (/^(mysql2|typeorm|sql-escaper|sqlstring)$/.test(name)) return 'MySQL client';
  if (/^(pino|pino-std-serializers|sonic-boom|thread-stream|nestjs-pino)/.test(name))
    return 'logging';
  return `other packages`;
}

function layerOfFrame(
  frame: ProfileNode['callFrame'],
  layers: readonly Layer[],
): string | undefined {
  for (const layer of layers) {
    if (!layer.url.test(frame.url)) continue;
    if (layer.functions === undefined || layer.functions.includes(frame.functionName)) {
      return layer.name;
    }
  }
  return undefined;
}

/** The layer of each node: its own, else its parent's, up the stack. */
function layersByNode(profile: CpuProfile, layers: readonly Layer[]): Map<number, string> {
  const parents = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parents.set(child, node.id);
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const result = new Map<number, string>();
  for (const node of profile.nodes) {
    let owner: string | undefined;
    let fallback: string | undefined;
    for (
      let id: number | undefined = node.id;
      id !== undefined && owner === undefined;
      id = parents.get(id)
    ) {
      const frame = nodes.get(id)!.callFrame;
      owner = layerOfFrame(frame, layers);
      fallback ??= packageLayer(frame.url);
    }
    const { functionName } = node.callFrame;
    result.set(
      node.id,
      owner ??
        fallback ??
        (functionName === '(garbage collector)' ? functionName : 'node (sockets, timers, startup)'),
    );
  }
  return result;
}

/** "ioredis", "@nestjs/core", "app: dist/modules/…", "node internals", "(garbage collector)"… */
export function packageOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1] ?? url;
  if (url.startsWith('node:')) return 'node internals';
  const own = /\/(dist|bench|src|scripts)\/(.*)$/.exec(url);
  return own ? `app: ${own[1]}/${own[2]}` : url;
}

function top(map: Map<string, number>, total: number, count: number): ProfileShare[] {
  return [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, hits]) => ({ name, percent: Number(((hits / total) * 100).toFixed(1)) }));
}

export function summarizeProfile(
  profile: CpuProfile,
  count = 15,
  layers?: readonly Layer[],
): ProfileSummary {
  const hits = new Map<number, number>();
  for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const byLayer = new Map<string, number>();
  const layerOf = layers === undefined ? undefined : layersByNode(profile, layers);
  let total = 0;
  for (const node of profile.nodes) {
    const n = hits.get(node.id) ?? node.hitCount ?? 0;
    if (n === 0 || node.callFrame.functionName === '(idle)') continue;
    total += n;
    const { url, functionName, lineNumber } = node.callFrame;
    const pkg = packageOf(url, functionName);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + n);
    const fn = `${functionName || '(anonymous)'} ${pkg}${url ? `:${lineNumber + 1}` : ''}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + n);
    const layer = layerOf?.get(node.id);
    if (layer !== undefined) byLayer.set(layer, (byLayer.get(layer) ?? 0) + n);
  }
  return {
    seconds: Number(((profile.endTime - profile.startTime) / 1e6).toFixed(1)),
    byPackage: top(byPackage, Math.max(1, total), count),
    byFunction: top(byFunction, Math.max(1, total), count),
    ...(layerOf && { byLayer: top(byLayer, Math.max(1, total), byLayer.size) }),
  };
}

/** The main thread's profile: the largest of the directory's (a loader thread's is tiny). */
export function readProfile(dir: string, layers?: readonly Layer[]): ProfileSummary {
  const files = readdirSync(dir)
    .filter((file) => file.endsWith('.cpuprofile'))
    .map((file) => join(dir, file))
    .sort((a, b) => statSync(b).size - statSync(a).size);
  if (files[0] === undefined) throw new Error(`no .cpuprofile in ${dir}`);
  return summarizeProfile(JSON.parse(readFileSync(files[0], 'utf8')) as CpuProfile, 15, layers);
}
