import { readFileSync } from 'node:fs';
import path from 'node:path';
import { MAX_LINE_CHARS, longLineNumbers, sourceFiles } from '../lib/line-length.js';

// The formatter wraps code at MAX_LINE_CHARS but leaves a long string or comment alone, so this
// check, run by `npm run lint` after Biome, fails on any source line still over the limit. The fix
// for one is usually `npm run wrap-long-lines`.

function main(): void {
  const root = process.cwd();
  const found: string[] = [];
  for (const file of sourceFiles(root)) {
    for (const line of longLineNumbers(readFileSync(path.join(root, file), 'utf8'))) found.push(`${file}:${line}`);
  }
  for (const where of found) console.error(`${where}: line over ${MAX_LINE_CHARS} characters`);
  if (found.length > 0) {
    console.error(
      `${found.length} line(s) over ${MAX_LINE_CHARS} characters: npm run wrap-long-lines splits most of them`,
    );
    process.exitCode = 1;
  }
}

main();
