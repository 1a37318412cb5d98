// ESM TypeScript through @swc/jest: type-checking is tsc's job (see scripts/test.sh), swc only strips types.
const transform = {
  '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }],
};
const common = {
  transform,
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testEnvironment: 'node',
};
export default {
  // `npm test` runs every project in one jest process with two workers (scripts/test.sh); longest first.
  testSequencer: '<rootDir>/test/longest-first-sequencer.js',
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...common, displayName: 'golden', testMatch: ['<rootDir>/test/golden/**/*.test.ts'] },
    { ...common, displayName: 'kernel', testMatch: ['<rootDir>/test/kernel/**/*.test.ts'] },
  ],
};
