/**
 * The command line of a throwaway redis-server (the bench's and the tests' own): on one private
 * port of the loopback, nothing written to disk unless the caller adds a `--dir` of its own.
 */
export function ephemeralRedisArgs(port: number): string[] {
  return ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
}
