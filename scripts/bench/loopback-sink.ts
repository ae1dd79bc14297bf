import net from 'node:net';

// The receiving half of the loopback's node:net reference (scripts/bench/loopback.ts), a process of
// its own as the suite's receiver is: reads and discards, and when the sender ends, answers with
// the byte count it read. Prints its port on stdout once it listens.

let receivedBytes = 0;
const server = net.createServer((socket) => {
  socket.on('data', (chunk: Buffer) => {
    receivedBytes += chunk.length;
  });
  socket.on('end', () => {
    socket.end(`${receivedBytes}\n`);
    server.close();
  });
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address() as net.AddressInfo;
  process.stdout.write(`${address.port}\n`);
});
