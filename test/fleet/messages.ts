/** What the fleet test's orchestrator and its load process (test/fleet/load.ts) tell each other over IPC. */

export interface LoadTargets {
  /** HAProxy's HTTP frontend and its L4 (mode tcp) gRPC frontend. */
  httpPort: number;
  grpcPort: number;
  admin: { name: string; password: string };
  /** The phases to make a capture route (and an SSE listener) for, in order. */
  phases: string[];
  /** SIGNIN_MAX_FAILURES of the replicas. */
  signInMaxFailures: number;
}

export type Command =
  | { type: 'setup'; targets: LoadTargets }
  | { type: 'phase'; name: string }
  | { type: 'stop-load' }
  | { type: 'settle'; timeoutMs: number }
  | { type: 'limits' }
  | { type: 'spread'; connections: number }
  | { type: 'stop-spread' }
  | { type: 'exit' };

/** Counts of one kind of request in one phase, with a few failures as examples. */
export interface Tally {
  ok: number;
  failed: number;
  examples: string[];
}

export interface PhaseResult {
  tallies: Record<string, Tally>;
  /** Acknowledged writes: capture ids (with the marker each carried), user ids, operations. */
  captures: { id: string; marker: string }[];
  users: string[];
  operations: { id: string; resourceId: string }[];
  /** Idempotency keys that were retried after a failed attempt (each must still make one operation). */
  retriedKeys: number;
  /** The phase's capture route and what its SSE listener received. */
  routeId: string;
  sse: { received: number; lost: number; duplicated: number; reconnects: number; examples: string[] };
}

export interface LimitsResult {
  /** What the client on 127.0.0.2 got for each wrong password, then for the right one; and 127.0.0.3's right one. */
  throttledStatuses: number[];
  throttledCorrect: number;
  otherCorrect: number;
}

export type Report =
  | { type: 'ready' }
  | { type: 'stopped' }
  | { type: 'settled'; phases: Record<string, PhaseResult> }
  | { type: 'limits'; result: LimitsResult }
  | { type: 'spreading' }
  | { type: 'spread-stopped'; tally: Tally }
  | { type: 'error'; message: string };
