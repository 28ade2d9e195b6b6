import { readAppSection } from './app-section.js';
import { configNamespace } from './config-namespace.js';

/** The `app` section, read first: the others may depend on it (see ConfigNamespace). */
export const appConfig = configNamespace('app', readAppSection);
