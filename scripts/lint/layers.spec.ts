import { ESLint } from 'eslint';
import { readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import { LAYERS, layersConfig } from './layers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const listed = LAYERS.flatMap(({ folders }) => folders);

/** Every folder under src/ that holds a TypeScript file, as `src/...`. */
function sourceFolders(dir = join(root, 'src')): string[] {
  const entries = readdirSync(dir, { withFileTypes: true });
  const here = entries.some((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    ? [relative(root, dir)]
    : [];
  return [
    ...here,
    ...entries
      .filter((entry) => entry.isDirectory())
      .flatMap((entry) => sourceFolders(join(dir, entry.name))),
  ];
}

/** The layer rule alone, on `code` as if it were the file at `path`. */
async function layerErrors(path: string, code: string): Promise<string[]> {
  const eslint = new ESLint({
    cwd: root,
    overrideConfigFile: true,
    overrideConfig: [{ ...layersConfig(), languageOptions: { parser: tseslint.parser } }],
  });
  const [result] = await eslint.lintText(code, { filePath: join(root, path) });
  return result.messages.map((message) => `${message.ruleId}: ${message.message}`);
}

describe('folder layers (scripts/lint/layers.js)', () => {
  it('should list every folder of src/ that holds code, or hold it inside a listed folder', () => {
    const unlisted = sourceFolders().filter(
      (folder) =>
        !listed.some(
          (layer) => layer !== 'src' && (folder === layer || folder.startsWith(`${layer}/`)),
        ) && folder !== 'src',
    );
    expect(unlisted).toEqual([]);
  });

  it('should list each folder once', () => {
    expect(new Set(listed).size).toBe(listed.length);
  });

  it('should fail an import from a higher layer, naming the import and the rule', async () => {
    const errors = await layerErrors(
      'src/modules/sale-store/uses-orders.ts',
      "import { OrdersService } from '../orders/orders.service.js';\nexport const orders = OrdersService;\n",
    );
    expect(errors).toEqual([
      'boundaries/dependencies: src/modules/sale-store may not import "../orders/orders.service.js" (src/modules/orders): a folder imports only from its own and lower layers (scripts/lint/layers.js)',
    ]);
  });

  it('should fail an import between two folders of one layer', async () => {
    const errors = await layerErrors(
      'src/modules/seckill/uses-dashboard.ts',
      "import { DashboardStore } from '../dashboard/dashboard.store.js';\nexport const store = DashboardStore;\n",
    );
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(
      'src/modules/seckill may not import "../dashboard/dashboard.store.js"',
    );
  });

  it('should pass an import from a lower layer and one within the folder', async () => {
    const errors = await layerErrors(
      'src/modules/orders/uses-lower.ts',
      [
        "import { SaleReadsStore } from '../sale-store/sale-reads.store.js';",
        "import { OrdersService } from './orders.service.js';",
        'export const both = [SaleReadsStore, OrdersService];',
      ].join('\n'),
    );
    expect(errors).toEqual([]);
  });
});
