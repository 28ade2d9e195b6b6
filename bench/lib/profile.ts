// Where a side's CPU went, from the V8 profile `node --cpu-prof` writes at exit: self time summed
// by package (or the project's own files) and by function.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
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

export function summarizeProfile(profile: CpuProfile, count = 15): ProfileSummary {
  const hits = new Map<number, number>();
  for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
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
  }
  return {
    seconds: Number(((profile.endTime - profile.startTime) / 1e6).toFixed(1)),
    byPackage: top(byPackage, Math.max(1, total), count),
    byFunction: top(byFunction, Math.max(1, total), count),
  };
}

/** The main thread's profile: the largest of the directory's (a loader thread's is tiny). */
export function readProfile(dir: string): ProfileSummary {
  const files = readdirSync(dir)
    .filter((file) => file.endsWith('.cpuprofile'))
    .map((file) => join(dir, file))
    .sort((a, b) => statSync(b).size - statSync(a).size);
  if (files[0] === undefined) throw new Error(`no .cpuprofile in ${dir}`);
  return summarizeProfile(JSON.parse(readFileSync(files[0], 'utf8')) as CpuProfile);
}
