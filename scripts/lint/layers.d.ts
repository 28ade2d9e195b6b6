import type { Linter } from 'eslint';

/** The folders of src/ in layers, from the bottom up (see layers.js). */
export declare const LAYERS: { layer: string; folders: string[] }[];

/** The ESLint config block that keeps LAYERS. */
export declare function layersConfig(): Linter.Config;
