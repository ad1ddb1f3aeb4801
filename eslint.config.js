// ESLint flat config: eslint's and typescript-eslint's `recommended` rule sets over the TypeScript
// sources. `strict-type-checked` was tried on src/: 261 findings (template literals of numbers, void
// arrow bodies, non-null assertions after checks…), rewrites rather than lint fixes, and ~1 min a run
// with type information. Formatting is Prettier's job (npm run format:check): no stylistic rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // Codegen output, build output, vendored files and plain JavaScript (browser assets, dredd hooks) are not linted.
    ignores: ['generated/**', 'dist/**', 'data/**', 'coverage/**', 'contracts/**', 'third_party/**', '**/*.cjs', '**/*.js', '**/*.mjs'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // A leading underscore marks a name kept on purpose: a parameter held for its position (express
      // tells error handlers by their four parameters) or a property left out of a rest object.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      // A timer or handle assigned once, after a closure that clears it was made, has to be a `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
);
