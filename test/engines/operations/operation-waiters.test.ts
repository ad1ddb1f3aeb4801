import { AppError } from '../../../src/errors.js';
import { OperationWaiters } from '../../../src/engines/operations/index.js';
import type { OperationRow } from '../../../src/store/repositories/operation-repository.js';

function row(id: string, finished: boolean): OperationRow {
  return { id, status: finished ? new Uint8Array([8, 1]) : null } as OperationRow;
}

function waiters(rows: Map<string, OperationRow>, maxWaiters = 10) {
  const loads: string[][] = [];
  const hub = new OperationWaiters({
    load: async (ids) => {
      loads.push([...ids]);
      return ids.flatMap((id) => (rows.has(id) ? [rows.get(id) as OperationRow] : []));
    },
    maxWaiters,
  });
  return { hub, loads };
}

test('a done notification wakes every waiter of that operation with one read, and no other', async () => {
  const rows = new Map([['operation-a', row('operation-a', false)]]);
  const { hub, loads } = waiters(rows);
  const tickets = [hub.add('operation-a'), hub.add('operation-a'), hub.add('operation-b')];
  const waits = tickets.map((ticket) => ticket.until(10_000));
  rows.set('operation-a', row('operation-a', true));
  hub.onEvent('done:operation-a');
  hub.onEvent('cancel:operation-b');
  const [first, second] = await Promise.all(waits.slice(0, 2));
  expect([first?.id, second?.id]).toEqual(['operation-a', 'operation-a']);
  expect(loads).toEqual([['operation-a']]);
  tickets.forEach((ticket) => ticket.release());
  expect(hub.size).toBe(0);
});

test('a completion announced between registering and waiting is not lost', async () => {
  const { hub } = waiters(new Map([['operation-a', row('operation-a', true)]]));
  const ticket = hub.add('operation-a');
  hub.onEvent('done:operation-a');
  await new Promise((resolve) => setImmediate(resolve));
  expect((await ticket.until(10_000))?.id).toBe('operation-a');
});

test('a wait settles with nothing at its timeout, on abort, and at shutdown (also one registered after it)', async () => {
  const { hub } = waiters(new Map());
  expect(await hub.add('operation-a').until(5)).toBeUndefined();
  const controller = new AbortController();
  const aborted = hub.add('operation-a').until(10_000, controller.signal);
  controller.abort();
  expect(await aborted).toBeUndefined();
  const held = hub.add('operation-a').until(10_000);
  hub.close();
  expect(await held).toBeUndefined();
  expect(await hub.add('operation-b').until(10_000)).toBeUndefined();
});

test('beyond maxWaiters a wait is refused RESOURCE_EXHAUSTED until one is released', () => {
  const { hub } = waiters(new Map(), 2);
  const first = hub.add('operation-a');
  hub.add('operation-b');
  expect(hub.full).toBe(true);
  expect(() => hub.add('operation-c')).toThrow(AppError);
  first.release();
  first.release();
  expect(hub.size).toBe(1);
  expect(() => hub.add('operation-c')).not.toThrow();
});

test('reads asked for in one turn of the event loop are one query', async () => {
  const rows = new Map([
    ['operation-a', row('operation-a', false)],
    ['operation-b', row('operation-b', true)],
  ]);
  const { hub, loads } = waiters(rows);
  const read = await Promise.all([hub.read('operation-a'), hub.read('operation-a'), hub.read('operation-b'), hub.read('operation-x')]);
  expect(read.map((found) => found?.id)).toEqual(['operation-a', 'operation-a', 'operation-b', undefined]);
  expect(loads).toEqual([['operation-a', 'operation-b', 'operation-x']]);
});
