// Mints a bearer token for manual testing: TOKEN=$(npm run -s token -- --user 1 [--admin] [--ttl 3600])
import { parseArgs } from 'node:util';

import { loadDotEnv, signToken } from './lib/jwt.js';

const USAGE = 'usage: npm run token -- --user <positive integer> [--admin] [--ttl <seconds>]';

interface TokenArgs {
  userId: number;
  admin: boolean;
  ttlSeconds: number | undefined;
}

class UsageError extends Error {}

function parsePositiveInteger(name: string, raw: string | undefined): number {
  // Reject "1.5", "1e3", " 7" and friends that Number() would happily accept.
  if (raw === undefined || !/^[1-9][0-9]*$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new UsageError(
      `--${name} must be a positive integer, got ${raw === undefined ? 'nothing' : JSON.stringify(raw)}`,
    );
  }
  return Number(raw);
}

function readFlags(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: {
        user: { type: 'string' },
        admin: { type: 'boolean', default: false },
        ttl: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    // Unknown flags or a flag missing its value are the caller's mistake: exit 2, not a stack trace.
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function parseTokenArgs(argv: string[]): TokenArgs | 'help' {
  const flags = readFlags(argv);
  if (flags.help) return 'help';
  return {
    userId: parsePositiveInteger('user', flags.user),
    admin: flags.admin,
    ttlSeconds: flags.ttl === undefined ? undefined : parsePositiveInteger('ttl', flags.ttl),
  };
}

function main(): void {
  loadDotEnv();
  let args: TokenArgs | 'help';
  try {
    args = parseTokenArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`error: ${error.message}\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  if (args === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  // Only the token goes to stdout so the command can be used inside $(...).
  process.stdout.write(`${signToken(args)}\n`);
}

main();
