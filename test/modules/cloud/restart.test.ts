import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { InstanceStatus_State as State } from '../../../generated/proto/cloud/compute/v1/instance_pb.js';
import { openTestDatabase } from '../../support/app.js';
import { GrpcTestClient } from '../../support/grpc.js';
import type { Database } from '../../../src/store/database.js';
import { startServerOn, waitForOperation } from './fixtures.js';

let db: Database;
let drop: () => Promise<void>;
beforeAll(async () => {
  ({ db, drop } = await openTestDatabase());
});
afterAll(async () => {
  await db?.close();
  await drop?.();
});

async function adminToken(url: string): Promise<string> {
  const response = await fetch(`${url}/api/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'root', password: 'root-password-1' }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { accessToken: string }).accessToken;
}

const M = InstanceService.method;

test('a server stopped in the middle of an operation loses nothing: the next server on the database finishes it', async () => {
  // Server A would take ten minutes; it is shut down while the work is in progress.
  const a = await startServerOn(db, { COMPUTE_WORK_MS: '600000' });
  const token = await adminToken(a.url);
  const clientA = new GrpcTestClient(a.url);
  const { message: operation } = await clientA.call(M.create, { metadata: { parentId: 'project-restart', name: 'survivor' } }, { token });
  for (;;) {
    const row = await db.knex('operations').where({ id: operation.id }).first('claimed_by');
    if (row?.claimed_by) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  clientA.close();
  await a.close();
  expect((await db.knex('operations').where({ id: operation.id }).first('state')).state).toBe('pending');

  const b = await startServerOn(db, { COMPUTE_WORK_MS: '10' });
  const clientB = new GrpcTestClient(b.url);
  try {
    const done = await waitForOperation(clientB, token, operation.id);
    expect(done.status?.code).toBe(0);
    const { message: instance } = await clientB.call(M.get, { id: operation.resourceId }, { token });
    expect(instance.status?.state).toBe(State.RUNNING);
  } finally {
    clientB.close();
    await b.close();
  }
});

test('two servers on one database behave as one: work started on either is finished once, reads agree', async () => {
  const first = await startServerOn(db, { COMPUTE_WORK_MS: '10' });
  const second = await startServerOn(db, { COMPUTE_WORK_MS: '10' });
  const token = await adminToken(first.url);
  const one = new GrpcTestClient(first.url);
  const two = new GrpcTestClient(second.url);
  try {
    const created = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        (index % 2 === 0 ? one : two).call(M.create, { metadata: { parentId: 'project-pair', name: `pair-${index}` } }, { token }),
      ),
    );
    for (const { message } of created) {
      const done = await waitForOperation(index(message.id) % 2 === 0 ? two : one, token, message.id);
      expect(done.status?.code).toBe(0);
    }
    const fromOne = await one.call(M.list, { parentId: 'project-pair' }, { token });
    const fromTwo = await two.call(M.list, { parentId: 'project-pair' }, { token });
    expect(fromOne.message.items.map((item) => item.metadata?.name)).toEqual(fromTwo.message.items.map((item) => item.metadata?.name));
    expect(fromOne.message.items.every((item) => item.status?.state === State.RUNNING)).toBe(true);
    // Every operation completed exactly once (one claim each).
    const attempts = await db.knex('operations').where('parent_id', 'project-pair').select('attempts');
    expect(attempts.map((row: { attempts: number }) => row.attempts)).toEqual([1, 1, 1, 1, 1, 1]);
  } finally {
    one.close();
    two.close();
    await first.close();
    await second.close();
  }
});

function index(id: string): number {
  return id.charCodeAt(id.length - 1);
}
