// Mints a bearer token for manual testing: TOKEN=$(npm run -s token -- --user 1 [--admin] [--ttl 3600])

import { parsePositiveInteger, readFlags } from './lib/args.js';
import { UsageError } from './lib/errors.js';
import { loadDotEnv, signToken } from './lib/jwt.js';

const USAGE = 'usage: npm run token -- --user <positive integer> [--admin] [--ttl <seconds>]';

interface TokenArgs {
  userId: number;
  admin: boolean;
  ttlSeconds: number | undefined;
}

function flagsOf(argv: string[]) {
  return readFlags(argv, {
    user: { type: 'string' },
    admin: { type: 'boolean', default: false },
    ttl: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  });
}

function parseTokenArgs(argv: string[]): TokenArgs | 'help' {
  const flags = flagsOf(argv);
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
