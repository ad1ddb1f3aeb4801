import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { createInterface, type Interface } from 'node:readline';
import { once } from 'node:events';

export interface ServerProcess {
  url: string;
  child: ChildProcessByStdio<Writable, Readable, null>;
  /** The child's current and peak resident set, in bytes. */
  memory(): Promise<{ rss: number; maxRss: number }>;
  close(): Promise<void>;
}

/** Starts `grpc-server-process.ts` (the real server on a fresh test database) and waits until it listens. */
export async function startServerProcess(env: Record<string, string> = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/hardening/grpc-server-process.ts', JSON.stringify(env)], {
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: Interface = createInterface({ input: child.stdout });
  const next = async (): Promise<string> => {
    const [line] = (await Promise.race([
      once(lines, 'line'),
      once(child, 'exit').then(([code]) => Promise.reject(new Error(`the server process exited (${String(code)})`))),
    ])) as [string];
    return line;
  };
  const { url } = JSON.parse(await next()) as { url: string };
  return {
    url,
    child,
    async memory() {
      child.stdin.write('memory\n');
      return JSON.parse(await next()) as { rss: number; maxRss: number };
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.stdin.end();
      await exited;
    },
  };
}
