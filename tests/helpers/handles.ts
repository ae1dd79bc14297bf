/** Counts of the active libuv resources by type, as Node reports them. */
export function activeResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

/**
 * Resolves to the resource types that are more numerous now than in `before`, after giving
 * asynchronous closes up to `settleMs` to finish; empty means nothing was left open.
 */
export async function leakedResources(before: Map<string, number>, settleMs = 2000): Promise<string[]> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    const leaked: string[] = [];
    for (const [type, count] of activeResources()) {
      const extra = count - (before.get(type) ?? 0);
      if (extra > 0) leaked.push(`${type} x${extra}`);
    }
    if (leaked.length === 0 || Date.now() > deadline) return leaked;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
