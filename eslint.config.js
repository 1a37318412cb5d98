// Lint rules that catch real bugs in this codebase, type-aware (typescript-eslint reads the same types tsc checks):
// a promise nobody awaits or catches, a switch that misses a case of a closed union, `any`, unused names.
// Formatting is Prettier's job (.prettierrc.json); unused files, exports and dependencies are knip's (knip.json).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'coverage/**', '.bench-out/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { project: ['./tsconfig.test.json'], tsconfigRootDir: import.meta.dirname } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // A closed union rendered through a switch must name every kind; `default` does not count as handling one.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-explicit-any': 'error',
      // `_name` marks a binding kept on purpose (a destructured field left out, a callback's unused parameter).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // String(unknown) shows bad input as it came; what this rule should catch is `${object}` on a known type.
      '@typescript-eslint/no-base-to-string': 'off',
      // Style, not a bug: an assertion tsc can prove redundant (its autofix also drops ones jest matchers need).
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // A `let` read by a closure before its one assignment (a timer cleared by an early exit) cannot be const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // An async method that implements a Promise-returning port without awaiting is normal here.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // `expect(fake.method).toHaveBeenCalled()` passes methods unbound on purpose.
      '@typescript-eslint/unbound-method': 'off',
      // Jest's asymmetric matchers (expect.any, expect.stringMatching) and JSON.parse of a tool's output are `any`
      // by their own types; `no-explicit-any` still forbids writing `any` in a test.
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
    },
  },
);
