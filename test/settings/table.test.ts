import { loadConfig, settingsOf } from '../../src/config.js';
import { SETTINGS, type Family } from '../../src/settings/table.js';

const entries = Object.entries(SETTINGS);

describe('the settings table', () => {
  test('names each variable once, in upper snake case, with a one-line doc', () => {
    const envs = entries.map(([, setting]) => setting.env);
    expect(new Set(envs).size).toBe(envs.length);
    for (const [key, setting] of entries) {
      expect({ key, env: setting.env, doc: setting.doc }).toEqual({
        key,
        env: expect.stringMatching(/^[A-Z][A-Z0-9_]*$/),
        doc: expect.stringMatching(/^[^\n]+$/),
      });
    }
  });

  // A default outside its own bounds would be served without ever being checked.
  test.each(entries.filter(([, setting]) => setting.default !== undefined && /^`[^`]+`/.test(setting.defaultCell)))(
    '%s: the default README prints is a value its own kind accepts, and means the default',
    (_key, setting) => {
      const printed = /^`([^`]+)`/.exec(setting.defaultCell)![1]!;
      expect(setting.parse(printed)).toEqual(setting.default);
    },
  );

  test('an empty environment loads every default', () => {
    const config = loadConfig({});
    for (const [key, setting] of entries) {
      if (key === 'databaseListenUrl') continue; // DATABASE_URL's, unset here too
      expect({ key, value: config[key as keyof typeof config] }).toEqual({ key, value: setting.default });
    }
  });
});

describe('settingsOf', () => {
  const config = loadConfig({ ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'long-enough', WEBHOOK_MAX_REQUESTS: '7' });

  test.each<[Family, string, string]>([
    ['webhooks', 'webhookMaxRequests', 'adminPassword'],
    ['users', 'adminPassword', 'webhookMaxRequests'],
    ['store', 'databaseUrl', 'port'],
  ])("gives the %s family its own settings (%s) and no other family's (%s)", (family, own, other) => {
    const slice = settingsOf(config, family);
    expect(Object.keys(slice)).toContain(own);
    expect(Object.keys(slice)).not.toContain(other);
    expect(Object.keys(slice).sort()).toEqual(
      entries
        .filter(([, setting]) => setting.family === family)
        .map(([key]) => key)
        .sort(),
    );
    expect(slice).toMatchObject({ [own]: config[own as keyof typeof config] });
  });
});
