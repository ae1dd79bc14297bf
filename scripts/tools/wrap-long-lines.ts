import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Node, type SourceFile, SyntaxKind } from 'typescript/unstable/ast';
import { API } from 'typescript/unstable/sync';
import { MAX_LINE_CHARS, lineChars, longLineNumbers, sourceFiles } from '../lib/line-length.js';

// The codemod for what the formatter leaves over MAX_LINE_CHARS: it reflows comments and splits
// long string and template literals into concatenations, then lets Biome lay the result out, and
// repeats until nothing changes (a split can move text deeper, a reformat can push a comment over).
// Only lines over the limit are touched, so a second run on its own output changes nothing.
// Usage: npm run wrap-long-lines [-- file...]; exit 1 when some line is still over, listed.

/** Most rounds of split-then-format; each round only shortens lines, three have always sufficed. */
const MAX_ROUNDS = 8;

/** A text replacement in one file: [start, end) of the original text becomes `text`. */
interface Edit {
  start: number;
  end: number;
  text: string;
}

/** What a long line holds that this codemod can shorten. */
interface FileFacts {
  text: string;
  /** [start, end) of every string, template and regex token: where `//` is not a comment. */
  literalRanges: [number, number][];
  /** String and template literals that may become a concatenation, outermost nodes only. */
  splittable: Node[];
  /** [start, end) of every regex literal. */
  regexRanges: [number, number][];
}

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

// ---------------------------------------------------------------------------------------------
// Literals

/** Where a string may become `'a' + 'b'` with the same meaning: an expression, not a name or type. */
function isSplittable(node: Node): boolean {
  const kind = node.kind;
  if (
    kind !== SyntaxKind.StringLiteral &&
    kind !== SyntaxKind.NoSubstitutionTemplateLiteral &&
    kind !== SyntaxKind.TemplateExpression
  ) {
    return false;
  }
  const parent = node.parent;
  switch (parent.kind) {
    case SyntaxKind.ImportDeclaration:
    case SyntaxKind.ExportDeclaration:
    case SyntaxKind.ExternalModuleReference:
    case SyntaxKind.ImportAttribute:
    case SyntaxKind.LiteralType:
    case SyntaxKind.ModuleDeclaration:
    case SyntaxKind.TaggedTemplateExpression:
    case SyntaxKind.ExpressionStatement: // a directive such as 'use strict'
    case SyntaxKind.ElementAccessExpression: // obj['key'] keeps its literal key type
    case SyntaxKind.JsxAttribute:
      return false;
    case SyntaxKind.AsExpression:
    case SyntaxKind.SatisfiesExpression:
      return typeText(parent) !== 'const'; // `'…' as const` only takes a literal
  }
  // A property, method or enum member's own name stays a literal.
  return !('name' in parent && (parent as { name?: Node }).name === node);
}

function typeText(node: Node): string {
  const type = (node as { type?: Node }).type;
  return type === undefined ? '' : node.getSourceFile().text.slice(type.getStart(), type.end);
}

/** Whether `node` as `a + b` needs parentheses to keep its meaning where it stands. */
function needsParentheses(node: Node): boolean {
  const parent = node.parent;
  switch (parent.kind) {
    case SyntaxKind.CallExpression:
    case SyntaxKind.NewExpression:
      return (parent as { expression?: Node }).expression === node;
    case SyntaxKind.BinaryExpression: {
      const operator = (parent as unknown as { operatorToken: Node }).operatorToken.kind;
      return !LOOSER_THAN_PLUS.has(operator);
    }
    case SyntaxKind.ArrayLiteralExpression:
    case SyntaxKind.PropertyAssignment:
    case SyntaxKind.VariableDeclaration:
    case SyntaxKind.ReturnStatement:
    case SyntaxKind.ThrowStatement:
    case SyntaxKind.ConditionalExpression:
    case SyntaxKind.TemplateSpan:
    case SyntaxKind.ParenthesizedExpression:
    case SyntaxKind.ArrowFunction:
    case SyntaxKind.SpreadElement:
    case SyntaxKind.Parameter:
    case SyntaxKind.BindingElement:
    case SyntaxKind.PropertyDeclaration:
    case SyntaxKind.ExportAssignment:
    case SyntaxKind.CaseClause:
    case SyntaxKind.YieldExpression:
      return false;
    default:
      return true;
  }
}

/** Binary operators under which `a + b` needs no parentheses (`+` itself: concatenation is associative). */
const LOOSER_THAN_PLUS = new Set<SyntaxKind>([
  SyntaxKind.PlusToken,
  SyntaxKind.LessThanToken,
  SyntaxKind.GreaterThanToken,
  SyntaxKind.LessThanEqualsToken,
  SyntaxKind.GreaterThanEqualsToken,
  SyntaxKind.EqualsEqualsToken,
  SyntaxKind.ExclamationEqualsToken,
  SyntaxKind.EqualsEqualsEqualsToken,
  SyntaxKind.ExclamationEqualsEqualsToken,
  SyntaxKind.AmpersandAmpersandToken,
  SyntaxKind.BarBarToken,
  SyntaxKind.QuestionQuestionToken,
  SyntaxKind.EqualsToken,
  SyntaxKind.PlusEqualsToken,
  SyntaxKind.CommaToken,
]);

/**
 * The places in a literal's source where it may be cut, as offsets into the file: after a space of
 * the text (not an escaped one) or a comma not followed by one (JSON), or right after a `${…}` ends. Cutting there and
 * closing/reopening the quote gives pieces whose concatenation is the same string.
 */
function cutPoints(text: string, node: Node): number[] {
  const chunks: [number, number, boolean][] = []; // [start, end) of raw text, and whether a substitution ends at start
  if (node.kind === SyntaxKind.TemplateExpression) {
    const template = node as unknown as { head: Node; templateSpans: readonly { literal: Node }[] };
    const head = template.head;
    chunks.push([head.getStart() + 1, head.end - 2, false]);
    for (const span of template.templateSpans) {
      const literal = span.literal;
      const tail = literal.kind === SyntaxKind.TemplateTail;
      chunks.push([literal.getStart() + 1, literal.end - (tail ? 1 : 2), true]);
    }
  } else {
    chunks.push([node.getStart() + 1, node.end - 1, false]);
  }
  const points: number[] = [];
  for (const [start, end, afterSubstitution] of chunks) {
    if (afterSubstitution && start < end) points.push(start);
    for (let i = start; i < end; i++) {
      if (text[i] === '\\') i++;
      else if ((text[i] === ' ' || (text[i] === ',' && text[i + 1] !== ' ')) && i + 1 < end) points.push(i + 1);
    }
  }
  return points;
}

/**
 * A one-line literal as a concatenation of pieces no wider than `widthChars` where it can be: cut
 * greedily at the last cut point that fits, or at the first one past it when none does.
 */
function splitOneLine(text: string, node: Node, points: number[], widthChars: number): string | undefined {
  const start = node.getStart();
  const end = node.end;
  const quote = text[start]!;
  const pieces: string[] = [];
  let from = start;
  while (lineChars(text.slice(from, end)) + 2 > widthChars) {
    const fitting = points.filter((p) => p > from && lineChars(text.slice(from, p)) + 1 <= widthChars);
    const cut = fitting.at(-1) ?? points.find((p) => p > from);
    if (cut === undefined) break;
    pieces.push(`${from === start ? '' : quote}${text.slice(from, cut)}${quote}`);
    from = cut;
  }
  if (pieces.length === 0) return undefined;
  pieces.push(`${quote}${text.slice(from, end)}`);
  return pieces.join(' + ');
}

/** A literal cut once, at the cut point nearest its middle: two pieces the formatter may keep on one line. */
function splitInHalf(text: string, node: Node, points: number[]): string | undefined {
  const start = node.getStart();
  const half = lineChars(text.slice(start, node.end)) / 2;
  const distance = (p: number): number => Math.abs(lineChars(text.slice(start, p)) - half);
  const cut = points.reduce<number | undefined>(
    (best, p) => (best === undefined || distance(p) < distance(best) ? p : best),
    undefined,
  );
  if (cut === undefined) return undefined;
  const quote = text[start]!;
  return `${text.slice(start, cut)}${quote} + ${quote}${text.slice(cut, node.end)}`;
}

/**
 * A template over several lines, cut once on each of its long lines at the last cut point that
 * leaves the line within the limit with the closing `` ` + `` (its other lines keep their layout).
 */
function splitMultiLine(text: string, node: Node, points: number[], longStarts: Set<number>): string | undefined {
  const start = node.getStart();
  const cuts: number[] = [];
  for (let lineStart = startOfLine(text, start); lineStart < node.end; lineStart = endOfLine(text, lineStart) + 1) {
    if (!longStarts.has(lineStart)) continue;
    const onLine = points.filter((p) => p > lineStart && p <= endOfLine(text, lineStart));
    const fitting = onLine.filter(
      (p) => lineChars(text.slice(lineStart, p)) + 3 <= MAX_LINE_CHARS && p - lineStart >= 20,
    );
    const cut = fitting.at(-1);
    if (cut !== undefined) cuts.push(cut);
  }
  if (cuts.length === 0) return undefined;
  const quote = text[start]!;
  let result = '';
  let from = start;
  for (const cut of cuts) {
    result += `${text.slice(from, cut)}${quote} + ${quote}`;
    from = cut;
  }
  return result + text.slice(from, node.end);
}

/** Expressions that stay one operand of `a + X + b` without parentheses. */
const OPERAND_KINDS = new Set<SyntaxKind>([
  SyntaxKind.Identifier,
  SyntaxKind.PropertyAccessExpression,
  SyntaxKind.ElementAccessExpression,
  SyntaxKind.CallExpression,
  SyntaxKind.NewExpression,
  SyntaxKind.NonNullExpression,
  SyntaxKind.ParenthesizedExpression,
  SyntaxKind.StringLiteral,
  SyntaxKind.NumericLiteral,
  SyntaxKind.NoSubstitutionTemplateLiteral,
  SyntaxKind.TemplateExpression,
  SyntaxKind.ArrayLiteralExpression,
]);

/**
 * A template whose long line holds a long `${X}`, which the formatter never breaks, rewritten as
 * `` `before` + X + `after` `` so that X is laid out as code. Same string: `+` with a string
 * stringifies a primitive as `${}` does. The longest such substitution goes, one per round.
 */
function pullOutSubstitution(text: string, node: Node, longStarts: Set<number>): string | undefined {
  if (node.kind !== SyntaxKind.TemplateExpression) return undefined;
  const template = node as unknown as { head: Node; templateSpans: readonly { expression: Node; literal: Node }[] };
  let best: { open: number; close: number; expression: Node } | undefined;
  let previous = template.head;
  for (const span of template.templateSpans) {
    const open = previous.end - 2; // the `$` of `${`
    const close = span.literal.getStart(); // the `}`
    previous = span.literal;
    const onLongLine = longStarts.has(startOfLine(text, open)) && startOfLine(text, open) === startOfLine(text, close);
    if (!onLongLine || lineChars(text.slice(open, close + 1)) < 40) continue;
    if (best === undefined || close - open > best.close - best.open)
      best = { open, close, expression: span.expression };
  }
  if (best === undefined) return undefined;
  const start = node.getStart();
  const before = text.slice(start, best.open);
  const after = text.slice(best.close + 1, node.end);
  if (before === '`' && after === '`') return undefined;
  const expression = text.slice(best.expression.getStart(), best.expression.end);
  const operand = OPERAND_KINDS.has(best.expression.kind) ? expression : `(${expression})`;
  const parts = [before === '`' ? '' : `${before}\``, operand, after === '`' ? '' : `\`${after}`].filter(
    (part) => part !== '',
  );
  return parts.join(' + ');
}

/**
 * A long regex literal as `new RegExp(/a/.source + /b/.source, flags)`: cut only at its top level
 * (outside groups and classes, not in an escape, not before a quantifier), so each piece is a
 * regex of its own and the sources join back to the same pattern.
 */
function splitRegex(text: string, start: number, end: number, widthChars: number): string | undefined {
  const literal = text.slice(start, end);
  const close = literal.lastIndexOf('/');
  const pattern = literal.slice(1, close);
  const flags = literal.slice(close + 1);
  const pieceFlags = flags.replace(/[^uv]/g, '');
  const points: number[] = [];
  let depth = 0;
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
    } else if (c === '(') {
      depth++;
    } else if (c === ')') {
      depth--;
    }
    const next = pattern[i + 1];
    if (depth === 0 && !inClass && next !== undefined && !'*+?{'.includes(next) && i + 1 >= 8) points.push(i + 1);
  }
  const overhead = `//${pieceFlags}.source + `.length;
  const pieces: string[] = [];
  let from = 0;
  while (lineChars(pattern.slice(from)) + overhead > widthChars) {
    const fitting = points.filter((p) => p > from + 8 && lineChars(pattern.slice(from, p)) + overhead <= widthChars);
    // After a space where there is one, so that words stay whole.
    const cut = fitting.filter((p) => pattern[p - 1] === ' ' && pattern[p - 2] !== '\\').at(-1) ?? fitting.at(-1);
    if (cut === undefined) break;
    pieces.push(pattern.slice(from, cut));
    from = cut;
  }
  if (pieces.length === 0) return undefined;
  pieces.push(pattern.slice(from));
  const sources = pieces.map((piece) => `/${piece}/${pieceFlags}.source`).join(' + ');
  return `new RegExp(${sources}${flags === '' ? '' : `, '${flags}'`})`;
}

// ---------------------------------------------------------------------------------------------
// Comments

/** A comment found in the text, with the facts of the line it starts on. */
interface Comment {
  start: number;
  end: number;
  block: boolean;
  /** Whether code precedes the comment on its first line. */
  trailing: boolean;
}

function commentsOf(facts: FileFacts): Comment[] {
  const { text, literalRanges } = facts;
  const comments: Comment[] = [];
  let next = 0; // index into literalRanges
  for (let i = 0; i < text.length; i++) {
    while (next < literalRanges.length && literalRanges[next]![1] <= i) next++;
    const literal = literalRanges[next];
    if (literal !== undefined && literal[0] <= i) {
      i = literal[1] - 1;
      continue;
    }
    if (text[i] !== '/' || (text[i + 1] !== '/' && text[i + 1] !== '*')) continue;
    const block = text[i + 1] === '*';
    const end = block ? text.indexOf('*/', i + 2) + 2 : endOfLine(text, i);
    const lineStart = startOfLine(text, i);
    comments.push({ start: i, end, block, trailing: text.slice(lineStart, i).trim() !== '' });
    i = end - 1;
  }
  return comments;
}

function startOfLine(text: string, at: number): number {
  return text.lastIndexOf('\n', at - 1) + 1;
}

function endOfLine(text: string, at: number): number {
  const newline = text.indexOf('\n', at);
  return newline === -1 ? text.length : newline;
}

/** A comment line's parts: what stays at the left (indent and `//` or ` * `), and the words. */
interface CommentLine {
  prefix: string;
  body: string;
}

/** Whether a comment line starts its own paragraph and keeps its own line: a list item, table, code. */
function isStructured(body: string): boolean {
  return /^(?:[-*+•] |\d+[.)] |\||```|@|#|<)/.test(body) || /^\s{2,}/.test(body);
}

/**
 * Reflows the paragraphs of `lines` that hold a line over the limit, greedily to MAX_LINE_CHARS.
 * A paragraph is a run of plain lines (no blank, list item, table row, code or tag starting it,
 * except its first); a list item's continuation is indented under the item's text.
 */
function reflow(lines: CommentLine[]): string[] {
  const out: string[] = [];
  let fenced = false;
  let i = 0;
  while (i < lines.length) {
    const first = lines[i]!;
    let j = i + 1;
    if (first.body.startsWith('```')) fenced = !fenced;
    else if (!fenced && first.body.trim() !== '' && !/^(?:\||\s{2,})/.test(first.body)) {
      const hanging = ' '.repeat((/^(?:[-*+•] |\d+[.)] )/.exec(first.body)?.[0] ?? '').length);
      while (j < lines.length) {
        const line = lines[j]!;
        if (line.body.trim() === '' || line.prefix !== first.prefix) break;
        const continues =
          hanging === ''
            ? !isStructured(line.body)
            : line.body.startsWith(hanging) && line.body[hanging.length] !== ' ';
        if (!continues) break;
        j++;
      }
      const paragraph = lines.slice(i, j);
      if (paragraph.some((line) => lineChars(line.prefix + line.body) > MAX_LINE_CHARS)) {
        const words = paragraph
          .map((line) => line.body.trim())
          .join(' ')
          .split(/ +/);
        out.push(...fill(first.prefix, hanging, words));
        i = j;
        continue;
      }
    }
    for (let k = i; k < j; k++) out.push(lines[k]!.prefix + lines[k]!.body);
    i = j;
  }
  return out;
}

function fill(prefix: string, hanging: string, words: string[]): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of words) {
    const lead = out.length === 0 ? '' : hanging;
    const candidate = line === '' ? `${prefix}${lead}${word}` : `${line} ${word}`;
    if (line !== '' && lineChars(candidate) > MAX_LINE_CHARS) {
      out.push(line);
      line = `${prefix}${hanging}${word}`;
    } else {
      line = candidate;
    }
  }
  if (line !== '') out.push(line);
  return out;
}

/** Comments that must stay one line as they are: directives read by TypeScript and Biome. */
const DIRECTIVE = /^\/[/*]+\s*(?:@ts-|biome-ignore|eslint-|prettier-ignore|#region|#endregion)/;

/** Reflows runs of whole-line `//` comments (same indent, consecutive lines) that hold a long line. */
function lineCommentEdits(facts: FileFacts, comments: Comment[], longStarts: Set<number>): Edit[] {
  const { text } = facts;
  const runs: Comment[][] = [];
  for (const comment of comments) {
    if (comment.block || comment.trailing || DIRECTIVE.test(text.slice(comment.start, comment.end))) continue;
    const run = runs.at(-1);
    const previous = run?.at(-1);
    const lineStart = startOfLine(text, comment.start);
    if (
      run !== undefined &&
      previous !== undefined &&
      previous.end + 1 === lineStart &&
      text.slice(lineStart, comment.start) === text.slice(startOfLine(text, previous.start), previous.start)
    ) {
      run.push(comment);
    } else {
      runs.push([comment]);
    }
  }
  const edits: Edit[] = [];
  for (const run of runs) {
    const first = startOfLine(text, run[0]!.start);
    const last = run.at(-1)!.end;
    if (!run.some((comment) => longStarts.has(startOfLine(text, comment.start)))) continue;
    const lines = run.map((comment) => {
      const match = /^([ \t]*\/\/\/? ?)(.*)$/.exec(text.slice(startOfLine(text, comment.start), comment.end))!;
      return { prefix: match[1]!, body: match[2]! };
    });
    const reflowed = reflow(lines).join('\n');
    if (reflowed !== text.slice(first, last)) edits.push({ start: first, end: last, text: reflowed });
  }
  return edits;
}

/** Moves a long line's trailing `//` comment above it, or reflows a block comment with a long line. */
function commentEdits(facts: FileFacts, comment: Comment, longStarts: Set<number>): Edit[] {
  const { text } = facts;
  const lineStart = startOfLine(text, comment.start);
  const indent = /^[ \t]*/.exec(text.slice(lineStart))![0];
  if (DIRECTIVE.test(text.slice(comment.start, comment.end))) return [];
  if (comment.trailing) {
    // A long line's trailing `// …` moves above the line, where it can be wrapped.
    if (comment.block || !longStarts.has(lineStart) || insideLiteral(facts, lineStart)) return [];
    const code = text.slice(lineStart, comment.start).trimEnd();
    const body = text.slice(comment.start + 2, comment.end).trim();
    const above = fill(`${indent}// `, '', body.split(/ +/));
    return [{ start: lineStart, end: comment.end, text: `${above.join('\n')}\n${code}` }];
  }
  const first = startOfLine(text, comment.start);
  const last = endOfLine(text, comment.end - 1);
  let touchesLong = false;
  for (let at = first; at <= last; at = endOfLine(text, at) + 1) if (longStarts.has(at)) touchesLong = true;
  if (!touchesLong || !comment.block) return [];
  if (text.slice(comment.end, endOfLine(text, comment.end)).trim() !== '') return []; // code after `*/`
  const source = text.slice(first, comment.end);
  const opener = source.slice(indent.length).startsWith('/**') ? '/**' : '/*';
  if (!source.includes('\n')) {
    // A one-line block becomes a multi-line one.
    const body = source.slice(indent.length + opener.length, source.length - 2).trim();
    const lines = reflow([{ prefix: `${indent} * `, body }]);
    return [{ start: first, end: comment.end, text: [`${indent}${opener}`, ...lines, `${indent} */`].join('\n') }];
  }
  const rows = source.split('\n');
  const inner: CommentLine[] = rows.slice(1, -1).map((row) => {
    const star = /^([ \t]*\*(?: |$))(.*)$/.exec(row);
    if (star !== null) return { prefix: star[1]!.endsWith(' ') ? star[1]! : `${star[1]!} `, body: star[2]! };
    const plain = /^([ \t]*)(.*)$/.exec(row)!;
    return { prefix: plain[1]!, body: plain[2]! };
  });
  const firstRow = rows[0]!;
  const lastRow = rows.at(-1)!;
  if (lineChars(firstRow) > MAX_LINE_CHARS || lineChars(lastRow) > MAX_LINE_CHARS) return [];
  const reflowed = reflow(inner).map((row) => row.trimEnd());
  return [{ start: first, end: comment.end, text: [firstRow, ...reflowed, lastRow].join('\n') }];
}

function insideLiteral(facts: FileFacts, at: number): boolean {
  return facts.literalRanges.some(([start, end]) => start < at && at < end);
}

// ---------------------------------------------------------------------------------------------

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
