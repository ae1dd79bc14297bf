// How every service process is started: `npm start`, the tests, the Dockerfile and
// docker-compose.yml all run `node <SERVICE_NODE_FLAGS> dist/services/<name>/main.js`.
//
// --no-concurrent-marking: received images are large buffers outside the JS heap, and every few tens of MB of them
// start a full marking of the heap. V8 does that marking on helper threads by default, which on a 2-core host take a
// core from the transport's own I/O threads and from the process on the other side of the link: ZeroMQ PUB/SUB made
// 1,070–1,270 MB/s against a thin PUSH/PULL client of the same library with them and 1,560–1,850 without (533 KiB,
// WINDOW=16, alternating runs). The marking then runs in steps on the service's own thread. --single-threaded-gc, which
// also keeps sweeping and scavenges on that thread, gained as much at WINDOW=16 but cost WebSocket a fifth of a
// millisecond per image at WINDOW=1 (0.33–0.42 ms one-way for websocket-push with this flag, 0.75–0.86 with that one).
// A thin client's own processes (a 3 MB heap) gain nothing from either, so the flag removes overhead of the harness,
// not of the libraries. Every report names the flags each side ran with (HostFacts.nodeFlags). A flag like this cannot
// be set once V8 is running (v8.setFlagsFromString aborts on --single-threaded-gc), so it is on the command line.

/** Node/V8 flags every service process runs with; see above. */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--no-concurrent-marking'];
