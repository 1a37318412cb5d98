import { LineSplitter, LineTooLongError } from '../../../src/cluster/line-splitter.js';

describe('LineSplitter', () => {
  it('joins lines split across chunks, byte-wise (a UTF-8 character cut in two stays whole)', () => {
    const text = Buffer.from('{"a":"é"}\n{"b":2}\r\nlast');
    const splitter = new LineSplitter(100);
    const cut = text.indexOf(0xa9); // the second byte of é
    expect([...splitter.push(text.subarray(0, cut)), ...splitter.push(text.subarray(cut))]).toEqual(['{"a":"é"}', '{"b":2}']);
    expect(splitter.end()).toBe('last');
    expect(splitter.end()).toBeUndefined();
  });

  it('refuses a line longer than the bound, whether it arrives in one chunk or many', () => {
    expect(() => new LineSplitter(10).push('0123456789A\n')).toThrow(LineTooLongError);
    const splitter = new LineSplitter(10);
    expect(splitter.push('01234')).toEqual([]);
    expect(() => splitter.push('56789A')).toThrow('longer than 10 bytes');
  });

  it('takes a line of exactly the bound', () => {
    expect(new LineSplitter(10).push('0123456789\n')).toEqual(['0123456789']);
    const splitter = new LineSplitter(10);
    splitter.push('01234');
    expect(splitter.push('56789\n')).toEqual(['0123456789']);
  });
});
