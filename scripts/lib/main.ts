// The shape every script's entry point shares: parse the command line, run, always clean up.
import { installSignalHandlers, runCleanups } from './cleanup.js';
import { ScriptError, UsageError } from './errors.js';

/** Sets the exit code: 0 when `run` says all is well, 1 when not or it failed, 2 on bad usage. */
export async function runScript<O>(
  parse: (argv: string[]) => O | 'help',
  usage: string,
  run: (options: O) => Promise<boolean>,
): Promise<void> {
  let options: O | 'help';
  try {
    options = parse(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`error: ${error.message}\n\n${usage}`);
    process.exitCode = 2;
    return;
  }
  if (options === 'help') {
    console.log(usage);
    return;
  }
  installSignalHandlers();
  try {
    process.exitCode = (await run(options)) ? 0 : 1;
  } catch (error) {
    console.error(error instanceof ScriptError ? `error: ${error.message}` : error);
    process.exitCode = 1;
  } finally {
    await runCleanups();
  }
}
