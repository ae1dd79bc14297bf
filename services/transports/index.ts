import { ErrorCode, ItbError } from '../core/errors.js';
import type { CeilingPair } from './ceiling-contract.js';
import type { Transport } from './contract.js';
import type { HostileClient } from './hostile-contract.js';
import { amqpTransport } from './amqp/transport.js';
import { grpcTransport } from './grpc/transport.js';
import { grpcConnectTransport } from './grpc-connect/transport.js';
import { grpcUnaryTransport } from './grpc-unary/transport.js';
import { httpTransport } from './http/transport.js';
import { httpJsonTransport } from './http-json/transport.js';
import { mqttTransport } from './mqtt/transport.js';
import { natsTransport } from './nats/transport.js';
import { natsJetstreamTransport } from './nats-jetstream/transport.js';
import { redisTransport } from './redis/transport.js';
import { redisKvTransport } from './redis-kv/transport.js';
import { redisListTransport } from './redis-list/transport.js';
import { redisPubsubTransport } from './redis-pubsub/transport.js';
import { tcpTransport } from './tcp/transport.js';
import { unixTransport } from './unix/transport.js';
import { websocketTransport } from './websocket/transport.js';
import { websocketPushTransport } from './websocket-push/transport.js';
import { zeromqTransport } from './zeromq/transport.js';
import { zeromqIpcTransport } from './zeromq-ipc/transport.js';
import { zeromqPairTransport } from './zeromq-pair/transport.js';
import { zeromqPubsubTransport } from './zeromq-pubsub/transport.js';

/**
 * A transport as the table holds it: its link, its ceiling pair (the same library at its thinnest, `npm run bench --
 * ceiling`) and what the hostile suite sends to its port (undefined for a transport whose receiver takes no
 * connections on a port: a broker's, a socket file's, websocket-push's). The ceiling and the hostile client are loaded
 * when asked for: the services never run them, and a process holds only the code it runs.
 */
export interface TransportRow {
  transport: Transport;
  ceiling: () => Promise<CeilingPair>;
  hostile: (() => Promise<HostileClient>) | undefined;
}

/**
 * Every transport, in run order (the TCP baseline last). This is the one list: config, `npm run generate`'s files,
 * `npm start`'s local servers, reports, the bench, the ceiling runner and the contract and hostile suites all take
 * theirs from it; those with `deployment.defaultRun` make the run TRANSPORTS gives when unset. Adding a transport: its
 * folder (transport.ts, ceiling.ts, hostile.ts), and a row here.
 */
export const transportTable: readonly TransportRow[] = [
  {
    transport: websocketTransport,
    ceiling: async () => (await import('./websocket/ceiling.js')).websocketCeiling,
    hostile: async () => (await import('./websocket/hostile.js')).websocketHostile,
  },
  {
    transport: websocketPushTransport,
    ceiling: async () => (await import('./websocket-push/ceiling.js')).websocketPushCeiling,
    hostile: undefined,
  },
  {
    transport: grpcTransport,
    ceiling: async () => (await import('./grpc/ceiling.js')).grpcCeiling,
    hostile: async () => (await import('./grpc/hostile.js')).grpcHostile,
  },
  {
    transport: grpcConnectTransport,
    ceiling: async () => (await import('./grpc-connect/ceiling.js')).grpcConnectCeiling,
    hostile: async () => (await import('./grpc-connect/hostile.js')).grpcConnectHostile,
  },
  {
    transport: grpcUnaryTransport,
    ceiling: async () => (await import('./grpc-unary/ceiling.js')).grpcUnaryCeiling,
    hostile: async () => (await import('./grpc-unary/hostile.js')).grpcUnaryHostile,
  },
  {
    transport: zeromqTransport,
    ceiling: async () => (await import('./zeromq/ceiling.js')).zeromqCeiling,
    hostile: async () => (await import('./zeromq/hostile.js')).zeromqHostile,
  },
  {
    transport: zeromqPubsubTransport,
    ceiling: async () => (await import('./zeromq-pubsub/ceiling.js')).zeromqPubsubCeiling,
    hostile: async () => (await import('./zeromq-pubsub/hostile.js')).zeromqPubsubHostile,
  },
  {
    transport: zeromqPairTransport,
    ceiling: async () => (await import('./zeromq-pair/ceiling.js')).zeromqPairCeiling,
    hostile: async () => (await import('./zeromq-pair/hostile.js')).zeromqPairHostile,
  },
  {
    transport: zeromqIpcTransport,
    ceiling: async () => (await import('./zeromq-ipc/ceiling.js')).zeromqIpcCeiling,
    hostile: undefined,
  },
  {
    transport: redisTransport,
    ceiling: async () => (await import('./redis/ceiling.js')).redisCeiling,
    hostile: undefined,
  },
  {
    transport: redisListTransport,
    ceiling: async () => (await import('./redis-list/ceiling.js')).redisListCeiling,
    hostile: undefined,
  },
  {
    transport: redisPubsubTransport,
    ceiling: async () => (await import('./redis-pubsub/ceiling.js')).redisPubsubCeiling,
    hostile: undefined,
  },
  {
    transport: redisKvTransport,
    ceiling: async () => (await import('./redis-kv/ceiling.js')).redisKvCeiling,
    hostile: undefined,
  },
  {
    transport: natsTransport,
    ceiling: async () => (await import('./nats/ceiling.js')).natsCeiling,
    hostile: undefined,
  },
  {
    transport: natsJetstreamTransport,
    ceiling: async () => (await import('./nats-jetstream/ceiling.js')).natsJetstreamCeiling,
    hostile: undefined,
  },
  {
    transport: mqttTransport,
    ceiling: async () => (await import('./mqtt/ceiling.js')).mqttCeiling,
    hostile: undefined,
  },
  {
    transport: amqpTransport,
    ceiling: async () => (await import('./amqp/ceiling.js')).amqpCeiling,
    hostile: undefined,
  },
  {
    transport: httpTransport,
    ceiling: async () => (await import('./http/ceiling.js')).httpCeiling,
    hostile: async () => (await import('./http/hostile.js')).httpHostile,
  },
  {
    transport: httpJsonTransport,
    ceiling: async () => (await import('./http-json/ceiling.js')).httpJsonCeiling,
    hostile: async () => (await import('./http-json/hostile.js')).httpJsonHostile,
  },
  {
    transport: unixTransport,
    ceiling: async () => (await import('./unix/ceiling.js')).unixCeiling,
    hostile: undefined,
  },
  {
    transport: tcpTransport,
    ceiling: async () => (await import('./tcp/ceiling.js')).tcpCeiling,
    hostile: async () => (await import('./tcp/hostile.js')).tcpHostile,
  },
];

/** The transports of the table, in run order. */
export const transports: readonly Transport[] = transportTable.map((row) => row.transport);

/** The transports of a run when TRANSPORTS is unset, in run order. */
export const defaultTransports: readonly Transport[] = transports.filter((t) => t.deployment.defaultRun);

/** Looks a transport up by name; an unknown name is an error that lists the valid ones. */
export function transportByName(name: string): Transport {
  const found = transports.find((t) => t.name === name);
  if (!found) {
    throw new ItbError(
      ErrorCode.unknownTransport,
      `unknown transport "${name}"; valid: ${transports.map((t) => t.name).join(', ')}`,
    );
  }
  return found;
}
