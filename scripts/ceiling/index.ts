import { ErrorCode, ItbError } from '../../services/core/errors.js';
import { amqpCeiling } from './amqp.js';
import type { CeilingPair } from './contract.js';
import { grpcConnectCeiling } from './grpc-connect.js';
import { grpcUnaryCeiling } from './grpc-unary.js';
import { grpcCeiling } from './grpc.js';
import { httpJsonCeiling } from './http-json.js';
import { httpCeiling } from './http.js';
import { natsJetstreamCeiling } from './nats-jetstream.js';
import { mqttCeiling } from './mqtt.js';
import { natsCeiling } from './nats.js';
import { redisKvCeiling } from './redis-kv.js';
import { redisListCeiling } from './redis-list.js';
import { redisPubsubCeiling } from './redis-pubsub.js';
import { redisCeiling } from './redis.js';
import { tcpCeiling, unixCeiling } from './tcp.js';
import { websocketPushCeiling } from './websocket-push.js';
import { websocketCeiling } from './websocket.js';
import { zeromqPairCeiling } from './zeromq-pair.js';
import { zeromqPubsubCeiling } from './zeromq-pubsub.js';
import { zeromqCeiling, zeromqIpcCeiling } from './zeromq.js';

/**
 * The ceiling pair of every transport, under the transport's name in the table
 * (services/transports/index.ts), in its order: a test checks that the two name the same
 * transports. Adding a transport: its pair here too.
 */
export const ceilings: readonly CeilingPair[] = [
  websocketCeiling,
  websocketPushCeiling,
  grpcCeiling,
  grpcConnectCeiling,
  grpcUnaryCeiling,
  zeromqCeiling,
  zeromqPubsubCeiling,
  zeromqPairCeiling,
  zeromqIpcCeiling,
  redisCeiling,
  redisListCeiling,
  redisPubsubCeiling,
  redisKvCeiling,
  natsCeiling,
  natsJetstreamCeiling,
  mqttCeiling,
  amqpCeiling,
  httpCeiling,
  httpJsonCeiling,
  unixCeiling,
  tcpCeiling,
];

/** A transport's ceiling pair; an unknown name lists the known ones. */
export function ceilingFor(transport: string): CeilingPair {
  const found = ceilings.find((c) => c.transport === transport);
  if (!found)
    throw new ItbError(
      ErrorCode.unknownTransport,
      `no ceiling pair for "${transport}"; ceilings: ${ceilings.map((c) => c.transport).join(', ')}`,
    );
  return found;
}
