// ESLint formatter: one `file:line:col  rule  message` line per finding, paths relative to the repository,
// so a failing `npm test` names the place to edit (ESLint 10 no longer ships the `unix` formatter).
import { relative } from 'node:path';

export default function format(results) {
  const lines = [];
  for (const result of results) {
    for (const m of result.messages) {
      lines.push(
        `${relative(process.cwd(), result.filePath)}:${m.line ?? 0}:${m.column ?? 0}  ${m.ruleId ?? 'eslint'}  ${m.message.replace(/\s*\n\s*/g, ' ')}`,
      );
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n${lines.length} lint finding(s)\n`;
}
