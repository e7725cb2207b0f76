// Writes a golden file: the ids and decoded text @huggingface/tokenizers gives for a trained
// tokenizer.json (+ tokenizer_config.json) on the cases below, plus the non-blank lines of an
// optional text file. Run by hand only (see README.md); the Go tests read the committed output.
//
//   node gen_golden.mjs <node_modules dir> <tokenizer dir> <output .json> [extra lines .txt]
import fs from "node:fs";
import path from "node:path";

const [nodeModules, dir, outFile, extraFile] = process.argv.slice(2);
const { Tokenizer } = await import(path.join(nodeModules, "@huggingface/tokenizers/dist/tokenizers.mjs"));

const cases = [
  "The council met on Tuesday.", " leading space", "double  space and   three", "trailing   ",
  "I'm sure they'll say we've been there, and you're right: it's theirs; he'd won't.",
  "DON'T SHOUT'S", "numbers 0 12 345 6789 3.14159 1,000,000 $19.99 50% #42", "٣٤٥ ⅷ ²",
  "tabs\tand\t\tnew\nlines\n\n\nend\n", " \n \n  x", "a\r\nb\r\n\r\nc", "    ", "\t", "x", "",
  "Café naïve façade Ångström Straße", "e\u0301 composed vs é", "Привет мир, Καλημέρα", "こんにちは世界 你好",
  "안녕하세요 مرحبا שלום", "Emoji 😀🎉👍🏽 and 👨‍👩‍👧‍👦 family ❤️", "ZWJ\u200dtest and nbsp\u00a0here",
  "def area(radius):\n    return 3.14159 * radius ** 2\n", "if (x != nil) { return err; }",
  "<html><body class=\"x\">Hi</body></html>", "https://example.com/path?q=1&r=2#frag",
  "text<|endoftext|>more text", "<|endoftext|>The start of a document.",
  "Words the trainer never saw: xylophone quizzically zephyr",
];

if (extraFile) {
  cases.push(...fs.readFileSync(extraFile, "utf8").split("\n").filter((l) => l.trim() !== ""));
}

const tokJSON = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
const config = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
const tok = new Tokenizer(tokJSON, config);
const out = cases.map((text) => {
  const ids = Array.from(tok.encode(text, { add_special_tokens: false }).ids);
  const decoded = ids.length ? tok.decode(ids, { skip_special_tokens: false }) : "";
  return { text, ids, decoded };
});
fs.writeFileSync(outFile, JSON.stringify({ cases: out }, null, 0) + "\n");
console.log(out.length, "cases");
