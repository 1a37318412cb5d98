// Lets `node --import ./scripts/register-ts.mjs x.ts` run TypeScript directly (dev scripts only).
import { register } from 'node:module';
register('./ts-loader.mjs', import.meta.url);
