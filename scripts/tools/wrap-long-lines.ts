import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Node, type SourceFile, SyntaxKind } from 'typescript/unstable/ast';
import { API } from 'typescript/unstable/sync';
import { MAX_LINE_CHARS, lineChars, longLineNumbers, sourceFiles } from '../lib/line-length.js';
import { commentEdits, commentsOf, lineCommentEdits } from '../lib/wrap-comments.js';
import {
  cutPoints,
  isSplittable,
  needsParentheses,
  pullOutSubstitution,
  splitInHalf,
  splitMultiLine,
  splitOneLine,
  splitRegex,
} from '../lib/wrap-literals.js';
import { startOfLine, type Edit, type FileFacts } from '../lib/wrap-source.js';

// The codemod for what the formatter leaves over MAX_LINE_CHARS: it reflows comments and splits
// long string and template literals into concatenations, then lets Biome lay the result out, and
// repeats until nothing changes (a split can move text deeper, a reformat can push a comment over).
// Only lines over the limit are touched, so a second run on its own output changes nothing.
// Usage: npm run wrap-long-lines [-- file...]; exit 1 when some line is still over, listed.

/** Most rounds of split-then-format; each round only shortens lines, three have always sufficed. */
const MAX_ROUNDS = 8;

/** Wraps the named files' long lines (every source file's without a name), then lists those still over. */
function main(): void {
  const root = process.cwd();
  const named = process.argv.slice(2);
  const files = named.length > 0 ? named : sourceFiles(root);
  const startedMs = Date.now();
  const touched = new Set<string>();
  format(root, files);
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    const long = files.filter((file) => longLineNumbers(readFileSync(path.join(root, file), 'utf8')).length > 0);
    const changed = long.length === 0 ? [] : rewrite(root, long);
    if (changed.length === 0) break;
    for (const file of changed) touched.add(file);
    format(root, changed);
  }
  const left = files.flatMap((file) =>
    longLineNumbers(readFileSync(path.join(root, file), 'utf8')).map((n) => `${file}:${n}`),
  );
  console.log(
    `wrap-long-lines: ${touched.size} file(s) rewritten in ${((Date.now() - startedMs) / 1000).toFixed(1)} s`,
  );
  for (const where of left) console.error(`${where}: still over ${MAX_LINE_CHARS} characters (shorten it by hand)`);
  if (left.length > 0) process.exitCode = 1;
}

/** Lays files out with Biome's formatter (only the formatter: lint fixes are `npm run format`'s). */
function format(root: string, files: string[]): void {
  const biome = path.join(root, 'node_modules', '.bin', 'biome');
  const result = spawnSync(biome, ['format', '--write', '--no-errors-on-unmatched', ...files], {
    cwd: root,
    encoding: 'utf8',
  });
  if (result.status !== 0)
    throw new Error(`biome format failed (exit ${result.status}):\n${result.stdout}${result.stderr}`);
}

/** One round over files that have a long line: computes every edit from a fresh parse, writes them. */
function rewrite(root: string, files: string[]): string[] {
  const absolute = files.map((file) => path.join(root, file));
  const api = new API({ cwd: root });
  try {
    const snapshot = api.updateSnapshot({ openFiles: absolute });
    const changed: string[] = [];
    files.forEach((file, i) => {
      const fileName = absolute[i]!;
      const sourceFile = snapshot.getDefaultProjectForFile(fileName)?.program.getSourceFile(fileName);
      if (sourceFile === undefined) throw new Error(`${file}: TypeScript did not parse it`);
      const text = readFileSync(fileName, 'utf8');
      if (sourceFile.text !== text) throw new Error(`${file}: TypeScript parsed another text than the file's`);
      const next = applyEdits(text, editsFor(factsOf(sourceFile)));
      if (next !== text) {
        writeFileSync(fileName, next);
        changed.push(file);
      }
    });
    return changed;
  } finally {
    api.close();
  }
}

/** The literals and regexes of a parsed file: where `//` is not a comment, and what may be cut. */
function factsOf(sourceFile: SourceFile): FileFacts {
  const literalRanges: [number, number][] = [];
  const splittable: Node[] = [];
  const regexRanges: [number, number][] = [];
  // A literal inside a template's ${…} is left whole: the formatter never breaks a line there.
  const visit = (node: Node, inTemplate: boolean): void => {
    switch (node.kind) {
      case SyntaxKind.StringLiteral:
      case SyntaxKind.NoSubstitutionTemplateLiteral:
      case SyntaxKind.TemplateHead:
      case SyntaxKind.TemplateMiddle:
      case SyntaxKind.TemplateTail:
      case SyntaxKind.RegularExpressionLiteral:
      case SyntaxKind.JsxText:
        literalRanges.push([node.getStart(sourceFile), node.end]);
    }
    if (node.kind === SyntaxKind.RegularExpressionLiteral && !inTemplate) {
      regexRanges.push([node.getStart(sourceFile), node.end]);
    }
    if (!inTemplate && isSplittable(node)) splittable.push(node);
    const nested = inTemplate || node.kind === SyntaxKind.TemplateExpression;
    node.forEachChild((child) => visit(child, nested));
  };
  visit(sourceFile, false);
  literalRanges.sort((a, b) => a[0] - b[0]);
  return { text: sourceFile.text, literalRanges, splittable, regexRanges };
}

/** Every edit that shortens a long line of the file: its comments reflowed, its literals and regexes cut. */
function editsFor(facts: FileFacts): Edit[] {
  const { text } = facts;
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineStarts.push(i + 1);
  const longStarts = new Set(longLineNumbers(text).map((n) => lineStarts[n - 1]!));
  const edits: Edit[] = [];
  const comments = commentsOf(facts);
  edits.push(...lineCommentEdits(facts, comments, longStarts));
  for (const comment of comments) edits.push(...commentEdits(facts, comment, longStarts));
  for (const node of facts.splittable) {
    const start = node.getStart();
    const lineStart = startOfLine(text, start);
    const raw = text.slice(start, node.end);
    const points = cutPoints(text, node);
    let replacement = pullOutSubstitution(text, node, longStarts);
    const pulled = replacement !== undefined;
    if (!pulled && raw.includes('\n')) {
      replacement = splitMultiLine(text, node, points, longStarts);
    } else if (!pulled && longStarts.has(lineStart)) {
      // After the split the formatter puts each piece on its own line, up to two levels deeper,
      // followed by ` +`, `,` or `)`: leave room for them. A literal that would fit there but
      // sits on a long line (a test's name before its callback) is cut about in half.
      const indent = /^[ \t]*/.exec(text.slice(lineStart))![0].length;
      const widthChars = MAX_LINE_CHARS - indent - 4 - 3;
      const rawChars = lineChars(raw);
      if (rawChars > widthChars) replacement = splitOneLine(text, node, points, widthChars);
      else if (rawChars >= 40) replacement = splitInHalf(text, node, points);
    }
    if (replacement !== undefined) {
      // Without its empty head the chain could start with X + Y (an addition, not a concatenation).
      const parenthesize = needsParentheses(node) || (pulled && node.parent.kind === SyntaxKind.BinaryExpression);
      edits.push({ start, end: node.end, text: parenthesize ? `(${replacement})` : replacement });
    }
  }
  for (const [start, end] of facts.regexRanges) {
    const lineStart = startOfLine(text, start);
    if (!longStarts.has(lineStart)) continue;
    const indent = /^[ \t]*/.exec(text.slice(lineStart))![0].length;
    const replacement = splitRegex(text, start, end, MAX_LINE_CHARS - indent - 4 - 3);
    if (replacement !== undefined) edits.push({ start, end, text: replacement });
  }
  return edits;
}

/** Applies edits from the last to the first; an edit overlapping one already taken waits for the next round. */
function applyEdits(text: string, edits: Edit[]): string {
  const sorted = [...edits].sort((a, b) => b.start - a.start);
  let result = text;
  let floor = Number.POSITIVE_INFINITY;
  for (const edit of sorted) {
    if (edit.end > floor) continue;
    result = result.slice(0, edit.start) + edit.text + result.slice(edit.end);
    floor = edit.start;
  }
  return result;
}

main();
