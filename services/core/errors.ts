/** Stable error codes: logs, exit codes and tests match on these, never on message text. */
export const ErrorCode = {
  config: 'ITB_ERR_CONFIG',
  frame: 'ITB_ERR_FRAME',
  timeout: 'ITB_ERR_TIMEOUT',
  receiverUnreachable: 'ITB_ERR_RECEIVER_UNREACHABLE',
  transport: 'ITB_ERR_TRANSPORT',
  /** The peer refused who we are (a wrong AUTH_TOKEN, a credential for another section): retrying cannot help. */
  refused: 'ITB_ERR_REFUSED',
  unknownTransport: 'ITB_ERR_UNKNOWN_TRANSPORT',
  image: 'ITB_ERR_IMAGE',
  /**
   * A file could not be written (a full disk, a file-size limit, permissions); the message names it and the system's
   * reason.
   */
  write: 'ITB_ERR_WRITE',
  /** A file being served changed under the receiver (it shrank while read): the answer is cut, the file left alone. */
  read: 'ITB_ERR_READ',
  /** The installation is incomplete (a bundled file missing, no package.json) or the host has no room (free ports). */
  setup: 'ITB_ERR_SETUP',
  /** An invariant of the code itself broke: a bug to report, never the user's input. */
  internal: 'ITB_ERR_INTERNAL',
} as const;

/** One of the codes in {@link ErrorCode}. */
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

/** An error the project raises on purpose, carrying a stable code. */
export class ItbError extends Error {
  constructor(
    readonly code: ErrorCodeValue,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ItbError';
  }
}

/** Message of any thrown value, for logs and reports. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The ITB_ERR_* code of a thrown value, for a log line (docs/errors.md says what each means); undefined for others. */
export function errorCodeOf(err: unknown): ErrorCodeValue | undefined {
  return err instanceof ItbError ? err.code : undefined;
}
