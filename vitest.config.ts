import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

// SWC (not esbuild) because Nest's DI needs emitDecoratorMetadata.
export default defineConfig({
  plugins: [swc.vite({ module: { type: 'es6' } })],
  test: {
    include: [
      'src/**/*.spec.ts',
      'test/**/*.e2e-spec.ts',
      'bench/**/*.spec.ts',
      'scripts/**/*.spec.ts',
    ],
    // e2e files share one MySQL database, one Redis db and one broker: run files one at a time.
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    setupFiles: ['test/setup-env.ts'],
    globalSetup: ['test/global-setup.ts'],
  },
});
