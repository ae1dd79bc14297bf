import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configVariables, parseConfig } from '../../services/core/config/config.js';
import { projectPath } from '../../services/shared/paths.js';
import { transports } from '../../services/transports/index.js';
import { generatedFiles, staleFiles } from '../../scripts/lib/generated-files.js';

// What `npm run generate` writes (scripts/lib/generated-files.ts) is committed beside its sources:
// the generator runs here in memory, and a committed file that differs is named, so a default,
// knob or port changed in the code reaches .env.example, compose, the swarm stack, Kubernetes and
// the README's Configuration table.

const committed = (file: string): string => readFileSync(projectPath(file), 'utf8');

/** .env.example's NAME=value lines. */
function envExample(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
}

describe('generated files', () => {
  it('every committed file is what `npm run generate` writes', () => {
    expect(staleFiles(committed), 'stale: run `npm run generate` and commit what it wrote').toEqual([]);
  });

  it('names a committed file whose generated value was edited by hand', () => {
    const edited = (file: string): string =>
      file === 'deploy/swarm/stack.yml' ? committed(file).replace('WINDOW: $', 'WINDOW: 2$') : committed(file);
    expect(staleFiles(edited)).toEqual(['deploy/swarm/stack.yml']);
  });

  it('names the README when a row of its Configuration table was edited by hand', () => {
    const edited = (file: string): string =>
      file === 'README.md' ? committed(file).replace('| `WINDOW` | `1` |', '| `WINDOW` | `2` |') : committed(file);
    expect(edited('README.md')).not.toEqual(committed('README.md'));
    expect(staleFiles(edited)).toEqual(['README.md']);
  });
});

describe('.env.example, as generated', () => {
  const written = envExample(generatedFiles(committed).find((f) => f.file === '.env.example')!.text);

  it('lists every variable the config reads, and nothing else', () => {
    expect([...written.keys()].sort()).toEqual(configVariables(transports).sort());
  });

  // The values the docs write otherwise than the schema's default (IMAGE_COUNT empty, MAX_IMAGE_SIZE as a size).
  it('gives each variable its default value', () => {
    expect(parseConfig(Object.fromEntries(written), transports)).toEqual(parseConfig({}, transports));
  });
});
