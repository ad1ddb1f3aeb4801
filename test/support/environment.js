import NodeEnvironment from 'jest-environment-node';

/**
 * Jest's node environment plus one last step after a test file's own afterAll hooks: whatever the file
 * opened through `closeWhenFileEnds` (test/support/left-open.ts) and did not close (servers, databases,
 * Chromium) is closed, and anything whose start outlives the file (a beforeAll that timed out while a
 * server was still starting) is closed the moment it arrives. So a failed or timed-out setup never
 * leaves a handle that keeps jest from exiting.
 */
export default class TestEnvironment extends NodeEnvironment {
  resources = { finished: false, open: new Set() };

  async setup() {
    await super.setup();
    this.global.__testResources = this.resources;
  }

  async teardown() {
    this.resources.finished = true;
    const left = [...this.resources.open];
    this.resources.open.clear();
    await Promise.allSettled(left.map((close) => close()));
    await super.teardown();
  }
}
