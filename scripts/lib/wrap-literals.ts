import { type Node, SyntaxKind } from 'typescript/unstable/ast';
import { MAX_LINE_CHARS, lineChars } from './line-length.js';
import { endOfLine, startOfLine } from './wrap-source.js';

// wrap-long-lines' literals: where a string, template or regex literal may be cut into a concatenation with the same
// value, and the cut versions of one (scripts/tools/wrap-long-lines.ts decides which applies where).

/** Where a string may become `'a' + 'b'` with the same meaning: an expression, not a name or type. */
export function isSplittable(node: Node): boolean {
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

/** The source text of `node`'s type annotation (`const` in `x as const`); empty without one. */
function typeText(node: Node): string {
  const type = (node as { type?: Node }).type;
  return type === undefined ? '' : node.getSourceFile().text.slice(type.getStart(), type.end);
}

/** Whether `node` as `a + b` needs parentheses to keep its meaning where it stands. */
export function needsParentheses(node: Node): boolean {
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
export function cutPoints(text: string, node: Node): number[] {
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
export function splitOneLine(text: string, node: Node, points: number[], widthChars: number): string | undefined {
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
export function splitInHalf(text: string, node: Node, points: number[]): string | undefined {
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
export function splitMultiLine(
  text: string,
  node: Node,
  points: number[],
  longStarts: Set<number>,
): string | undefined {
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
export function pullOutSubstitution(text: string, node: Node, longStarts: Set<number>): string | undefined {
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
export function splitRegex(text: string, start: number, end: number, widthChars: number): string | undefined {
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
