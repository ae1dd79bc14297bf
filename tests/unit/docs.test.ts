import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMPOSE_ONLY_DOCS } from '../../services/core/config/variable-docs.js';
import { projectPath } from '../../services/shared/paths.js';
import { ErrorCode } from '../../services/core/errors.js';

// The README and docs/ are what a user follows to the letter: a link, a command, a path or a
// variable that has drifted from the repository sends them nowhere. These checks keep the text
// tied to the files, scripts and config it names.

/** The README stays a first read; everything longer goes to docs/. */
const README_MAX_LINES = 400;
/** npm's own commands (not package.json scripts) a document may tell a user to run. */
const NPM_COMMANDS = new Set(['ci', 'install']);

interface Doc {
  /** Relative to the project root, as a user sees it. */
  file: string;
  text: string;
}

const docs: Doc[] = [
  'README.md',
  ...readdirSync(projectPath('docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
].map((file) => ({ file, text: readFileSync(projectPath(file), 'utf8') }));

const FENCE = /^\s*```/;

/** The text outside fenced code blocks, the blocks' lines blanked so line numbers stay. */
function prose(text: string): string {
  let inFence = false;
  return text
    .split('\n')
    .map((line) => {
      if (FENCE.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

/** Every fenced block's body and every inline code span: where commands are written. */
function codeOf(text: string): string[] {
  const code: string[] = [];
  let block: string[] | undefined;
  for (const line of text.split('\n')) {
    if (FENCE.test(line)) {
      if (block) code.push(block.join('\n'));
      block = block ? undefined : [];
    } else if (block) block.push(line);
  }
  for (const span of prose(text).matchAll(/`([^`\n]+)`/g)) code.push(span[1]!);
  return code;
}

/**
 * GitHub's anchor for a heading: its rendered text lower-cased, punctuation dropped, spaces to hyphens, repeats
 * numbered.
 */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of prose(text).matchAll(/^#{1,6} +(.+?) *#* *$/gm)) {
    const rendered = match[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[`*_]{1,2}(?=\S)|(?<=\S)[`*_]{1,2}/g, '');
    const base = rendered
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

interface Link {
  doc: string;
  target: string;
}

/** Relative links in prose (code spans hold no links), with text that may wrap across lines. */
function relativeLinks(doc: Doc): Link[] {
  const text = prose(doc.text).replace(/`[^`\n]*`/g, 'code');
  return [...text.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z]+:/i.test(target))
    .map((target) => ({ doc: doc.file, target }));
}

/** Why a link leads nowhere, or null when it resolves to a file and (for #anchor) a heading in it. */
function brokenReason({ doc, target }: Link): string | null {
  const [filePart = '', anchor] = target.split('#');
  const file = filePart === '' ? doc : path.posix.normalize(path.posix.join(path.posix.dirname(doc), filePart));
  if (file.startsWith('..') || !existsSync(projectPath(file))) return `${file} does not exist`;
  if (anchor === undefined) return null;
  if (!file.endsWith('.md')) return `#${anchor} on ${file}, which is not a Markdown file`;
  const anchors = anchorsOf(readFileSync(projectPath(file), 'utf8'));
  return anchors.has(anchor) ? null : `${file} has no heading #${anchor} (it has: ${[...anchors].join(', ')})`;
}

/** Repository paths a document names: services/, scripts/, deploy/, tests/ (and their dist/ builds). */
function repoPaths(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(/(?<![\w./-])((?:dist\/)?(?:services|scripts|deploy|tests)\/[\w./<>-]*)/g)) {
    const mentioned = m[1]!.replace(/[.:]+$/, '');
    // `<name>` stands for any transport's file: a pattern, not a path.
    if (mentioned.includes('<')) continue;
    // In a kubectl command, deploy/NAME is a Deployment (`port-forward deploy/itb-receiver`), not a folder.
    const lineBefore = text.slice(text.lastIndexOf('\n', m.index) + 1, m.index);
    if (/\bkubectl\b/.test(lineBefore) && /^deploy\/[\w-]+$/.test(mentioned)) continue;
    found.add(mentioned);
  }
  return [...found];
}

/** The file a mentioned path stands for: a built file is its TypeScript source. */
function sourceOf(mentioned: string): string {
  return mentioned.startsWith('dist/') ? mentioned.slice('dist/'.length).replace(/\.js$/, '.ts') : mentioned;
}

describe('README and docs/', () => {
  it('finds the README and the docs', () => {
    expect(docs.map((d) => d.file)).toContain('README.md');
    expect(docs.length).toBeGreaterThan(5);
  });

  it('every relative link leads to a file, and every #anchor to a heading in it', () => {
    const links = docs.flatMap(relativeLinks);
    expect(links.length).toBeGreaterThan(20);
    const broken = links
      .map((link) => ({ ...link, reason: brokenReason(link) }))
      .filter((link) => link.reason !== null);
    expect(broken).toEqual([]);
  });

  it('every doc in docs/ is linked from the README', () => {
    const linked = new Set(relativeLinks(docs[0]!).map((link) => link.target.split('#')[0]));
    expect(
      docs
        .slice(1)
        .map((d) => d.file)
        .filter((file) => !linked.has(file)),
    ).toEqual([]);
  });

  it("every npm command in code names a script of package.json or one of npm's own", () => {
    const scripts = Object.keys(
      (JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts,
    );
    const unknown: string[] = [];
    let checked = 0;
    for (const doc of docs) {
      for (const code of codeOf(doc.text)) {
        for (const m of code.matchAll(/(?<![\w-])npm +(run +)?([a-z][\w:-]*)/g)) {
          checked++;
          const run = m[1];
          // A colon ends a name in prose (`npm start: the receiver was killed`); script names may hold one.
          const name = m[2]!.replace(/:+$/, '');
          const known = run ? scripts.includes(name) : scripts.includes(name) || NPM_COMMANDS.has(name);
          if (!known) unknown.push(`${doc.file}: ${m[0]}`);
        }
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(unknown).toEqual([]);
  });

  it('every path under services/, scripts/, deploy/ or tests/ that they name exists (dist/ as its source)', () => {
    const missing = docs.flatMap((doc) =>
      repoPaths(doc.text)
        .filter((p) => !existsSync(projectPath(sourceOf(p))))
        .map((p) => `${doc.file}: ${p}`),
    );
    expect(docs.flatMap((doc) => repoPaths(doc.text)).length).toBeGreaterThan(50);
    expect(missing).toEqual([]);
  });

  // The table itself is generated (tests/unit/generated.test.ts); what compose reads is not.
  it("every compose-only variable of the README's Configuration table is one docker-compose.yml reads", () => {
    const compose = readFileSync(projectPath('docker-compose.yml'), 'utf8');
    for (const variable of Object.keys(COMPOSE_ONLY_DOCS)) expect(compose, variable).toContain(`\${${variable}`);
  });

  it(`the README is at most ${README_MAX_LINES} lines`, () => {
    expect(docs[0]!.text.split('\n').length).toBeLessThanOrEqual(README_MAX_LINES);
  });
});

describe('the error codes', () => {
  const catalogue = readFileSync(projectPath('docs/errors.md'), 'utf8');
  const documented = [...catalogue.matchAll(/^\| `(ITB_ERR_[A-Z_]+)` \|/gm)].map((m) => m[1]);

  it('docs/errors.md has a row for every code the services raise, in their order, and none other', () => {
    expect(documented).toEqual(Object.values(ErrorCode));
  });

  it('every error thrown under services/ carries a code: no bare `throw new Error(` (generated code aside)', () => {
    const bare: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== 'gen') walk(file);
        } else if (entry.name.endsWith('.ts'))
          readFileSync(file, 'utf8')
            .split('\n')
            .forEach((line, index) => {
              if (line.includes('throw new Error(')) bare.push(`${path.relative(projectPath('.'), file)}:${index + 1}`);
            });
      }
    };
    walk(projectPath('services'));
    expect(bare).toEqual([]);
  });
});

describe('GitHub anchors, as the link check computes them', () => {
  it.each([
    ["## Against each library's ceiling", 'against-each-librarys-ceiling'],
    ['## Many clients, a fixed rate', 'many-clients-a-fixed-rate'],
    ['## results.json', 'resultsjson'],
    ['### Warm-up and sample size', 'warm-up-and-sample-size'],
    ['## `npm test` in part', 'npm-test-in-part'],
  ])('%s → #%s', (heading, anchor) => {
    expect([...anchorsOf(heading)]).toEqual([anchor]);
  });

  it('numbers a repeated heading as GitHub does', () => {
    expect([...anchorsOf('## Notes\n## Notes\n```\n## not a heading\n```\n## Notes')]).toEqual([
      'notes',
      'notes-1',
      'notes-2',
    ]);
  });
});
