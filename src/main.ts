import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { createApp } from './bootstrap.js';
import { bootLogger } from './common/logging/logging.js';
import { ConfigValidationError } from './config/config-validation.error.js';

const logger = new Logger('Bootstrap');

async function main(): Promise<void> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const { app, config, beginDrain } = await createApp();
  const { port, swaggerEnabled } = config.http;
  await app.listen({ port, host: '0.0.0.0' });
  logger.log(
    swaggerEnabled
      ? `listening on port ${port} as role=${config.app.role}; API docs at /docs`
      : `listening on port ${port} as role=${config.app.role}`,
  );

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: draining (HTTP in flight, publishes awaiting confirms, consumer batch)`);
    // A drain that hangs must not keep a pod from being replaced.
    setTimeout(() => {
      logger.error('drain timed out; exiting with work left to redelivery');
      process.exit(1);
    }, config.app.shutdownTimeoutMs + 5_000).unref();
    beginDrain();
    app
      .close()
      .then(() => {
        logger.log('drained; bye');
        process.exit(0);
      })
      .catch((error: Error) => {
        logger.error(`shutdown failed: ${error.message}`);
        process.exit(1);
      });
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch(async (error: unknown) => {
  // The app's logger may not exist yet (a bad configuration stops the boot before it does).
  const log = await bootLogger(process.env);
  if (error instanceof ConfigValidationError) {
    log.fatal(`configuration: ${error.message}`);
  } else {
    log.fatal({ err: error }, 'failed to start');
  }
  process.exit(1);
});
