import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));

/** scripts/prometheus.sh finds one, or unpacks Debian's; it says how to get one when it cannot. */
function promtool(): string {
  return execFileSync('bash', [`${root}scripts/prometheus.sh`, 'promtool'], {
    encoding: 'utf8',
  }).trim();
}

function run(args: string[]): { status: number; output: string } {
  try {
    const output = execFileSync(promtool(), args, { cwd: here, encoding: 'utf8', stdio: 'pipe' });
    return { status: 0, output };
  } catch (error) {
    const failed = error as { status?: number; stdout?: string; stderr?: string };
    return { status: failed.status ?? 1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

/** promtool evaluates hours of series: seconds on a busy box. */
const PROMTOOL_MS = 60_000;

describe('the Prometheus rules (deploy/prometheus)', () => {
  it.each([
    [
      'are rules promtool reads (every expression parses, every name valid)',
      ['check', 'rules', 'seckill.rules.yml'],
    ],
    [
      'fire, and stay silent, as each case of seckill.rules.test.yml says',
      ['test', 'rules', 'seckill.rules.test.yml'],
    ],
  ])(
    '%s',
    (_behaviour, args) => {
      const result = run(args);
      expect(result.output).toContain('SUCCESS');
      expect(result.status).toBe(0);
    },
    PROMTOOL_MS,
  );
});
