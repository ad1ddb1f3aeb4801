/**
 * The processes of the fleet test: replicas of the compiled server, PgBouncer, HAProxy. Every child
 * is registered in one `Processes` so a failed setup, an assertion or a deadline tears all of them
 * down; logs go to files in the run's directory (read after the fact, never parsed on the hot path).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';

/** Thrown by a `waitFor` check to stop waiting at once (a process it waits for has exited). */
export class GaveUp extends Error {}

/**
 * Polls `check` every `everyMs` until it answers true (an error counts as not yet, except GaveUp);
 * throws naming `what` after `timeoutMs`. Answers how long it took.
 */
export async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean> | boolean, everyMs = 100): Promise<number> {
  const started = Date.now();
  for (;;) {
    const done = await Promise.resolve()
      .then(check)
      .catch((error: unknown) => {
        if (error instanceof GaveUp) throw error;
        return false;
      });
    if (done) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export interface Child {
  name: string;
  process: ChildProcess;
  log: string;
  exited: Promise<number | string | null>;
}

/** Every child the run started; `stopAll` ends them (SIGTERM, then SIGKILL) and is safe to call twice. */
export class Processes {
  private readonly children = new Set<Child>();

  constructor(private readonly dir: string) {}

  /** Starts `command`, its stdout and stderr into `<dir>/<name>.log`. */
  start(name: string, command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Child {
    const log = join(this.dir, `${name}.log`);
    const fd = openSync(log, 'a');
    const child = spawn(command, args, { env, stdio: ['ignore', fd, fd], detached: false });
    closeSync(fd);
    const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
    const entry: Child = { name, process: child, log, exited };
    this.children.add(entry);
    void exited.then(() => this.children.delete(entry));
    return entry;
  }

  /** SIGTERM, and SIGKILL after `graceMs`; answers the exit code or signal. */
  async stop(child: Child, graceMs: number): Promise<number | string | null> {
    if (child.process.exitCode !== null || child.process.signalCode !== null) return child.exited;
    child.process.kill('SIGTERM');
    const timer = setTimeout(() => child.process.kill('SIGKILL'), graceMs);
    const result = await child.exited;
    clearTimeout(timer);
    return result;
  }

  async stopAll(graceMs: number): Promise<void> {
    await Promise.all([...this.children].map((child) => this.stop(child, graceMs)));
  }

  /** The last lines of a child's log, for an error message. */
  static tail(child: Child, lines = 5): string {
    try {
      return readFileSync(child.log, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }
}

/** GET `path` on a loopback port; the status, or 0 when the connection failed. */
export async function httpStatus(port: number, path: string, timeoutMs = 2000): Promise<number> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/** One command on HAProxy's admin socket, answered as text. */
export async function haproxyCommand(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const connection = createConnection(socket);
    let answer = '';
    connection.setEncoding('utf8');
    connection.on('data', (chunk: string) => (answer += chunk));
    connection.once('error', reject);
    connection.once('end', () => resolve(answer));
    connection.write(`${command}\n`);
  });
}

/** The state HAProxy sees for each server of `backend` (`UP`, `DOWN`, `UP 1/2`, `MAINT`, …). */
export async function haproxyServerStates(socket: string, backend: string): Promise<Map<string, string>> {
  const csv = await haproxyCommand(socket, 'show stat');
  const states = new Map<string, string>();
  for (const line of csv.split('\n')) {
    const [proxy, server, ...fields] = line.split(',');
    // `status` is field 18 (index 17) of HAProxy's stats CSV.
    if (proxy === backend && server && server !== 'BACKEND' && server !== 'FRONTEND') states.set(server, fields[15] ?? '');
  }
  return states;
}
