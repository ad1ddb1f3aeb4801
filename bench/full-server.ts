/** The whole server as `npm start` runs it, printing its port for the benchmark driver. */
import { build } from '../src/server/build.js';
import { loadConfig } from '../src/config.js';

const app = await build(loadConfig());
const port = await app.listen(0, '127.0.0.1');
process.stdout.write(`listening ${port}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
