import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { errorMessage } from '../../services/core/errors.js';
import { describeShaping, formatBitRate, type NetworkShaping } from '../../services/core/config/link.js';

// The shaped link of `npm start` (NETWORK_RATE, NETWORK_DELAY, NETWORK_LOSS): the transmitter runs
// in a network namespace of its own, joined to this machine's namespace (receiver and private
// brokers) by a veth pair with MTU 1500, as on a Docker bridge, and tc shapes both ends' egress:
// images one way, acks the other. Every image crosses the link once, a broker's too (the
// transmitter reaches the broker over it, the receiver reads it locally). Needs root.

const run = promisify(execFile);
/** Bound on each ip or tc command: they answer in milliseconds. */
const COMMAND_TIMEOUT_MS = 10_000;
/** The veth's MTU: Docker's bridge default, and Ethernet's. */
export const LINK_MTU = 1500;
/** tbf's queue, in time at the link's rate: a TCP window's worth on a fast link without bloat on a slow one. */
const TBF_LATENCY_MS = 50;

/**
 * Why shaping cannot be applied here (no root, no sch_netem): `npm start` exits 2 with it, before starting anything.
 */
export class ShapingRefused extends Error {}

/** A link set up for one run. */
export interface ShapedLink {
  /** The transmitter's namespace: run it with `ip netns exec <name>`. */
  namespace: string;
  /** Address of this machine's end (receiver, brokers) and of the transmitter's end. */
  receiverAddress: string;
  transmitterAddress: string;
  /** The link in words, for every report (the services' ITB_LINK). */
  description: string;
  /** Removes the namespace and the veth pair; safe to call twice. */
  close(): Promise<void>;
}

async function command(file: 'ip' | 'tc', args: readonly string[]): Promise<void> {
  try {
    await run(file, args, { timeout: COMMAND_TIMEOUT_MS });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(`${file} ${args.join(' ')}: ${stderr || errorMessage(err)}`, { cause: err });
  }
}

/** tbf's bucket: at least 4 ms of the rate, and never below a few full-size packets (tbf needs rate ÷ HZ at least). */
export function tbfBurstBytes(rateBitsPerSecond: number): number {
  return Math.max(4 * (LINK_MTU + 14), Math.ceil(rateBitsPerSecond / 8 / 250));
}

/** The tc commands that shape one end's egress, in order. */
export function shapingCommands(device: string, shaping: NetworkShaping, namespace?: string): string[][] {
  const at = namespace === undefined ? [] : ['-n', namespace];
  const netemArgs = [
    ...(shaping.delayMs === undefined ? [] : ['delay', `${shaping.delayMs}ms`]),
    ...(shaping.lossPercent === undefined ? [] : ['loss', `${shaping.lossPercent}%`]),
  ];
  const rate = shaping.rateBitsPerSecond;
  const tbf = (parent: string[]): string[] => [
    ...at,
    'qdisc',
    'add',
    'dev',
    device,
    ...parent,
    'tbf',
    'rate',
    `${rate}bit`,
    'burst',
    String(tbfBurstBytes(rate!)),
    'latency',
    `${TBF_LATENCY_MS}ms`,
  ];
  if (netemArgs.length === 0) return rate === undefined ? [] : [tbf(['root'])];
  const netem = [...at, 'qdisc', 'add', 'dev', device, 'root', 'handle', '1:', 'netem', ...netemArgs];
  // netem first, the rate under it: netem's own queue holds the delayed packets.
  return rate === undefined ? [netem] : [netem, tbf(['parent', '1:1', 'handle', '10:'])];
}

/** Sets up the link for `shaping`; rejects with {@link ShapingRefused} when this machine cannot apply it. */
export async function openShapedLink(shaping: NetworkShaping, id = process.pid): Promise<ShapedLink> {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    throw new ShapingRefused(
      `${describeShaping(shaping)} needs root (a network namespace, a veth pair and tc): run npm start as root, ` +
        `or unset them`,
    );
  }
  const namespace = `itb-tx-${id}`;
  const rootDevice = `itbr${id}`.slice(0, 15);
  const txDevice = `itbt${id}`.slice(0, 15);
  // A /30 of its own per run, so two runs at once never share an address.
  const base = (id % 16_384) * 4;
  const subnet = `10.213.${Math.floor(base / 256)}.`;
  const receiverAddress = `${subnet}${(base % 256) + 1}`;
  const transmitterAddress = `${subnet}${(base % 256) + 2}`;
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    // Deleting the namespace deletes its veth end, and with it the peer.
    await command('ip', ['netns', 'delete', namespace]).catch(() => undefined);
    await command('ip', ['link', 'delete', rootDevice]).catch(() => undefined);
  };
  try {
    await command('ip', ['netns', 'add', namespace]);
    await command('ip', [
      'link',
      'add',
      rootDevice,
      'mtu',
      String(LINK_MTU),
      'type',
      'veth',
      'peer',
      'name',
      txDevice,
      'mtu',
      String(LINK_MTU),
    ]);
    await command('ip', ['link', 'set', txDevice, 'netns', namespace]);
    await command('ip', ['addr', 'add', `${receiverAddress}/30`, 'dev', rootDevice]);
    await command('ip', ['link', 'set', rootDevice, 'up']);
    await command('ip', ['-n', namespace, 'addr', 'add', `${transmitterAddress}/30`, 'dev', txDevice]);
    await command('ip', ['-n', namespace, 'link', 'set', txDevice, 'up']);
    await command('ip', ['-n', namespace, 'link', 'set', 'lo', 'up']);
  } catch (err) {
    await close();
    throw new ShapingRefused(
      `cannot set up the network namespace and veth pair for ${describeShaping(shaping)}: ${errorMessage(err)}`,
    );
  }
  try {
    await applyShaping(
      [...shapingCommands(rootDevice, shaping), ...shapingCommands(txDevice, shaping, namespace)],
      shaping,
    );
  } catch (err) {
    await close();
    throw err;
  }
  const description =
    `a veth pair, MTU ${LINK_MTU}, between the transmitter's own network namespace (${transmitterAddress}) and ` +
    `the receiver's (${receiverAddress}, with any private broker), ` +
    `shaped each way by tc: ${shapedText(shaping)}`;
  return { namespace, receiverAddress, transmitterAddress, description, close };
}

/**
 * Runs `commands` (tc's arguments) in order; rejects with {@link ShapingRefused} saying why, netem missing included.
 */
export async function applyShaping(commands: readonly string[][], shaping: NetworkShaping): Promise<void> {
  try {
    for (const args of commands) await command('tc', args);
  } catch (err) {
    const message = errorMessage(err);
    if (
      (shaping.delayMs !== undefined || shaping.lossPercent !== undefined) &&
      /netem|qdisc kind is unknown/i.test(message)
    ) {
      throw new ShapingRefused(
        `NETWORK_DELAY and NETWORK_LOSS need tc's netem, and this kernel has no sch_netem (${message}); ` +
          `NETWORK_RATE alone works with tbf`,
      );
    }
    throw new ShapingRefused(`tc could not shape the link for ${describeShaping(shaping)}: ${message}`);
  }
}

/** "tbf rate 200mbit, netem delay 20 ms (NETWORK_RATE=200mbit, NETWORK_DELAY=20ms)". */
export function shapedText(shaping: NetworkShaping): string {
  const shaped = [
    shaping.rateBitsPerSecond === undefined ? '' : `tbf rate ${formatBitRate(shaping.rateBitsPerSecond)}`,
    shaping.delayMs === undefined ? '' : `netem delay ${shaping.delayMs} ms`,
    shaping.lossPercent === undefined ? '' : `netem loss ${shaping.lossPercent} %`,
  ].filter(Boolean);
  return `${shaped.join(', ')} (${describeShaping(shaping)})`;
}
