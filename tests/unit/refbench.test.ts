import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BadRefbenchOutput, findRefbench, parseRefbenchLine } from '../../scripts/lib/refbench.js';

// A line exactly as ref.js prints it.
const LINE =
  '{"transport":"tcp","size":545792,"count":300,"window":16,"warmup":50,"seconds":0.19,"MBps":863.7,"msgps":1583,"p50ms":8.52,"p99ms":23.51,"senderCpuMs":63}';

describe('parseRefbenchLine', () => {
  it('reads the figures of a good line', () => {
    expect(parseRefbenchLine(`${LINE}\n`)).toEqual({ MBps: 863.7, msgps: 1583, p50Ms: 8.52, p99Ms: 23.51, senderCpuMs: 63 });
  });

  it('takes the last JSON line when there are several, skipping log lines and blank lines after it', () => {
    const earlier = LINE.replace('"MBps":863.7', '"MBps":1.5');
    const later = LINE.replace('"MBps":863.7', '"MBps":1207.2').replace('"p50ms":8.52', '"p50ms":0.28');
    const text = `${earlier}\nwarming up\n${later}\nbye\n[1, 2]\n\n`;
    expect(parseRefbenchLine(text)).toEqual({ MBps: 1207.2, msgps: 1583, p50Ms: 0.28, p99Ms: 23.51, senderCpuMs: 63 });
  });

  it('throws naming a missing figure', () => {
    const line = '{"transport":"zmq","MBps":1170,"msgps":2144,"p99ms":3.1,"senderCpuMs":80}';
    expect(() => parseRefbenchLine(line)).toThrow(BadRefbenchOutput);
    expect(() => parseRefbenchLine(line)).toThrow(`refbench's "p50ms" is missing, expected a finite number, in ${line}`);
  });

  it('throws on a figure that is not a finite number (ref.js prints Infinity as null)', () => {
    expect(() => parseRefbenchLine('{"MBps":null,"msgps":1,"p50ms":1,"p99ms":1}')).toThrow(`refbench's "MBps" is null, expected a finite number, in {"MBps":null,"msgps":1,"p50ms":1,"p99ms":1}`);
    expect(() => parseRefbenchLine('{"MBps":1,"msgps":"fast","p50ms":1,"p99ms":1}')).toThrow(`refbench's "msgps" is "fast", expected a finite number`);
  });

  it('gives senderCpuMs null when ref.js did not report it', () => {
    expect(parseRefbenchLine('{"MBps":1,"msgps":2,"p50ms":3,"p99ms":4}')).toEqual({ MBps: 1, msgps: 2, p50Ms: 3, p99Ms: 4, senderCpuMs: null });
  });

  it('throws on output with no JSON line, quoting its end', () => {
    expect(() => parseRefbenchLine('Error: connect ECONNREFUSED 127.0.0.1:6399\n{"MBps": 1,\n')).toThrow(
      new BadRefbenchOutput(`no JSON line in refbench's stdout: "Error: connect ECONNREFUSED 127.0.0.1:6399\\n{\\"MBps\\": 1,"`),
    );
  });

  it('throws on empty output', () => {
    expect(() => parseRefbenchLine(' \n')).toThrow(new BadRefbenchOutput('refbench printed nothing on stdout'));
  });
});

describe('findRefbench', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'itb-refbench-'));
  const project = path.join(root, 'main');
  const refbench = path.join(root, 'shared', 'refbench');
  mkdirSync(project);
  mkdirSync(refbench, { recursive: true });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('says where ref.js is missing and how to point at it', () => {
    expect(findRefbench(project, {})).toEqual({
      unavailable: `no ref.js in ${refbench} (the default ../shared/refbench): set REFBENCH_DIR to the folder that holds refbench's ref.js`,
    });
  });

  it('gives the install command when node_modules is missing, then the folder once it is there', () => {
    writeFileSync(path.join(refbench, 'ref.js'), '');
    expect(findRefbench(project, {})).toEqual({ unavailable: `refbench in ${refbench} has no node_modules: run \`cd ${refbench} && npm ci\`` });
    mkdirSync(path.join(refbench, 'node_modules'));
    expect(findRefbench(project, {})).toEqual({ dir: refbench });
  });

  it('prefers REFBENCH_DIR, resolved against the project root', () => {
    expect(findRefbench(project, { REFBENCH_DIR: '../elsewhere' })).toEqual({
      unavailable: `no ref.js in ${path.join(root, 'elsewhere')} (REFBENCH_DIR=../elsewhere): set REFBENCH_DIR to the folder that holds refbench's ref.js`,
    });
  });
});
