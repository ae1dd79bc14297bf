import { ErrorCode, ItbError } from '../core/errors.js';
import { amqpTransport } from './amqp.js';
import type { Transport } from './contract.js';
import { grpcConnectTransport } from './grpc-connect.js';
import { grpcUnaryTransport } from './grpc-unary.js';
import { grpcTransport } from './grpc.js';
import { httpJsonTransport } from './http-json.js';
import { httpTransport } from './http.js';
import { natsJetstreamTransport } from './nats-jetstream.js';
import { mqttTransport } from './mqtt.js';
import { natsTransport } from './nats.js';
import { redisKvTransport } from './redis-kv.js';
import { redisListTransport } from './redis-list.js';
import { redisPubsubTransport } from './redis-pubsub.js';
import { redisTransport } from './redis.js';
import { tcpTransport } from './tcp.js';
import { unixTransport } from './unix.js';
import { websocketPushTransport } from './websocket-push.js';
import { websocketTransport } from './websocket.js';
import { zeromqIpcTransport } from './zeromq-ipc.js';
import { zeromqPairTransport } from './zeromq-pair.js';
import { zeromqPubsubTransport } from './zeromq-pubsub.js';
import { zeromqTransport } from './zeromq.js';

/**
 * Every transport, in run order (the TCP baseline last). This is the one list: config,
 * `.env.example`'s check, `npm start`'s local servers, reports, bench and tests all take theirs
 * from it; those with `deployment.defaultRun` make the run TRANSPORTS gives when unset. Adding a transport:
 * its file, and a row here.
 */
export const transports: readonly Transport[] = [
  websocketTransport,
  websocketPushTransport,
  grpcTransport,
  grpcConnectTransport,
  grpcUnaryTransport,
  zeromqTransport,
  zeromqPubsubTransport,
  zeromqPairTransport,
  zeromqIpcTransport,
  redisTransport,
  redisListTransport,
  redisPubsubTransport,
  redisKvTransport,
  natsTransport,
  natsJetstreamTransport,
  mqttTransport,
  amqpTransport,
  httpTransport,
  httpJsonTransport,
  unixTransport,
  tcpTransport,
];

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
