import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/** The longest a source line may be, in characters (code points): the formatter's line width. */
export const MAX_LINE_CHARS = 120;

/** Folders of files no one writes by hand: assets, bench results, code generated from proto/ (`npm run gen:proto`). */
const GENERATED = ['assets/', 'bench/', 'services/transports/gen/'];

/** The project's own sources that the line limit covers: JS/TS under git (as on disk), less GENERATED's folders. */
export function sourceFiles(cwd: string): string[] {
  const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], {
    cwd,
    encoding: 'utf8',
  });
  return (
    listed
      .split('\0')
      .filter((file) => /\.(?:[cm]?ts|[cm]?js)$/.test(file) && !GENERATED.some((folder) => file.startsWith(folder)))
      // A file deleted but not yet staged is still in the index: there is nothing of it to check.
      .filter((file) => existsSync(path.join(cwd, file)))
      .sort()
  );
}

/** Width of a line as the limit counts it: code points, so `µ` or `–` weigh one like any letter. */
export function lineChars(line: string): number {
  return [...line].length;
}

/** The 1-based numbers of the lines of `text` longer than MAX_LINE_CHARS. */
export function longLineNumbers(text: string): number[] {
  const numbers: number[] = [];
  text.split('\n').forEach((line, i) => {
    if (lineChars(line) > MAX_LINE_CHARS) numbers.push(i + 1);
  });
  return numbers;
}
