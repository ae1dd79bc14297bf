import { describe, expect, it } from 'vitest';
import { describeWriteFailure } from '../../services/shared/files.js';

// The words a failure reaches people with: the file and the system's reason for a write.

/** An error as node:fs raises it. */
function fsError(message: string, code: string, syscall: string): Error {
  return Object.assign(new Error(message), { code, syscall });
}

describe('describeWriteFailure', () => {
  it.each([
    ['a write past a file-size limit', fsError('EFBIG: file too large, write', 'EFBIG', 'write'), 'could not write /x/report.html: EFBIG: file too large'],
    ['a full disk', fsError('ENOSPC: no space left on device, write', 'ENOSPC', 'write'), 'could not write /x/report.html: ENOSPC: no space left on device'],
    ['an open refused (the temporary\'s path dropped)', fsError("EACCES: permission denied, open '/x/report.html.12.tmp'", 'EACCES', 'open'), 'could not write /x/report.html: EACCES: permission denied'],
    ['an error without a syscall', new Error('something else'), 'could not write /x/report.html: something else'],
  ])('%s', (_case, err, expected) => {
    expect(describeWriteFailure('/x/report.html', err)).toBe(expected);
  });
});
