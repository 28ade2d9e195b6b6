import { Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { tracingConfig, type TracingConfig } from '../../config/tracing.config.js';
import { startTracing } from './tracing.js';

/** Starts OpenTelemetry with the app (when configured) and flushes it when the app closes. */
@Injectable()
export class TracingService implements OnModuleInit, OnApplicationShutdown {
  private stop: () => Promise<void> = async () => undefined;

  constructor(@InjectConfig(tracingConfig) private readonly config: TracingConfig) {}

  onModuleInit(): void {
    this.stop = startTracing(this.config);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stop();
  }
}
