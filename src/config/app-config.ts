import { Inject } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from './env.validation.js';

export const APP_CONFIG = Symbol('APP_CONFIG');

/** Injects the validated, typed configuration (see env.validation.ts). */
export const InjectConfig = () => Inject(APP_CONFIG);

export const appConfigProvider = {
  provide: APP_CONFIG,
  inject: [ConfigService],
  useFactory: (config: ConfigService): AppConfig => config.get<AppConfig>('app')!,
};
