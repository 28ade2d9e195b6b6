import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import house from './scripts/lint/house-rules.js';
import { layersConfig } from './scripts/lint/layers.js';

const REDIS_RULE =
  'Redis is reached through a *.store.ts (keys and commands) or a *.scripts.ts (Lua) of the feature (CONTRIBUTING.md)';
const AMQP_RULE =
  "amqplib's types stay in src/infra/rabbitmq and messaging's two broker ends, queue-consumer.ts and order.publisher.ts (CONTRIBUTING.md)";

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.cache/**', 'eslint.config.js'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-extraneous-class': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    // House rules (CONTRIBUTING.md): a class is named as its file's role says.
    files: ['src/**/*.ts'],
    ignores: ['src/**/*spec.ts', 'src/**/*.d.ts'],
    plugins: { house },
    rules: { 'house/class-matches-file': 'error' },
  },
  {
    // House rules (CONTRIBUTING.md): only a feature's stores (*.store.ts) and scripts
    // (*.scripts.ts) reach Redis, through the client and the one Lua loader in src/infra/redis.
    files: ['src/**/*.ts'],
    ignores: ['src/infra/redis/**', 'src/**/*.store.ts', 'src/**/*.scripts.ts', 'src/**/*spec.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/infra/redis/redis.constants.js'],
              importNames: ['REDIS_CLIENT'],
              message: REDIS_RULE,
            },
            {
              group: ['**/infra/redis/redis-client.js'],
              importNames: ['RedisClient'],
              message: REDIS_RULE,
            },
            { group: ['**/infra/redis/lua-scripts.service.js'], message: REDIS_RULE },
            { group: ['ioredis'], message: REDIS_RULE },
            {
              group: ['amqplib', 'amqp-connection-manager'],
              message: AMQP_RULE,
            },
          ],
        },
      ],
    },
  },
  // House rules (CONTRIBUTING.md): the folders of src/ form layers, no import goes up or sideways.
  layersConfig(),
  {
    // The broker's own types stay in src/infra/rabbitmq and messaging's two broker ends.
    files: [
      'src/infra/rabbitmq/**/*.ts',
      'src/modules/messaging/queue-consumer.ts',
      'src/modules/messaging/order.publisher.ts',
    ],
    rules: { '@typescript-eslint/no-restricted-imports': 'off' },
  },
  {
    // The lint rules themselves: plain JavaScript modules run by ESLint in Node.
    files: ['scripts/lint/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The pages' browser scripts: plain JavaScript modules, no type information, browser globals.
    files: ['public/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'module',
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'location',
          'history',
          'sessionStorage',
          'fetch',
          'FormData',
          'TextDecoder',
          'AbortController',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'Headers',
          'confirm',
          'crypto',
          'btoa',
          'uPlot',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
  {
    // HTTP response bodies are untyped JSON in tests; asserting on them is the point.
    files: ['test/**/*.ts', 'src/**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
