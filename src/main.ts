import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { createApp } from './bootstrap.js';
import { ConfigValidationError } from './config/env.validation.js';

async function main(): Promise<void> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const { app, config } = await createApp();
  await app.listen({ port: config.port, host: '0.0.0.0' });
  new Logger('Bootstrap').log(`listening on port ${config.port}; API docs at /docs`);
}

main().catch((error: unknown) => {
  const message =
    error instanceof ConfigValidationError ? `configuration: ${error.message}` : error;
  new Logger('Bootstrap').error(
    message instanceof Error ? (message.stack ?? message.message) : String(message),
  );
  process.exit(1);
});
