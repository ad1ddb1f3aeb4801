import {
  canonicalResetMaskHeader,
  fieldPathsOf,
  mergeResetMasks,
  parseResetMask,
  printResetMask,
  resetMaskFromHeaderValues,
  ResetMaskParseError,
  resetMasksEqual,
  subMask,
  type ResetMask,
} from '../../src/engines/reset-mask/index.js';

/** Walks named children so tests can reach a sub-tree without the wildcard merge of subMask. */
function childAt(mask: ResetMask, ...keys: string[]): ResetMask {
  let node = mask;
  for (const key of keys) {
    const next = key === '*' ? node.wildcard : node.children.get(key);
    if (next === undefined) throw new Error(`no child ${key}`);
    node = next;
  }
  return node;
}

describe('parseResetMask + printResetMask', () => {
  const roundTrips: [string, { given: string; want: string }][] = [
    ['a single field prints as itself', { given: 'a', want: 'a' }],
    ['a nested field prints with a dot', { given: 'b.c', want: 'b.c' }],
    ['a list index is a plain key', { given: 'd.e.12', want: 'd.e.12' }],
    ['a group applies the rest to each alternative', { given: 'f.(j.h,i.j).k', want: 'f.(i.j.k,j.h.k)' }],
    ['a wildcard prints as *', { given: 'l.*.m', want: 'l.*.m' }],
    ['the seed example as a whole prints sorted', { given: 'a,b.c,d.e.12,f.(j.h,i.j).k,l.*.m', want: 'a,b.c,d.e.12,f.(i.j.k,j.h.k),l.*.m' }],
    ['the empty string is the empty mask', { given: '', want: '' }],
    ['only whitespace is the empty mask', { given: ' \t\r\n ', want: '' }],
    ['top-level elements are sorted', { given: 'b,a', want: 'a,b' }],
    ['siblings under one parent are grouped', { given: 'a.b,a.c', want: 'a.(b,c)' }],
    ['naming a parent and its child keeps the child', { given: 'a,a.b', want: 'a.b' }],
    ['a repeated element is kept once', { given: 'a.b,a.b', want: 'a.b' }],
    ['whitespace around dots and commas is ignored', { given: ' a . b , c ', want: 'a.b,c' }],
    ['whitespace inside groups is ignored', { given: 'f . ( j , i ) . k', want: 'f.(i.k,j.k)' }],
    ['groups nest', { given: 'a.(b.(c,d),e).f', want: 'a.(b.(c.f,d.f),e.f)' }],
    ['a group may open the element', { given: '(a,b).c', want: 'a.c,b.c' }],
    ['consecutive groups multiply', { given: '(a,b).(c,d)', want: 'a.(c,d),b.(c,d)' }],
    ['a group with one alternative collapses', { given: 'a.(b).c', want: 'a.b.c' }],
    ['a wildcard may stand at the top', { given: '*', want: '*' }],
    ['a wildcard may end an element', { given: 'a.*', want: 'a.*' }],
    ['keys sort bytewise with the wildcard as "*"', { given: 'a,*,B,0,_', want: '*,0,B,_,a' }],
    ['a key that is a prefix of another sorts first', { given: 'ab,a.c', want: 'a.c,ab' }],
    ['a wildcard and an index under one list are grouped', { given: 'l.*.m,l.3.n', want: 'l.(*.m,3.n)' }],
    ['a quoted key with a space stays quoted', { given: '"my key".x', want: '"my key".x' }],
    ['a quoted plain key prints bare', { given: '"abc".x', want: 'abc.x' }],
    ['a quoted key keeps JSON escapes', { given: '"a\\"b"', want: '"a\\"b"' }],
    ['a quoted key decodes unicode escapes', { given: '"\\u00e9t\\u00e9"', want: '"été"' }],
    ['a quoted "*" is a literal key, distinct from the wildcard', { given: '"*".a,*.b', want: '"*".a,*.b' }],
    ['a quoted empty key is kept', { given: 'm.""', want: 'm.""' }],
    ['a quoted key may hold dots', { given: 'labels."app.kubernetes.io/name"', want: 'labels."app.kubernetes.io/name"' }],
    ['an unquoted key with a dash is accepted and printed quoted', { given: 'ports.http-alt', want: 'ports."http-alt"' }],
    ['quoted keys sort before plain ones', { given: 'a,"a b"', want: '"a b",a' }],
    ['whitespace around a quoted key is ignored', { given: ' x . "k 1" . y ', want: 'x."k 1".y' }],
    ['a deep path prints as one chain', { given: 'a.b.c.d.e', want: 'a.b.c.d.e' }],
  ];

  test.each(roundTrips)('%s', (_name, { given, want }) => {
    const parsed = parseResetMask(given);
    const printed = printResetMask(parsed);
    expect(printed).toBe(want);
    const reparsed = parseResetMask(printed);
    expect(resetMasksEqual(reparsed, parsed)).toBe(true);
    expect(printResetMask(reparsed)).toBe(printed);
  });
});

describe('parseResetMask tree shape', () => {
  const shapes: [string, { given: string; want: string[][] }][] = [
    ['a group yields one path per alternative with the rest appended', { given: 'f.(j.h,i.j).k', want: [['f', 'i', 'j', 'k'], ['f', 'j', 'h', 'k']] }],
    ['a wildcard is a child of its own', { given: 'l.*.m', want: [['l', '*', 'm']] }],
    ['an index is a string key', { given: 'd.e.12', want: [['d', 'e', '12']] }],
    ['a quoted key is unquoted in the tree', { given: '"my key".x', want: [['my key', 'x']] }],
    ['the empty mask has no paths', { given: '', want: [] }],
  ];

  test.each(shapes)('%s', (_name, { given, want }) => {
    expect(fieldPathsOf(parseResetMask(given))).toEqual(want);
  });

  test('a literal "*" key and the wildcard are kept apart', () => {
    const mask = parseResetMask('"*".a,*.b');
    expect(printResetMask(childAt(mask, '*'))).toBe('b');
    expect(printResetMask(mask.children.get('*') ?? parseResetMask('zzz'))).toBe('a');
  });
});

describe('parseResetMask errors', () => {
  const errors: [string, { given: string; want: { reason: RegExp; position: number } }][] = [
    ['two commas in a row make an empty element', { given: 'a,,b', want: { reason: /empty element/, position: 3 } }],
    ['a leading comma makes an empty element', { given: ',a', want: { reason: /empty element/, position: 1 } }],
    ['a trailing comma makes an empty element', { given: 'a,', want: { reason: /empty element/, position: 3 } }],
    ['empty parentheses are an empty element', { given: '()', want: { reason: /empty element/, position: 2 } }],
    ['an empty group after a dot is an empty element', { given: 'a.()', want: { reason: /empty element/, position: 4 } }],
    ['a trailing comma in a group is an empty element', { given: '(a,)', want: { reason: /empty element/, position: 4 } }],
    ['a trailing dot is refused', { given: 'a.', want: { reason: /trailing "\."/, position: 3 } }],
    ['a dot before a comma is refused', { given: 'a.b.,c', want: { reason: /trailing "\."/, position: 5 } }],
    ['a dot before a closing parenthesis is refused', { given: '(a.)', want: { reason: /trailing "\."/, position: 4 } }],
    ['two dots in a row are an empty field name', { given: 'a..b', want: { reason: /empty field name/, position: 3 } }],
    ['a leading dot is an empty field name', { given: '.a', want: { reason: /empty field name/, position: 1 } }],
    ['an unclosed group names its opening parenthesis', { given: 'a.(b', want: { reason: /"\(" is never closed/, position: 3 } }],
    ['an unclosed group with alternatives names its opening parenthesis', { given: 'f.(j.h,i.j.k', want: { reason: /"\(" is never closed/, position: 3 } }],
    ['an unclosed outer group names the outer parenthesis', { given: '((a)', want: { reason: /"\(" is never closed/, position: 1 } }],
    ['an open parenthesis at the end is never closed', { given: 'a.(', want: { reason: /"\(" is never closed/, position: 3 } }],
    ['a closing parenthesis without an opening one is refused', { given: 'a)', want: { reason: /"\)" without "\("/, position: 2 } }],
    ['a stray closing parenthesis mid-mask is refused', { given: 'a.b),c', want: { reason: /"\)" without "\("/, position: 4 } }],
    ['an unterminated quoted key names its quote', { given: '"abc', want: { reason: /unterminated quoted key/, position: 1 } }],
    ['an escaped final quote leaves the key unterminated', { given: 'x."ab\\"', want: { reason: /unterminated quoted key/, position: 3 } }],
    ['an invalid JSON escape is refused', { given: '"\\x"', want: { reason: /invalid quoted key/, position: 1 } }],
    ['a raw control character inside quotes is refused', { given: '"a\u0001"', want: { reason: /invalid quoted key/, position: 1 } }],
    ['two keys separated by a space are refused', { given: 'a b', want: { reason: /expected "," or "\."/, position: 3 } }],
    ['two keys separated by a space in a group are refused', { given: '(a b)', want: { reason: /expected "," or "\)"/, position: 4 } }],
    ['a key glued to a wildcard is refused', { given: 'a*', want: { reason: /expected "," or "\."/, position: 2 } }],
    ['a wildcard glued to a key is refused', { given: '*a', want: { reason: /expected "," or "\."/, position: 2 } }],
    ['a key glued to a quoted key is refused', { given: 'a"b"', want: { reason: /expected "," or "\."/, position: 2 } }],
    ['a control character is an unexpected character', { given: '\u0001', want: { reason: /unexpected character/, position: 1 } }],
    ['nesting deeper than 64 groups is refused', { given: `${'('.repeat(65)}a${')'.repeat(65)}`, want: { reason: /nested deeper than 64/, position: 65 } }],
    ['a mask expanding to too many paths is refused', { given: `${'(a,b).'.repeat(20)}c`, want: { reason: /too many paths/, position: 1 } }],
  ];

  test.each(errors)('%s', (_name, { given, want }) => {
    let caught: unknown;
    try {
      parseResetMask(given);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ResetMaskParseError);
    const err = caught as ResetMaskParseError;
    expect(err.reason).toMatch(want.reason);
    expect(err.position).toBe(want.position);
    expect(err.message).toContain(`at position ${want.position} near "`);
  });

  test('the message quotes the text around the position', () => {
    expect(() => parseResetMask('spec.(a,,b)')).toThrow('invalid reset mask: empty element at position 9 near "spec.(a,,b)"');
  });
});

describe('mergeResetMasks', () => {
  const merges: [string, { given: string[]; want: string }][] = [
    ['siblings from two masks are grouped', { given: ['a.b', 'a.c'], want: 'a.(b,c)' }],
    ['a parent and a child merge to the child', { given: ['a', 'a.b'], want: 'a.b' }],
    ['wildcard children merge', { given: ['l.*.m', 'l.*.n'], want: 'l.*.(m,n)' }],
    ['a wildcard and a key stay side by side', { given: ['l.*.m', 'l.2.n'], want: 'l.(*.m,2.n)' }],
    ['the empty mask is neutral', { given: ['', 'x'], want: 'x' }],
    ['no masks merge to the empty mask', { given: [], want: '' }],
    ['three masks merge in any order', { given: ['c', 'a.x', 'b,a.y'], want: 'a.(x,y),b,c' }],
  ];

  test.each(merges)('%s', (_name, { given, want }) => {
    expect(printResetMask(mergeResetMasks(...given.map(parseResetMask)))).toBe(want);
  });

  test('merging does not modify its inputs', () => {
    const a = parseResetMask('a.b');
    const b = parseResetMask('a.c,*.d');
    mergeResetMasks(a, b);
    expect(printResetMask(a)).toBe('a.b');
    expect(printResetMask(b)).toBe('*.d,a.c');
  });
});

describe('subMask', () => {
  const subs: [string, { given: { mask: string | undefined; path: string[] }; want: string | undefined }][] = [
    ['a named field yields its children', { given: { mask: 'a.b', path: ['a'] }, want: 'b' }],
    ['a named leaf yields an empty but existing mask', { given: { mask: 'a', path: ['a'] }, want: '' }],
    ['an unnamed field yields undefined', { given: { mask: 'a', path: ['b'] }, want: undefined }],
    ['the wildcard answers for any key', { given: { mask: 'l.*.m', path: ['l', '7'] }, want: 'm' }],
    ['a named key is merged with the wildcard', { given: { mask: 'l.*.m,l.3.n', path: ['l', '3'] }, want: 'm,n' }],
    ['another key gets only the wildcard', { given: { mask: 'l.*.m,l.3.n', path: ['l', '4'] }, want: 'm' }],
    ['no mask yields undefined', { given: { mask: undefined, path: ['a'] }, want: undefined }],
    ['a group alternative is reachable', { given: { mask: 'f.(j.h,i.j).k', path: ['f', 'i', 'j'] }, want: 'k' }],
  ];

  test.each(subs)('%s', (_name, { given, want }) => {
    let node: ResetMask | undefined = given.mask === undefined ? undefined : parseResetMask(given.mask);
    for (const key of given.path) node = subMask(node, key);
    expect(node === undefined ? undefined : printResetMask(node)).toBe(want);
  });
});

describe('reset mask header values', () => {
  const headers: [string, { given: string | string[] | undefined; want: string }][] = [
    ['several header values are merged', { given: ['spec.b', 'spec.a'], want: 'spec.(a,b)' }],
    ['a comma-joined value is the same as separate values', { given: 'spec.b, spec.a', want: 'spec.(a,b)' }],
    ['no header is the empty mask', { given: undefined, want: '' }],
    ['an empty list is the empty mask', { given: [], want: '' }],
    ['empty values are ignored', { given: ['', 'a', ' '], want: 'a' }],
  ];

  test.each(headers)('%s', (_name, { given, want }) => {
    expect(printResetMask(resetMaskFromHeaderValues(given))).toBe(want);
  });

  test('a malformed second value is reported with its own position', () => {
    expect(() => resetMaskFromHeaderValues(['a', 'b..c'])).toThrow(/empty field name before "\." at position 3/);
  });

  test('the canonical header is undefined when the mask is empty', () => {
    expect(canonicalResetMaskHeader([' ', ''])).toBeUndefined();
    expect(canonicalResetMaskHeader(['f.(j.h,i.j).k', 'a'])).toBe('a,f.(i.j.k,j.h.k)');
  });
});
