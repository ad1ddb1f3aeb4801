import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startServer, type TestServer } from '../support/app.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);

/** `buf curl` over gRPC (h2c, prior knowledge) with no local protos: everything comes from reflection. */
async function bufCurl(server: TestServer, ...args: string[]): Promise<string> {
  const { stdout } = await run(join(ROOT, 'node_modules/.bin/buf'), ['curl', '--protocol', 'grpc', '--http2-prior-knowledge', ...args], { cwd: '/' });
  return stdout;
}

describe('gRPC server reflection', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server?.close());

  it('lets buf curl list the methods of every registered service', async () => {
    const output = await bufCurl(server, '--list-methods', server.url);
    const methods = output.trim().split('\n').sort();
    expect(methods).toEqual(expect.arrayContaining([
      'cloud.common.v1.ServerInfoService/GetServerInfo',
      'cloud.common.v1.OperationService/Get',
      'cloud.compute.v1.InstanceService/Create',
      'grpc.reflection.v1.ServerReflection/ServerReflectionInfo',
    ]));
  });

  it('lets buf curl call a method it learned by reflection', async () => {
    const output = await bufCurl(server, '--reflect', '--data', '{}', `${server.url}/cloud.common.v1.ServerInfoService/GetServerInfo`);
    expect(JSON.parse(output)).toEqual({ name: expect.any(String), version: expect.any(String) });
  });

  it('answers the older v1alpha reflection protocol too', async () => {
    const output = await bufCurl(server, '--reflect-protocol', 'grpc-v1alpha', '--list-methods', server.url);
    expect(output).toContain('cloud.compute.v1.InstanceService/Get');
  });
});
