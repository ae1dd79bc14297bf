import { describe, expect, it } from 'vitest';
import { partOf } from '../../scripts/tools/profile-summary.js';

describe('the part a profiled frame is counted under', () => {
  it('is the package, scoped or not, for code under node_modules', () => {
    expect(partOf('file:///w/node_modules/@grpc/grpc-js/build/src/server-interceptors.js', 'f')).toBe('@grpc/grpc-js');
    expect(partOf('file:///w/node_modules/protobufjs/src/writer.js', 'f')).toBe('protobufjs');
  });

  it("is node's area for its internal modules, the module for its public ones", () => {
    expect(partOf('node:internal/http2/core', 'f')).toBe('node:http2');
    expect(partOf('node:internal/streams/writable', 'f')).toBe('node:streams');
    expect(partOf('node:internal/buffer', 'f')).toBe('node:buffer');
    expect(partOf('node:http2', 'f')).toBe('node:http2');
  });

  it("is this project for its built code, and V8's own name where there is no script", () => {
    expect(partOf('file:///w/dist/services/transports/grpc/transport.js', 'f')).toBe('this project');
    expect(partOf('', '(garbage collector)')).toBe('(garbage collector)');
    expect(partOf('', 'writev')).toBe('(native)');
  });
});
