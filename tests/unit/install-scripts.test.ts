import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectPath } from '../../services/shared/paths.js';

// npm 11 runs a dependency's install script only when package.json's allowScripts approves it.
// Every such script is denied: each package ships what the project uses prebuilt, which these
// tests prove by loading it from an install that ran no script (npm ci here, and the Dockerfile's
// --ignore-scripts). A new dependency with an install script fails the first test until it is
// answered in allowScripts.

const require = createRequire(import.meta.url);
const packageJson = JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as {
  allowScripts?: Record<string, boolean>;
};

describe('install scripts', () => {
  it('every installed package with an install script is answered in allowScripts, and every answer is a denial', () => {
    const listed = execFileSync('npm', ['install-scripts', 'ls'], { cwd: projectPath(), encoding: 'utf8' });
    expect(listed).not.toMatch(/not yet covered by allowScripts/);
    expect(packageJson.allowScripts).toEqual({
      '@bufbuild/buf': false,
      bufferutil: false,
      protobufjs: false,
      zeromq: false,
    });
  }, 30_000);

  it("zeromq's prebuilt addon loads and makes a socket", async () => {
    const zmq = await import('zeromq');
    const socket = new zmq.Push();
    expect(socket.closed).toBe(false);
    socket.close();
  });

  it("bufferutil's prebuilt addon loads (not its JavaScript fallback) and masks", () => {
    const dir = path.dirname(require.resolve('bufferutil/package.json'));
    const nodeGypBuild = require('node-gyp-build') as (dir: string) => {
      mask(source: Buffer, mask: Buffer, output: Buffer, offset: number, length: number): void;
    };
    const native = nodeGypBuild(dir);
    const output = Buffer.alloc(4);
    native.mask(Buffer.from([1, 2, 3, 4]), Buffer.from([0xff, 0xff, 0xff, 0xff]), output, 0, 4);
    expect([...output]).toEqual([0xfe, 0xfd, 0xfc, 0xfb]);
  });

  it('protobufjs (under @grpc/proto-loader) loads and encodes', () => {
    const protobuf = require('protobufjs') as typeof import('protobufjs');
    const root = protobuf.parse('syntax = "proto3"; message M { uint32 seq = 1; }').root;
    const type = root.lookupType('M');
    expect([...type.encode(type.create({ seq: 300 })).finish()]).toEqual([0x08, 0xac, 0x02]);
  });

  it("@bufbuild/buf's binary (npm run gen:proto) runs", () => {
    const version = execFileSync(projectPath('node_modules', '.bin', 'buf'), ['--version'], { encoding: 'utf8' });
    expect(version.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
