import { Module } from '@nestjs/common';
import { TracingService } from './tracing.service.js';

/** OpenTelemetry's provider for the process (src/infra/tracing/tracing.ts has the helpers). */
@Module({ providers: [TracingService] })
export class TracingModule {}
