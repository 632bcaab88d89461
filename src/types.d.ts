// Text imports (`import text from "x.sql" with { type: "text" }`) embed files into the compiled executable.
declare module "*.sql" {
  const text: string;
  export default text;
}
