import { describe, expect, it } from 'vitest';
import { createLogger, humanLogLine } from '../../services/shared/logger.js';
import { withoutColour } from '../helpers/harness.js';

// Colour depends on the stderr the tests run with; the text is what is checked.

describe('human log lines', () => {
  it.each([
    [
      'transport first, the reason in parentheses',
      {
        level: 50,
        time: 1,
        service: 'receiver',
        name: 'receiver',
        transport: 'redis',
        err: 'connect ECONNREFUSED 127.0.0.1:6379',
        msg: 'listener failed to start',
      },
      'ERROR (receiver): redis: listener failed to start (connect ECONNREFUSED 127.0.0.1:6379)\n',
    ],
    [
      'other fields as key=value, an error object by its message',
      {
        level: 40,
        time: 1,
        service: 'transmitter',
        name: 'transmitter',
        err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x' },
        reason: 'gone',
        count: 3,
        retrying: true,
        msg: 'run failed',
      },
      'WARN (transmitter): run failed (boom; gone) count=3 retrying=true\n',
    ],
    [
      'a message over lines made one line',
      { level: 40, time: 1, service: 'start', name: 'start', msg: 'first\nsecond\n' },
      'WARN (start): first second\n',
    ],
  ])('%s', (_name, entry, expected) => {
    expect(withoutColour(humanLogLine(`${JSON.stringify(entry)}\n`))).toBe(expected);
  });

  it('cuts a long field short, keeps a line that is not JSON as it was', () => {
    const line = withoutColour(
      humanLogLine(
        JSON.stringify({
          level: 40,
          service: 'receiver',
          name: 'receiver',
          url: `http://x/${'a'.repeat(200)}`,
          msg: 'm',
        }),
      ),
    );
    expect(line).toMatch(/^WARN \(receiver\): m url=http:\/\/x\/a+…\n$/);
    expect(line.length).toBeLessThan(120);
    expect(humanLogLine('receiver failed to start: no\n')).toBe('receiver failed to start: no\n');
  });

  it('a terminal logger hands each entry at its level to print, as one human line', () => {
    const printed: string[] = [];
    const log = createLogger('receiver', 'warn', {
      terminal: true,
      print: (line) => printed.push(withoutColour(line)),
    });
    log.info('not at this level');
    log.warn({ transport: 'tcp', payload: Buffer.alloc(5) }, 'slow');
    expect(printed).toEqual(['WARN (receiver): tcp: slow payload=<5 bytes>\n']);
  });
});
