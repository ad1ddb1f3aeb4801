/**
 * The real server in a child process, for tests whose subject is the process itself: its peak
 * memory (an in-process measure mixes in the test's own allocations), and errors mapped by
 * `instanceof Error` in connect-node, which fails across jest's module sandbox.
 *
 * Protocol on stdio: prints `{"url": …}` once listening; answers each `memory` line on stdin with
 * `{"rss": bytes, "maxRss": bytes}`; closes and exits when stdin ends.
 */
import { createInterface } from 'node:readline';
import { startServer } from '../support/app.js';

const server = await startServer(JSON.parse(process.argv[2] ?? '{}') as Record<string, string>);
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line === 'memory') process.stdout.write(`${JSON.stringify({ rss: process.memoryUsage().rss, maxRss: process.resourceUsage().maxRSS * 1024 })}\n`);
});
lines.on('close', () => {
  void server.close().then(() => process.exit(0));
});
