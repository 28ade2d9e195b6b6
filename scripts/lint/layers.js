import boundaries from 'eslint-plugin-boundaries';

/**
 * The folders of src/ in layers, from the bottom up (CONTRIBUTING.md, "Layers"). A file may import
 * from its own folder and from the folders of the layers below its own; never from a folder of its
 * own layer or above. So the folders form no cycle, and a new folder has to say where it stands.
 * ESLint keeps it (eslint-plugin-boundaries' `boundaries/dependencies`, set up in
 * eslint.config.js by layersConfig below); scripts/lint/layers.spec.ts fails for a folder of src/
 * that is not listed (it would count as the app's, at the top).
 */
export const LAYERS = [
  // Helpers with no say in the sale: errors and their body, ids, batching, logging, pure math.
  {
    layer: 'kernel',
    folders: [
      'src/common',
      'src/common/errors',
      'src/common/random',
      'src/common/batching',
      'src/common/database',
      'src/common/logging',
      'src/types',
    ],
  },
  { layer: 'edge helpers', folders: ['src/common/http', 'src/common/pipes'] },
  { layer: 'exception filter', folders: ['src/common/filters'] },
  { layer: 'configuration', folders: ['src/config'] },
  // OpenTelemetry's provider and helpers, which every client below may open spans with.
  { layer: 'tracing', folders: ['src/infra/tracing'] },
  // The external clients: one folder each, none knowing another.
  { layer: 'clients', folders: ['src/infra/redis', 'src/infra/database', 'src/infra/rabbitmq'] },
  { layer: 'scheduling', folders: ['src/infra/scheduling'] },
  // Features, lowest first.
  { layer: 'identity', folders: ['src/modules/auth'] },
  { layer: 'metrics', folders: ['src/modules/metrics'] },
  { layer: 'overload', folders: ['src/modules/overload'] },
  { layer: 'blocklist', folders: ['src/modules/blocklist'] },
  { layer: 'rate limits', folders: ['src/modules/rate-limit'] },
  {
    layer: 'edge features and the catalog',
    folders: [
      'src/modules/entry',
      'src/modules/buyer-page',
      'src/modules/challenge',
      'src/modules/goods',
    ],
  },
  { layer: "the sale's Redis state", folders: ['src/modules/sale-store'] },
  {
    layer: 'the broker and the join journal',
    folders: ['src/modules/messaging', 'src/modules/queue-journal'],
  },
  { layer: 'the Redis-down policy', folders: ['src/modules/fallback'] },
  { layer: 'orders', folders: ['src/modules/orders'] },
  {
    layer: 'the order write path, the load, the sale page, payments',
    folders: [
      'src/modules/order-ingest',
      'src/modules/preheat',
      'src/modules/sale-view',
      'src/modules/payments',
      'src/modules/merchant-events',
    ],
  },
  { layer: 'availability', folders: ['src/modules/availability'] },
  {
    layer: 'the waiting room, reconcile, health',
    folders: ['src/modules/waiting-room', 'src/modules/reconcile', 'src/modules/health'],
  },
  {
    layer: 'the purchase, the dashboard',
    folders: ['src/modules/seckill', 'src/modules/dashboard'],
  },
  { layer: 'roles', folders: ['src/roles'] },
  // The files at the top of src/ (main.ts, bootstrap.ts, app.module.ts).
  { layer: 'the app', folders: ['src'] },
];

const MESSAGE =
  '{{from.element.type}} may not import "{{dependency.source}}" ({{to.element.type}}): a folder imports only from its own and lower layers (scripts/lint/layers.js)';

/**
 * The ESLint config block that keeps LAYERS (eslint.config.js): each folder an element of
 * eslint-plugin-boundaries, allowed to import its own folder and those of lower layers only.
 * Imports are resolved as TypeScript does (`./x.js` is `./x.ts`), by eslint-import-resolver-typescript.
 * Specs may import across layers to build their fixtures; only what ships is held to them.
 */
export function layersConfig() {
  const ranked = LAYERS.flatMap(({ folders }, rank) => folders.map((folder) => ({ folder, rank })));
  // Deepest folders first: a file belongs to the innermost folder listed.
  const elements = [...ranked]
    .sort((a, b) => b.folder.split('/').length - a.folder.split('/').length)
    .map(({ folder }) => ({ type: folder, pattern: folder, partialMatch: false }));
  const policies = ranked.map(({ folder, rank }) => ({
    from: { element: { type: folder } },
    allow: {
      to: {
        element: {
          types: {
            anyOf: [
              folder,
              ...ranked.filter((other) => other.rank < rank).map((other) => other.folder),
            ],
          },
        },
      },
    },
  }));
  return {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*spec.ts', 'src/**/*.d.ts'],
    plugins: { boundaries },
    settings: {
      'import/resolver': { typescript: { project: './tsconfig.json' } },
      'boundaries/elements': elements,
    },
    rules: {
      'boundaries/dependencies': ['error', { default: 'disallow', policies, message: MESSAGE }],
    },
  };
}
