import { pino, type Logger, type LevelWithSilent } from 'pino';

/** The one pino factory: JSON lines on stderr (synchronous, so nothing is lost at exit), stdout stays for the summary. */
export function createLogger(service: string, level: LevelWithSilent): Logger {
  return pino(
    {
      name: service,
      level,
      base: { service },
      // A Buffer in a log line would dump megabytes of image: log its length instead.
      serializers: { payload: (value: unknown) => (Buffer.isBuffer(value) ? `<${value.length} bytes>` : value) },
    },
    pino.destination({ fd: 2, sync: true }),
  );
}
