export { compile, Compiler, policyTypes, type CompileResult } from './compile.js';
export { chainNames, ipSetNameFor, ownedIpSetPattern, type ChainNames } from './names.js';
