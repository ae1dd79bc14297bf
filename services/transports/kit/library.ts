import { createRequire } from 'node:module';

// Every transport loads its library the first time it is used, not when the transport table is
// imported: a process then holds only the libraries of the transports it runs. It matters to the
// figures, not only to start-up: received images are large buffers outside the JS heap, and each
// few tens of MB of them start a full marking of the heap, whose cost grows with everything loaded
// (measured with the ZeroMQ PUB/SUB transport's receiver alone, V8's default GC threads, 533 KiB
// at WINDOW=16: about 2,100 MB/s with only zeromq loaded, 1,200 with every transport's library;
// a thin client's 3 MB receiver made 2,300 in the same minute). The libraries are all
// CommonJS packages, so a synchronous require keeps their use synchronous where it was.

const require = createRequire(import.meta.url);

/** A library's module, loaded on the first call and the same object after it. */
export function lazyLibrary<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(name) as T);
}
