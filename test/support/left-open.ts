/** What test/support/environment.js shares with the test file: the closers of what is still open. */
interface FileResources {
  finished: boolean;
  open: Set<() => Promise<void>>;
}

const resources = (globalThis as { __testResources?: FileResources }).__testResources;

/**
 * Registers `close` to run when the test file ends, after its own afterAll hooks, unless it ran before.
 * Answers the close to call as usual; calling it more than once closes once. When the file has already
 * ended (a beforeAll timed out while this resource was still starting), it closes right away.
 */
export function closeWhenFileEnds(close: () => Promise<unknown>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  const once = (): Promise<void> => {
    resources?.open.delete(once);
    closing ??= close().then(() => undefined);
    return closing;
  };
  if (resources?.finished) void once().catch(() => undefined);
  else resources?.open.add(once);
  return once;
}
