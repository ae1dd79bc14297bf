import { describe, expect, it } from 'vitest';
import { describeWriteFailure } from '../../services/shared/files.js';
import { refusalReason } from '../../services/transmitter/control-client.js';

// The words a failure reaches people with: the file and the system's reason for a write, the most
// specific text of a refusal's body.

/** An error as node:fs raises it. */
function fsError(message: string, code: string, syscall: string): Error {
  return Object.assign(new Error(message), { code, syscall });
}

describe('describeWriteFailure', () => {
  it.each([
    [
      'a write past a file-size limit',
      fsError('EFBIG: file too large, write', 'EFBIG', 'write'),
      'could not write /x/report.html: EFBIG: file too large',
    ],
    [
      'a full disk',
      fsError('ENOSPC: no space left on device, write', 'ENOSPC', 'write'),
      'could not write /x/report.html: ENOSPC: no space left on device',
    ],
    [
      "an open refused (the temporary's path dropped)",
      fsError("EACCES: permission denied, open '/x/report.html.12.tmp'", 'EACCES', 'open'),
      'could not write /x/report.html: EACCES: permission denied',
    ],
    ['an error without a syscall', new Error('something else'), 'could not write /x/report.html: something else'],
  ])('%s', (_case, err, expected) => {
    expect(describeWriteFailure('/x/report.html', err)).toBe(expected);
  });
});

describe('refusalReason', () => {
  it.each([
    [
      "fastify's own error: message over its generic error",
      '{"statusCode":500,"error":"Internal Server Error","message":"could not write /x: EFBIG: file too large"}',
      'could not write /x: EFBIG: file too large',
    ],
    [
      "the receiver's refusal: error",
      '{"error":"a run is in progress: started 2026-11-25T18:01:02.003Z by 127.0.0.1"}',
      'a run is in progress: started 2026-11-25T18:01:02.003Z by 127.0.0.1',
    ],
    ['an empty message', '{"error":"wrong AUTH_TOKEN","message":""}', 'wrong AUTH_TOKEN'],
    ['JSON without either', '{"status":"no"}', '{"status":"no"}'],
    ['not JSON', 'Bad Gateway', 'Bad Gateway'],
  ])('%s', (_case, body, expected) => {
    expect(refusalReason(body)).toBe(expected);
  });
});
