export { compile, Compiler, type CompileResult } from './compile.js';
export { chainNames, ipSetNameFor } from './names.js';
export type { BudgetUse } from './budget.js';
