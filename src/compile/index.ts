export { compile, Compiler, type CompileResult } from './compile.js';
export { chainNames, ipSetNameFor } from './names.js';
