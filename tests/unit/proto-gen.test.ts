import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { projectPath } from '../../services/shared/paths.js';

// The code generated from proto/transfer.proto for the grpc-connect transport is committed
// (services/transports/gen/); here buf runs buf.gen.yaml again into a folder of its own, with the
// protoc-gen-es of node_modules (a local plugin: offline), and every file must match byte for byte.
// A proto or plugin changed without `npm run gen:proto` fails here.

const GEN_FOLDER = path.join('services', 'transports', 'gen');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'itb-proto-gen-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Each file of `folder` with its bytes, by name. */
function filesOf(folder: string): Map<string, Buffer> {
  return new Map(readdirSync(folder).map((name) => [name, readFileSync(path.join(folder, name))]));
}

describe('generated protobuf code', () => {
  it('services/transports/gen/ is exactly what `npm run gen:proto` writes from proto/', () => {
    execFileSync(projectPath('node_modules', '.bin', 'buf'), ['generate', '--output', scratch], {
      cwd: projectPath(),
      stdio: 'pipe',
    });
    const written = filesOf(path.join(scratch, GEN_FOLDER));
    const committed = filesOf(projectPath(GEN_FOLDER));
    expect([...written.keys()].sort()).toEqual(['transfer_pb.ts']);
    expect([...committed.keys()].sort(), 'run `npm run gen:proto` and commit what it wrote').toEqual([
      ...written.keys(),
    ]);
    for (const [name, bytes] of written) {
      expect(committed.get(name)?.equals(bytes), `${GEN_FOLDER}/${name} is stale: run npm run gen:proto`).toBe(true);
    }
  }, 60_000);
});
