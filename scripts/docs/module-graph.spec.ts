import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ARCHITECTURE_PAGE, moduleEdges, moduleGraph, withGraph } from './module-graph.js';

describe('the module graph of docs/architecture.md', () => {
  it('should be what the @Module metadata says (npm run docs:modules writes it)', async () => {
    const page = readFileSync(ARCHITECTURE_PAGE, 'utf8');
    expect(withGraph(page, await moduleGraph())).toBe(page);
  }, 30_000);

  it('should follow dynamic modules and forward references, through modules not of the project', () => {
    class LeafModule {}
    class OtherModule {}
    class ThirdPartyModule {}
    class BeyondModule {}
    Reflect.defineMetadata(
      'imports',
      [ThirdPartyModule, { forwardRef: () => OtherModule }],
      LeafModule,
    );
    // A library's module that imports one of ours draws it from the module that imported the library.
    Reflect.defineMetadata('imports', [BeyondModule], ThirdPartyModule);
    const root = { module: class RootModule {}, imports: [LeafModule] };
    const project = new Set(['RootModule', 'LeafModule', 'OtherModule', 'BeyondModule']);
    expect(moduleEdges(root, project)).toEqual([
      ['LeafModule', 'BeyondModule'],
      ['LeafModule', 'OtherModule'],
      ['RootModule', 'LeafModule'],
    ]);
  });
});
