import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configVariables, parseConfig } from '../../services/core/config/config.js';
import { projectPath } from '../../services/shared/paths.js';
import { transports } from '../../services/transports/index.js';

// .env.example is the user's list of knobs: it must name exactly what the config reads, and its
// values must be the code's defaults, so copying it changes nothing until the user edits it.

function readEnvExample(): Map<string, string> {
  const entries = new Map<string, string>();
  for (const line of readFileSync(projectPath('.env.example'), 'utf8').split('\n')) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (match) entries.set(match[1]!, match[2]!);
    else if (line.trim() !== '' && !line.startsWith('#'))
      throw new Error(`.env.example line is neither NAME=value nor a comment: ${line}`);
  }
  return entries;
}

describe('.env.example', () => {
  it('lists every variable the config accepts, and nothing else', () => {
    expect([...readEnvExample().keys()].sort()).toEqual(configVariables(transports).sort());
  });

  it('gives each variable its default value', () => {
    expect(parseConfig(Object.fromEntries(readEnvExample()), transports)).toEqual(parseConfig({}, transports));
  });

  it('has a comment right above every variable', () => {
    const lines = readFileSync(projectPath('.env.example'), 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (/^[A-Z]/.test(line)) expect(lines[i - 1]?.startsWith('#'), line).toBe(true);
    });
  });
});
