// An SVG imported from TypeScript is its text (the builder's asset/source).
declare module '*.svg' {
  const svgstr: string;
  export default svgstr;
}
