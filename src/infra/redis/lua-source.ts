import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const INCLUDE_LINE = /^--!include (\S+)[ \t]*$/gm;

/**
 * The script's text with each `--!include lib/<file>.lua` line replaced by that file (a library
 * of local functions two scripts share: a script cannot call another). One level: a library
 * includes nothing.
 */
export function withIncludes(dir: string, file: string): string {
  return readFileSync(join(dir, file), 'utf8').replace(INCLUDE_LINE, (_line, path: string) => {
    if (!/^lib\/[\w-]+\.lua$/.test(path)) {
      throw new Error(`${file} includes ${path}: only lib/<name>.lua of ${dir} may be included`);
    }
    try {
      return readFileSync(join(dir, path), 'utf8');
    } catch {
      throw new Error(`${file} includes ${path}, which is missing from ${dir}`);
    }
  });
}
