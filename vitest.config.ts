import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

// SWC (not esbuild) because Nest's DI needs emitDecoratorMetadata.
export default defineConfig({
  plugins: [swc.vite({ module: { type: 'es6' } })],
  test: {
    setupFiles: ['test/setup-env.ts'],
    projects: [
      {
        // Specs beside the code that need no service: `npm run test:unit` passes with MySQL,
        // Redis and RabbitMQ stopped. Files run in parallel.
        extends: true,
        test: {
          name: 'unit',
          include: [
            'src/**/*.spec.ts',
            'bench/**/*.spec.ts',
            'scripts/**/*.spec.ts',
            'deploy/**/*.spec.ts',
          ],
        },
      },
      {
        // Against the real services: e2e specs in test/, and the specs beside the code that run
        // Lua scripts or barriers on a real Redis (`*.int-spec.ts`). They share one MySQL
        // database, one Redis db and one broker: files run one at a time, from empty stores.
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/**/*.e2e-spec.ts', 'src/**/*.int-spec.ts'],
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
