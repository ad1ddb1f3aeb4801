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
} from '../../../src/engines/reset-mask/index.js';

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

/**
 * The reference Go SDK's TestParse table (nebius/gosdk, fieldmask/mask), whole and in its order.
 * The string literals are the reference's, character for character: an input either prints (Marshal)
 * as `output` or fails with exactly the error `err`.
 */
const referenceTestParse: ({ input: string; output: string } | { input: string; err: string })[] = [
  { input: '*,', err: 'unexpected end of mask' },
  { input: '*.', err: 'unexpected end of mask' },
  { input: '*.(', err: 'unclosed left brace at position 2 near "*.\u20DE("' },
  { input: ' \t\r\n*.( \t\r\n', err: 'unclosed left brace at position 6 near " \\t\\r\\n*.\u20DE( \\t\\r\\n"' },
  { input: 'abcdefghijklmonpqrst.(abcdefghijklmonpqrst', err: 'unclosed left brace at position 21 near "jklmonpqrst.\u20DE(abcdefghijklmo..."' },
  { input: 'abcdefghijklmonpqrst)abcdefghijklmonpqrst', err: 'unmatched right brace at position 20 near "ijklmonpqrst\u20DE)abcdefghijklmo..."' },
  {
    input: 'abcdefghijklmonpqrst..abcdefghijklmonpqrst',
    err: 'unexpected token TokenDot("." pos 21), expecting field or submask at position 21 near "jklmonpqrst.\u20DE.abcdefghijklmo..."',
  },
  {
    input: 'abcdefghijklmonpqrst abcdefghijklmonpqrst feafwafwawfadwadw',
    err: 'unexpected token TokenPlainKey("abcdefghijklmonpqrst" pos 21), expecting separator or closing brace at position 21 near "jklmonpqrst \u20DEabcdefghijklmon..."',
  },
  { input: '#', err: 'tokenizer failure: failed to tokenize: unexpected symbol at position 0 near "\u20DE#"' },
  {
    input: '#1234567890abcdefghijklmnopqrst',
    err: 'tokenizer failure: failed to tokenize: unexpected symbol at position 0 near "\u20DE#1234567890abcdefghijklmnop..."',
  },
  {
    input: '"1234567890abcdefghijklmnopqrst',
    err: 'tokenizer failure: failed to tokenize: unterminated quoted string at position 0 near "\u20DE\\"1234567890abcdefghijklmnop..."',
  },
  { input: '', output: '' },
  { input: '()', output: '' },
  { input: ' \t\r\n( \t\r\n) \t\r\n', output: '' },
  { input: ' \t\r\n', output: '' },
  { input: '*', output: '*' },
  { input: ' \t\r\n* \t\r\n', output: '*' },
  { input: ' \t\r\na \t\r\n', output: 'a' },
  { input: ' \t\r\n( \t\r\na \t\r\n) \t\r\n', output: 'a' },
  { input: '*,*,*,*', output: '*' },
  { input: 'test', output: 'test' },
  { input: '"test"', output: 'test' },
  { input: '"test "', output: '"test "' },
  { input: 'a,a', output: 'a' },
  { input: 'a.b', output: 'a.b' },
  { input: 'a \t\r\n. \t\r\nb', output: 'a.b' },
  { input: 'a \t\r\n, \t\r\na', output: 'a' },
  { input: '*,test', output: '*,test' },
  { input: '* \t\r\n, \t\r\ntest', output: '*,test' },
  { input: 'test,*', output: '*,test' },
  { input: 'a.b,a.b', output: 'a.b' },
  { input: 'a.*,a.*', output: 'a.*' },
  { input: '*.b,*.b', output: '*.b' },
  { input: 'a.b,a.c', output: 'a.(b,c)' },
  { input: 'a.(b)', output: 'a.b' },
  { input: 'a.(b,())', output: 'a.b' },
  { input: 'a.((),b)', output: 'a.b' },
  { input: 'a.((()))', output: 'a' },
  { input: 'a.(b,c)', output: 'a.(b,c)' },
  { input: '*.(b,c)', output: '*.(b,c)' },
  { input: 'a.(b,c).(d,e)', output: 'a.(b.(d,e),c.(d,e))' },
  { input: 'a.(*,c).(d,e)', output: 'a.(*.(d,e),c.(d,e))' },
  { input: 'a.(((((((*,c))))))).(d,e)', output: 'a.(*.(d,e),c.(d,e))' },
  { input: '(((((((a))))))).(((((*)))),(((c)))).(((((((d,(((e))))))))))', output: 'a.(*.(d,e),c.(d,e))' },
  { input: 'a.(b,c.(d,e))', output: 'a.(b,c.(d,e))' },
  { input: 'a.(*,b,c)', output: 'a.(*,b,c)' },
  { input: 'a.(*,b,c.(d,e))', output: 'a.(*,b,c.(d,e))' },
  {
    input: '*.*.(a,b,c.*,d.(e,f),g.(*.(h,i),j,k)),1,A,B,l,m,n.*,o.(p,q,w,x),r.(*.(s,t),u.*,v),z.(*.y,u.*,v)',
    output: '*.*.(a,b,c.*,d.(e,f),g.(*.(h,i),j,k)),1,A,B,l,m,n.*,o.(p,q,w,x),r.(*.(s,t),u.*,v),z.(*.y,u.*,v)',
  },
  { input: 'a."\\",.() \\t\\r\\n".b', output: 'a."\\",.() \\t\\r\\n".b' },
];

/** Parses, printing the mask or the error message, so one assertion shows either outcome. */
function outcome(input: string): { output: string } | { err: string } {
  try {
    return { output: printResetMask(parseResetMask(input)) };
  } catch (error) {
    if (error instanceof ResetMaskParseError) return { err: error.message };
    throw error;
  }
}

describe('parseResetMask matches the reference TestParse table', () => {
  test.each(referenceTestParse.map((c, i) => [`case ${i} ${'err' in c ? 'fail' : 'ok'}: ${JSON.stringify(c.input)}`, c] as const))(
    '%s',
    (_name, { input, ...want }) => {
      expect(outcome(input)).toEqual(want);
    },
  );

  test('what prints reads back as the same mask', () => {
    for (const c of referenceTestParse) {
      if ('err' in c) continue;
      const parsed = parseResetMask(c.input);
      expect(resetMasksEqual(parseResetMask(printResetMask(parsed)), parsed)).toBe(true);
    }
  });
});

/** Builds a mask node like the reference tests' `&Mask{Any, FieldParts}`; a null part is Go's nil entry, which counts as absent. */
function node(fields: Record<string, ResetMask | null> = {}, any?: ResetMask): ResetMask {
  const children = new Map<string, ResetMask>();
  for (const [key, child] of Object.entries(fields)) if (child !== null) children.set(key, child);
  return { children, wildcard: any };
}

/** The reference's TestMask_Marshal table, except its two cases of a cyclic mask, which parsing cannot produce. */
const referenceTestMarshal: [ResetMask, string][] = [
  [node(), ''],
  [node({}), ''],
  [node({}, node()), '*'],
  [node({}, node({})), '*'],
  [node({ test: node() }), 'test'],
  [node({ test: null }), ''],
  [node({ test: node() }, node()), '*,test'],
  [node({ test: node(), nil: null }, node()), '*,test'],
  [node({ test: node(), foo: node() }), 'foo,test'],
  [node({ test: node(), foo: node(), nil: null }), 'foo,test'],
  [node({ test: node(), foo: node() }, node()), '*,foo,test'],
  [node({}, node({}, node())), '*.*'],
  [node({}, node({ test: node() }, node())), '*.(*,test)'],
  [node({}, node({ test: node({}, node()) }, node())), '*.(*,test.*)'],
  [node({}, node({ test: node({}, node()) })), '*.test.*'],
  [node({}, node({}, node({}, node()))), '*.*.*'],
  [node({ test: node({}, node()) }), 'test.*'],
  [node({}, node({ test: node() })), '*.test'],
  [node({ test: node({}, node()) }), 'test.*'],
  [node({ test: node({ inner: node() }) }), 'test.inner'],
  [node({ test: node({ inner: node(), nil: null }) }), 'test.inner'],
  [node({ 'test.inner': node({ inner: node() }) }), `"test.inner".inner`],
  [node({ 'test,inner': node({ inner: node() }) }), `"test,inner".inner`],
  [node({ 'test(inner)': node({ inner: node() }) }), `"test(inner)".inner`],
  [node({ '"test"': node() }), `"\\"test\\""`],
  [node({ '"test"': node() }, node()), `"\\"test\\"",*`],
  [node({ '",.() \t\r\n': node() }, node()), '"\\",.() \\t\\r\\n",*'],
  [node({ '"test"': node({ inner: node() }) }, node()), `"\\"test\\"".inner,*`],
  [node({ '"test"': node({ inner: node(), '*': node() }) }, node()), `"\\"test\\"".("*",inner),*`],
  [
    node(
      {
        l: node(),
        m: node(),
        n: node({}, node()),
        o: node({ p: node(), q: node(), nil: null }),
        r: node({ u: node({}, node()), v: node() }, node({ s: node(), t: node() })),
      },
      node(
        {},
        node({
          a: node(),
          b: node(),
          c: node({}, node()),
          d: node({ e: node(), f: node(), nil: null }),
          g: node({ j: node(), nil: null, k: node() }, node({ h: node(), i: node() })),
        }),
      ),
    ),
    '*.*.(a,b,c.*,d.(e,f),g.(*.(h,i),j,k)),l,m,n.*,o.(p,q),r.(*.(s,t),u.*,v)',
  ],
  [
    node(
      {
        l: node(),
        m: node(),
        nil: null,
        n: node({}, node()),
        '"o"': node({ '"p"': node(), q: node(), '*': node() }),
        r: node({ u: node({}, node()), v: node(), '*': node() }, node({ s: node(), t: node(), '*': node() })),
      },
      node(
        {},
        node({
          a: node(),
          '"b"': node(),
          nil: null,
          '"c"': node({}, node()),
          '"d"': node({ e: node(), '"f"': node() }),
          g: node({ '"j"': node(), k: node(), nil: null }, node({ '"h"': node(), i: node(), nil: null })),
        }),
      ),
    ),
    `"\\"o\\"".("*","\\"p\\"",q),*.*.("\\"b\\"","\\"c\\"".*,"\\"d\\"".("\\"f\\"",e),a,g.("\\"j\\"",*.("\\"h\\"",i),k)),l,m,n.*,r.("*",*.("*",s,t),u.*,v)`,
  ],
];

describe('printResetMask matches the reference TestMask_Marshal table', () => {
  test.each(referenceTestMarshal.map(([mask, want], i) => [`case ${i}: ${want}`, mask, want] as const))('%s', (_name, mask, want) => {
    expect(printResetMask(mask)).toBe(want);
  });
});

describe('parseResetMask + printResetMask beyond the reference table', () => {
  const roundTrips: [string, { given: string; want: string }][] = [
    ['a list index is a plain key', { given: 'd.e.12', want: 'd.e.12' }],
    ['a group applies the rest to each alternative', { given: 'f.(j.h,i.j).k', want: 'f.(i.j.k,j.h.k)' }],
    ['a mask using every form prints sorted', { given: 'a,b.c,d.e.12,f.(j.h,i.j).k,l.*.m', want: 'a,b.c,d.e.12,f.(i.j.k,j.h.k),l.*.m' }],
    ['naming a parent and its child keeps the child', { given: 'a,a.b', want: 'a.b' }],
    ['groups nest', { given: 'a.(b.(c,d),e).f', want: 'a.(b.(c.f,d.f),e.f)' }],
    ['a group may open the element', { given: '(a,b).c', want: 'a.c,b.c' }],
    ['an empty group may open or follow anything', { given: '().a,b.()', want: 'a,b' }],
    ['keys sort bytewise with the wildcard as "*"', { given: 'a,*,B,0,_', want: '*,0,B,_,a' }],
    ['a key that is a prefix of another sorts first', { given: 'ab,a.c', want: 'a.c,ab' }],
    ['a wildcard and an index under one list are grouped', { given: 'l.*.m,l.3.n', want: 'l.(*.m,3.n)' }],
    ['a quoted key decodes unicode escapes and prints them raw', { given: '"\\u00e9t\\u00e9"', want: '"été"' }],
    ['a quoted surrogate pair is one character', { given: '"\\ud83d\\ude00"', want: '"😀"' }],
    ['a quoted lone surrogate becomes U+FFFD, as in Go', { given: '"\\ud800x"', want: '"\uFFFDx"' }],
    ['a quoted "*" is a literal key, distinct from the wildcard', { given: '"*".a,*.b', want: '"*".a,*.b' }],
    ['a quoted empty key is kept', { given: 'm.""', want: 'm.""' }],
    ['a quoted key may hold dots and slashes', { given: 'labels."app.kubernetes.io/name"', want: 'labels."app.kubernetes.io/name"' }],
    ["a quoted key prints <, > and & escaped, as Go's json.Marshal does", { given: '"a<b>&c"', want: '"a\\u003cb\\u003e\\u0026c"' }],
    ['a quoted key prints control characters the JSON way', { given: '"\\b\\f\\u0001\\u007f"', want: '"\\b\\f\\u0001\u007f"' }],
    ['parentheses nest as deep as one likes', { given: `${'('.repeat(5000)}a${')'.repeat(5000)}`, want: 'a' }],
    ['a path of 999 keys is accepted', { given: Array.from({ length: 999 }, () => 'a').join('.'), want: Array.from({ length: 999 }, () => 'a').join('.') }],
    // Like the reference, alternatives share the node after them, so a later path through one
    // alternative reaches the others too; the order of the paths therefore matters.
    ['a path through a shared node reaches every alternative', { given: '(a,b).c,a.c.d', want: 'a.c.d,b.c.d' }],
    ['a node that existed before the group is not shared', { given: 'a.c.d,(a,b).c', want: 'a.c.d,b.c' }],
  ];

  test.each(roundTrips)('%s', (_name, { given, want }) => {
    const parsed = parseResetMask(given);
    const printed = printResetMask(parsed);
    expect(printed).toBe(want);
    expect(printResetMask(parseResetMask(printed))).toBe(printed);
  });
});

describe('parseResetMask tree shape', () => {
  const shapes: [string, { given: string; want: string[][] }][] = [
    [
      'a group yields one path per alternative with the rest appended',
      {
        given: 'f.(j.h,i.j).k',
        want: [
          ['f', 'i', 'j', 'k'],
          ['f', 'j', 'h', 'k'],
        ],
      },
    ],
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

  test('alternatives sharing a node are separate trees once parsed, so merging into one leaves the other alone', () => {
    const mask = parseResetMask('(a,b).c');
    expect(childAt(mask, 'a', 'c')).not.toBe(childAt(mask, 'b', 'c'));
  });
});

describe('parseResetMask errors beyond the reference table', () => {
  const errors: [string, { given: string; want: { message: string; position: number | undefined } }][] = [
    [
      'a leading comma expects a field',
      { given: ',a', want: { message: 'unexpected token TokenComma("," pos 0), expecting field or submask at position 0 near "\u20DE,a"', position: 0 } },
    ],
    [
      'two commas in a row expect a field',
      { given: 'a,,b', want: { message: 'unexpected token TokenComma("," pos 2), expecting field or submask at position 2 near "a,\u20DE,b"', position: 2 } },
    ],
    ['a trailing comma ends the mask too early', { given: 'a,', want: { message: 'unexpected end of mask', position: undefined } }],
    [
      'a trailing comma in a group leaves the group open',
      { given: '(a,', want: { message: 'unclosed left brace at position 0 near "\u20DE(a,"', position: 0 } },
    ],
    [
      'a dot before a closing parenthesis expects a field',
      { given: '(a.)', want: { message: 'unexpected token TokenRBrace(")" pos 3), expecting field or submask at position 3 near "(a.\u20DE)"', position: 3 } },
    ],
    [
      'a leading dot expects a field',
      { given: '.a', want: { message: 'unexpected token TokenDot("." pos 0), expecting field or submask at position 0 near "\u20DE.a"', position: 0 } },
    ],
    ['the innermost unclosed group is named', { given: 'a.(b.(c', want: { message: 'unclosed left brace at position 5 near "a.(b.\u20DE(c"', position: 5 } }],
    ['a closing parenthesis too many is named', { given: 'a.b),c', want: { message: 'unmatched right brace at position 3 near "a.b\u20DE),c"', position: 3 } }],
    [
      'a field right after an empty group is refused',
      {
        given: '()a',
        want: { message: 'unexpected token TokenPlainKey("a" pos 2), expecting separator or closing brace at position 2 near "()\u20DEa"', position: 2 },
      },
    ],
    [
      'a key glued to a wildcard is refused',
      {
        given: 'a*',
        want: { message: 'unexpected token TokenWildCard("*" pos 1), expecting separator or closing brace at position 1 near "a\u20DE*"', position: 1 },
      },
    ],
    [
      'a quoted key in the wrong place is shown unquoted',
      {
        given: 'a"b c"',
        want: {
          message: 'unexpected token TokenPlainKey("b c" pos 1), expecting separator or closing brace at position 1 near "a\u20DE\\"b c\\""',
          position: 1,
        },
      },
    ],
    [
      'a dash is not part of an unquoted key',
      {
        given: 'ports.http-alt',
        want: { message: 'tokenizer failure: failed to tokenize: unexpected symbol at position 10 near "ports.http\u20DE-alt"', position: 10 },
      },
    ],
    [
      'a control character is an unexpected symbol',
      { given: 'a.\u0001', want: { message: 'tokenizer failure: failed to tokenize: unexpected symbol at position 2 near "a.\u20DE\\x01"', position: 2 } },
    ],
    [
      'a non-ASCII letter outside quotes is an unexpected symbol',
      { given: 'é', want: { message: 'tokenizer failure: failed to tokenize: unexpected symbol at position 0 near "\u20DEé"', position: 0 } },
    ],
    [
      'positions count UTF-8 bytes',
      { given: '"é"#', want: { message: 'tokenizer failure: failed to tokenize: unexpected symbol at position 4 near "\\"é\\"\u20DE#"', position: 4 } },
    ],
    [
      'a context starting inside a character shows the stray byte',
      {
        given: `"${'é'.repeat(6)}"#`,
        want: { message: 'tokenizer failure: failed to tokenize: unexpected symbol at position 14 near "\\xa9ééééé\\"\u20DE#"', position: 14 },
      },
    ],
    [
      'lexer errors come before parser errors',
      { given: 'a..b#', want: { message: 'tokenizer failure: failed to tokenize: unexpected symbol at position 4 near "a..b\u20DE#"', position: 4 } },
    ],
    [
      'an escaped final quote leaves the key unterminated',
      {
        given: 'x."ab\\"',
        want: { message: 'tokenizer failure: failed to tokenize: unterminated quoted string at position 2 near "x.\u20DE\\"ab\\\\\\""', position: 2 },
      },
    ],
    [
      "an invalid JSON escape is refused with Go's message",
      {
        given: '"\\x"',
        want: {
          message:
            'tokenizer failure: failed to unquote token at position 0 near "\u20DE\\"\\\\x\\"": failed to parse quoted string: invalid character \'x\' in string escape code',
          position: 0,
        },
      },
    ],
    [
      "a raw control character inside quotes is refused with Go's message",
      {
        given: '"a\u0001"',
        want: {
          message:
            'tokenizer failure: failed to unquote token at position 0 near "\u20DE\\"a\\x01\\"": failed to parse quoted string: invalid character \'\\x01\' in string literal',
          position: 0,
        },
      },
    ],
    [
      'a raw tab inside quotes is named with its escape',
      {
        given: 'k."a\tb"',
        want: {
          message:
            'tokenizer failure: failed to unquote token at position 2 near "k.\u20DE\\"a\\tb\\"": failed to parse quoted string: invalid character \'\\t\' in string literal',
          position: 2,
        },
      },
    ],
    [
      "a bad \\u escape is refused with Go's message",
      {
        given: '"\\u12g4"',
        want: {
          message:
            'tokenizer failure: failed to unquote token at position 0 near "\u20DE\\"\\\\u12g4\\"": failed to parse quoted string: invalid character \'g\' in \\u hexadecimal character escape',
          position: 0,
        },
      },
    ],
    [
      'a short \\u escape runs into the closing quote',
      {
        given: '"\\u12"',
        want: {
          message:
            'tokenizer failure: failed to unquote token at position 0 near "\u20DE\\"\\\\u12\\"": failed to parse quoted string: invalid character \'"\' in \\u hexadecimal character escape',
          position: 0,
        },
      },
    ],
    [
      'a path of 1000 keys is too deep, as for the reference',
      { given: Array.from({ length: 1000 }, () => 'a').join('.'), want: { message: `${'a: '.repeat(1000)}recursion too deep`, position: undefined } },
    ],
    [
      'a mask expanding past 100000 fields is refused (our limit)',
      { given: `${'(a,b).'.repeat(20)}c`, want: { message: 'mask expands to more than 100000 fields', position: undefined } },
    ],
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
    expect(err.message).toBe(want.message);
    expect(err.position).toBe(want.position);
  });

  test('a mask that makes the parser work too hard is refused (our limit)', () => {
    const alternatives = Array.from({ length: 1100 }, (_, i) => `k${i}`).join(',');
    const given = `(${alternatives}).(${Array.from({ length: 1000 }, () => 'x').join(',')})`;
    expect(() => parseResetMask(given)).toThrow(/^mask is too complex at position \d+ near /);
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
    expect(() => resetMaskFromHeaderValues(['a', 'b..c'])).toThrow(
      'unexpected token TokenDot("." pos 2), expecting field or submask at position 2 near "b.\u20DE.c"',
    );
  });

  test('the canonical header is undefined when the mask is empty', () => {
    expect(canonicalResetMaskHeader([' ', ''])).toBeUndefined();
    expect(canonicalResetMaskHeader(['f.(j.h,i.j).k', 'a'])).toBe('a,f.(i.j.k,j.h.k)');
  });
});

/**
 * The reference Go SDK's header tables (nebius/gosdk, proto/fieldmask/grpcheader: common_test.go
 * TestGetMaskFromIncomingContext and resetmask_test.go TestGetResetMaskFromIncomingContext), whole:
 * each header value is parsed on its own and the results merged, so an empty value adds nothing.
 * "no metadata", "metadata is nil", "metadata is without mask" and "other mask" all reach the
 * engine as no values at all. The last four rows are the vectors of issue 19 §2, which the
 * reference answers as shown (an empty value merges as the empty mask).
 */
describe('reset mask header values match the reference grpcheader tables', () => {
  const reference: [string, { given: string[] | undefined; want: string } | { given: string[]; err: string }][] = [
    ['no metadata', { given: undefined, want: '' }],
    ['metadata is nil', { given: undefined, want: '' }],
    ['metadata is empty', { given: undefined, want: '' }],
    ['metadata is without mask', { given: undefined, want: '' }],
    ['metadata is with empty mask', { given: [], want: '' }],
    ['metadata is with fail mask', { given: ['('], err: 'unclosed left brace at position 0 near "\u20DE("' }],
    ['metadata is with one mask', { given: ['a,b.c'], want: 'a,b.c' }],
    ['metadata is with couple masks', { given: ['a,b.c', 'b.d,*.e'], want: 'a,b.(c,d),*.e' }],
    ['no mask', { given: undefined, want: '' }],
    ['other mask', { given: undefined, want: '' }],
    ['empty mask', { given: [], want: '' }],
    ['one mask', { given: ['a,b.c'], want: 'a,b.c' }],
    ['multiple masks', { given: ['a,b.c', 'b.d'], want: 'a,b.(c,d)' }],
    ['two empty values', { given: ['', ''], want: '' }],
    ['a wildcard and an empty value', { given: ['*', ''], want: '*' }],
    ['a mask and an empty value', { given: ['a,b.c', ''], want: 'a,b.c' }],
    ['an empty value and a mask', { given: ['', 'spec.description'], want: 'spec.description' }],
  ];

  test.each(reference)('%s', (_name, vector) => {
    if ('err' in vector) {
      expect(() => resetMaskFromHeaderValues(vector.given)).toThrow(ResetMaskParseError);
      expect(() => resetMaskFromHeaderValues(vector.given)).toThrow(vector.err);
      return;
    }
    // The reference compares with mask.Equal against ParseMust(want); so do we, and the printed forms agree too.
    const merged = resetMaskFromHeaderValues(vector.given);
    expect(resetMasksEqual(merged, parseResetMask(vector.want))).toBe(true);
    expect(printResetMask(merged)).toBe(printResetMask(parseResetMask(vector.want)));
  });
});
