import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import house from './scripts/lint/house-rules.js';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'eslint.config.js'] },
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
