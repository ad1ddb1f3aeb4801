/**
 * Loaded with `--import` into a server process by test/hardening/startup.test.ts to make faults
 * happen outside any request, as a bug in a callback would: once the server listens (main.ts installs
 * its SIGTERM handler after listen) a promise rejects with nobody to catch it; on SIGUSR2 an
 * exception is thrown from a timer.
 */
const poll = setInterval(() => {
  if (process.listenerCount('SIGTERM') === 0) return;
  clearInterval(poll);
  void Promise.reject(new Error('stray rejection planted by the test'));
}, 20).unref();
process.on('SIGUSR2', () => {
  setImmediate(() => {
    throw new Error('uncaught exception planted by the test');
  });
});
