import type { Node } from 'typescript/unstable/ast';

// What wrap-long-lines' parts share: the edit they make, the facts of a file they read, and line bounds in its text.

/** A text replacement in one file: [start, end) of the original text becomes `text`. */
export interface Edit {
  start: number;
  end: number;
  text: string;
}

/** What a long line holds that this codemod can shorten. */
export interface FileFacts {
  text: string;
  /** [start, end) of every string, template and regex token: where `//` is not a comment. */
  literalRanges: [number, number][];
  /** String and template literals that may become a concatenation, outermost nodes only. */
  splittable: Node[];
  /** [start, end) of every regex literal. */
  regexRanges: [number, number][];
}

/** The offset where the line holding offset `at` starts. */
export function startOfLine(text: string, at: number): number {
  return text.lastIndexOf('\n', at - 1) + 1;
}

/** The offset of the newline ending the line holding offset `at` (the text's length on its last line). */
export function endOfLine(text: string, at: number): number {
  const newline = text.indexOf('\n', at);
  return newline === -1 ? text.length : newline;
}
