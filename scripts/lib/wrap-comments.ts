import { MAX_LINE_CHARS, lineChars } from './line-length.js';
import { endOfLine, startOfLine, type Edit, type FileFacts } from './wrap-source.js';

// wrap-long-lines' comments: finding them outside literals, and reflowing the ones with a long line (a trailing `//`
// moved above its line, a run of `//` lines or a block comment refilled to MAX_LINE_CHARS).

/** A comment found in the text, with the facts of the line it starts on. */
export interface Comment {
  start: number;
  end: number;
  block: boolean;
  /** Whether code precedes the comment on its first line. */
  trailing: boolean;
}

/** Every comment of the file, in order, with `//` inside a literal left out. */
export function commentsOf(facts: FileFacts): Comment[] {
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

/** `words` filled greedily into lines of at most MAX_LINE_CHARS, each after `prefix`, the later ones `hanging` too. */
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
export function lineCommentEdits(facts: FileFacts, comments: Comment[], longStarts: Set<number>): Edit[] {
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
export function commentEdits(facts: FileFacts, comment: Comment, longStarts: Set<number>): Edit[] {
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

/** Whether offset `at` is inside a string, template or regex literal of the file. */
function insideLiteral(facts: FileFacts, at: number): boolean {
  return facts.literalRanges.some(([start, end]) => start < at && at < end);
}
