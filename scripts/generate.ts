import { readFileSync, writeFileSync } from 'node:fs';
import { projectPath } from '../services/shared/paths.js';
import { generatedFiles } from './lib/generated-files.js';

// `npm run generate`: writes .env.example, knobs.env and the marked blocks of docker-compose.yml,
// the swarm stack and the Kubernetes manifests from the transport table and the config schema
// (scripts/lib/generated-files.ts says what goes where). Run it after changing either, and commit
// what it wrote: tests/unit/generated.test.ts fails on a file it would write otherwise.

const read = (file: string): string => readFileSync(projectPath(file), 'utf8');
for (const { file, text } of generatedFiles(read)) {
  if (read(file) === text) continue;
  writeFileSync(projectPath(file), text);
  console.log(`wrote ${file}`);
}
