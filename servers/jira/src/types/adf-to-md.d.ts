// adf-to-md (MIT) ships without types.
declare module 'adf-to-md' {
  const adfToMd: {
    convert(doc: unknown): { result: string; warnings: Set<string> };
    validate(doc: unknown): unknown;
  };
  export default adfToMd;
}
