import { describe, expect, it } from 'vitest';
import { BadCeilingOutput, parseCeilingLine } from '../../scripts/lib/ceiling-run.js';

// A line exactly as scripts/ceiling/main.js prints it.
const LINE =
  '{"transport":"tcp","MBps":2382.4,"imagesPerSecond":4365,"rttP50Ms":3.26,"rttP99Ms":8.62,"senderCpuMs":155,' +
  '"count":1000,"imageBytes":545792,"window":16,"spanMs":229.1}';
const FIGURES = {
  MBps: 2382.4,
  imagesPerSecond: 4365,
  rttP50Ms: 3.26,
  rttP99Ms: 8.62,
  senderCpuMs: 155,
  count: 1000,
  imageBytes: 545792,
  window: 16,
  spanMs: 229.1,
};

describe('parseCeilingLine', () => {
  it('reads the figures of a good line', () => {
    expect(parseCeilingLine(`${LINE}\n`)).toEqual(FIGURES);
  });

  it('takes the last JSON line when there are several, skipping log lines and blank lines after it', () => {
    const earlier = LINE.replace('"MBps":2382.4', '"MBps":1.5');
    expect(parseCeilingLine(`${earlier}\nwarming up\n${LINE}\nbye\n[1, 2]\n\n`)).toEqual(FIGURES);
  });

  it('throws with the failure the runner reports', () => {
    expect(() => parseCeilingLine('{"failed":"no ack for 10000 ms after 3 of 1100 images"}\n')).toThrow(
      new BadCeilingOutput('the ceiling run failed: no ack for 10000 ms after 3 of 1100 images'),
    );
  });

  it('throws naming a missing or non-finite figure', () => {
    const line = LINE.replace('"rttP50Ms":3.26,', '');
    expect(() => parseCeilingLine(line)).toThrow(
      `the ceiling's "rttP50Ms" is missing, expected a finite number, in ${line}`,
    );
    expect(() => parseCeilingLine(LINE.replace('2382.4', 'null'))).toThrow(
      `the ceiling's "MBps" is null, expected a finite number`,
    );
  });

  it('throws on output with no JSON line, quoting its end, and on empty output', () => {
    expect(() => parseCeilingLine('Error: connect ECONNREFUSED\n{"MBps": 1,\n')).toThrow(
      new BadCeilingOutput(
        `no JSON line in the ceiling runner's stdout: "Error: connect ECONNREFUSED\\n{\\"MBps\\": 1,"`,
      ),
    );
    expect(() => parseCeilingLine(' \n')).toThrow(new BadCeilingOutput('the ceiling runner printed nothing on stdout'));
  });
});
