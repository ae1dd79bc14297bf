import { describe, expect, it } from 'vitest';
import { BadCeilingOutput, parseCeilingLine } from '../../scripts/lib/ceiling-run.js';

// A line exactly as scripts/ceiling/main.js prints it.
const LINE =
  '{"transport":"tcp","MBps":2382.4,"imagesPerSecond":4365,"rttP50Ms":3.26,"rttP99Ms":8.62,"senderCpuMs":155,' +
  '"receiverCpuMs":212.5,"count":1000,"imageBytes":545792,"window":16,"spanMs":229.1}';
const FIGURES = {
  MBps: 2382.4,
  imagesPerSecond: 4365,
  rttP50Ms: 3.26,
  rttP99Ms: 8.62,
  senderCpuMs: 155,
  receiverCpuMs: 212.5,
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

  it("reads the receiver's CPU as a finite number or null, and throws when it is missing or anything else", () => {
    // Null: the two sides in one process (runInProcess), whose CPU cannot be split.
    expect(parseCeilingLine(LINE.replace('212.5', 'null'))).toEqual({ ...FIGURES, receiverCpuMs: null });
    expect(parseCeilingLine(LINE.replace('212.5', '0'))).toEqual({ ...FIGURES, receiverCpuMs: 0 });
    const missing = LINE.replace('"receiverCpuMs":212.5,', '');
    expect(() => parseCeilingLine(missing)).toThrow(
      new BadCeilingOutput(`the ceiling's "receiverCpuMs" is missing, expected a finite number or null, in ${missing}`),
    );
    expect(() => parseCeilingLine(LINE.replace('212.5', '"212.5"'))).toThrow(
      `the ceiling's "receiverCpuMs" is "212.5", expected a finite number or null`,
    );
    // JSON has no Infinity, but a literal too large for a double parses as one.
    expect(() => parseCeilingLine(LINE.replace('212.5', '1e999'))).toThrow(
      `the ceiling's "receiverCpuMs" is Infinity, expected a finite number or null`,
    );
    expect(() => parseCeilingLine(LINE.replace('155', '-1e999'))).toThrow(
      `the ceiling's "senderCpuMs" is -Infinity, expected a finite number, in`,
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
