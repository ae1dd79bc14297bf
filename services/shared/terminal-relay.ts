import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { humanLogLine, type LinePrinter } from './logger.js';

// `npm start` on a terminal: the transmitter draws the progress bars, so every other process's line
// (the receivers', npm start's own) must reach the terminal through the transmitter's display, which
// prints it above the bars. The lines travel as IPC messages (the transmitter is a Node child with
// an IPC channel); this file holds both ends.

interface RelayedLine {
  itbTerminalLine: string;
}

function isRelayedLine(message: unknown): message is RelayedLine {
  return (
    typeof message === 'object' &&
    message !== null &&
    typeof (message as Partial<RelayedLine>).itbTerminalLine === 'string'
  );
}

/**
 * The transmitter's end: prints each relayed line with `print` (the progress display's). The IPC
 * channel, when there is one, never keeps the process alive.
 */
export function printRelayedLines(print: LinePrinter): void {
  if (process.channel === undefined) return;
  process.on('message', (message: unknown) => {
    if (isRelayedLine(message)) print(message.itbTerminalLine);
  });
  process.channel.unref();
}

/**
 * npm start's end: a printer that sends each line to `target()` (the transmitter) while it is
 * connected, and writes it to stderr itself before the transmitter runs and after it ended.
 */
export function relayingPrinter(target: () => ChildProcess | undefined): LinePrinter {
  const direct = (line: string): void => void process.stderr.write(line);
  return (line) => {
    const child = target();
    if (child === undefined || !child.connected) return direct(line);
    child.send({ itbTerminalLine: line } satisfies RelayedLine, (err) => {
      if (err) direct(line);
    });
  };
}

/**
 * Prints every line `child` writes to its stderr (a pipe: JSON when it is pino's) as a human line;
 * resolves once the pipe is closed, so the last lines are printed before npm start exits.
 */
export function printChildLines(child: ChildProcess, print: LinePrinter): Promise<void> {
  if (child.stderr === null) return Promise.resolve();
  const lines = createInterface({ input: child.stderr, crlfDelay: Infinity });
  lines.on('line', (line) => print(humanLogLine(line)));
  return new Promise((resolve) => lines.once('close', resolve));
}
