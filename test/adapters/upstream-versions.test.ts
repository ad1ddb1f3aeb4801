import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Library adapters (docs/architecture.md, "Library adapters"): code that re-implements a library's
 * internals for speed lives in its own folder under src/, headed by a README.md naming the upstream
 * package and the exact version it follows (`Upstream: <package>@<version>`), the measurement that
 * justifies it (`Why:`) and the test(s) that guard it (`Parity test:`). When the installed version moves,
 * these tests fail until someone has re-checked the adapter against the new upstream source, run its
 * parity test and written the new version in its README.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const SRC = join(ROOT, 'src');

interface AdapterNote {
  /** The README's path from the project root. */
  path: string;
  title: string | undefined;
  upstream: Array<{ name: string; version: string; line: string }>;
  why: string | undefined;
  parityTests: string[];
}

/** Every src/**\/README.md that names an upstream package. */
function adapterNotes(): AdapterNote[] {
  const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((path) => path.split('/').pop() === 'README.md');
  return files
    .map((file) => readNote(join(SRC, file)))
    .filter((note) => note.upstream.length > 0)
    .sort((a, b) => a.path.localeCompare(b.path));
}

/** `Upstream: @scope/name@1.2.3` → name and version (the last `@` splits them, so scoped names keep theirs). */
const UPSTREAM = /^Upstream:\s*(\S+)@(\S+)\s*$/;
/** A line that starts a field of the note (`Why:`, `Parity test:`…). */
const FIELD = /^[A-Z][\w ]{0,20}:/;
/** A path to a file under test/ or scripts/. */
const TEST_PATH = /\b(?:test|scripts)\/[\w./-]+\.(?:ts|js|cjs|mjs)\b/g;

function readNote(file: string): AdapterNote {
  const lines = readFileSync(file, 'utf8').split('\n');
  const upstream = lines.flatMap((line) => {
    if (!line.startsWith('Upstream:')) return [];
    const match = UPSTREAM.exec(line.trim());
    return [{ name: match?.[1] ?? '', version: match?.[2] ?? '', line: line.trim() }];
  });
  const field = (name: string) => {
    const start = lines.findIndex((line) => line.startsWith(`${name}:`));
    if (start < 0) return undefined;
    // The field's line and the lines that continue it (up to a blank line, a heading or the next field).
    const end = lines.findIndex((line, index) => index > start && (line.trim() === '' || line.startsWith('#') || FIELD.test(line)));
    return lines
      .slice(start, end < 0 ? undefined : end)
      .join(' ')
      .slice(name.length + 1)
      .trim();
  };
  const parity = field('Parity test') ?? field('Parity tests') ?? '';
  return {
    path: relative(ROOT, file),
    title: /^# (.+)$/.exec(lines[0] ?? '')?.[1],
    upstream,
    why: field('Why'),
    // Paths of test files, in backticks or bare (a command or a word in backticks is not a path).
    parityTests: [...parity.matchAll(TEST_PATH)].map((match) => match[0]),
  };
}

/** The version of `name` installed in the project's node_modules (the one `import` resolves from src/). */
function installedVersion(name: string): string | undefined {
  const manifest = join(ROOT, 'node_modules', name, 'package.json');
  if (!existsSync(manifest)) return undefined;
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version?: string }).version;
}

const notes = adapterNotes();

test('the adapters the issue names each have a note (src/server/grpc-fast-path, src/store/pool-fast-path, src/store/pglite)', () => {
  const paths = notes.map((note) => note.path);
  for (const folder of ['src/server/grpc-fast-path', 'src/store/pool-fast-path', 'src/store/pglite']) {
    expect(paths).toContain(`${folder}/README.md`);
  }
});

describe.each(notes.map((note) => [note.path, note] as const))('%s', (_path, note) => {
  test('is headed `# <name>` and says why it exists and which test guards it', () => {
    expect(note.title).toBeTruthy();
    expect(note.why).toBeTruthy();
    expect(note.parityTests.length).toBeGreaterThan(0);
  });

  test('each Upstream line reads `Upstream: <npm package>@<exact version>`', () => {
    for (const { name, version, line } of note.upstream) {
      expect({ line, valid: name !== '' && /^\d+\.\d+\.\d+(-[\w.]+)?$/.test(version) }).toEqual({ line, valid: true });
    }
  });

  test('names the upstream version installed in node_modules', () => {
    const stale = note.upstream.flatMap(({ name, version }) => {
      const installed = installedVersion(name);
      return installed === version ? [] : [{ name, named: version, installed: installed ?? 'not installed' }];
    });
    if (stale.length > 0) {
      const lines = stale.map(({ name, named, installed }) => `  ${name}: ${note.path} follows ${named}, node_modules has ${installed}`);
      throw new Error(
        [
          `The upstream of the adapter in ${note.path.replace(/\/README\.md$/, '/')} changed:`,
          ...lines,
          `Re-check the adapter against the new upstream source (what its README says it follows), run its parity test(s) ` +
            `(${note.parityTests.join(', ')}), then write the installed version in its Upstream line.`,
        ].join('\n'),
      );
    }
  });

  test('its parity tests exist', () => {
    const missing = note.parityTests.filter((path) => !existsSync(join(ROOT, path)));
    expect(missing).toEqual([]);
  });
});
